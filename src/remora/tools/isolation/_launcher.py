"""The sandbox's first process: apply limits, confine, then run the project command.

Run as ``python -I -S _launcher.py SPEC`` inside bubblewrap (or directly, for the Landlock
and unisolated levels). It imports only the standard library, because it runs against any
project and before anything else of the project is trusted; the host also imports it to
ask the kernel for the Landlock ABI.

SPEC is a file of :mod:`marshal` data (the host runs the same interpreter; ``json`` would
cost more start-up time than the rest of the launcher)::

    {"argv": [...], "cwd": "...",
     "python": {"script": "/abs/x.py", "args": [...]} | absent,  # run in this interpreter
     "limits": {"cpu_seconds": 61, "memory_bytes": ..., "file_bytes": ..., "processes": 128},
     "pid_max": 301 | null,          # bubblewrap: cap pids in the sandbox's pid namespace
     "drop_capabilities": true,      # the command runs with no capability at all
     "remove": ["/abs/path", ...],   # bubblewrap: files the workspace deleted
     "landlock": {"read": [...], "write": [...], "allow_network": false} | null,
                                     # without the network, a seccomp filter refuses
                                     # every socket but TCP (denied by Landlock ABI 4+);
                                     # MPTCP and other stream protocols are refused too
     "supervise": true | false,      # no pid namespace: reap, count and kill descendants
     "report": "/abs/path"}          # what the launcher observed (limits hit), marshalled

Exit status: the command's own; 125 when the sandbox could not be set up (the reason on
stderr, prefixed ``remora-sandbox:``), so the host can fail closed.
"""

from __future__ import annotations

import marshal
import os
import resource
import select
import signal
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # no typing import at run time: start-up time is the launcher's cost
    import ctypes

SETUP_FAILED = 125
_POLL_SECONDS = 0.02

# Landlock (linux/landlock.h). The syscall numbers are the same on every architecture.
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAPABILITY_VERSION_3 = 0x20080522
_LAST_CAPABILITY = 63
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1, 2, 4, 8
_FS_ABI1_ALL = (1 << 13) - 1
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2
_FILE_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV


# seccomp (linux/seccomp.h, linux/filter.h, linux/audit.h): for the Landlock level, which
# has no network namespace. struct seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 * i
# (their low 32 bits, little-endian).
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_EACCES, _ENOSYS = 13, 38
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_AND_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x54, 0x06
_X32_BIT = 0x40000000
_AF_INET, _AF_INET6, _SOCK_STREAM, _SOCK_TYPE_MASK, _IPPROTO_TCP = 2, 10, 1, 0xF, 6
_SECCOMP_ARCHES = {
    # machine: (AUDIT_ARCH_*, socket, io_uring_setup, whether x32 numbers must be refused)
    "x86_64": (0xC000003E, 41, 425, True),
    "aarch64": (0xC00000B7, 198, 425, False),
}


class SetupError(Exception):
    """The sandbox cannot be set up as asked; nothing of the project has run."""


