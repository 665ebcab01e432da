"""fixture_verdict: a fixture set that shows only failures or only empty results says so.

Every case runs the host's own pipeline (doctest argument lists, observed in the sandbox,
written to the workspace) on a small project, the way a sample_data job does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from remora.operations.characterize.fixtures import class_name, shows_nothing
from remora.operations.characterize.steps import fixture_verdict
from remora.orchestration.runs import JobRecord
from remora.tools.capabilities import CapabilityContext
from tests.stores import capability_context, write_tree
from tests.support.agent_run import run_operation

MODULE = '''"""Functions whose fixtures show more or less of them."""


def parse(s):
    """Parse.

    >>> parse("a")
    >>> parse("b")
    >>> parse("")
    """
    raise ValueError(s)


def forget(items):
    """Forget them.

    >>> forget([1])
    >>> forget([])
    """
    items.clear()


def nothing(n):
    """Nothing much.

    >>> nothing(0)
    >>> nothing(1)
    """
    if n:
        return ()
    return ""


def half(n):
    """Half of n.

    >>> half(4)
    2
    >>> half(-1)
    """
    if n < 0:
        raise ValueError("negative")
    return n // 2


def sign(n):
    """Sign: None below zero.

    >>> sign(-1)
    >>> sign(0)
    """
    if n < 0:
        return None
    raise KeyError(n)


def shout(word):
    """Print it.

    >>> shout("hi")
    """
    print(word.upper())
'''

ERRORS = '''class ParserError(ValueError):
    """The text is not a date."""
'''

PARSER = '''"""A parser whose error class lives in a private submodule."""

from pkg._errors import ParserError


def parse_date(text):
    """Parse.

    >>> parse_date("noon")
    """
    raise ParserError(f"unknown string format: {text}")
'''

PATH = "pkg/mod.py"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_tree(
        tmp_path / "proj",
        {
            "pkg/__init__.py": "",
            PATH: MODULE,
            "pkg/_errors.py": ERRORS,
            "pkg/parser.py": PARSER,
        },
    )


@pytest.fixture
def ctx(root: Path) -> CapabilityContext:
    return capability_context(root)


def _fixtures(ctx: CapabilityContext, verdict: dict[str, Any]) -> list[dict[str, Any]]:
    data = json.loads(ctx.store.read(verdict["details"]["fixture_file"]))
    fixtures = data["fixtures"]
    assert isinstance(fixtures, list)
    return fixtures


def test_a_set_that_only_raises_is_partial(ctx: CapabilityContext) -> None:
    """Each fixture an expected ValueError: written, but not offered as a success."""
    verdict = fixture_verdict(ctx, PATH, "parse")
    total = verdict["details"]["fixtures"]
    assert verdict["status"] == "partial" and total >= 3
    assert verdict["summary"] == (
        f"all {total} fixtures of parse in fixtures/pkg/mod/parse.json raise (ValueError): "
        "they show how it fails, not how it is used"
    )
    assert verdict["details"]["raising"] == total
    assert verdict["details"]["raised_types"] == ["ValueError"]
    assert all(entry["raises"]["type"] == "ValueError" for entry in _fixtures(ctx, verdict))


def test_a_set_of_empty_results_is_partial(ctx: CapabilityContext) -> None:
    """None for a function that only mutates its argument: the fixtures show it runs."""
    verdict = fixture_verdict(ctx, PATH, "forget")
    total = verdict["details"]["fixtures"]
    assert verdict["status"] == "partial" and total >= 2
    assert verdict["summary"] == (
        f"all {total} fixtures of forget in fixtures/pkg/mod/forget.json return only empty "
        "values: they show that it runs, not what it gives"
    )
    assert verdict["details"]["empty"] == total and verdict["details"]["raising"] == 0
    assert [entry["returns"] for entry in _fixtures(ctx, verdict)] == [None] * total


def test_empty_values_written_as_python_are_empty_too(ctx: CapabilityContext) -> None:
    """``()`` is written as ``{"$python": "()"}``; it is as empty as ``''``."""
    verdict = fixture_verdict(ctx, PATH, "nothing")
    assert verdict["status"] == "partial"
    assert verdict["details"]["empty"] == verdict["details"]["fixtures"]
    assert {"$python": "()"} in [entry["returns"] for entry in _fixtures(ctx, verdict)]


def test_a_mixed_set_stays_a_success(ctx: CapabilityContext) -> None:
    """Results beside an exception: the usual summary."""
    verdict = fixture_verdict(ctx, PATH, "half")
    total = verdict["details"]["fixtures"]
    assert verdict["status"] == "success"
    assert verdict["summary"] == (
        f"{total} fixture(s) in fixtures/pkg/mod/half.json (1 raise an expected exception)"
    )


def test_raising_and_empty_together_say_both(ctx: CapabilityContext) -> None:
    """No fixture shows a result: one is None, the other raises."""
    verdict = fixture_verdict(ctx, PATH, "sign")
    total = verdict["details"]["fixtures"]
    assert verdict["status"] == "partial"
    assert 0 < verdict["details"]["empty"] < total
    assert verdict["summary"] == (
        f"all {total} fixtures of sign in fixtures/pkg/mod/sign.json raise (KeyError) or "
        "return only empty values: they show how it fails, not what it gives"
    )


def test_what_a_call_printed_is_not_empty(ctx: CapabilityContext) -> None:
    """A None result beside printed output shows what the call does."""
    verdict = fixture_verdict(ctx, PATH, "shout")
    assert verdict["status"] == "success" and verdict["details"]["empty"] == 0
    assert _fixtures(ctx, verdict)[0] == {
        "args": ["hi"],
        "kwargs": {},
        "returns": None,
        "stdout": "HI\n",
    }


def test_an_exception_is_named_as_a_reader_matches_it(root: Path, ctx: CapabilityContext) -> None:
    """``pkg._errors.ParserError`` raised through ``pkg.parser`` is written ``ParserError``,
    and the README's fixture reader, run on the written file, passes."""
    verdict = fixture_verdict(ctx, "pkg/parser.py", "parse_date")
    total = verdict["details"]["fixtures"]
    assert verdict["status"] == "partial"
    assert verdict["summary"] == (
        f"all {total} fixtures of parse_date in fixtures/pkg/parser/parse_date.json raise "
        "(ParserError): they show how it fails, not how it is used"
    )
    entries = _fixtures(ctx, verdict)
    assert entries[0]["raises"] == {
        "type": "ParserError",
        "message": "unknown string format: noon",
    }
    assert all(entry["raises"]["type"] == "ParserError" for entry in entries)
    written = verdict["details"]["fixture_file"]
    (root / written).parent.mkdir(parents=True)
    (root / written).write_bytes(ctx.store.read(written))
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    reader = readme.split("<!-- fixture-example -->\n```python\n", 1)[1].split("```", 1)[0]
    for old, new in (("inventory", "pkg"), ("pricing", "parser"), ("apply_discount", "parse_date")):
        reader = reader.replace(old, new)
    (root / "tests").mkdir()
    (root / "tests" / "test_reader.py").write_text(reader, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_reader.py"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and f"{total} passed" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("dotted", "name"),
    [
        ("dateutil.parser._parser.ParserError", "ParserError"),
        ("ValueError", "ValueError"),
        ("pkg.mod.Outer.Inner", "Inner"),
    ],
)
def test_class_name(dotted: str, name: str) -> None:
    """The last component, which ``type(exc).__name__`` gives a reader."""
    assert class_name(dotted) == name


