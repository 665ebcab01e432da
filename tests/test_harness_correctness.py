"""The harness checks what the model did, not only that its calls were well formed."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from remora.config import RemoraConfig, RunnerConfig
from remora.definitions import BUNDLED_AGENTS_DIR, Expectation, SubagentDefinition, check_agent
from remora.discovery import discover
from remora.errors import AgentDefinitionError, RunnerError
from remora.harness import HarnessReport, check_episode, operation_options, run_harness
from remora.model.base import ModelRequest, ToolCall
from remora.operations import installed_operations, load_agents
from remora.testing import ScriptedModel, Step, call
from tests.cli_helpers import run_cli

SAMPLE = Path(__file__).parent.parent / "examples" / "sample_project"
PRICING = SAMPLE / "inventory" / "pricing.py"
ECHO_DESCRIPTION = "Send text back unchanged. Use it once with the name of the code element."


def node_name(request: ModelRequest) -> str:
    """The node's name, as the harness agent's first message shows it."""
    return request.messages[1].content.split("`")[1]


def echo(text: str) -> str:
    return f"<start_function_call>call:echo{{text:<escape>{text}<escape>}}<end_function_call>"


def tool_turns(request: ModelRequest) -> int:
    return sum(message.role == "tool" for message in request.messages)


def run(
    agent: str,
    model: ScriptedModel,
    *,
    path: Path = PRICING,
    root: Path = SAMPLE,
    config: RemoraConfig | None = None,
    requests: int = 2,
) -> HarnessReport:
    return asyncio.run(
        run_harness(
            agent=load_agents()[agent],
            nodes=discover([path], root=root).nodes,
            root=root,
            model=model,
            config=config or installed_operations().config(),
            backend="scripted",
            requests=requests,
        )
    )


# --- the harness agent, episodes through the real loop ---------------------------------


def test_a_correct_episode_is_a_success_with_every_call_correct() -> None:
    def polite(request: ModelRequest) -> Step:
        if tool_turns(request) == 0:
            return echo(node_name(request))
        return call("submit_result", summary="echo returned the name")

    report = run("harness", ScriptedModel([polite], repeat_last=True), requests=1)
    stats = report.variants[0]
    assert stats.success_rate == 1.0
    assert stats.correct_call_rate == 1.0
    assert report.expectation is not None and "{{ node_name }}" in report.expectation
    for episode in report.episodes:
        assert episode.correct is True and episode.problem is None
        assert [c.tool for c in episode.checked_calls] == ["echo", "submit_result"]
        assert episode.checked_calls[0].arguments == {"text": "pricing.py"}


def test_echoing_the_description_is_not_correct_nor_a_success() -> None:
    """What the base model did: every call valid, the task not done."""

    def parrot(request: ModelRequest) -> Step:
        if tool_turns(request) == 0:
            return echo(ECHO_DESCRIPTION)
        return call("submit_result", summary="Finish the task with a one-sentence summary.")

    report = run("harness", ScriptedModel([parrot], repeat_last=True))
    stats = report.variants[0]
    assert stats.valid_call_rate == 1.0 and stats.submitted_rate == 1.0
    assert stats.success_rate == 0.0
    assert stats.correct_call_rate == pytest.approx(1 / 2)
    for episode in report.episodes:
        assert episode.status == "success" and episode.correct is False
        assert not episode.success
        assert episode.problem is not None and "expected" in episode.problem
        assert ECHO_DESCRIPTION[:20] in episode.problem
        assert [c.expected for c in episode.checked_calls] == [False, True]


def test_a_repeated_echo_is_not_correct() -> None:
    def stutter(request: ModelRequest) -> Step:
        if tool_turns(request) < 2:
            return echo(node_name(request))
        return call("submit_result", summary="echo returned the name")

    report = run("harness", ScriptedModel([stutter], repeat_last=True))
    stats = report.variants[0]
    assert stats.repeat_rate == pytest.approx(1 / 3)
    assert stats.success_rate == 0.0
    assert stats.correct_call_rate == pytest.approx(2 / 3)
    for episode in report.episodes:
        assert [c.expected for c in episode.checked_calls] == [True, False, True]
        assert episode.problem == "echo after the expected calls, before submit_result"


def test_auto_tool_choice_episode_without_echo_is_not_a_success() -> None:
    def skipper(request: ModelRequest) -> Step:
        assert request.tool_choice == "auto"
        if len(request.messages) == 2:
            return f"The element is {node_name(request)}."
        return call("submit_result", summary="done")

    config = installed_operations().config(runner=RunnerConfig(tool_choice="auto"))
    report = run("harness", ScriptedModel([skipper], repeat_last=True), config=config)
    stats = report.variants[0]
    assert stats.submitted_rate == 1.0, "it did submit: the old 'ok' counted it"
    assert stats.success_rate == 0.0
    assert stats.correct_call_rate == 0.0
    for episode in report.episodes:
        assert episode.misses == 1
        assert episode.problem == "submit_result instead of echo"


def test_an_agent_without_expectation_reports_no_correct_call_rate(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    shutil.copytree(BUNDLED_AGENTS_DIR / "harness", folder)
    data = yaml.safe_load((folder / "harness.yaml").read_text(encoding="utf-8"))
    del data["expectation"]
    data["name"] = "plain"
    (folder / "harness.yaml").unlink()
    (folder / "plain.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    agent = load_agents([tmp_path])["plain"]
    report = asyncio.run(
        run_harness(
            agent=agent,
            nodes=discover([PRICING], root=SAMPLE).nodes,
            root=SAMPLE,
            model=ScriptedModel([echo("whatever"), call("submit_result", summary="s")]),
            config=installed_operations().config(),
            backend="scripted",
            requests=1,
        )
    )
    assert report.expectation is None
    assert report.variants[0].correct_call_rate is None
    assert report.variants[0].success_rate == 1.0  # nothing to check: submitted is success


# --- a real agent, its precheck and its prefix-and-terminal expectation -----------------


def test_the_lint_agent_asks_the_model_only_about_the_residue() -> None:
    """The lint precheck fixes, verifies and ends every job on the host when no issue is
    left that no tool may fix, so the harness finds no node of the sample project where a
    real run would call the model."""
    with pytest.raises(RunnerError) as caught:
        run("lint", ScriptedModel([]), path=SAMPLE, requests=4)
    assert caught.value.code == "RUN_012"
    assert "inventory/pricing.py: Fixed F401" in caught.value.message


def test_precheck_skipping_every_node_is_a_clean_error(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text("def _helper():\n    return 1\n", encoding="utf-8")
    with pytest.raises(RunnerError) as caught:
        run("docstring", ScriptedModel([]), path=tmp_path, root=tmp_path)
    assert caught.value.code == "RUN_012"
    assert "_helper: private" in caught.value.message


def test_the_agent_gets_its_operation_options() -> None:
    agents = load_agents()
    assert operation_options(installed_operations().config(), agents["docstring"]) == {
        "style": "auto",
        "use_model": True,
        "describe": False,
        "similar_examples": False,
        "missing_only": False,
        "include_private": False,
        "include_tests": False,
    }
    assert operation_options(installed_operations().config(), agents["harness"]) == {}


def calls(*items: tuple[str, dict[str, Any]]) -> list[ToolCall]:
    return [ToolCall(name=name, arguments=arguments) for name, arguments in items]


FIXER = Path(__file__).parent / "data" / "expectation_agents"


def lint_check(made: list[ToolCall]) -> tuple[bool, list[bool], str | None]:
    agent = load_agents([FIXER])["fixer"]
    assert agent.expectation is not None
    checked = check_episode(agent, agent.expectation.render({}), made)
    return checked.correct, [c.expected for c in checked.calls], checked.problem


def test_prefix_rule_checks_the_start_and_the_end_and_frees_the_middle() -> None:
    submit = ("submit_result", {"summary": "fixed"})
    fix = ("apply_fix", {"code": "F401", "line": 4})
    assert lint_check(calls(("run_linter", {}), fix, ("read_current_file", {}), submit)) == (
        True,
        [True, True, True, True],
        None,
    )
    # linting again after a write is not a repeat; reading twice without one is
    again = calls(("run_linter", {}), fix, ("run_linter", {}), submit)
    assert lint_check(again)[0] is True
    twice = calls(("run_linter", {}), fix, ("read_current_file", {}), ("read_current_file", {}))
    assert lint_check([*twice, *calls(submit)])[1] == [True, True, True, False, True]
    # the fix must come second; submitting at once is two wrong positions short
    correct, flags, problem = lint_check(calls(("run_linter", {}), submit))
    assert (correct, flags, problem) == (False, [True, False], "submit_result instead of apply_fix")
    # the episode must end with submit_result
    assert lint_check(calls(("run_linter", {}), fix, ("run_linter", {})))[1] == [True, True, False]
    # an argument the expectation does not name keeps the tool's default
    failed = ("submit_result", {"summary": "fixed", "status": "failed"})
    assert lint_check(calls(("run_linter", {}), fix, failed))[2] == (
        'submit_result status="failed", expected its default'
    )
    explicit = ("submit_result", {"summary": "fixed", "status": "success"})
    assert lint_check(calls(("run_linter", {}), fix, explicit))[0] is True
    assert lint_check([])[2] == "ended after 0 call(s), before run_linter, apply_fix, submit_result"


# --- the expectation in the YAML ---------------------------------------------------------


def test_expectation_templates_render_node_variables() -> None:
    expectation = Expectation.model_validate(
        {
            "calls": [
                {
                    "tool": "locate",
                    "arguments": {
                        "where": "{{ file_path }}:{{ qualname }}",
                        "kind": "{{ node_type | upper }}",
                        "style": "{{ options.style }}",
                        "line": 3,
                        "strict": True,
                        "note": "any",
                    },
                },
                {"tool": "echo", "arguments": {"text": "{{ node_name }}"}},
            ]
        }
    )
    variables = {
        "file_path": "pkg/mod.py",
        "qualname": "Box.open",
        "node_type": "method",
        "node_name": "any",
        "options": {"style": "numpy"},
    }
    first, second = expectation.render(variables)
    assert dict(first.arguments) == {
        "where": "pkg/mod.py:Box.open",
        "kind": "METHOD",
        "style": "numpy",
        "line": "3",
        "strict": "true",
        "note": None,
    }
    assert dict(second.arguments) == {"text": "any"}, "a node named 'any' is a value"
    with pytest.raises(AgentDefinitionError) as caught:
        expectation.render({"file_path": "x"})
    assert caught.value.code == "AGENT_012"


def agent_with_expectation(root: Path, expectation: Any) -> Path:
    """The harness agent copied to ``root/mine`` with its expectation replaced."""
    folder = root / "mine"
    shutil.copytree(BUNDLED_AGENTS_DIR / "harness", folder)
    data = yaml.safe_load((folder / "harness.yaml").read_text(encoding="utf-8"))
    data["name"] = "mine"
    data["expectation"] = expectation
    (folder / "harness.yaml").unlink()
    path = folder / "mine.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


SUBMIT = {"tool": "submit_result", "arguments": {"summary": "any"}}


@pytest.mark.parametrize(
    ("first", "last", "fragment", "hint"),
    [
        ({"tool": "ecko", "arguments": {"text": "x"}}, SUBMIT, "no tool 'ecko'", "'echo'"),
        (
            {"tool": "echo", "arguments": {"text": "x", "txt": "x"}},
            SUBMIT,
            "'txt' is not an input",
            "text",
        ),
        ({"tool": "echo"}, SUBMIT, "'text' is required by echo", "text: any"),
        ({"tool": "echo", "arguments": {"text": "{{ nodename }}"}}, SUBMIT, "nodename", "node_"),
        ({"tool": "echo", "arguments": {"text": "{{ x"}}, SUBMIT, "line 1", "Jinja2"),
        (SUBMIT, {"tool": "echo", "arguments": {"text": "x"}}, "ends with submit_result", "last"),
    ],
)
def test_expectation_problems_are_agent_014(
    tmp_path: Path, first: Any, last: Any, fragment: str, hint: str
) -> None:
    path = agent_with_expectation(tmp_path, {"match": "exact", "calls": [first, last]})
    check = check_agent(path)
    assert [problem.code for problem in check.problems] == ["AGENT_014"]
    problem = check.problems[0]
    assert fragment in problem.message and str(path) in problem.message
    assert hint in (problem.hint or "")


def test_expectation_schema_errors_are_agent_003(tmp_path: Path) -> None:
    path = agent_with_expectation(tmp_path, {"match": "loose", "calls": [SUBMIT]})
    problem = check_agent(path).problems[0]
    assert problem.code == "AGENT_003" and "expectation.match" in problem.message
    path = agent_with_expectation(tmp_path / "b", {"calls": [{"tol": "echo"}]})
    problems = check_agent(path).problems
    assert any("did you mean 'tool'" in (p.hint or "") for p in problems), problems


def test_every_bundled_agent_declares_an_expectation_ending_with_submit() -> None:
    agents: dict[str, SubagentDefinition] = load_agents()
    for name, agent in agents.items():
        assert agent.expectation is not None, name
        assert agent.expectation.calls[-1].tool == "submit_result", name
    assert agents["harness"].expectation is not None
    assert agents["harness"].expectation.match == "exact"


# --- the CLI shows both kinds of rate ----------------------------------------------------


def test_cli_reports_success_and_correct_call_rates(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def parrot(request: ModelRequest) -> Step:
        if tool_turns(request) == 0:
            return echo(ECHO_DESCRIPTION)
        return call("submit_result", summary="done")

    monkeypatch.setattr(
        "remora.model.create_client", lambda _config: ScriptedModel([parrot], repeat_last=True)
    )
    result = run_cli(["harness", str(PRICING), "-n", "1", "--format", "json"], capsys)
    assert result.code == 0, result.err
    stats = json.loads(result.out)["variants"][0]
    assert (stats["success_rate"], stats["correct_call_rate"], stats["submitted_rate"]) == (
        0.0,
        0.5,
        1.0,
    )
    result = run_cli(["harness", str(PRICING), "-n", "1"], capsys)
    assert result.code == 0, result.err
    assert "correct" in result.out and "submit" in result.out
    assert "expected: exact: echo(text={{ node_name }})" in result.out
    assert "not correct: echo text=" in result.out


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        ("I cannot call tools.", 1),  # never a valid call: the model is broken, not measured
        (call("submit_result", summary="gave up", status="failed"), 0),  # a measured failure
    ],
)
def test_cli_fails_only_when_no_episode_made_a_valid_call(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, reply: Step, code: int
) -> None:
    monkeypatch.setattr(
        "remora.model.create_client", lambda _config: ScriptedModel([reply], repeat_last=True)
    )
    result = run_cli(["harness", str(PRICING), "-n", "1"], capsys)
    assert result.code == code, result.err
    assert ("RUN_022" in result.err) == bool(code)


def test_options_follow_the_operation_that_runs_the_agent() -> None:
    config = RemoraConfig.model_validate(
        {
            "operations": {
                "lint": {"agent": "harness", "options": {"from": "lint"}},
                "echoes": {"agent": "lint", "options": {"from": "echoes"}},
            }
        }
    )
    agents = load_agents()
    assert operation_options(config, agents["lint"]) == {"from": "echoes"}
    assert operation_options(config, agents["harness"]) == {"from": "lint"}
