"""Config nested thousands deep is a coded error, not a ``RecursionError`` (issue 27).

tomllib recurses once per nesting level, and the merge, flattening and validation of the
layers recurse too: a 3,000-deep ``pyproject.toml`` ended in a traceback, and a
700-deep ``[tool.remora.model.a.a...]`` table parsed but broke the merge.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.config import find_config_file, load_config
from remora.errors import ConfigError
from tests.support.cli_process import run_remora

DEPTH = 3_000
NESTED = {
    "pyproject_array": ("pyproject.toml", "[tool.remora]\nx = " + "[" * DEPTH + "]" * DEPTH),
    "pyproject_inline_table": (
        "pyproject.toml",
        "[tool.remora]\nmodel = " + "{a=" * DEPTH + "1" + "}" * DEPTH,
    ),
    "pyproject_dotted_table": ("pyproject.toml", "[tool.remora.model" + ".a" * 700 + "]\nb = 1"),
}


@pytest.mark.parametrize("name", sorted(NESTED))
def test_deep_nesting_is_config_002(tmp_path: Path, name: str) -> None:
    file_name, text = NESTED[name]
    (tmp_path / file_name).write_text(text + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    assert caught.value.code == "CONFIG_002"
    assert file_name in caught.value.message
    assert "nested" in caught.value.message


def test_a_deep_pyproject_on_the_way_up_is_config_002(tmp_path: Path) -> None:
    """The upward search parses every pyproject.toml it passes, with or without [tool.remora]."""
    (tmp_path / "pyproject.toml").write_text("x = " + "[" * DEPTH + "]" * DEPTH + "\n")
    with pytest.raises(ConfigError) as caught:
        find_config_file(tmp_path)
    assert caught.value.code == "CONFIG_002"


def test_a_deep_environment_key_is_config_004_and_ordinary_nesting_loads(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(None, environ={"REMORA_" + "__".join(["A"] * DEPTH): "1"})
    assert caught.value.code == "CONFIG_004"
    (tmp_path / "pyproject.toml").write_text(
        "[tool.remora.operations.lint.options]\nrules = [[['E', 'F']]]\n", encoding="utf-8"
    )
    loaded = load_config(tmp_path, environ={"REMORA_RUNNER__MAX_TURNS": "3"})
    assert loaded.config.operations["lint"].options["rules"] == [[["E", "F"]]]


def test_the_cli_prints_a_coded_line_for_a_deep_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.remora]\nx = " + "[" * DEPTH + "]" * DEPTH + "\n", encoding="utf-8"
    )
    done = run_remora("config", ".", cwd=tmp_path, timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output and "RecursionError" not in output
    assert "CONFIG_002:" in output and "nested too deeply" in output
