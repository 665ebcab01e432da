"""Lint training material: an issue no tool may fix, injected into real code, answered
with the authors' lines; kept only when the host verifies the rewrite.

A tiny package (two functions and their tests) runs through the real lint agent, tools
and workspaces; the planner and the expert are also checked on their own.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from remora.model.base import Message, ModelRequest, ToolCall
from remora.operations import load_agents
from remora.operations.base import CorpusFile
from remora.operations.experts import ExpertError
from remora.operations.lint.corpus import plan_episodes
from remora.operations.lint.expert import ResidueExpert, asked_issue
from remora.training.dataset import read_examples
from remora.training.traces import TRAIN_FILE, VALIDATION_FILE, generate_traces

PRICES = '''\
"""Prices."""


def parse(text):
    """Read a price."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"not a price: {text!r}") from None


def kind(value):
    """Say what a value is."""
    if isinstance(value, str):
        return "text"
    return "other"
'''
TESTS = """\
import pytest

from shop.prices import kind, parse


def test_parse():
    assert parse("12") == 12
    with pytest.raises(ValueError):
        parse("x")


def test_kind():
    assert kind("a") == "text" and kind(1) == "other"
"""


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    package = tmp_path / "corpus" / "shop"
    (package / "tests").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "prices.py").write_text(PRICES, encoding="utf-8")
    (package / "tests" / "test_prices.py").write_text(TESTS, encoding="utf-8")
    return package


def planned(text: str, package: Path) -> tuple[list, Counter[str]]:
    agent = load_agents()["lint"]
    file = CorpusFile("shop/prices.py", package / "prices.py", package)
    skipped: Counter[str] = Counter()
    return list(plan_episodes(agent, file, text, 0, skipped, 0.0)), skipped


def asking(summary: str, tool: str = "show_issue") -> ModelRequest:
    return ModelRequest(
        messages=[
            Message(role="user", content="Python file shop/prices.py."),
            Message(role="assistant", tool_calls=[ToolCall(id="1", name=tool)]),
            Message(
                role="tool",
                name=tool,
                tool_call_id="1",
                content=json.dumps(
                    {"name": tool, "response": {"outcome": "success", "summary": summary}}
                ),
            ),
        ]
    )


def test_the_planner_injects_one_residue_issue_and_the_expert_answers_the_original(
    shop: Path,
) -> None:
    episodes, _ = planned(PRICES, shop)
    by_key = {episode.id.split("::")[1]: episode for episode in episodes}
    assert set(by_key) == {"raise-without-from", "type-compare"}
    b904 = by_key["raise-without-from"]
    assert 'raise ValueError(f"not a price: {text!r}")\n' in b904.text
    assert "from None" not in b904.text and b904.in_package
    summary = (
        "Issue B904 on line 9: Within an `except` clause, raise exceptions with ...\n"
        "Why no tool fixed it: the except clause has no 'as' name to chain from.\n"
        "Line 9:\n"
        '        raise ValueError(f"not a price: {text!r}")\n'
        "Call rewrite_lines with the new text of line 9."
    )
    answer = b904.expert(asking(summary))
    assert answer.name == "rewrite_lines"
    assert answer.arguments == {
        "code": "B904",
        "line": 9,
        "text": '        raise ValueError(f"not a price: {text!r}") from None',
    }
    e721 = by_key["type-compare"].text
    assert "if type(value) == str:" in e721 and "isinstance" not in e721


def test_the_expert_has_no_answer_for_an_issue_it_did_not_inject() -> None:
    expert = ResidueExpert("B904", PRICES, 9, 9, 0)
    other = "Issue E731 on line 14: Do not assign a lambda.\nWhy: ...\nLine 14:\n    f = 1\n"
    with pytest.raises(ExpertError, match="not the injected B904"):
        expert(asking(other))
    with pytest.raises(ExpertError, match="no issue is asked"):
        expert(asking("No issue is left for the model to rewrite."))
    asked = asked_issue("Issue B904 on line 9: x.\nLines 8-10:\na\nb\nc\n")
    assert asked is not None and (asked.start, asked.end) == (8, 10)


def test_a_file_with_residue_of_its_own_is_not_planned(shop: Path) -> None:
    own = PRICES.replace(" from None", "")
    episodes, skipped = planned(own, shop)
    assert episodes == []
    assert skipped["has an issue of its own the model would be asked about"] == 1


def test_generated_examples_are_the_authors_lines_verified_by_the_host(
    shop: Path, tmp_path: Path
) -> None:
    report = generate_traces("lint", [shop], tmp_path / "out", seed=0, tokens="estimate")
    examples = [
        *read_examples(tmp_path / "out" / "lint" / TRAIN_FILE),
        *read_examples(tmp_path / "out" / "lint" / VALIDATION_FILE),
    ]
    answers = {example.call["arguments"]["code"]: example for example in examples}
    assert report.episodes_kept == len(examples) == report.decisions["rewrite_lines"]
    assert set(answers) == {"B904"}
    assert answers["B904"].call["arguments"]["text"].endswith(") from None")
    assert "Why no tool fixed it" in answers["B904"].prompt
    # The E721 the host fixes itself asks the model nothing: no example.
    assert any("Fixed E721" in reason for reason in report.skipped), report.skipped
