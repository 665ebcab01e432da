"""The Monty sandbox: values, limits, escapes that must fail cleanly, crashes, prints."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remora.config import ToolsConfig
from remora.errors import ToolError, WorkspaceError
from remora.tools.sandbox import Sandbox, SandboxRun
from remora.workspace.base import normalize_path

CONFIG = ToolsConfig(timeout=0.5, max_memory_mb=32, max_recursion_depth=60, workers=1)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(CONFIG, max_print_bytes=2000) as box:
        yield box


def run(box: Sandbox, code: str, **kwargs: Any) -> SandboxRun:
    kwargs.setdefault("inputs", {})
    kwargs.setdefault("functions", {})
    return box.run(code, script_name="probe.pym", **kwargs)


def test_value_of_last_expression_with_inputs_and_functions(sandbox: Sandbox) -> None:
    result = run(
        sandbox,
        "words = split(text)\n{'count': len(words), 'first': words[0], 'n': n}",
        inputs={"text": "a b c", "n": 2},
        functions={"split": lambda text: text.split()},
    )
    assert result.ok
    assert result.value == {"count": 3, "first": "a", "n": 2}


def test_each_run_gets_a_fresh_session(sandbox: Sandbox) -> None:
    assert run(sandbox, "leak = 1\nleak").value == 1
    second = run(sandbox, "leak")
    assert second.failure is not None
    assert "NameError" in second.failure.message


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        ("open('/etc/passwd').read()", "PermissionError"),
        ("import os\nos.listdir('/')", "PermissionError"),
        ("import os\nos.environ['HOME']", "not supported"),
        ("import subprocess\nsubprocess.run(['ls'])", "ModuleNotFoundError"),
        ("import socket", "ModuleNotFoundError"),
    ],
)
def test_escapes_fail_cleanly(sandbox: Sandbox, code: str, fragment: str) -> None:
    result = run(sandbox, code)
    assert result.failure is not None
    assert result.failure.kind == "exception"
    assert fragment in result.failure.message
    assert result.failure.line is not None


def test_infinite_loop_hits_the_time_limit(sandbox: Sandbox) -> None:
    result = run(sandbox, "while True:\n    pass\n")
    assert result.failure is not None
    assert result.failure.kind == "timeout"
    assert "0.5 s time limit" in result.failure.message
    assert result.duration_s < 3


def test_memory_bomb_hits_the_memory_limit(sandbox: Sandbox) -> None:
    result = run(sandbox, "chunks = []\nwhile True:\n    chunks.append('x' * 100000)\n")
    assert result.failure is not None
    assert result.failure.kind == "memory"
    assert "32 MB" in result.failure.message


def test_single_huge_allocation_is_refused(sandbox: Sandbox) -> None:
    result = run(sandbox, "s = 'a' * (10 ** 10)\nlen(s)")
    assert result.failure is not None
    assert result.failure.kind == "memory"


def test_deep_recursion_hits_the_recursion_limit(sandbox: Sandbox) -> None:
    result = run(sandbox, "def down(n):\n    return down(n + 1)\ndown(0)\n")
    assert result.failure is not None
    assert result.failure.kind == "recursion"
    assert "60" in result.failure.message


def test_script_exception_names_type_and_line(sandbox: Sandbox) -> None:
    result = run(sandbox, "x = 1\ny = {}\ny['missing']\n")
    assert result.failure is not None
    assert result.failure.kind == "exception"
    assert result.failure.line == 3
    assert "KeyError" in result.failure.message
    assert "line 3" in result.failure.message


def read_guarded(path: str) -> str:
    """A capability that enforces workspace paths like the real ones."""
    return f"read {normalize_path(path)}"


def test_capability_path_escape_becomes_a_capability_failure(sandbox: Sandbox) -> None:
    result = run(sandbox, "read('../../etc/passwd')", functions={"read": read_guarded})
    assert result.failure is not None
    assert result.failure.kind == "capability"
    assert result.failure.message.startswith("read failed: WS_001: ")
    assert "escapes the workspace root" in result.failure.message


def test_script_can_catch_a_capability_error(sandbox: Sandbox) -> None:
    def fail(path: str) -> str:
        raise ToolError("TOOL_099", f"no file {path}", "list the directory first")

    result = run(
        sandbox,
        "try:\n    fail('x')\nexcept Exception as exc:\n    caught = str(exc)\ncaught",
        functions={"fail": fail},
    )
    assert result.value == "TOOL_099: no file x (list the directory first)"


def test_capability_python_exception_is_reported_as_capability_failure(
    sandbox: Sandbox,
) -> None:
    def buggy(key: str) -> None:
        raise KeyError(key)

    result = run(sandbox, "buggy('k')", functions={"buggy": buggy})
    assert result.failure is not None
    assert result.failure.kind == "capability"
    assert result.failure.message == "buggy failed: KeyError: 'k'"
    caught = run(
        sandbox,
        "try:\n    buggy('k')\nexcept KeyError:\n    r = 'handled'\nr",
        functions={"buggy": buggy},
    )
    assert caught.value == "handled"


def test_script_error_after_a_caught_capability_error_is_the_scripts(sandbox: Sandbox) -> None:
    def fail() -> None:
        raise WorkspaceError("WS_001", "bad path", None)

    result = run(
        sandbox,
        "try:\n    fail()\nexcept Exception:\n    pass\nraise ValueError('mine')\n",
        functions={"fail": fail},
    )
    assert result.failure is not None
    assert result.failure.kind == "exception"
    assert "ValueError: mine" in result.failure.message


def test_prints_are_forwarded(sandbox: Sandbox) -> None:
    seen: list[tuple[str, str]] = []
    result = run(
        sandbox, "print('hello')\nprint('more')\n7", on_print=lambda s, t: seen.append((s, t))
    )
    assert result.value == 7
    assert "".join(text for _, text in seen) == "hello\nmore\n"
    assert {stream for stream, _ in seen} == {"stdout"}


def test_print_flood_is_cut_off(sandbox: Sandbox) -> None:
    seen: list[str] = []
    result = run(
        sandbox, "while True:\n    print('x' * 100)\n", on_print=lambda s, t: seen.append(t)
    )
    assert result.failure is not None
    assert result.failure.kind == "output"
    assert sum(len(text) for text in seen) <= 2000


def test_unconvertible_input_is_a_conversion_failure(sandbox: Sandbox) -> None:
    result = run(sandbox, "x", inputs={"x": object()})
    assert result.failure is not None
    assert result.failure.kind == "conversion"


def _monty_children() -> set[int]:
    me = os.getpid()
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, _, rest = stat.partition(" (")[2].rpartition(") ")
        if name == "monty" and int(rest.split()[1]) == me:
            found.add(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_crashed_worker_is_replaced_and_next_call_works() -> None:
    before = _monty_children()
    with Sandbox(CONFIG) as box:
        ours = _monty_children() - before
        assert ours

        def kill_worker() -> int:
            for pid in ours:
                os.kill(pid, signal.SIGKILL)
            return 1

        crashed = run(box, "kill_worker()\n'never'", functions={"kill_worker": kill_worker})
        assert crashed.failure is not None
        assert crashed.failure.kind == "crash"
        assert "call the tool again" in crashed.failure.message
        after = run(box, "21 * 2")
        assert after.ok
        assert after.value == 42


def test_closed_sandbox_reports_unavailable() -> None:
    box = Sandbox(CONFIG)
    box.close()
    result = run(box, "1")
    assert result.failure is not None
    assert result.failure.kind == "unavailable"


def test_missing_worker_binary_is_tool_901(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONTY_BIN", "/nonexistent/monty")
    box = Sandbox(CONFIG)
    with pytest.raises(ToolError) as caught:
        box.start()
    assert caught.value.code == "TOOL_901"
    assert "cannot start" in caught.value.message
    result = run(box, "1")
    assert result.failure is not None
    assert result.failure.kind == "unavailable"
    box.close()
