"""No capability reaches outside the workspace root: '..', absolute paths, escaping symlinks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from remora.errors import RemoraError, WorkspaceError
from remora.tools.capabilities import CapabilityContext, bind_capabilities
from tests.stores import capability_context, write_tree

PathCall = Callable[[dict[str, Callable[..., Any]], str], Any]

PATH_CALLS: dict[str, PathCall] = {
    "read_lines": lambda caps, p: caps["read_lines"](path=p, start=1, end=1),
    "read_file": lambda caps, p: caps["read_file"](path=p),
    "write_file": lambda caps, p: caps["write_file"](path=p, content="owned"),
    "file_exists": lambda caps, p: caps["file_exists"](path=p),
    "list_dir": lambda caps, p: caps["list_dir"](path=p),
    "search_content": lambda caps, p: caps["search_content"](pattern="root", path=p),
    "node_source": lambda caps, p: caps["node_source"](path=p, qualname="f"),
    "ruff_check": lambda caps, p: caps["ruff_check"](path=p),
    "ruff_fix": lambda caps, p: caps["ruff_fix"](path=p, code="F401"),
    "pytest_run": lambda caps, p: caps["pytest_run"](paths=[p]),
    "docstring_get": lambda caps, p: caps["docstring_get"](path=p, qualname="f"),
    "docstring_set": lambda caps, p: caps["docstring_set"](path=p, qualname="f", summary="S."),
    "docstring_check": lambda caps, p: caps["docstring_check"](path=p, qualname="f"),
    "lint_issues": lambda caps, p: caps["lint_issues"](path=p),
    "lint_fix": lambda caps, p: caps["lint_fix"](path=p, code="F401", line=1),
    "lint_verify": lambda caps, p: caps["lint_verify"](path=p),
    "lint_fix_all": lambda caps, p: caps["lint_fix_all"](path=p),
    "lint_result": lambda caps, p: caps["lint_result"](path=p),
    "lint_residue": lambda caps, p: caps["lint_residue"](path=p),
    "lint_rewrite": lambda caps, p: caps["lint_rewrite"](path=p, code="E711", line=1, text="x"),
    "lint_ask": lambda caps, p: caps["lint_ask"](path=p, action=""),
    "call_function": lambda caps, p: caps["call_function"](
        module_path=p, qualname="f", args_json="[]"
    ),
    "characterizable": lambda caps, p: caps["characterizable"](path=p, qualname="f"),
    "signature_inputs": lambda caps, p: caps["signature_inputs"](path=p, qualname="f"),
    "propose_cases": lambda caps, p: caps["propose_cases"](path=p, qualname="f", cases=["1"]),
    "observe_cases": lambda caps, p: caps["observe_cases"](path=p, qualname="f"),
    "existing_tests": lambda caps, p: caps["existing_tests"](path=p, qualname="f"),
    "write_characterization_tests": lambda caps, p: caps["write_characterization_tests"](
        path=p, qualname="f"
    ),
    "run_characterization_tests": lambda caps, p: caps["run_characterization_tests"](
        path=p, qualname="f"
    ),
    "characterization_result": lambda caps, p: caps["characterization_result"](
        path=p, qualname="f"
    ),
    "write_custom_tests": lambda caps, p: caps["write_custom_tests"](
        path=p, qualname="f", content="def test_x():\n    pass\n"
    ),
    "write_fixtures": lambda caps, p: caps["write_fixtures"](path=p, qualname="f"),
    "fixtures_result": lambda caps, p: caps["fixtures_result"](path=p, qualname="f"),
    "docstring_evidence": lambda caps, p: caps["docstring_evidence"](path=p, qualname="f"),
    "docstring_write": lambda caps, p: caps["docstring_write"](
        path=p, qualname="f", summary="Return one."
    ),
    "docstring_describe": lambda caps, p: caps["docstring_describe"](
        path=p, qualname="f", item="return", text="Always the number one."
    ),
    "docstring_screen": lambda caps, p: caps["docstring_screen"](
        path=p, qualname="f", summary="Return one."
    ),
    "docstring_next": lambda caps, p: caps["docstring_next"](path=p, qualname="f"),
    "docstring_verdict": lambda caps, p: caps["docstring_verdict"](path=p, qualname="f"),
    "docstring_host_only": lambda caps, p: caps["docstring_host_only"](path=p, qualname="f"),
    "coverage_evidence": lambda caps, p: caps["coverage_evidence"](path=p, qualname="f"),
    "inputs_evidence": lambda caps, p: caps["inputs_evidence"](path=p, qualname="f"),
    "test_verdict": lambda caps, p: caps["test_verdict"](path=p, qualname="f"),
    "fixture_verdict": lambda caps, p: caps["fixture_verdict"](path=p, qualname="f"),
}
ESCAPES = ["../../etc/passwd", "/etc/passwd", "pkg/../../outside.py", "..", "a\x00b"]


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    write_tree(tmp_path, {"outside.py": "import os\n\ndef f():\n    return 1\n"})
    root = write_tree(tmp_path / "proj", {"pkg/mod.py": "def f():\n    return 1\n"})
    (root / "escape").symlink_to(tmp_path, target_is_directory=True)
    (root / "escape.py").symlink_to(tmp_path / "outside.py")
    return capability_context(root)


def test_every_path_capability_is_covered() -> None:
    from remora.operations import installed_operations

    takes_path = {
        name
        for name, cap in installed_operations().capabilities.items()
        if {"path", "paths", "module_path"} & set(cap.signature.parameters)
    }
    assert takes_path == set(PATH_CALLS)


@pytest.mark.parametrize("name", sorted(PATH_CALLS))
@pytest.mark.parametrize("bad", ESCAPES)
def test_escaping_paths_fail_cleanly(ctx: CapabilityContext, name: str, bad: str) -> None:
    caps = bind_capabilities(ctx)
    with pytest.raises(WorkspaceError) as info:
        PATH_CALLS[name](caps, bad)
    assert info.value.code == "WS_001"
    assert not (ctx.store.root.parent / "owned").exists()
    assert ctx.store.changed_paths() == []


@pytest.mark.parametrize("name", sorted(PATH_CALLS))
@pytest.mark.parametrize("bad", ["escape/outside.py", "escape.py"])
def test_symlinks_leaving_the_root_fail_cleanly(
    ctx: CapabilityContext, name: str, bad: str
) -> None:
    caps = bind_capabilities(ctx)
    with pytest.raises(RemoraError) as info:
        PATH_CALLS[name](caps, bad)
    assert info.value.code == "WS_001"
    assert (ctx.store.root.parent / "outside.py").read_text().startswith("import os")


def test_walking_the_root_skips_escaping_symlinks(ctx: CapabilityContext) -> None:
    caps = bind_capabilities(ctx)
    found = caps["search_content"](pattern="return|import")
    assert {m["path"] for m in found["matches"]} == {"pkg/mod.py"}
    lint = caps["ruff_check"](path="", select=["F401"])
    assert lint["issues"] == []
