"""Hostile inputs to discovery and to the capabilities that read project files (issue 14).

Pathological sources made tree-sitter's parse and query cost grow quadratically (100 KB of
``(`` took 44 s, 80 KB of trailing ``#`` lines 35 s); now each file has a time budget,
``discovery.parse_timeout``, and running past it is DISC_108 with the file node kept. Problem
lines read ``CODE: path: message (hint)``; a syntax error keeps the file node; skipped files
(binary, undecodable, too large, unreadable) are counted alike; and a FIFO or an over-large
file handed to a capability is a coded error at once. Every test bounds its time and checks
that the project's bytes are unchanged.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from remora.config import DiscoveryConfig, ToolsConfig
from remora.discovery import DiscoveryResult, discover
from remora.discovery.models import PROBLEM_HINTS, DiscoveryProblem
from remora.discovery.parser import load_query_pack, parse_source
from remora.errors import DiscoveryError, ToolError
from remora.operations.characterize.characterization import characterization_result, existing_tests
from remora.operations.characterize.inputs import characterizable, propose_cases, signature_inputs
from remora.operations.docstring.check import docstring_check
from remora.operations.docstring.docstrings import docstring_get, docstring_set
from remora.operations.lint.capabilities import lint_fix, lint_issues, lint_verify
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.files import node_source
from remora.tools.capabilities.store_io import read_source, read_text, scan_text
from remora.workspace import WorkspaceManager
from tests.stores import capability_context, write_tree
from tests.support.cli_process import run_remora
from tests.support.timed import run_timed

PACK = load_query_pack(("core",))
PROBLEM_LINE = re.compile(r"^DISC_1\d\d: \S.*: .+ \(.+\)$")

# Unbounded, each of these took from tens of seconds to minutes.
PATHOLOGICAL = {
    "parens.py": b"(" * 200_000,
    "comments.py": b"def f():\n    pass\n" + b"#\n" * 100_000,
    "indented_comments.py": b"def f():\n    pass\n" + b"    #\n" * 40_000,
    "continuations.py": b"x = 1 \\\n" * 60_000,
}


def snapshot(root: Path) -> dict[str, object]:
    """Every path's kind and, for regular files, content (outside .remora)."""
    state: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(".remora"):
            continue
        mode = path.lstat().st_mode
        state[relative] = path.read_bytes() if stat.S_ISREG(mode) else stat.S_IFMT(mode)
    return state


def timed_discover(root: Path, config: DiscoveryConfig, limit: float) -> tuple[Any, float]:
    return run_timed(lambda: discover([root], config, root=root), limit)


# --- the per-file budget ------------------------------------------------------------------


def test_pathological_files_are_bounded_by_the_parse_timeout(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"pyproject.toml": "", **PATHOLOGICAL})
    before = snapshot(root)
    config = DiscoveryConfig(parse_timeout=0.5)
    result, elapsed = timed_discover(root, config, limit=60)
    assert elapsed < 20, f"{elapsed:.1f} s for {len(PATHOLOGICAL)} files at 0.5 s each"
    assert isinstance(result, DiscoveryResult)
    assert result.files == len(PATHOLOGICAL)
    files = sorted(n.file_path for n in result.nodes if n.node_type == "file")
    assert files == sorted(PATHOLOGICAL)
    codes = {(p.path, p.code) for p in result.problems}
    assert ("continuations.py", "DISC_108") in codes
    assert ("parens.py", "DISC_101") in codes
    # Long comment runs are blanked before parsing (issue 27): they parse whole, in time.
    found = {n.file_path for n in result.nodes if n.qualname == "f"}
    assert found == {"comments.py", "indented_comments.py"}
    for problem in result.problems:
        if problem.code == "DISC_108":
            assert "discovery.parse_timeout" in problem.message
            assert "discovery.parse_timeout" in (problem.hint or "")
            assert PROBLEM_LINE.match(problem.render()), problem.render()
    assert snapshot(root) == before


