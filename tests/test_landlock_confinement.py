"""The Landlock level closes what Landlock alone leaves open: UDP, UNIX sockets on the host,
and Remora's own state directory (other workspaces' pending changes).

Each test runs real code in the real Landlock sandbox over a real overlay workspace; each
was an escape before the seccomp socket filter and the per-entry read rules.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from remora.tools.isolation import isolation_status, project_sandbox
from remora.tools.isolation._launcher import pids_cgroup, remove_cgroup, socket_filter
from tests.stores import capability_context, write_tree

pytestmark = pytest.mark.skipif(
    isolation_status("landlock").level != "landlock", reason="Landlock is not available here"
)


def run(root: Path, code: str) -> tuple[int, str]:
    ctx = capability_context(root, isolation="landlock")
    with project_sandbox(ctx.store, ctx.config) as box:
        result = box.run([sys.executable, "-c", code], timeout=30, what="probe")
    return result.returncode, result.stdout + result.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write_tree(root, {"mod.py": "x = 1\n"})
    return root


def test_a_unix_socket_on_the_host_cannot_be_reached(project: Path, tmp_path: Path) -> None:
    path = tmp_path / "agent.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen()
        code, out = run(
            project,
            "import socket\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            f"s.connect({str(path)!r})\n"
            "print('connected')\n",
        )
    assert code != 0 and "connected" not in out
    assert "PermissionError" in out


def test_udp_cannot_carry_data_out(project: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.settimeout(1.0)
        port = listener.getsockname()[1]
        code, out = run(
            project,
            "import socket\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"s.sendto(b'secret', ('127.0.0.1', {port}))\n",
        )
        with pytest.raises(TimeoutError):
            listener.recvfrom(100)
    assert code != 0 and "PermissionError" in out


def test_mptcp_cannot_carry_data_out(project: Path) -> None:
    """MPTCP (protocol 262) is a stream socket that Landlock's TCP rules do not cover: before
    the filter looked at the protocol, this connected to the host and sent the secret."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(1.0)
        port = listener.getsockname()[1]
        code, out = run(
            project,
            "import socket\n"
            "try:\n"
            "    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)\n"
            "except OSError as error:\n"
            "    print('refused', type(error).__name__, error.errno)\n"
            "    raise\n"
            "print('created')\n"
            f"s.connect(('127.0.0.1', {port}))\n"
            "s.sendall(b'secret')\n"
            "print('sent')\n",
        )
        with pytest.raises(TimeoutError):
            listener.accept()
    assert code != 0 and "created" not in out and "sent" not in out, out
    assert "refused PermissionError 13" in out, out


def test_remoras_state_directory_is_unreadable(project: Path) -> None:
    ctx = capability_context(project, isolation="landlock")
    ctx.store.write("mod.py", b"x = 'pending change of another job'\n")
    state = project / ".remora"
    assert state.is_dir(), "the overlay keeps its state under the project"
    ctx2 = capability_context(project, isolation="landlock")
    with project_sandbox(ctx2.store, ctx2.config) as box:
        result = box.run(
            [
                sys.executable,
                "-c",
                "import os, sys\n"
                f"for top, dirs, files in os.walk({str(state)!r}):\n"
                "    for name in files:\n"
                "        open(os.path.join(top, name), 'rb').read()\n"
                "        print('read', name)\n"
                f"print(os.listdir({str(state)!r}))\n",
            ],
            timeout=30,
            what="probe",
        )
    assert "read " not in result.stdout
    assert result.returncode != 0 and "PermissionError" in result.stderr
    assert ctx2.store.read("mod.py") == b"x = 1\n", "the project's own files stay readable"


def test_private_socket_pairs_and_asyncio_still_work(project: Path) -> None:
    code, out = run(
        project,
        "import asyncio, socket\n"
        "a, b = socket.socketpair()\n"
        "a.send(b'ok'); print(b.recv(2).decode())\n"
        "async def main():\n    return 'loop'\n"
        "print(asyncio.run(main()))\n",
    )
    assert code == 0, out
    assert "ok" in out and "loop" in out


