"""A config file or a .pym script that is a FIFO or a device is refused at once, not read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remora.config import read_config_file
from remora.errors import AgentDefinitionError, ConfigError
from remora.tools.pym import load_pym
from tests.support.timed import run_timed


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def test_a_config_file_that_is_a_fifo_is_config_001(tmp_path: Path) -> None:
    path = fifo(tmp_path / "remora.yaml")
    with pytest.raises(ConfigError) as raised:
        run_timed(lambda: read_config_file(path), limit=5.0)
    assert raised.value.code == "CONFIG_001"
    assert "not a regular file" in raised.value.message


def test_a_config_file_linked_to_dev_zero_is_config_001(tmp_path: Path) -> None:
    path = tmp_path / "remora.yaml"
    path.symlink_to("/dev/zero")
    with pytest.raises(ConfigError) as raised:
        run_timed(lambda: read_config_file(path), limit=5.0)
    assert raised.value.code == "CONFIG_001"


def test_a_tool_script_that_is_a_fifo_is_agent_006(tmp_path: Path) -> None:
    path = fifo(tmp_path / "probe.pym")
    with pytest.raises(AgentDefinitionError) as raised:
        run_timed(lambda: load_pym(path), limit=5.0)
    assert raised.value.code == "AGENT_006"
