"""``remora list-agents`` and ``remora validate-agents`` as a user runs them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from remora.definitions import BUNDLED_AGENTS_DIR
from tests.cli_helpers import run_cli


def user_agents(root: Path, *, broken: bool = False) -> Path:
    """A user agent folder ``root/agents/mine`` copied from the harness."""
    folder = root / "agents" / "mine"
    shutil.copytree(BUNDLED_AGENTS_DIR / "harness", folder)
    text = (
        (folder / "harness.yaml").read_text(encoding="utf-8").replace("name: harness", "name: mine")
    )
    (folder / "harness.yaml").unlink()
    (folder / "mine.yaml").write_text(text, encoding="utf-8")
    if broken:
        (folder / "tools" / "echo.pym").write_text("import os\nos.getcwd()\n", encoding="utf-8")
    return root / "agents"


def test_list_agents_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(["list-agents", "--format", "json"], capsys)
    assert result.code == 0, result.err
    rows = {row["name"]: row for row in json.loads(result.out)}
    harness = rows["harness"]
    assert harness["ok"] is True
    assert harness["source"] == "bundled"
    assert harness["applies_to"] == ["file", "class", "function", "method"]
    assert [(t["name"], t["effect"]) for t in harness["tools"]] == [
        ("echo", "read"),
        ("submit_result", "terminal"),
    ]
    assert harness["adapter"] is None
    assert harness["problems"] == []


def test_list_agents_table_shows_user_agents_and_problems(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    agents = user_agents(tmp_path, broken=True)
    result = run_cli(["--set", f"agents.dirs=[{agents}]", "list-agents"], capsys)
    assert result.code == 0, result.err
    assert "harness" in result.out and "docstring" in result.out
    assert "echo (read)" in result.out
    assert "mine" in result.out
    assert "1 problem(s)" in result.out


def test_list_agents_marks_shadowed_bundled_agent(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "agents" / "harness"
    shutil.copytree(BUNDLED_AGENTS_DIR / "harness", folder)
    result = run_cli(
        ["--set", f"agents.dirs=[{tmp_path / 'agents'}]", "list-agents", "-f", "json"], capsys
    )
    rows = [row for row in json.loads(result.out) if row["name"] == "harness"]
    assert [(row["name"], row["source"], row["shadowed_by"]) for row in rows] == [
        ("harness", "bundled", str(tmp_path / "agents")),
        ("harness", str(tmp_path / "agents"), None),
    ]


def test_validate_bundled_agents_passes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(["validate-agents"], capsys)
    assert result.code == 0, result.out + result.err
    assert "ok   harness" in result.out
    assert "all valid" in result.out


def test_validate_dir_with_a_broken_agent_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    agents = user_agents(tmp_path, broken=True)
    result = run_cli(["validate-agents", str(agents)], capsys)
    assert result.code == 1
    assert "FAIL mine" in result.out
    assert "AGENT_007" in result.out
    assert "echo.pym:1: PYM005 import of 'os' is not allowed" in result.out
    assert "1 agent(s) checked, 1 with problems" in result.out
    assert "Traceback" not in result.out + result.err


def test_validate_good_user_dir_passes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    agents = user_agents(tmp_path)
    result = run_cli(["validate-agents", str(agents / "mine")], capsys)
    assert result.code == 0, result.out
    assert "ok   mine" in result.out


def test_validate_missing_dir_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    result = run_cli(["validate-agents", str(tmp_path / "nowhere")], capsys)
    assert result.code == 1
    assert "AGENT_001" in result.out
    assert "does not exist" in result.out


def test_validate_configured_dirs_are_included(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents = user_agents(tmp_path, broken=True)
    (tmp_path / "remora.yaml").write_text(f"agents:\n  dirs: [{agents}]\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run_cli(["validate-agents"], capsys)
    assert result.code == 1
    assert "ok   harness" in result.out
    assert "FAIL mine" in result.out


@pytest.mark.parametrize("command", ["list-agents", "validate-agents"])
def test_help_teaches_with_an_example(capsys: pytest.CaptureFixture[str], command: str) -> None:
    result = run_cli([command, "--help"], capsys)
    assert result.code == 0
    assert f"Example: remora {command}" in result.out