def test_a_timed_out_file_keeps_exactly_its_file_node() -> None:
    source = b"def f():\n    pass\n" + b"x = 1 \\\n" * 100_000
    (nodes, problems), elapsed = run_timed(
        lambda: parse_source(source, "pkg/slow.py", PACK, timeout=0.2), 30
    )
    assert elapsed < 10
    assert [p.code for p in problems] == ["DISC_108"]
    assert [(n.node_type, n.qualname, n.start_line, n.end_line) for n in nodes] == [
        ("file", "pkg/slow.py", 1, 100_002)
    ]
    assert nodes[0].text.encode() == source
    assert (nodes[0].start_byte, nodes[0].end_byte) == (0, len(source))


def test_a_tiny_budget_times_out_even_an_ordinary_large_file() -> None:
    source = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(20_000)).encode()
    (nodes, problems), elapsed = run_timed(
        lambda: parse_source(source, "big.py", PACK, timeout=0.001), 30
    )
    assert elapsed < 10
    assert [p.code for p in problems] == ["DISC_108"]
    assert [n.node_type for n in nodes] == ["file"]
    full, none = parse_source(source, "big.py", PACK, timeout=60)
    assert none == [] and len(full) == 20_001


def test_the_budget_comes_from_the_config(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "proj",
        {"pyproject.toml": "", "slow.py": PATHOLOGICAL["continuations.py"], "ok.py": "def g():\n"},
    )
    before = snapshot(root)
    quick, elapsed = timed_discover(root, DiscoveryConfig(parse_timeout=0.2), limit=60)
    assert elapsed < 15
    [late] = [p for p in quick.problems if p.code == "DISC_108"]
    assert late.path == "slow.py" and "discovery.parse_timeout (0.2 s)" in late.message
    assert "ok.py" in {n.file_path for n in quick.nodes}
    assert snapshot(root) == before


def test_every_query_pattern_needs_one_root(tmp_path: Path) -> None:
    pack = write_tree(
        tmp_path / "pack",
        {"f.scm": "((comment) @function.name . (function_definition) @function.def)\n"},
    )
    load_query_pack.cache_clear()
    with pytest.raises(DiscoveryError) as info:
        load_query_pack((str(pack),))
    assert info.value.code == "DISC_003" and "one root" in (info.value.hint or "")


def test_nested_definitions_deep_inside_a_class_are_linear() -> None:
    depth = 300
    source = b"".join(b" " * i + b"class C%d:\n" % i for i in range(depth)) + b" " * depth
    source += b"pass\n"
    (nodes, problems), elapsed = run_timed(lambda: parse_source(source, "deep.py", PACK), 30)
    assert elapsed < 10 and problems == []
    assert nodes[-1].qualname == ".".join(f"C{i}" for i in range(depth))


# --- syntax errors, totals, problem lines ------------------------------------------------


def test_a_syntax_error_keeps_the_file_node_and_the_definitions_it_can(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": "",
            "broken.py": "import os\n\ndef good():\n    return 1\n\ndef bad(:\n    pass\n\n"
            "class Fine:\n    def method(self):\n        return 2\n",
            "garbage.py": "((((\n",
        },
    )
    before = snapshot(root)
    result, _ = timed_discover(root, DiscoveryConfig(), limit=30)
    found = {(n.file_path, n.node_type, n.qualname) for n in result.nodes}
    assert {
        ("broken.py", "file", "broken.py"),
        ("broken.py", "function", "good"),
        ("broken.py", "class", "Fine"),
        ("broken.py", "method", "Fine.method"),
        ("garbage.py", "file", "garbage.py"),
    } <= found
    assert ("broken.py", "function", "bad") not in found
    assert result.files == 2
    lines = [p.render() for p in result.problems]
    assert lines == [
        f"DISC_101: broken.py:6: syntax error near line 6; definitions around it were skipped "
        f"({PROBLEM_HINTS['DISC_101']})",
        f"DISC_101: garbage.py:1: syntax error near line 1; definitions around it were skipped "
        f"({PROBLEM_HINTS['DISC_101']})",
    ]
    assert snapshot(root) == before