def _libc() -> ctypes.CDLL:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unavailable (or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = int(_libc().syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


def _handled_fs(abi: int) -> int:
    rights = _FS_ABI1_ALL
    if abi >= 2:
        rights |= _FS_REFER
    if abi >= 3:
        rights |= _FS_TRUNCATE
    if abi >= 5:
        rights |= _FS_IOCTL_DEV
    return rights


def apply_landlock(read: list[str], write: list[str], allow_network: bool) -> int:
    """Confine this process: ``read`` paths readable, ``write`` paths read-write, nothing else.

    With ABI 4 and later TCP bind and connect are denied too (unless ``allow_network``);
    with ABI 6 and later signals and abstract UNIX sockets cannot reach outside processes.
    Returns the ABI used; raises SetupError when the kernel refuses.
    """
    import ctypes

    libc = _libc()
    abi = landlock_abi()
    if abi < 1:
        raise SetupError("Landlock is not available in this kernel")
    handled = _handled_fs(abi)
    fields = [handled]
    if abi >= 4:
        fields.append(0 if allow_network else _NET_BIND_TCP | _NET_CONNECT_TCP)
    if abi >= 6:
        fields.append(_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)
    attr = (ctypes.c_uint64 * len(fields))(*fields)
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if ruleset < 0:
        raise SetupError(f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}")
    read_rights = handled & (_FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR)
    try:
        for paths, rights in ((read, read_rights), (write, handled)):
            for path in paths:
                _add_rule(libc, ruleset, path, rights)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise SetupError(f"cannot set no_new_privs: {os.strerror(ctypes.get_errno())}")
        if libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) != 0:
            raise SetupError(f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)
    return abi


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    import ctypes

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))

    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        rule = PathBeneath(rights, fd)
        if libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise SetupError(f"landlock_add_rule({path}) failed: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)


def socket_filter(machine: str, allow_tcp: bool) -> list[tuple[int, int, int, int]]:
    """A seccomp program refusing every socket but TCP (EACCES) and io_uring (ENOSYS).

    Landlock confines files and (ABI 4+) TCP, not UDP or UNIX sockets: without this, code
    under observation could send data out over UDP or connect to any pathname UNIX socket
    on the host (a Docker or ssh-agent socket). A stream socket must name protocol 0 or
    ``IPPROTO_TCP``: Landlock's TCP rules do not cover MPTCP (262) or SCTP, which would
    carry data to any host. ``socketpair`` stays allowed (a private pair, used by asyncio).
    With ``allow_tcp`` false (Landlock before ABI 4, which cannot deny TCP) no socket may be
    created at all. A foreign architecture's system calls and x32 numbers are refused, so
    the filter cannot be sidestepped by another calling convention. Each instruction is
    ``(code, jt, jf, k)``.
    """
    arch, socket_nr, io_uring_nr, refuse_x32 = _SECCOMP_ARCHES[machine]
    refuse = (_BPF_RET_K, 0, 0, _RET_ERRNO | _EACCES)
    allow = (_BPF_RET_K, 0, 0, _RET_ALLOW)
    tcp_only: list[tuple[int, int, int, int]] = [
        (_BPF_LD_W_ABS, 0, 0, 16),  # domain
        (_BPF_JEQ_K, 2, 0, _AF_INET),
        (_BPF_JEQ_K, 1, 0, _AF_INET6),
        refuse,
        (_BPF_LD_W_ABS, 0, 0, 24),  # type, without SOCK_NONBLOCK / SOCK_CLOEXEC
        (_BPF_AND_K, 0, 0, _SOCK_TYPE_MASK),
        (_BPF_JEQ_K, 0, 4, _SOCK_STREAM),
        (_BPF_LD_W_ABS, 0, 0, 32),  # protocol: 0 or TCP, never MPTCP (262) or SCTP
        (_BPF_JEQ_K, 1, 0, 0),
        (_BPF_JEQ_K, 0, 1, _IPPROTO_TCP),
        allow,
        refuse,
    ]
    body = tcp_only if allow_tcp else [refuse]
    program: list[tuple[int, int, int, int]] = [
        (_BPF_LD_W_ABS, 0, 0, 4),
        (_BPF_JEQ_K, 1, 0, arch),
        refuse,
        (_BPF_LD_W_ABS, 0, 0, 0),
    ]
    if refuse_x32:
        program += [(_BPF_JGE_K, 0, 1, _X32_BIT), refuse]
    program += [
        (_BPF_JEQ_K, 0, 1, io_uring_nr),
        (_BPF_RET_K, 0, 0, _RET_ERRNO | _ENOSYS),
        (_BPF_JEQ_K, 1, 0, socket_nr),
        allow,
        *body,
    ]
    return program


def apply_socket_filter(allow_tcp: bool) -> None:
    """Install :func:`socket_filter` on this process (no_new_privs must be set already)."""
    import ctypes

    machine = os.uname().machine
    if machine not in _SECCOMP_ARCHES:
        raise SetupError(f"no socket filter for {machine}: use bubblewrap or tools.isolation")
    program = socket_filter(machine, allow_tcp)

    class _Filter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_uint16),
            ("jt", ctypes.c_uint8),
            ("jf", ctypes.c_uint8),
            ("k", ctypes.c_uint32),
        ]

    class _Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Filter))]

    filters = (_Filter * len(program))(*(_Filter(*op) for op in program))
    prog = _Program(len(program), filters)
    libc = _libc()
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise SetupError(f"cannot install the socket filter: {os.strerror(ctypes.get_errno())}")


