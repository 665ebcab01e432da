"""`remora discover` and `remora config` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cli_helpers import run_cli

SAMPLE = Path(__file__).parent.parent / "examples" / "sample_project"


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(["--help"], capsys)
    assert result.code == 0
    assert "discover" in result.out and "config" in result.out


def test_discover_table(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(["discover", str(SAMPLE)], capsys)
    assert result.code == 0
    assert "Warehouse" in result.out
    assert "inventory/pricing.py" in result.out


def test_discover_json_is_machine_readable(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(["discover", str(SAMPLE), "--format", "json"], capsys)
    assert result.code == 0
    data = json.loads(result.out)
    by_name = {node["qualname"]: node for node in data["nodes"]}
    remove = by_name["Warehouse.remove"]
    assert remove["node_type"] == "method"
    assert remove["file_path"] == "inventory/models.py"
    assert remove["text"].lstrip().startswith("def remove(self, sku, quantity):")
    assert data["problems"] == []


def test_discover_reports_problems_but_succeeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "broken.py").write_text("def ok():\n    pass\n\ndef bad(:\n")
    result = run_cli(["discover", str(tmp_path)], capsys)
    assert result.code == 0
    assert "DISC_101" in result.out
    assert "broken.py:4" in result.out


def test_discover_missing_path_is_a_clean_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(["discover", str(tmp_path / "nope")], capsys)
    assert result.code == 2
    assert result.err.startswith("DISC_001: ")
    assert "(check the path)" in result.err
    assert "Traceback" not in result.err


def test_config_yaml_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "remora.yaml").write_text("runner:\n  max_turns: 4\n")
    as_yaml = yaml.safe_load(run_cli(["config", str(tmp_path)], capsys).out)
    assert as_yaml["runner"]["max_turns"] == 4
    as_json = json.loads(run_cli(["config", str(tmp_path), "-f", "json"], capsys).out)
    assert as_json == as_yaml


def test_config_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "remora.yaml").write_text("runner:\n  max_turns: 4\n")
    result = run_cli(
        ["--set", "watch.debounce_ms=5", "config", str(tmp_path), "--sources", "-f", "json"],
        capsys,
    )
    sources = json.loads(result.out)
    assert sources["runner.max_turns"].endswith("remora.yaml")
    assert sources["watch.debounce_ms"] == "flag"
    assert sources["runner.temperature"] == "default"
    table = run_cli(["config", str(tmp_path), "--sources"], capsys)
    assert "runner.max_turns" in table.out and "flag" not in table.out


def test_bad_config_exits_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "remora.yaml").write_text("runner:\n  max_turns: [\n")
    result = run_cli(["config", str(tmp_path)], capsys)
    assert result.code == 2
    assert result.err.startswith("CONFIG_002: ")
    assert "Traceback" not in result.err


def test_bad_set_flag(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    result = run_cli(["--set", "runner.max_turns", "config", str(tmp_path)], capsys)
    assert result.code == 2
    assert result.err.startswith("CONFIG_004: ")


def test_env_config_reaches_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMORA_RUNNER__CONCURRENCY", "3")
    data = json.loads(run_cli(["config", str(tmp_path), "-f", "json"], capsys).out)
    assert data["runner"]["concurrency"] == 3


def test_python_dash_m_remora_works() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "remora", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0
    assert completed.stdout.startswith("remora ")


def test_read_only_commands_leave_nothing_in_the_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    commands = [
        ["runs"],
        ["accept", "--all"],
        ["reject", "--all"],
        ["diff", "abc"],
        ["undo", "abc"],
        ["discover", str(tmp_path)],
        ["config", str(tmp_path)],
    ]
    for command in commands:
        run_cli(
            [*command, *(["--project", str(tmp_path)] if command[0] in REVIEWING else [])], capsys
        )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.py"]


REVIEWING = {"runs", "accept", "reject", "diff", "undo"}
