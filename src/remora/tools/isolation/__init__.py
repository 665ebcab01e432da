"""Run project code isolated: the one way capabilities execute or import the user's code.

Anything that runs the project (``call_function``, ``pytest_run``, later coverage and
fixture validation) opens a :func:`project_sandbox` over the job's workspace and runs its
command there. Three levels, chosen by ``tools.isolation`` (see :mod:`._probe`):

``bwrap``
    bubblewrap with new user, mount, pid, network, IPC and UTS namespaces. The project
    appears at its own path as an overlayfs mount: lower layers the project and the
    workspace's changes, upper layer a scratch directory outside the project. Only the
    system directories, a few files of ``/etc``, the Python installation and an exchange
    directory are visible (read-only but for the exchange directory); the home directory,
    other repositories and Remora's state directory are not. The pid namespace ends with
    the command, so background processes cannot outlive it.
``landlock``
    no namespaces: the command runs in the workspace's materialized view, confined by
    Landlock so the project and the system are read-only, only the view and the exchange
    directory are writable, nothing else is readable, and TCP is denied (ABI 4 and later).
    A write through the view's links into the project fails with a permission error.
    The launcher is a subreaper: it counts and kills every descendant.
``none``
    the materialized view with limits only: an explicit opt-out.

At every level the command runs with a scrubbed environment and rlimits on CPU time,
address space, file size and processes (also pid_max of the pid namespace, on kernels that
have it per namespace).

What project code writes or deletes is discarded when the sandbox closes, unless the
caller opens it with ``harvest=True`` and it closes normally: then it becomes workspace
changes (see :mod:`remora.workspace.layers`; version-control directories are never
harvested). Observing code (``call_function``, characterization, input probing, ``pytest_run``)
never harvests: a function under observation is untrusted, and what it wrote to
``.git/config`` or deleted would otherwise reach the project at accept. An agent's
intended edits go through the workspace API instead.

Codes: TOOL_801/TOOL_802 (see :mod:`._probe`), TOOL_803 the sandbox could not be set up,
TOOL_804 the command started more processes than ``tools.max_processes``.
"""

from __future__ import annotations

import functools
import marshal
import os
import site
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from remora.config import ToolsConfig
from remora.errors import ToolError
from remora.tools.interpreter import ProjectPython, project_python
from remora.tools.isolation import _launcher
from remora.tools.isolation._probe import (
    IsolationLevel,
    IsolationSetting,
    IsolationStatus,
    Mechanism,
    bwrap_binary,
    confinement,
    isolation_status,
    require_isolation,
)
from remora.tools.process import (
    DEFAULT_OUTPUT_LIMIT,
    CommandResult,
    run_command,
    scrubbed_env,
)
from remora.workspace.base import FileStore
from remora.workspace.layers import Harvest, harvest_upper, write_changes_layer

__all__ = [
    "IsolationLevel",
    "IsolationSetting",
    "IsolationStatus",
    "Mechanism",
    "Sandbox",
    "confinement",
    "isolation_status",
    "project_sandbox",
    "require_isolation",
]

LAUNCHER = Path(_launcher.__file__)
_MB = 1024 * 1024
_CPU_MARGIN = 2
_TERMINATE_GRACE = 2.0
_ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "nsswitch.conf",
    "passwd",
    "group",
    "hosts",
    "host.conf",
    "mime.types",
    "os-release",
    "alternatives",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "python3",
)
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


