"""Hostile config inputs end as coded CONFIG errors, quickly: YAML bombs, broken TOML, loops."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from remora.config import (
    YAML_ALIAS_EXPANSION_LIMIT,
    find_config_file,
    load_config,
    parse_scalar,
)
from remora.errors import ConfigError
from tests.support.cli_process import run_remora

CODED_LINE = re.compile(r"^CONFIG_\d{3}: .+ \(.+\)$", re.MULTILINE)


def billion_laughs(levels: int = 9) -> str:
    """The classic bomb: each level is nine aliases of the one before (9**levels leaves).

    It sits in ``operations.lint.options`` (a free-form mapping) so the config is otherwise
    valid; before the bound, merging and provenance walked every expanded leaf.
    """
    lines = ["operations:", "  lint:", "    options:"]
    lines.append("      a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]")
    for level in range(1, levels):
        lines.append(f"      a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def test_bomb_is_small_on_disk() -> None:
    assert len(billion_laughs().encode()) < 600


def test_yaml_bomb_is_refused_fast(tmp_path: Path) -> None:
    (tmp_path / "remora.yaml").write_text(billion_laughs(), encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    elapsed = time.perf_counter() - started
    assert elapsed < 5, elapsed
    assert caught.value.code == "CONFIG_002"
    assert str(tmp_path / "remora.yaml") in caught.value.message
    assert "alias" in caught.value.message
    assert str(YAML_ALIAS_EXPANSION_LIMIT) in (caught.value.hint or "")


def test_self_referencing_alias_is_refused(tmp_path: Path) -> None:
    (tmp_path / "remora.yaml").write_text("runner: &r\n  x: *r\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    assert caught.value.code == "CONFIG_002"
    assert "refers to itself" in caught.value.message


def test_modest_anchors_still_work(tmp_path: Path) -> None:
    (tmp_path / "remora.yaml").write_text(
        "operations:\n  lint: &off\n    enabled: false\n  test: *off\n", encoding="utf-8"
    )
    config = load_config(tmp_path, environ={}).config
    assert config.operations["lint"].enabled is False
    assert config.operations["test"].enabled is False


def test_bomb_in_an_environment_value_stays_a_string() -> None:
    flow = "[" + ", ".join(["&a [x, x, x, x, x, x, x, x, x, x]"] + ["*a"] * 2000) + "]"
    started = time.perf_counter()
    assert parse_scalar(flow) == flow
    assert time.perf_counter() - started < 5


def test_deeply_nested_yaml_is_a_coded_error(tmp_path: Path) -> None:
    (tmp_path / "remora.yaml").write_text("runner: " + "[" * 50_000, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    assert caught.value.code == "CONFIG_002"


def test_unparseable_pyproject_is_reported(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.remora\nrunner = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        find_config_file(tmp_path)
    assert caught.value.code == "CONFIG_002"
    assert str(pyproject) in caught.value.message
    with pytest.raises(ConfigError):
        load_config(tmp_path / "pkg", environ={})


def test_non_utf8_pyproject_is_reported(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b'[project]\nname = "\xff"\n')
    with pytest.raises(ConfigError) as caught:
        find_config_file(tmp_path)
    assert caught.value.code == "CONFIG_002"


def test_pyproject_without_tool_remora_is_still_skipped(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    found = find_config_file(tmp_path / "pkg")
    assert found is None or found != tmp_path / "pyproject.toml"


def test_remora_yaml_beside_a_broken_pyproject_wins(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.remora\n", encoding="utf-8")
    (tmp_path / "remora.yaml").write_text("runner:\n  max_turns: 3\n", encoding="utf-8")
    assert find_config_file(tmp_path) == tmp_path / "remora.yaml"


def test_symlink_loop_target_is_a_coded_error(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(ConfigError) as caught:
        find_config_file(tmp_path / "a")
    assert caught.value.code == "CONFIG_001"
    assert "symbolic link loop" in caught.value.message


@pytest.mark.parametrize("command", ["discover", "config", "harness"])
def test_cli_on_a_symlink_loop_prints_a_coded_line(tmp_path: Path, command: str) -> None:
    loop = tmp_path / "loop"
    loop.mkdir()
    (loop / "a").symlink_to(loop / "b")
    (loop / "b").symlink_to(loop / "a")
    completed = run_remora(command, "loop/a", cwd=tmp_path, timeout=60)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 2, output
    assert "Traceback" not in output
    assert CODED_LINE.search(output), output
    assert "CONFIG_001" in output


def test_cli_reports_a_broken_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.remora\n", encoding="utf-8")
    completed = run_remora("config", ".", cwd=tmp_path, timeout=60)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 2, output
    assert "Traceback" not in output
    assert "CONFIG_002" in output
    assert "pyproject.toml" in output
    assert CODED_LINE.search(output), output


def test_cli_refuses_a_yaml_bomb_fast(tmp_path: Path) -> None:
    (tmp_path / "remora.yaml").write_text(billion_laughs(), encoding="utf-8")
    started = time.perf_counter()
    completed = run_remora("config", ".", cwd=tmp_path, timeout=60)
    elapsed = time.perf_counter() - started
    output = completed.stdout + completed.stderr
    assert completed.returncode == 2, output
    assert "CONFIG_002" in output
    assert elapsed < 10, elapsed
