"""call_function: a real subprocess with a timeout and a scrubbed environment."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from remora.errors import ToolError
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.call import call_function, parse_arguments
from remora.tools.capabilities.files import write_file
from tests.stores import capability_context, write_tree

MODULE = """import asyncio
import os
import sys

from .helpers import double


def add(a, b=1):
    print("adding", a, b)
    print("warn", file=sys.stderr)
    return double(a) + b


def environment():
    return {"keys": sorted(os.environ), "home": os.environ["HOME"], "cwd": os.getcwd()}


def fail(kind):
    raise KeyError(kind)


def pair(x):
    return (x, x)


def opaque():
    return object()


def spin():
    while True:
        pass


def hard_exit():
    os._exit(3)


def count(n):
    yield from range(n)


async def later(x):
    await asyncio.sleep(0)
    return x * 3


def touch(name):
    with open(name, "w") as handle:
        handle.write("made by the function")
    return name


class Counter:
    def __init__(self, start=0):
        self.start = start

    def __repr__(self):
        return f"Counter({self.start})"

    @staticmethod
    def zero():
        return 0

    @classmethod
    def named(cls):
        return cls.__name__

    def bump(self):
        return self.start + 1
"""


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    root = write_tree(
        tmp_path / "proj",
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": MODULE,
            "pkg/helpers.py": "def double(x):\n    return 2 * x\n",
            "broken.py": "import missing_dependency_xyz\n",
        },
    )
    return capability_context(root, timeout=10.0)


def test_returns_value_json_and_output(ctx: CapabilityContext) -> None:
    result = call_function(ctx, "pkg/mod.py", "add", "[3]")
    assert result["returned"] == {"repr": "7", "type": "int", "json": 7}
    assert result["stage"] == "call"
    assert result["stdout"] == "adding 3 1\n" and result["stderr"] == "warn\n"
    keyword = call_function(ctx, "pkg/mod.py", "add", {"args": [3], "kwargs": {"b": 10}})
    assert keyword["returned"]["json"] == 16
    assert call_function(ctx, "pkg/mod.py", "add", '{"a": 1, "b": 0}')["returned"]["json"] == 2


def test_values_that_do_not_round_trip_have_no_json(ctx: CapabilityContext) -> None:
    pair = call_function(ctx, "pkg/mod.py", "pair", "[1]")["returned"]
    assert pair == {"repr": "(1, 1)", "type": "tuple"}
    opaque = call_function(ctx, "pkg/mod.py", "opaque", "[]")["returned"]
    assert opaque["type"] == "object" and opaque["repr"].startswith("<object object at")
    assert "json" not in opaque
    generated = call_function(ctx, "pkg/mod.py", "count", "[3]")["returned"]
    assert generated["type"] == "generator" and generated["json"] == [0, 1, 2]
    assert call_function(ctx, "pkg/mod.py", "later", "[2]")["returned"]["json"] == 6


def test_raised_exception_is_reported(ctx: CapabilityContext) -> None:
    result = call_function(ctx, "pkg/mod.py", "fail", '["k"]')
    raised = result["raised"]
    assert (raised["type"], raised["message"], result["stage"]) == ("KeyError", "'k'", "call")
    assert 'mod.py", line 19, in fail' in raised["traceback"]
    assert "_call_child" not in raised["traceback"]
    wrong = call_function(ctx, "pkg/mod.py", "add", "[]")["raised"]
    assert wrong["type"] == "TypeError" and "'a'" in wrong["message"]
    broken = call_function(ctx, "broken.py", "anything", "[]")
    assert broken["stage"] == "import"
    assert broken["raised"]["type"] == "ModuleNotFoundError"


def test_classes_static_and_class_methods(ctx: CapabilityContext) -> None:
    assert call_function(ctx, "pkg/mod.py", "Counter", "[4]")["returned"]["repr"] == "Counter(4)"
    assert call_function(ctx, "pkg/mod.py", "Counter.zero", "[]")["returned"]["json"] == 0
    assert call_function(ctx, "pkg/mod.py", "Counter.named", "[]")["returned"]["json"] == "Counter"
    with pytest.raises(ToolError) as info:
        call_function(ctx, "pkg/mod.py", "Counter.bump", "[]")
    assert info.value.code == "TOOL_703" and "instance method" in info.value.message
    with pytest.raises(ToolError) as info:
        call_function(ctx, "pkg/mod.py", "ad", "[]")
    assert info.value.code == "TOOL_703" and "add" in info.value.message


def test_environment_is_scrubbed(ctx: CapabilityContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMORA_TEST_SECRET", "hunter2")
    monkeypatch.setenv("VIRTUAL_ENV", "/somewhere")
    seen = call_function(ctx, "pkg/mod.py", "environment", "[]")["returned"]["json"]
    assert "REMORA_TEST_SECRET" not in seen["keys"] and "VIRTUAL_ENV" not in seen["keys"]
    assert set(seen["keys"]) <= {
        "PATH",
        "LANG",
        "HOME",
        "TMPDIR",
        "PYTHONPATH",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONIOENCODING",
        "NO_COLOR",
        "LC_CTYPE",
    }
    assert seen["home"] != str(Path.home())
    assert Path(seen["cwd"]) == ctx.store.root  # the overlay is mounted at the project's path


def test_sees_edits_and_its_writes_are_discarded(ctx: CapabilityContext) -> None:
    """The call sees the workspace's edits; what it writes itself reaches neither the
    workspace nor the project (a call observes)."""
    write_file(ctx, "pkg/helpers.py", "def double(x):\n    return 100 * x\n")
    assert call_function(ctx, "pkg/mod.py", "add", "[1]")["returned"]["json"] == 101
    assert call_function(ctx, "pkg/mod.py", "touch", '["out.txt"]')["returned"]["json"]
    assert ctx.store.changed_paths() == ["pkg/helpers.py"]
    assert not ctx.store.exists("out.txt") and not (ctx.store.root / "out.txt").exists()


def test_timeout_and_hard_exit_are_clean_errors(ctx: CapabilityContext) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError) as info:
        call_function(ctx, "pkg/mod.py", "spin", "[]", timeout=1.0)
    assert info.value.code == "TOOL_201" and "spin" in info.value.message
    assert time.monotonic() - started < 8
    with pytest.raises(ToolError) as info:
        call_function(ctx, "pkg/mod.py", "hard_exit", "[]")
    assert info.value.code == "TOOL_702" and "code 3" in info.value.message


def test_bad_arguments(ctx: CapabilityContext) -> None:
    for bad in ("[1,", '"text"', '{"args": 1}'):
        with pytest.raises(ToolError) as info:
            call_function(ctx, "pkg/mod.py", "add", bad)
        assert info.value.code == "TOOL_701", bad
    with pytest.raises(ToolError) as info:
        call_function(ctx, "pkg/mod.py", "add; import os", "[]")
    assert info.value.code == "TOOL_703"
    with pytest.raises(ToolError) as info:
        call_function(ctx, "pkg/mdo.py", "add", "[]")
    assert info.value.code == "TOOL_101" and "pkg/mod.py" in (info.value.hint or "")
    assert parse_arguments("") == ([], {})
    assert parse_arguments([1, 2]) == ([1, 2], {})


def test_src_layout_imports_under_the_package_name(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "src/lib/__init__.py": "REGISTRY = []\n",
            "src/lib/core.py": (
                "import lib\nfrom . import helpers\n\n\n"
                "def same():\n    return helpers.lib_module() is lib and __name__\n"
            ),
            "src/lib/helpers.py": "import lib\n\n\ndef lib_module():\n    return lib\n",
        },
    )
    ctx = capability_context(root)
    assert call_function(ctx, "src/lib/core.py", "same", "[]")["returned"]["json"] == "lib.core"
