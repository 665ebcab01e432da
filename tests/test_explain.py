"""``remora explain CODE`` as users run it (a real subprocess), and the code registry it
reads: every code Remora's source raises has an entry, so the two cannot drift apart."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from remora.error_codes import PACKAGE_ROOT, lookup, registry

REPO = Path(__file__).resolve().parents[1]
_CODE_LITERAL = re.compile(r"""["']([A-Z]+_\d{3})["']""")


def explain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remora", "explain", *args],
        cwd=REPO,
        env={**os.environ, "COLUMNS": "300"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def flat(text: str) -> str:
    return " ".join(text.split())


def test_a_lint_rule_says_what_remora_does_and_what_to_do() -> None:
    done = explain("b904")
    assert done.returncode == 0, done.stderr
    out = flat(done.stdout)
    assert out.startswith("B904 raise-without-from-inside-except (flake8-bugbear):")
    assert "in Remora's pinned rule set" in out
    assert "Remora's own rewrite" in out
    # the reasons the rewrite refuses a site, read from its source
    assert "the except clause has no 'as' name to chain from; add one or use 'from None'" in out
    assert "left for you" in out and "What to do" in out
    # ruff's own description, from the pinned ruff
    assert "Why is this bad?" in out and "raise RuntimeError" in out


def test_a_rule_ruff_fixes_and_one_outside_the_rule_set() -> None:
    fixed = flat(explain("F541").stdout)
    assert (
        "ruff always has a fix" in fixed
        and "Nothing by hand" in fixed
        and "in Remora's pinned rule set" in fixed
    )
    outside = explain("--format", "json", "D100")
    data = json.loads(outside.stdout)
    assert data["in_rule_set"] is False and data["handling"] == "not_selected"
    assert "operations.lint.options.select" in data["steps"][0]
    f401 = json.loads(explain("F401", "-f", "json").stdout)
    assert any("docstring example" in step for step in f401["steps"])
    assert any("never asked of the model" in step for step in f401["steps"])


def test_a_remora_code_from_where_it_is_raised_and_documented() -> None:
    done = explain("config_005")
    assert done.returncode == 0, done.stderr
    out = flat(done.stdout)
    assert out.startswith("CONFIG_005: unknown key")
    assert "ConfigError" in out and "remora exits 2" in out
    assert "unknown config key '{key}' (from {origin})" in out
    assert "remora/config.py:" in out
    data = json.loads(explain("TOOL_303", "--format", "json").stdout)
    assert data["meaning"] == "no fix Remora may apply"
    assert "leave it for a person; fix another issue or submit" in data["hints"]
    assert data["exit_code"] == 1 and data["error_class"] == "ToolError"


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("CONFIG_055", "did you mean CONFIG_005"),
        ("XYZ999", "a lint rule such as F401"),
        ("hello", "a Remora error code such as CONFIG_005"),
    ],
)
def test_an_unknown_code_is_a_usage_error_with_a_hint(code: str, said: str) -> None:
    done = explain(code)
    assert done.returncode == 2
    err = flat(done.stderr)
    assert err.startswith(f"CLI_001: {code!r} is neither an error code Remora raises")
    assert said in err
    assert "Traceback" not in done.stderr


def test_sarif_is_no_format_of_explain() -> None:
    done = explain("B904", "--format", "sarif")
    assert done.returncode == 2


def source_codes() -> dict[str, str]:
    """Every code literal in the package's source, with a file that has it."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        for code in _CODE_LITERAL.findall(path.read_text(encoding="utf-8")):
            found.setdefault(code, str(path.relative_to(PACKAGE_ROOT)))
    return found


def test_every_code_in_the_source_has_an_entry_with_a_meaning() -> None:
    known = registry()
    codes = source_codes()
    assert len(codes) > 100
    missing = {code: where for code, where in codes.items() if code not in known}
    assert not missing, f"codes raised but not in the registry: {missing}"
    unexplained = sorted(code for code in codes if not known[code].meaning)
    assert not unexplained, f"codes with neither documentation nor a message: {unexplained}"


def test_every_code_a_docs_table_lists_is_one_the_source_knows() -> None:
    known = {code for code, entry in registry().items() if entry.raised}
    source = set(source_codes())
    for page in sorted((REPO / "docs").glob("*.md")):
        listed = re.findall(r"^\|\s*`?([A-Z]+_\d{3})`?\s*\|", page.read_text(), re.MULTILINE)
        stale = sorted(set(listed) - known - source)
        assert not stale, f"{page.name} lists codes Remora never raises: {stale}"


def test_lookup_reads_only_what_it_needs_and_agrees_with_the_registry() -> None:
    for code in ("WS_005", "AGENT_017", "DISC_104", "MODEL_002", "TOOL_601", "CLI_001"):
        entry = lookup(code.lower())
        assert entry is not None and entry.meaning, code
        assert entry.meaning == registry()[code].meaning
    assert lookup("WS_999") is None and lookup("B904") is None