def test_skipped_files_are_counted_alike(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": "",
            "good.py": "def ok():\n    return 1\n",
            "broken.py": "def f(:\n",
            "latin.py": b"name = '\xe9'\n",
            "blob.py": b"\x00\x01\x02binary",
            "huge.py": "x = 1\n" * 100,
        },
    )
    os.mkfifo(root / "pipe.py")
    before = snapshot(root)
    result, _ = timed_discover(root, DiscoveryConfig(max_file_bytes=300), limit=30)
    skipped = {(p.path, p.code) for p in result.problems if p.code != "DISC_101"}
    assert skipped == {("latin.py", "DISC_102"), ("blob.py", "DISC_103"), ("huge.py", "DISC_104")}
    file_nodes = sorted(n.file_path for n in result.nodes if n.node_type == "file")
    assert file_nodes == ["broken.py", "good.py"]
    assert result.files == len(file_nodes)
    assert snapshot(root) == before


def test_a_fifo_named_as_a_target_is_a_problem_not_a_hang(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"pyproject.toml": "", "ok.py": "x = 1\n"})
    os.mkfifo(root / "pipe.py")
    before = snapshot(root)
    result, elapsed = run_timed(lambda: discover([root / "pipe.py", root], root=root), 10)
    assert elapsed < 5
    assert [n.file_path for n in result.nodes] == ["ok.py"]
    assert result.files == 1
    assert snapshot(root) == before


def test_every_problem_renders_as_code_message_hint() -> None:
    for code, hint in PROBLEM_HINTS.items():
        problem = DiscoveryProblem(code=code, path="a/b.py", message="what happened", line=3)
        assert problem.hint == hint
        assert problem.render() == f"{code}: a/b.py:3: what happened ({hint})"
        assert PROBLEM_LINE.match(problem.render())
    own = DiscoveryProblem(code="DISC_105", path="x", message="m", hint="do this")
    assert own.render() == "DISC_105: x: m (do this)"


def test_disc_104_names_the_setting_that_raises_the_limit(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"pyproject.toml": "", "big.py": "x = 1\n" * 100})
    result, _ = timed_discover(root, DiscoveryConfig(max_file_bytes=100), limit=30)
    [problem] = result.problems
    assert problem.code == "DISC_104"
    assert "discovery.max_file_bytes (100)" in problem.message
    assert "600 bytes" in problem.message
    assert "raise discovery.max_file_bytes" in (problem.hint or "")


def test_the_discover_command_prints_problem_lines_in_the_coded_form(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": "[tool.remora.discovery]\nmax_file_bytes = 300\n",
            "good.py": "def ok():\n    return 1\n",
            "broken.py": "def f(:\n",
            "latin.py": b"name = '\xe9'\n",
            "blob.py": b"\x00\x01\x02binary",
            "huge.py": "x = 1\n" * 100,
        },
    )
    before = snapshot(root)
    done = run_remora("discover", ".", cwd=root, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("DISC_")]
    assert {line.split(":")[0] for line in lines} == {
        "DISC_101",
        "DISC_102",
        "DISC_103",
        "DISC_104",
    }
    for line in lines:
        assert PROBLEM_LINE.match(line), line
    [too_large] = [line for line in lines if line.startswith("DISC_104")]
    assert "discovery.max_file_bytes" in too_large
    assert snapshot(root) == before


# --- capabilities reading a FIFO or an over-large file ------------------------------------

LIMIT = 10.0
MODULE = "def double(x):\n    return x * 2\n"


@pytest.fixture
def fifo_project(tmp_path: Path) -> tuple[Path, Path]:
    root = write_tree(
        tmp_path / "proj",
        {"pyproject.toml": "[project]\nname = 'p'\n", "mod.py": MODULE, "tests/__init__.py": ""},
    )
    fifo = root / "pipe.py"
    os.mkfifo(fifo)
    os.mkfifo(root / "tests" / "test_mod.py")
    return root, fifo


def _timed(call: Callable[[], Any], fifos: list[Path]) -> tuple[Any, float]:
    """``call`` under ``LIMIT``; a read stuck on a FIFO is freed by opening its write end."""

    def release() -> None:
        for fifo in fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    return run_timed(call, LIMIT, release)