def drop_capabilities() -> None:
    """Give up every capability for good: effective, permitted, inheritable, ambient, and the
    bounding set where this process may drop it (as root, in or out of a user namespace).

    Bubblewrap lends the launcher CAP_SYS_ADMIN in the sandbox's user namespace so it can cap
    the pid namespace; project code must not keep it (it could remount read-only binds). A
    user who runs Remora as root gets the same: project code then holds no capability.
    """
    import ctypes

    libc = _libc()
    for cap in range(_LAST_CAPABILITY + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    if libc.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
        raise SetupError(f"capset failed: {os.strerror(ctypes.get_errno())}")
    checked = ["CapInh", "CapPrm", "CapEff", "CapAmb"] + (["CapBnd"] if os.getuid() == 0 else [])
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            name, _, value = line.partition(":")
            if name in checked and int(value, 16):
                raise SetupError(
                    f"capabilities remain after dropping them ({name} {value.strip()})"
                )


def _set_limits(limits: dict[str, int], processes: int | None) -> None:
    pairs = [
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_CPU, limits["cpu_seconds"]),
        (resource.RLIMIT_AS, limits["memory_bytes"]),
        (resource.RLIMIT_FSIZE, limits["file_bytes"]),
    ]
    if processes is not None:
        pairs.append((resource.RLIMIT_NPROC, processes))
    for kind, value in pairs:
        _soft, hard = resource.getrlimit(kind)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))
    # A write past RLIMIT_FSIZE then fails with EFBIG instead of killing the writer.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _user_process_count() -> int:
    """Processes of this user right now: RLIMIT_NPROC counts them all, not just ours."""
    uid, count = os.getuid(), 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                count += os.stat(f"/proc/{name}").st_uid == uid
            except OSError:
                pass
    return count


def _descendants(root: int) -> list[int]:
    """Every live process below ``root`` (orphans are re-parented to us as subreaper)."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        parents[int(name)] = int(fields[1])
    found: list[int] = []
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier}
        found.extend(frontier)
    return found


def _kill_all(group: int) -> None:
    """Kill every descendant until none is left.

    The command's process group goes first, in one atomic kill, so a fork bomb cannot
    outrun it; the scan then finds what left the group (``setsid``) and was re-parented here.
    """
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for _ in range(200):
        pids = _descendants(os.getpid())
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap()
        time.sleep(0.005)


_EXITED: dict[int, int] = {}


def _reap() -> None:
    """Collect every exited child (ours and re-parented orphans) into ``_EXITED``."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _EXITED[pid] = status


def pids_cgroup(limit: int) -> str | None:
    """A new pids cgroup capped at ``limit`` tasks, for root, or None where none can be made.

    RLIMIT_NPROC never binds root in the initial user namespace (the kernel exempts it), so
    without a pid namespace only the supervisor's count would stop a fork storm, after the
    fact. The cgroup's pids.max makes a fork past the limit fail with EAGAIN instead. A
    cgroup v2 hierarchy is preferred, then v1's pids hierarchy; the caller moves the command
    into it and removes it at the end (:func:`remove_cgroup`).
    """
    if os.geteuid() != 0:
        return None
    try:
        with open("/proc/self/mountinfo") as handle:
            mounts = [line.split() for line in handle]
        with open("/proc/self/cgroup") as handle:
            memberships = [line.rstrip("\n").split(":", 2) for line in handle]
    except OSError:
        return None
    for version in (2, 1):
        for fields in mounts:
            dash = fields.index("-")
            fstype, options = fields[dash + 1], fields[dash + 3].split(",")
            if version == 2 and fstype != "cgroup2":
                continue
            if version == 1 and (fstype != "cgroup" or "pids" not in options):
                continue
            own = next(
                (
                    path
                    for _, controllers, path in memberships
                    if (version == 2 and controllers == "")
                    or (version == 1 and "pids" in controllers.split(","))
                ),
                None,
            )
            created = _make_cgroup(fields[4], fields[3], own, version, limit) if own else None
            if created is not None:
                return created
    return None


def _make_cgroup(mountpoint: str, root: str, own: str, version: int, limit: int) -> str | None:
    if root != "/" and not own.startswith(root):
        return None
    relative = own[len(root) :] if root != "/" else own
    parent = mountpoint + relative.rstrip("/")
    path = f"{parent}/remora-sandbox-{os.getpid()}"
    try:
        if version == 2:
            with open(f"{parent}/cgroup.controllers") as handle:
                if "pids" not in handle.read().split():
                    return None
            with open(f"{parent}/cgroup.subtree_control") as handle:
                enabled = handle.read().split()
            if "pids" not in enabled:
                with open(f"{parent}/cgroup.subtree_control", "w") as handle:
                    handle.write("+pids")
        os.mkdir(path)
    except OSError:
        return None
    try:
        with open(f"{path}/pids.max", "w") as handle:
            handle.write(str(limit))
    except OSError:
        remove_cgroup(path)
        return None
    return path


