"""Project code is contained: attacks through call_function and pytest_run on the real overlay
workspace, at each isolation level this machine offers (bubblewrap, and Landlock forced).

Every attack ends with the project's bytes unchanged (the tree is hashed before and after).
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from remora.errors import ToolError
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.call import call_function
from remora.tools.capabilities.pytest_runner import pytest_run
from tests.stores import capability_context, write_tree

ATTACKS = """
import os
import socket
import subprocess
import sys
import time


def victim():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "victim.py"), "w") as handle:
        handle.write("pwned = True\\n")
    return "wrote"


def remove_victim():
    os.remove(os.path.join(os.path.dirname(os.path.abspath(__file__)), "victim.py"))


def read(path):
    with open(path) as handle:
        return handle.read()


def connect(port):
    with socket.create_connection(("127.0.0.1", port), timeout=3):
        return "connected"


def fork_bomb():
    while True:
        os.fork()


def memory_bomb():
    chunks = []
    while True:
        chunks.append(bytearray(64 * 1024 * 1024))


def big_write(name):
    block = b"x" * (1024 * 1024)
    with open(name, "wb") as handle:
        for _ in range(1024):
            handle.write(block)
    return "wrote 1 GB"


def spin():
    while True:
        pass


def daemon(marker):
    script = "import time; time.sleep(60)"
    subprocess.Popen(
        [sys.executable, "-c", script, marker],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return "started"


def capabilities():
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    assert libc.capget(ctypes.byref(header), ctypes.byref(data)) == 0
    bounding = [cap for cap in range(41) if libc.prctl(23, cap, 0, 0, 0) == 1]
    return {"effective": data[0] | data[3], "permitted": data[1] | data[4],
            "inheritable": data[2] | data[5], "bounding": bounding}


def sees(path):
    return os.path.exists(path)
"""

STATE_TEST = """
from pathlib import Path


def test_writes_state():
    target = Path(__file__).parent.parent / "data" / "state.txt"
    target.write_text("changed by a test")
"""

LEVELS = ["bwrap", "landlock"]


def tree_hash(root: Path) -> str:
    """sha256 over every path and content of the project, Remora's state directory excluded."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative == ".remora" or relative.startswith(".remora/"):
            continue
        digest.update(relative.encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(params=LEVELS)
def ctx(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CapabilityContext]:
    root = write_tree(
        tmp_path / "proj",
        {
            "pkg/__init__.py": "",
            "pkg/attacks.py": ATTACKS,
            "pkg/victim.py": "pwned = False\n",
            "data/state.txt": "original\n",
            "tests/test_state.py": STATE_TEST,
        },
    )
    context = capability_context(
        root,
        isolation=request.param,
        timeout=20.0,
        max_processes=16,
        max_process_memory_mb=512,
        max_file_mb=8,
    )
    before = tree_hash(root)
    yield context
    assert tree_hash(root) == before, "the project's bytes changed"


def call(ctx: CapabilityContext, name: str, *args: object, timeout: float = 20.0) -> dict:
    import json

    return call_function(ctx, "pkg/attacks.py", name, json.dumps(list(args)), timeout=timeout)


def level(ctx: CapabilityContext) -> str:
    return ctx.config.isolation


def test_a_function_writing_a_project_file(ctx: CapabilityContext) -> None:
    """Under bubblewrap the write succeeds inside the sandbox and is discarded with it."""
    outcome = call(ctx, "victim")
    if level(ctx) == "bwrap":
        assert outcome["returned"]["json"] == "wrote"
        assert ctx.store.changed_paths() == []
        assert b"pwned = True" not in ctx.store.read("pkg/victim.py")
    else:
        assert outcome["raised"]["type"] == "PermissionError"
        assert ctx.store.changed_paths() == []


def test_a_test_writing_a_data_file(ctx: CapabilityContext) -> None:
    """A test may write under bubblewrap, but what it wrote never becomes a change."""
    report = pytest_run(ctx, ["tests/test_state.py"])
    if level(ctx) == "bwrap":
        assert report["totals"]["passed"] == 1
        assert ctx.store.changed_paths() == []
    else:
        assert report["totals"]["failed"] == 1
        assert "Permission denied" in report["tests"][0]["message"]
        assert ctx.store.changed_paths() == []


def test_a_secret_outside_the_project_stays_unread(ctx: CapabilityContext, tmp_path: Path) -> None:
    home = tmp_path / "home" / ".ssh"
    home.mkdir(parents=True)
    secret = home / "id_ed25519"
    secret.write_text("TOP-SECRET-KEY")
    outcome = call(ctx, "read", str(secret))
    assert "TOP-SECRET-KEY" not in repr(outcome)
    expected = "FileNotFoundError" if level(ctx) == "bwrap" else "PermissionError"
    assert outcome["raised"]["type"] == expected


def test_no_connection_reaches_a_local_listener(ctx: CapabilityContext) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.setblocking(False)
        outcome = call(ctx, "connect", server.getsockname()[1])
        assert outcome["raised"]["type"] in ("ConnectionRefusedError", "PermissionError")
        with pytest.raises(BlockingIOError):
            server.accept()


def test_a_fork_bomb_is_stopped(ctx: CapabilityContext) -> None:
    started = time.monotonic()
    try:
        outcome = call(ctx, "fork_bomb")
    except ToolError as exc:
        assert exc.code == "TOOL_804" and "processes" in exc.message
    else:
        assert outcome["raised"]["type"] == "BlockingIOError"
    assert time.monotonic() - started < 20


def test_a_memory_bomb_is_stopped(ctx: CapabilityContext) -> None:
    outcome = call(ctx, "memory_bomb")
    assert outcome["raised"]["type"] == "MemoryError"


def test_a_1_gb_file_write_is_stopped(ctx: CapabilityContext) -> None:
    outcome = call(ctx, "big_write", "big.bin")
    assert outcome["raised"]["type"] == "OSError"
    assert "File too large" in outcome["raised"]["message"]
    assert not ctx.store.exists("big.bin")  # a fragment cut at the limit is not a change


def test_an_infinite_loop_is_stopped(ctx: CapabilityContext) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError) as info:
        call(ctx, "spin", timeout=1.5)
    assert info.value.code == "TOOL_201"
    assert time.monotonic() - started < 10


def _processes_with(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(name))
    return found


def test_a_background_process_does_not_outlive_the_call(ctx: CapabilityContext) -> None:
    marker = f"remora-daemon-{uuid.uuid4().hex}"
    assert call(ctx, "daemon", marker)["returned"]["json"] == "started"
    deadline = time.monotonic() + 5
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(marker) == []


def test_project_code_keeps_no_capabilities(ctx: CapabilityContext) -> None:
    caps = call(ctx, "capabilities")["returned"]["json"]
    assert caps["effective"] == caps["permitted"] == caps["inheritable"] == 0
    if os.getuid() == 0:
        assert caps["bounding"] == []  # root in the sandbox cannot regain any on exec


def test_remora_state_is_hidden_from_project_code(ctx: CapabilityContext) -> None:
    assert (ctx.store.root / ".remora" / "workspaces").is_dir()
    assert call(ctx, "sees", ".remora/workspaces")["returned"]["json"] is False