def verdict(program: list[tuple[int, int, int, int]], words: dict[int, int]) -> int:
    """What the classic-BPF ``program`` returns for a ``seccomp_data`` whose 32-bit words at
    the given offsets are ``words`` (the instructions the filter uses: ld, jeq, jge, and, ret)."""
    accumulator, index = 0, 0
    while True:
        code, jt, jf, k = program[index]
        index += 1
        if code == 0x20:
            accumulator = words.get(k, 0)
        elif code == 0x54:
            accumulator &= k
        elif code in (0x15, 0x35):
            taken = accumulator == k if code == 0x15 else accumulator >= k
            index += jt if taken else jf
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected BPF code {code:#x}")


def test_the_filter_refuses_foreign_arches_and_every_family_but_tcp() -> None:
    program = socket_filter("x86_64", allow_tcp=True)
    assert program[0] == (0x20, 0, 0, 4), "it checks the architecture first"
    assert any(op[3] == 0x40000000 for op in program), "x32 system call numbers are refused"
    closed = socket_filter("x86_64", allow_tcp=False)
    assert closed != program, "without Landlock's TCP control no socket is allowed"

    allow, eacces, enosys = 0x7FFF0000, 0x00050000 | 13, 0x00050000 | 38
    x86, socket_nr = 0xC000003E, 41

    def call(
        prog: list[tuple[int, int, int, int]],
        nr: int,
        domain: int = 0,
        kind: int = 0,
        arch: int = x86,
        protocol: int = 0,
    ) -> int:
        return verdict(prog, {4: arch, 0: nr, 16: domain, 24: kind, 32: protocol})

    tcp, tcp_nonblock, udp = 1, 1 | 0o4000, 2
    assert call(program, socket_nr, 2, tcp) == allow
    assert call(program, socket_nr, 10, tcp_nonblock) == allow
    assert call(program, socket_nr, 2, udp) == eacces
    assert call(program, socket_nr, 1, tcp) == eacces  # AF_UNIX
    assert call(program, socket_nr, 16, 3) == eacces  # AF_NETLINK
    assert call(program, 53, 1, tcp) == allow  # socketpair
    assert call(program, 0) == allow  # read
    assert call(program, 425) == enosys  # io_uring_setup
    assert call(program, 0x40000000 | socket_nr, 2, udp) == eacces  # x32
    assert call(program, 0, arch=0x40000003) == eacces  # i386
    for domain, kind in ((2, tcp), (10, tcp), (2, udp), (1, tcp)):
        assert call(closed, socket_nr, domain, kind) == eacces
    assert call(closed, 0) == allow


@pytest.mark.parametrize(
    ("machine", "arch", "socket_nr"), [("x86_64", 0xC000003E, 41), ("aarch64", 0xC00000B7, 198)]
)
def test_the_filter_allows_stream_sockets_only_as_plain_tcp(
    machine: str, arch: int, socket_nr: int
) -> None:
    """Landlock's TCP rules do not see MPTCP (262): a stream socket must name protocol 0 or
    IPPROTO_TCP, whatever flags ride along in the type argument."""
    allow, eacces = 0x7FFF0000, 0x00050000 | 13
    stream, nonblock, cloexec = 1, 0o4000, 0o2000000
    program = socket_filter(machine, allow_tcp=True)
    closed = socket_filter(machine, allow_tcp=False)

    def call(prog: list[tuple[int, int, int, int]], domain: int, kind: int, protocol: int) -> int:
        return verdict(prog, {4: arch, 0: socket_nr, 16: domain, 24: kind, 32: protocol})

    for domain in (2, 10):  # AF_INET, AF_INET6
        for kind in (stream, stream | cloexec, stream | nonblock, stream | cloexec | nonblock):
            for protocol in (0, 6):
                assert call(program, domain, kind, protocol) == allow, (domain, kind, protocol)
            for protocol in (262, 132, 17, 1, 0x106, 0xFFFFFFFF):  # MPTCP, SCTP, UDP, ...
                assert call(program, domain, kind, protocol) == eacces, (domain, kind, protocol)
            for protocol in (0, 6, 262):
                assert call(closed, domain, kind, protocol) == eacces
    for protocol in (0, 6, 262):
        assert call(program, 1, stream, protocol) == eacces  # AF_UNIX stays refused
        assert call(program, 2, 2, protocol) == eacces  # UDP too
    assert verdict(program, {4: arch, 0: 0, 32: 262}) == allow, "other calls are not checked"


def test_doctor_states_what_landlock_confines_and_what_it_does_not(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from remora.cli import app

    result = CliRunner().invoke(
        app, ["--set", "tools.isolation=landlock", "doctor", str(tmp_path), "-f", "json"]
    )
    isolation = json.loads(result.output)["isolation"]
    assert "UDP, UNIX and every other socket family refused" in isolation["confines"]
    assert "state directory unreadable" in isolation["confines"]
    assert "other processes are visible in /proc" in isolation["does_not_confine"]
    assert "pids cgroup" in isolation["confines"]


@pytest.mark.skipif(os.geteuid() != 0, reason="RLIMIT_NPROC binds every other user")
def test_as_root_a_fork_storm_stops_at_the_process_limit(project: Path) -> None:
    """RLIMIT_NPROC never binds root: before the pids cgroup, a storm ran past the limit
    until the supervisor noticed (4,095 processes against 128 were seen)."""
    trial = pids_cgroup(8)
    if trial is None:
        pytest.skip("no writable pids cgroup here: doctor says the supervisor alone counts")
    remove_cgroup(trial)
    storm = (
        "import os, time\n"
        "made = 0\n"
        "for _ in range(200):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except BlockingIOError:\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(30)\n"
        "        os._exit(0)\n"
        "    made += 1\n"
        "print('made', made)\n"
    )
    ctx = capability_context(project, isolation="landlock", max_processes=16)
    with project_sandbox(ctx.store, ctx.config) as box:
        result = box.run([sys.executable, "-c", storm], timeout=60, what="storm")
    assert result.returncode == 0, result.stderr
    made = int(result.stdout.split()[-1])
    assert made < 16
    leftovers = [d for d in Path("/sys/fs/cgroup").rglob("remora-sandbox-*") if d.is_dir()]
    assert not leftovers, "the command's cgroup is removed with it"
