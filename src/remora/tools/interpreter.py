"""Which Python runs the project's code: the project's own, so its dependencies import.

``tools.python`` names it; otherwise the active virtual environment (``$VIRTUAL_ENV``,
when it is not Remora's own), then a ``.venv/`` or ``venv/`` in the project root, else
Remora's own interpreter. A virtual environment is read from its ``pyvenv.cfg``: nothing
of the project's runs outside the sandbox to find out. A cloned repository can ship its
``.venv/``, so that file is read as untrusted: as a regular file of bounded size (a FIFO
would block, ``/dev/zero`` never ends), and the ``home`` it names is shown to the sandbox
only as the Python installation it holds: its prefix (the directory holding ``bin/`` and
``lib/pythonX.Y/os.py``), resolved, and never ``/``, the user's home or a directory above
it, nor the project root or one above it; the environment's ``bin/python`` must lead into
that installation or the environment itself.

pytest and coverage run under that interpreter. When its Python version is Remora's,
Remora's site-packages are appended after the project's own, so a project without pytest
or coverage installed still runs them (its own versions win when it has them). Another
version cannot load Remora's compiled packages: then the project's environment must have
pytest and coverage itself (TOOL_806 says so).

Codes: TOOL_805 ``tools.python`` is not an interpreter; TOOL_806 the project's
interpreter lacks a module Remora needs to run there; TOOL_807 the environment's
``pyvenv.cfg`` cannot be read (not a regular file, too large, not UTF-8); TOOL_808 the
``home`` it names is refused (not a Python installation, or one that would show too much).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import site
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from remora.config import ToolsConfig
from remora.errors import ToolError
from remora.regular_files import read_regular_file

_HOST_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
_PROJECT_VENVS = (".venv", "venv")
_PYVENV_LIMIT = 64 * 1024  # a pyvenv.cfg is a few hundred bytes
_REMAKE = "recreate it with 'python -m venv', or set tools.python to an interpreter"
# Runs ``-m module args`` with Remora's site-packages appended to the path: sys.argv[1]
# is the JSON list of those directories.
_BOOT = (
    "import json, runpy, sys\n"
    "sys.path.extend(p for p in json.loads(sys.argv[1]) if p not in sys.path)\n"
    "sys.argv = [sys.argv[3], *sys.argv[4:]]\n"
    "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n"
)


@dataclass(frozen=True)
class ProjectPython:
    """The interpreter that runs the project's code, and why it was chosen."""

    executable: str
    source: str
    """Why: ``tools.python``, ``$VIRTUAL_ENV``, ``.venv``, ``venv`` or ``remora``."""
    version: str
    """``major.minor``."""
    environment: str | None = None
    """The virtual environment's directory (None for a plain interpreter)."""
    base: str | None = None
    """The installation the environment was made from: the prefix of its ``pyvenv.cfg``
    home, resolved and checked (see the module docstring)."""

    @property
    def is_remoras(self) -> bool:
        return self.source == "remora"

    @property
    def shares_remoras_packages(self) -> bool:
        """Whether Remora's pytest and coverage can be lent to it (same Python version)."""
        return not self.is_remoras and self.version == _HOST_VERSION

    def read_paths(self) -> tuple[str, ...]:
        """What a sandbox must show read-only for this interpreter to start."""
        found = {os.path.realpath(self.executable)}
        for path in (self.environment, self.base):
            if path:
                found.add(os.path.realpath(path))
        return tuple(sorted(path for path in found if os.path.exists(path)))

    def has_module(self, name: str) -> bool:
        """Whether the environment's site-packages hold ``name`` (True when unknown)."""
        if self.environment is None:
            return True
        lib = Path(self.environment) / "lib"
        return any(
            (packages / name).is_dir() or (packages / f"{name}.py").is_file()
            for packages in lib.glob("python*/site-packages")
        )

    def module_argv(self, module: str, *args: str) -> list[str]:
        """``python -m module args`` under this interpreter; TOOL_806 when it cannot."""
        if self.is_remoras:
            return [sys.executable, "-m", module, *args]
        if self.shares_remoras_packages:
            return [
                self.executable,
                "-c",
                _BOOT,
                json.dumps(remoras_packages()),
                "-m",
                module,
                *args,
            ]
        if not self.has_module(module):
            raise ToolError(
                "TOOL_806",
                f"the project's Python ({self.executable}, {self.version}, from {self.source}) "
                f"has no {module}, and Remora's (Python {_HOST_VERSION}) cannot be lent to it",
                f"install {module} into {self.environment or 'it'}, or set tools.python",
            )
        return [self.executable, "-m", module, *args]

    def describe(self) -> str:
        """``/p/.venv/bin/python (3.11, from .venv; Remora's pytest and coverage lent)``."""
        if self.is_remoras:
            return f"{self.executable} ({self.version}, Remora's own: no project environment)"
        lent = (
            "; Remora's pytest and coverage lent where it has none"
            if self.shares_remoras_packages
            else "; its own pytest and coverage are used"
        )
        return f"{self.executable} ({self.version}, from {self.source}{lent})"