@dataclass
class Sandbox:
    """One sandbox over one workspace: where the project is, and a way to run commands in it.

    ``root`` is the project as the command sees it (its real path under bubblewrap, the
    view otherwise); ``exchange`` is a private directory with the same path inside and out,
    for request and report files; ``HOME`` and ``TMPDIR`` point below it. ``harvest`` is
    what a harvesting sandbox took into the workspace under bubblewrap (None otherwise).
    """

    level: IsolationLevel
    root: Path
    exchange: Path
    config: ToolsConfig
    _store: FileStore
    python: ProjectPython
    """The project's interpreter, which runs its code (:mod:`remora.tools.interpreter`)."""
    _removed: list[str] = field(default_factory=list)
    _layers: tuple[Path, Path, Path] | None = None
    _runs: int = 0
    harvest: Harvest | None = None

    @property
    def home(self) -> Path:
        return self.exchange / "home"

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        what: str,
        pythonpath: Sequence[Path] = (),
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> CommandResult:
        """Run ``argv`` in the sandbox; TOOL_201 on timeout, TOOL_803/TOOL_804 as documented.

        ``env`` adds variables to the scrubbed environment (``PYTHONHASHSEED``, say);
        ``cwd`` is a directory below :attr:`root` to start in (default: the root)."""
        command: dict[str, Any] = {"argv": list(argv)}
        if cwd is not None:
            if not _within(cwd, self.root):
                raise ValueError(f"{cwd} is not below the sandbox's root {self.root}")
            command["cwd"] = str(cwd)
        return self._launch(["-I", "-S"], command, timeout, what, pythonpath, output_limit, env)

    def run_python(
        self,
        script: Path,
        args: Sequence[str],
        *,
        timeout: float,
        what: str,
        pythonpath: Sequence[Path] = (),
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """``python -P -s script args`` in the sandbox with the project's interpreter. With
        Remora's own, one start-up cheaper: the launcher runs the script itself once the
        sandbox is in place. ``script`` must use the standard library only."""
        if not self.python.is_remoras:
            argv = [self.python.executable, "-P", "-s", str(script), *args]
            return self.run(
                argv,
                timeout=timeout,
                what=what,
                pythonpath=pythonpath,
                output_limit=output_limit,
                env=env,
            )
        command = {"argv": [sys.executable], "python": {"script": str(script), "args": list(args)}}
        return self._launch(["-P", "-s"], command, timeout, what, pythonpath, output_limit, env)

    def module_argv(self, module: str, *args: str) -> list[str]:
        """``python -m module args`` with the project's interpreter (pytest, coverage)."""
        return self.python.module_argv(module, *args)

    def _launch(
        self,
        flags: list[str],
        command: dict[str, Any],
        timeout: float,
        what: str,
        pythonpath: Sequence[Path],
        output_limit: int,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        self._runs += 1
        spec_path = self.exchange / f"launch-{self._runs}.spec"
        report_path = self.exchange / f"launch-{self._runs}.report"
        spec = {**self._spec(timeout, report_path), **command}
        spec_path.write_bytes(marshal.dumps(spec))
        launcher = [sys.executable, *flags, str(LAUNCHER), str(spec_path)]
        outer = self._bwrap_argv() + launcher if self.level == "bwrap" else launcher
        result = run_command(
            outer,
            cwd=self.root,
            env=scrubbed_env(self.home, pythonpath, env),
            timeout=timeout,
            what=what,
            output_limit=output_limit,
            terminate_grace=_TERMINATE_GRACE,
        )
        if result.returncode == _launcher.SETUP_FAILED and "remora-sandbox:" in result.stderr:
            reason = result.stderr.split("remora-sandbox:")[-1].strip().splitlines()[0]
            raise ToolError(
                "TOOL_803",
                f"the {self.level} sandbox for {what} could not be set up: {reason}",
                "run 'remora doctor' to see which isolation works on this machine",
            )
        report = marshal.loads(report_path.read_bytes()) if report_path.is_file() else {}
        if report.get("process_limit"):
            raise ToolError(
                "TOOL_804",
                f"{what} started more than {report['process_limit']} processes and was stopped",
                "the code may fork in a loop; raise tools.max_processes if it needs more",
            )
        return result

    def _spec(self, timeout: float, report: Path) -> dict[str, Any]:
        config = self.config
        spec: dict[str, Any] = {
            "cwd": str(self.root),
            "limits": {
                "cpu_seconds": int(timeout) + _CPU_MARGIN,
                "memory_bytes": config.max_process_memory_mb * _MB,
                "file_bytes": config.max_file_mb * _MB,
                "processes": config.max_processes,
            },
            "report": str(report),
            "supervise": self.level != "bwrap",
            "drop_capabilities": True,
        }
        if self.level == "bwrap":
            spec["pid_max"] = max(config.max_processes + 2, _MIN_PID_MAX)
            spec["remove"] = [str(self.root / rel) for rel in self._removed]
        elif self.level == "landlock":
            spec["landlock"] = {
                "read": [
                    *_system_paths(),
                    *_python_paths(),
                    *self.python.read_paths(),
                    *_project_entries(self._store),
                ],
                "write": [str(self.root), str(self.exchange), *_DEVICES],
                "allow_network": False,
            }
        return spec

    def _bwrap_argv(self) -> list[str]:
        binary = bwrap_binary()
        if binary is None or self._layers is None:
            raise ToolError("TOOL_803", "bubblewrap disappeared", "run 'remora doctor'")
        changes, upper, work = self._layers
        root = self.root
        argv = [
            str(binary),
            "--unshare-all",
            "--unshare-user",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SYS_ADMIN",
            "--cap-add",
            "CAP_SETPCAP",
            *_system_binds(),
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(self.config.max_file_mb * _MB),
            "--tmpfs",
            "/tmp",
        ]
        shown = _outermost([*_python_paths(), *self.python.read_paths()])
        inside, outside = _split_paths(shown, root)
        argv += _ro_binds(outside)
        argv += ["--overlay-src", str(root), "--overlay-src", str(changes)]
        argv += ["--overlay", str(upper), str(work), str(root)]
        hidden = self._store.hidden
        if hidden and (root / hidden).is_dir():
            argv += ["--tmpfs", str(root / hidden), "--remount-ro", str(root / hidden)]
        argv += _ro_binds(inside)
        argv += ["--bind", str(self.exchange), str(self.exchange)]
        argv += ["--chdir", str(root), "--"]
        return argv


_MIN_PID_MAX = 301  # the kernel's floor for pid_max (RESERVED_PIDS + 1)


@contextmanager
def project_sandbox(
    store: FileStore,
    config: ToolsConfig,
    *,
    writable: Iterable[str] = (),
    harvest: bool = False,
) -> Iterator[Sandbox]:
    """A sandbox over ``store``; what the code writes is discarded at exit unless ``harvest``.

    ``harvest`` is for commands whose writes are the point (``remora eval``'s runs on its
    throwaway copies, which write their junit and coverage reports):
    on normal exit what the code wrote and deleted becomes workspace changes, reported in
    ``Sandbox.harvest``. The default discards them, as observing untrusted code must.
    ``writable`` names paths the command writes that must be real copies in a
    materialized view (the Landlock and unisolated levels); under bubblewrap every path is
    writable through the overlay. Raises TOOL_801/TOOL_802 when isolation is required but
    missing, before anything runs.
    """
    level = require_isolation(config.isolation)
    python = project_python(store.root, config)
    with tempfile.TemporaryDirectory(prefix="remora-sandbox-") as tmp:
        scratch = Path(tmp)
        exchange = scratch / "exchange"
        (exchange / "home").mkdir(parents=True)
        if level == "bwrap":
            layers = (scratch / "changes", scratch / "upper", scratch / "work")
            for path in layers:
                path.mkdir()
            removed = write_changes_layer(store, layers[0])
            box = Sandbox(level, store.root, exchange, config, store, python, removed, layers)
            yield box
            if harvest:
                box.harvest = harvest_upper(
                    store, layers[1], removed=frozenset(removed), max_bytes=config.max_file_mb * _MB
                )
        else:
            with store.materialize(writable=sorted(set(writable)), capture=harvest) as view:
                yield Sandbox(level, view, exchange, config, store, python)
                if harvest:
                    _drop_truncated(view, config.max_file_mb * _MB)


def _project_entries(store: FileStore) -> list[str]:
    """The project's top-level entries but Remora's state directory: Landlock grants reads
    per path, and the state holds every other workspace's pending changes."""
    if not store.hidden:
        return [str(store.root)]
    return _entries_but(store.root, store.hidden.strip("/").split("/"))


def _entries_but(directory: Path, hidden: list[str]) -> list[str]:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return [str(directory)]
    found: list[str] = []
    for name in names:
        if name != hidden[0]:
            found.append(str(directory / name))
        elif len(hidden) > 1 and (directory / name).is_dir():
            found += _entries_but(directory / name, hidden[1:])
    return found


def _drop_truncated(view: Path, max_bytes: int) -> None:
    """Remove files that reached the size limit before the view is captured, as the overlay
    harvest skips them: the writer was stopped there, so each is a truncated fragment."""
    for dirpath, _dirs, files in os.walk(view):
        for name in files:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path) and os.path.getsize(path) >= max_bytes:
                os.unlink(path)


def _within(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def _split_paths(paths: Iterable[str], root: Path) -> tuple[list[str], list[str]]:
    """(paths inside ``root``, paths outside it): the first are bound over the overlay."""
    inside = [path for path in paths if _within(Path(path), root)]
    return inside, [path for path in paths if path not in inside]


def _ro_binds(paths: Iterable[str]) -> list[str]:
    argv: list[str] = []
    for path in paths:
        argv += ["--ro-bind", path, path]
    return argv


@functools.cache
def _python_paths() -> tuple[str, ...]:
    """The Python installation (prefixes, site-packages) and Remora's own package, which
    holds the launcher and the child scripts capabilities run."""
    candidates = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        str(LAUNCHER.parents[2]),
        *site.getsitepackages(),
    }
    return _outermost(os.path.realpath(path) for path in candidates if os.path.exists(path))


@functools.cache
def _system_paths() -> tuple[str, ...]:
    """System directories and the few files of /etc programs need, as real paths."""
    found = [os.path.realpath(path) for path in _SYSTEM_DIRS if os.path.exists(path)]
    found += [
        os.path.realpath(path)
        for path in (os.path.join("/etc", name) for name in _ETC_FILES)
        if os.path.exists(path)
    ]
    return _outermost(found)


@functools.cache
def _system_binds() -> tuple[str, ...]:
    """bwrap arguments that show the system directories (links stay links) and /etc files."""
    argv: list[str] = []
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    for name in _ETC_FILES:
        path = os.path.join("/etc", name)
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    return tuple(argv)


def _outermost(paths: Iterable[str]) -> tuple[str, ...]:
    """Sorted, without any path that lies inside another (and never the filesystem root)."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if path != "/" and not any(_within(Path(path), Path(parent)) for parent in kept):
            kept.append(path)
    return tuple(kept)
