"""Which Python runs the project's code: the project's own, so its dependencies import.

``tools.python`` names it; otherwise the active virtual environment (``$VIRTUAL_ENV``,
when it is not Remora's own), then a ``.venv/`` or ``venv/`` in the project root, else
Remora's own interpreter. A virtual environment is read from its ``pyvenv.cfg``: nothing
of the project's runs outside the sandbox to find out.

pytest and coverage run under that interpreter. When its Python version is Remora's,
Remora's site-packages are appended after the project's own, so a project without pytest
or coverage installed still runs them (its own versions win when it has them). Another
version cannot load Remora's compiled packages: then the project's environment must have
pytest and coverage itself (TOOL_806 says so).

Codes: TOOL_805 ``tools.python`` is not an interpreter; TOOL_806 the project's
interpreter lacks a module Remora needs to run there.
"""

from __future__ import annotations

import json
import os
import site
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from remora.config import ToolsConfig
from remora.errors import ToolError

_HOST_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
_PROJECT_VENVS = (".venv", "venv")
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
    """The installation the environment was made from (its ``pyvenv.cfg`` home's parent)."""

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
        return _interpreter(path, "tools.python")
    active = os.environ.get("VIRTUAL_ENV")
    if active:
        found = _environment(Path(active), "$VIRTUAL_ENV")
        if found is not None:
            return found
    for name in _PROJECT_VENVS:
        found = _environment(root / name, name)
        if found is not None:
            return found
    return _remoras()


def _remoras() -> ProjectPython:
    return ProjectPython(executable=sys.executable, source="remora", version=_HOST_VERSION)


def _is_remoras(environment: Path) -> bool:
    return environment.resolve() == Path(sys.prefix).resolve()


def _environment(directory: Path, source: str) -> ProjectPython | None:
    """The environment at ``directory`` (Remora's own when it is that), or None."""
    python = directory / "bin" / "python"
    if not (directory / "pyvenv.cfg").is_file() or not python.exists():
        return None
    if _is_remoras(directory):
        return _remoras()
    return _interpreter(python, source)


def _interpreter(python: Path, source: str) -> ProjectPython:
    """``python`` described from its environment's ``pyvenv.cfg`` (a plain interpreter
    outside one is taken as Remora's version when it is Remora's, else as unknown)."""
    environment = python.parent.parent
    settings = _pyvenv(environment / "pyvenv.cfg")
    if not settings:
        same = os.path.realpath(python) == os.path.realpath(sys.executable)
        return ProjectPython(str(python), source, _HOST_VERSION if same else "unknown")
    version = settings.get("version_info") or settings.get("version") or ""
    home = settings.get("home")
    return ProjectPython(
        executable=str(python),
        source=source,
        version=".".join(version.split(".")[:2]) or "unknown",
        environment=str(environment),
        base=str(Path(home).parent) if home else None,
    )


def _pyvenv(path: Path) -> dict[str, str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    found: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if sep:
            found[key.strip().lower()] = value.strip()
    return found