def remoras_packages() -> list[str]:
    """Remora's own site-packages, where its pytest and coverage are installed."""
    found = [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    return list(dict.fromkeys(path for path in found if os.path.isdir(path)))


def project_python(root: Path, config: ToolsConfig) -> ProjectPython:
    """The interpreter for the project at ``root`` (see the module docstring)."""
    if config.python:
        given = Path(config.python).expanduser()
        path = given if given.is_absolute() else root / given
        if path.is_dir():
            path = path / "bin" / "python"
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ToolError(
                "TOOL_805",
                f"tools.python is {config.python}, which is no Python interpreter",
                "give the path of a python executable or of a virtual environment, "
                "or remove the setting to detect the project's",
            )
        if _is_remoras(path.parent.parent):
            return _remoras()  # Remora's own environment, named
        return _interpreter(path, "tools.python", root)
    active = os.environ.get("VIRTUAL_ENV")
    if active:
        found = _environment(Path(active), "$VIRTUAL_ENV", root)
        if found is not None:
            return found
    for name in _PROJECT_VENVS:
        found = _environment(root / name, name, root)
        if found is not None:
            return found
    return _remoras()


def _remoras() -> ProjectPython:
    return ProjectPython(executable=sys.executable, source="remora", version=_HOST_VERSION)


def _is_remoras(environment: Path) -> bool:
    return environment.resolve() == Path(sys.prefix).resolve()


def _environment(directory: Path, source: str, root: Path) -> ProjectPython | None:
    """The environment at ``directory`` (Remora's own when it is that), or None. A
    ``pyvenv.cfg`` that is there but no regular file is TOOL_807, not a missing one."""
    python = directory / "bin" / "python"
    if not (directory / "pyvenv.cfg").exists() or not python.exists():
        return None
    if _is_remoras(directory):
        return _remoras()
    return _interpreter(python, source, root)


def _interpreter(python: Path, source: str, root: Path) -> ProjectPython:
    """``python`` described from its environment's ``pyvenv.cfg`` (a plain interpreter
    outside one is taken as Remora's version when it is Remora's, else as unknown)."""
    environment = python.parent.parent
    settings = _pyvenv(environment / "pyvenv.cfg")
    if not settings:
        same = os.path.realpath(python) == os.path.realpath(sys.executable)
        return ProjectPython(str(python), source, _HOST_VERSION if same else "unknown")
    version = settings.get("version_info") or settings.get("version") or ""
    major_minor = ".".join(version.split(".")[:2]) or "unknown"
    home = settings.get("home")
    base = _installation(home, python, major_minor, root) if home else None
    _check_executable(python, base)
    return ProjectPython(
        executable=str(python),
        source=source,
        version=major_minor,
        environment=str(environment),
        base=base,
    )


def _check_executable(python: Path, base: str | None) -> None:
    """TOOL_808 unless the environment's interpreter leads into the environment itself (a
    copy), its installation, or Remora's own interpreter: the sandbox shows that file."""
    real = Path(os.path.realpath(python))
    allowed = [Path(os.path.realpath(python.parent.parent))]
    if base is not None:
        allowed.append(Path(base))
    if any(_within(real, place) for place in allowed):
        return
    if real == Path(os.path.realpath(sys.executable)):
        return
    where = f"the installation {base}" if base else "the environment"
    raise ToolError(
        "TOOL_808",
        f"the virtual environment's interpreter {python} leads to {real}, outside {where}; "
        "Remora will not show it to project code",
        _REMAKE,
    )


def _pyvenv(path: Path) -> dict[str, str]:
    """The settings of ``pyvenv.cfg`` ({} when there is none); TOOL_807 when it is there
    but cannot be read as one."""
    try:
        text = read_regular_file(path, _PYVENV_LIMIT).decode("utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ToolError(
            "TOOL_807",
            f"the virtual environment's {path} cannot be read as a pyvenv.cfg: {why}",
            f"remove or fix {path.parent}, or {_REMAKE}",
        ) from None
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            found[key.strip().lower()] = value.strip()
    return found


def _installation(home: str, python: Path, version: str, root: Path) -> str:
    """The prefix of the Python installation ``home`` names, which the sandbox shows to the
    environment's interpreter; TOOL_808 when it is none or would show too much."""
    cfg = python.parent.parent / "pyvenv.cfg"

    def refused(why: str) -> ToolError:
        return ToolError(
            "TOOL_808",
            f"{cfg} names home = {home}, {why}; Remora will not show it to project code",
            f"{_REMAKE} installed elsewhere",
        )

    if not os.path.isabs(home):
        raise refused("which is not an absolute path")
    real = Path(os.path.realpath(home))
    remoras = Path(os.path.realpath(sys.base_prefix))  # shown to every sandbox already
    _check_breadth(real, root, remoras, refused)
    candidates = [real.parent, real] if real.name == "bin" else [real]
    prefix = next((path for path in candidates if _stdlib(path, version)), None)
    if prefix is None:
        executable = Path(os.path.realpath(python))
        if executable.parent != real or not executable.name.startswith("python"):
            raise refused(f"and {real} holds no Python installation")
        prefix = real  # the interpreter the environment links to, without its stdlib beside
    _check_breadth(prefix, root, remoras, refused)
    return str(prefix)


def _check_breadth(
    shown: Path, root: Path, remoras: Path, refused: Callable[[str], ToolError]
) -> None:
    """Raise ``refused`` when showing ``shown`` would show more than an installation:
    the filesystem root, the user's home or above, the project or above (unless it is
    Remora's own installation, which every sandbox shows)."""
    if shown == Path("/"):
        raise refused("which would show the whole filesystem")
    for home in _user_homes():
        if _within(home, shown):
            where = (
                "the user's home directory"
                if home == shown
                else "a directory above the user's home"
            )
            raise refused(f"which would show {shown}, {where}")
    project = Path(os.path.realpath(root))
    if shown != remoras and _within(project, shown):
        where = "the project itself" if project == shown else "a directory above the project"
        raise refused(f"which would show {shown}, {where}")


def _stdlib(prefix: Path, version: str) -> bool:
    """Whether ``prefix`` holds a standard library (``lib/pythonX.Y/os.py``)."""
    if version != "unknown":
        return (prefix / "lib" / f"python{version}" / "os.py").is_file()
    return any(path.is_file() for path in prefix.glob("lib/python3*/os.py"))


def _user_homes() -> set[Path]:
    """The user's home directory, as ``$HOME`` and as the password database say."""
    found: set[Path] = set()
    with contextlib.suppress(RuntimeError, KeyError):
        found.add(Path(os.path.realpath(Path.home())))
    with contextlib.suppress(KeyError):
        found.add(Path(os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir)))
    return found


def _within(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents
