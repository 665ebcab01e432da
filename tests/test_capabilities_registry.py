"""The capability registry: names, signatures without ctx, binding, unknown names, and
nothing registered by importing a module."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from remora.errors import ToolError
from remora.operations import installed_operations
from remora.tools.capabilities import TOOLKIT, bind_capabilities, capabilities_of, capability
from tests.stores import capability_context, write_tree

CAPABILITIES = installed_operations().capabilities
EXPECTED = {
    "read_lines",
    "read_file",
    "write_file",
    "file_exists",
    "list_dir",
    "search_content",
    "node_source",
    "ruff_check",
    "ruff_fix",
    "pytest_run",
    "python_signature",
    "docstring_get",
    "docstring_set",
    "docstring_check",
    "docstring_summary_check",
    "lint_issues",
    "lint_fix",
    "lint_fix_all",
    "lint_verify",
    "lint_result",
    "lint_residue",
    "lint_rewrite",
    "lint_ask",
    "call_function",
    "characterizable",
    "signature_inputs",
    "propose_cases",
    "observe_cases",
    "existing_tests",
    "write_characterization_tests",
    "run_characterization_tests",
    "characterization_result",
    "write_custom_tests",
    "write_fixtures",
    "fixtures_result",
    "docstring_evidence",
    "docstring_write",
    "docstring_screen",
    "docstring_describe",
    "docstring_next",
    "docstring_ask",
    "docstring_verdict",
    "docstring_host_only",
    "coverage_evidence",
    "inputs_evidence",
    "test_verdict",
    "fixture_verdict",
}


def test_every_capability_is_registered_with_signature_and_doc() -> None:
    assert set(CAPABILITIES) == EXPECTED
    for name, cap in CAPABILITIES.items():
        assert cap.name == name
        assert "ctx" not in cap.signature.parameters
        assert cap.doc and not cap.doc.startswith(" ")
        for param in cap.signature.parameters.values():
            assert param.annotation is not inspect.Parameter.empty, (name, param.name)
            assert not isinstance(param.annotation, str), (name, param.name)


def test_signatures_match_the_documented_calls() -> None:
    params = {name: list(cap.signature.parameters) for name, cap in CAPABILITIES.items()}
    assert params["ruff_fix"] == ["path", "code", "line", "unsafe"]
    assert params["docstring_set"][:4] == ["path", "qualname", "summary", "style"]
    assert params["call_function"] == ["module_path", "qualname", "args_json", "timeout"]
    assert CAPABILITIES["list_dir"].signature.parameters["path"].default == ""


def test_bind_all_and_selected(tmp_path: Path) -> None:
    ctx = capability_context(write_tree(tmp_path, {"a.txt": "hello"}))
    everything = bind_capabilities(ctx)
    assert set(everything) == EXPECTED
    chosen = bind_capabilities(ctx, ["read_file", "file_exists"])
    assert set(chosen) == {"read_file", "file_exists"}
    assert chosen["read_file"](path="a.txt") == "hello"
    assert chosen["file_exists"](path="b.txt") is False
    assert inspect.signature(chosen["read_file"]) == CAPABILITIES["read_file"].signature


def test_unknown_capability_suggests_close_name(tmp_path: Path) -> None:
    ctx = capability_context(tmp_path)
    with pytest.raises(ToolError) as info:
        bind_capabilities(ctx, ["read_fil"])
    assert info.value.code == "TOOL_100"
    assert "read_file" in (info.value.hint or "")


def test_results_are_json_values_and_arguments_are_coerced(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {"m.py": "def f(a: int = 1) -> int:\n    return a\n"})
    caps = bind_capabilities(capability_context(root, {"file_path": "m.py", "qualname": "f"}))
    results = [
        caps["read_file"](path="m.py"),
        caps["list_dir"](),
        caps["file_exists"](path="m.py"),
        caps["search_content"](pattern="return", max_results="5"),
        caps["node_source"](),
        caps["python_signature"](source="def f(a=1): ...", qualname="f"),
        caps["docstring_get"](path="m.py", qualname="f"),
        caps["ruff_check"](path="m.py"),
    ]
    for result in results:
        assert json.loads(json.dumps(result)) == result
    bad_arguments: list[tuple[str, dict[str, Any]]] = [
        ("search_content", {"pattern": "x", "max_results": "many"}),
        ("write_file", {"path": "m.py", "content": b"bytes"}),
        ("ruff_fix", {"path": "m.py", "code": "F401", "line": "two"}),
        ("pytest_run", {"paths": [], "timeout": -1}),
        ("call_function", {"module_path": "m.py", "qualname": "f", "timeout": "soon"}),
    ]
    for name, kwargs in bad_arguments:
        with pytest.raises(ToolError) as info:
            caps[name](**kwargs)
        assert info.value.code == "TOOL_104", name


def test_marking_registers_nothing_and_modules_are_listed_explicitly() -> None:
    import types

    module = types.ModuleType("user_caps")

    def shout(ctx: Any, text: str) -> str:
        """Upper-case ``text``."""
        return text.upper()

    shout.__module__ = "user_caps"
    module.shout = capability(shout)  # type: ignore[attr-defined]
    module.read_file = TOOLKIT["read_file"].func  # imported, not defined here: not listed
    assert "shout" not in installed_operations().capabilities
    assert list(capabilities_of(module)) == ["shout"]


def test_toolkit_is_generic_and_operations_bring_their_own() -> None:
    assert "read_file" in TOOLKIT and "lint_fix" not in TOOLKIT
    lint = installed_operations().get("lint")
    assert set(lint.capabilities) == {
        "lint_issues",
        "lint_fix",
        "lint_fix_all",
        "lint_verify",
        "lint_result",
        "lint_residue",
        "lint_rewrite",
        "lint_ask",
    }