def remove_cgroup(path: str | None) -> None:
    """Remove the command's cgroup once its last task is gone (the kernel needs a moment)."""
    if path is None:
        return
    for _ in range(100):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def _join_cgroup(path: str | None) -> None:
    if path is not None:
        with open(f"{path}/cgroup.procs", "w") as handle:
            handle.write("0")


def _write_report(path: str | None, report: dict[str, int]) -> None:
    if path:
        with open(path, "wb") as handle:
            marshal.dump(report, handle)


def _supervise(child: int, processes: int, report_path: str | None, cgroup: str | None) -> int:
    """Wait for ``child`` while keeping its process tree under ``processes``; then clean up
    (every descendant killed, the command's cgroup removed)."""
    report: dict[str, int] = {}

    def stop(_signum: int, _frame: object) -> None:
        _kill_all(child)
        remove_cgroup(cgroup)
        os._exit(128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    pidfd = os.pidfd_open(child)
    while child not in _EXITED:
        select.select([pidfd], [], [], _POLL_SECONDS)
        _reap()
        if child not in _EXITED and len(_descendants(os.getpid())) > processes:
            report["process_limit"] = processes
            _kill_all(child)
            _EXITED.setdefault(child, signal.SIGKILL)
    os.close(pidfd)
    status = _EXITED[child]
    _kill_all(child)
    remove_cgroup(cgroup)
    _write_report(report_path, report)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def main(argv: list[str]) -> int:
    with open(argv[1], "rb") as handle:
        spec = marshal.load(handle)
    limits: dict[str, int] = spec["limits"]
    landlock = spec.get("landlock")
    supervise = bool(spec.get("supervise"))
    try:
        if spec.get("pid_max"):
            try:
                with open("/proc/sys/kernel/pid_max", "w") as handle:
                    handle.write(str(spec["pid_max"]))
            except OSError:
                pass  # kernels before 6.14 share pid_max; RLIMIT_NPROC still applies
        for path in spec.get("remove", []):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        if spec.get("drop_capabilities") and not supervise:
            drop_capabilities()
        if supervise:
            _libc().prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        processes = limits["processes"] + (_user_process_count() if supervise else 0)
        _set_limits(limits, processes)
    except (OSError, SetupError) as exc:
        print(f"remora-sandbox: {exc}", file=sys.stderr)
        return SETUP_FAILED
    os.chdir(spec["cwd"])
    os.environ.pop("PWD", None)  # bubblewrap sets it; the command gets the host's env only
    if not supervise:
        _start(spec)
    cgroup = pids_cgroup(limits["processes"])
    child = os.fork()
    if child == 0:
        try:
            os.setpgid(0, 0)
            _join_cgroup(cgroup)
            if spec.get("drop_capabilities"):
                drop_capabilities()
            if landlock is not None:
                allow_network = landlock.get("allow_network", False)
                abi = apply_landlock(landlock["read"], landlock["write"], allow_network)
                if not allow_network:
                    apply_socket_filter(allow_tcp=abi >= 4)
        except (OSError, SetupError) as exc:
            print(f"remora-sandbox: {exc}", file=sys.stderr)
            os._exit(SETUP_FAILED)
        _start(spec)
    return _supervise(child, limits["processes"], spec.get("report"), cgroup)


def _start(spec: dict[str, object]) -> None:
    """Become the command: exec ``argv``, or run ``python.script`` in this interpreter.

    The second saves a whole interpreter start-up on every call of a Python helper script
    (the launcher was started with the flags that script needs). The script runs as
    ``__main__`` with ``sys.argv`` = [script, *args]; this process exits with its status.
    """
    python = spec.get("python")
    if not isinstance(python, dict):
        argv = spec["argv"]
        assert isinstance(argv, list)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            print(f"remora-sandbox: cannot start {argv[0]}: {exc}", file=sys.stderr)
            os._exit(SETUP_FAILED)
    script = str(python["script"])
    sys.argv = [script, *python["args"]]
    module = type(sys)("__main__")
    module.__file__ = script
    sys.modules["__main__"] = module
    status: object = 0
    try:
        with open(script, "rb") as handle:
            exec(compile(handle.read(), script, "exec"), module.__dict__)
    except SystemExit as exc:
        status = exc.code
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status if isinstance(status, int) else (0 if status is None else 1))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