@pytest.mark.parametrize(
    ("returns", "empty"),
    [
        (None, True),
        ("", True),
        ([], True),
        ({}, True),
        (0, True),
        (0.0, True),
        (False, True),
        ({"$python": "()"}, True),
        ({"$python": "set()"}, True),
        ({"$python": "(0,)"}, False),
        ({"$python": "Box(1)"}, False),
        ([None], False),
        ("0", False),
    ],
)
def test_shows_nothing(returns: object, empty: bool) -> None:
    """Empty values are falsy literals; a fixture without a written result is not one."""
    assert shows_nothing({"args": [], "kwargs": {}, "returns": returns}) is empty
    assert not shows_nothing({"args": [], "kwargs": {}, "returns": returns, "stdout": "x\n"})
    assert not shows_nothing({"args": [], "kwargs": {}, "returns_omitted": "an object"})
    assert not shows_nothing({"args": [], "kwargs": {}, "raises": {"type": "E", "message": ""}})


def test_a_partial_fixture_set_is_still_offered_for_review(root: Path) -> None:
    """The job ends ``partial`` with its file kept in the workspace, pending review."""
    outcome = run_operation(root, "sample_data", PATH, [], qualname="parse")
    assert outcome.result.status == "partial", outcome.result
    assert "raise (ValueError)" in outcome.result.summary
    assert "fixtures/pkg/mod/parse.json" in outcome.changed
    assert JobRecord.from_result(outcome.result).review == "pending"


def test_one_fixture_is_named_in_the_singular(monkeypatch: pytest.MonkeyPatch) -> None:
    """A set of one reads "the one fixture ... raises": a written report, fed to the verdict."""
    from remora.operations.characterize import steps

    report = {
        "ok": True,
        "path": "fixtures/pkg/mod/f.json",
        "fixtures": 1,
        "raising": 1,
        "raised_types": ["ParserError"],
        "empty": 0,
        "results_omitted": 0,
        "format": "json",
    }
    monkeypatch.setattr(steps, "fixtures_result", lambda *_: report)
    verdict = steps.fixture_verdict(None, PATH, "f")  # type: ignore[arg-type]
    assert verdict["summary"] == (
        "the one fixture of f in fixtures/pkg/mod/f.json raises (ParserError): it shows how "
        "it fails, not how it is used"
    )
    monkeypatch.setattr(steps, "fixtures_result", lambda *_: report | {"raising": 0, "empty": 1})
    assert steps.fixture_verdict(None, PATH, "f")["summary"] == (  # type: ignore[arg-type]
        "the one fixture of f in fixtures/pkg/mod/f.json returns only empty values: it shows "
        "that it runs, not what it gives"
    )
