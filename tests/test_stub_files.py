"""Stub files are typing information, not nodes; the skip hints name settings that exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.config import RemoraConfig
from remora.discovery import discover
from remora.errors import DiscoveryError
from remora.operations import installed_operations
from remora.operations.characterize import SampleDataOptions
from remora.operations.characterize import TestOptions as CharacterizationOptions
from tests.stores import write_tree


def test_a_directory_walk_leaves_stub_files_out(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "pkg",
        {
            "pyproject.toml": "[project]\nname = 'p'\n",
            "more.py": "def f(x):\n    return x\n",
            "more.pyi": "def f(x: int) -> int: ...\n",
        },
    )
    found = discover([root], RemoraConfig().discovery, root=root)
    assert {node.file_path for node in found.nodes} == {"more.py"}
    assert not found.problems


def test_a_stub_file_named_explicitly_is_refused_with_why(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "pkg", {"more.pyi": "def f(x: int) -> int: ...\n"})
    with pytest.raises(DiscoveryError) as raised:
        discover([root / "more.pyi"], RemoraConfig().discovery, root=root)
    assert raised.value.code == "DISC_002"
    assert "stub file" in raised.value.message


@pytest.mark.parametrize("model", [CharacterizationOptions, SampleDataOptions])
def test_the_skip_hints_name_options_that_exist(
    model: type[CharacterizationOptions] | type[SampleDataOptions],
) -> None:
    options = model(include_private=True, include_tests=True)
    assert options.include_private and options.include_tests
    config = RemoraConfig(operations=installed_operations().default_configs())
    assert config.operations["test"].options["include_private"] is False