CALLS: dict[str, Callable[[CapabilityContext, str], Any]] = {
    "read_text": read_text,
    "read_source": read_source,
    "node_source": lambda ctx, path: node_source(ctx, path, "double"),
    "lint_issues": lint_issues,
    "lint_fix": lambda ctx, path: lint_fix(ctx, path, "F401", 1),
    "lint_verify": lint_verify,
    "docstring_get": lambda ctx, path: docstring_get(ctx, path, "double"),
    "docstring_set": lambda ctx, path: docstring_set(ctx, path, "double", "Double it."),
    "docstring_check": lambda ctx, path: docstring_check(ctx, path, "double"),
    "existing_tests": lambda ctx, path: existing_tests(ctx, path, "double"),
    "characterization_result": lambda ctx, path: characterization_result(ctx, path, "double"),
    "signature_inputs": lambda ctx, path: signature_inputs(ctx, path, "double"),
    "propose_cases": lambda ctx, path: propose_cases(ctx, path, "double", ["1"]),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_fifo_given_to_a_capability_is_tool_103_at_once(
    fifo_project: tuple[Path, Path], name: str
) -> None:
    root, fifo = fifo_project
    ctx = capability_context(root)
    before = snapshot(root)
    with pytest.raises(ToolError) as info:
        _timed(lambda: CALLS[name](ctx, "pipe.py"), [fifo, root / "tests" / "test_mod.py"])
    assert info.value.code == "TOOL_103", info.value.render()
    assert "pipe.py" in info.value.message and "FIFO" in info.value.message
    assert snapshot(root) == before


def test_a_precheck_skips_a_fifo_with_the_reason(fifo_project: tuple[Path, Path]) -> None:
    root, fifo = fifo_project
    ctx = capability_context(root)
    before = snapshot(root)
    verdict, elapsed = _timed(lambda: characterizable(ctx, "pipe.py", "double"), [fifo])
    assert elapsed < LIMIT
    assert verdict["skip"] is True and "FIFO" in verdict["reason"]
    assert snapshot(root) == before


def test_scanning_skips_a_fifo_test_file(fifo_project: tuple[Path, Path]) -> None:
    root, fifo = fifo_project
    ctx = capability_context(root)
    before = snapshot(root)
    tests_fifo = root / "tests" / "test_mod.py"
    found, elapsed = _timed(lambda: existing_tests(ctx, "mod.py", "double"), [fifo, tests_fifo])
    assert elapsed < LIMIT
    assert found["files"] == []
    assert scan_text(ctx, "tests/test_mod.py") is None
    assert scan_text(ctx, "mod.py") == MODULE
    assert snapshot(root) == before


@pytest.mark.parametrize("name", sorted(CALLS))
def test_an_over_large_file_given_to_a_capability_is_tool_108(tmp_path: Path, name: str) -> None:
    root = write_tree(
        tmp_path / "proj",
        {"pyproject.toml": "[project]\nname = 'p'\n", "big.py": MODULE + "# padding\n" * 200},
    )
    store = WorkspaceManager(root, max_read_bytes=1000).create("test", "big")
    ctx = CapabilityContext(store=store, config=ToolsConfig(), system={})
    before = snapshot(root)
    with pytest.raises(ToolError) as info:
        _timed(lambda: CALLS[name](ctx, "big.py"), [])
    assert info.value.code == "TOOL_108", info.value.render()
    assert "big.py" in info.value.message and "workspace.max_read_mb" in info.value.message
    assert snapshot(root) == before


def test_an_unreadable_file_is_a_coded_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tree(tmp_path / "proj", {"pyproject.toml": "", "mod.py": MODULE})
    ctx = capability_context(root)
    real_read = ctx.store.read

    def failing(path: str) -> bytes:
        if path == "mod.py":
            raise OSError(5, "Input/output error", path)
        return real_read(path)

    monkeypatch.setattr(ctx.store, "read", failing)
    with pytest.raises(ToolError) as info:
        read_text(ctx, "mod.py")
    assert info.value.code == "TOOL_110" and "Input/output error" in info.value.message
    assert scan_text(ctx, "mod.py") is None
    with pytest.raises(ToolError) as nested:
        read_text(capability_context(root), "mod.py/inner.py")
    assert nested.value.code == "TOOL_101"
