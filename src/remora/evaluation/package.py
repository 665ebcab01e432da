"""The package under evaluation: fetched or found, laid out, copied into scratch projects.

SPEC is a local path (a project directory, a package directory holding ``__init__.py``,
or an sdist archive) or a pip requirement such as ``toolz==1.0.0``, whose sdist pip downloads
into the evaluation's work directory at run time (no wheel: the tests and the source as
published). Nothing of the package is kept outside that directory.

Each variant (a baseline, Remora) works on its own scratch copy, a :class:`Project`, whose
code comes first on ``PYTHONPATH`` in every command run on it. A copy holds the package's
regular files, directories and symlinks (as links); FIFOs, sockets and devices are left out
silently, as an unpacked sdist has none (``tarfile``'s data filter refuses them) and no
Python code or test of the package is such a file. An archive is unpacked only when its
members' declared sizes and count stay within :data:`MAX_UNPACKED_BYTES` and
:data:`MAX_UNPACKED_MEMBERS` (EVAL_002 otherwise).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
import tarfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement

from remora.config import ToolsConfig
from remora.errors import EvalError
from remora.evaluation._isolated import run_isolated
from remora.evaluation.commands import CommandResult, run_command
from remora.evaluation.report import SuiteRun
from remora.tools.process import DEFAULT_OUTPUT_LIMIT

FETCH_TIMEOUT_S = 300.0
ARCHIVES = (".tar.gz", ".tgz", ".tar.bz2", ".zip")
MAX_UNPACKED_BYTES = 500_000_000
"""The most an archive may unpack to, in bytes: the sum of its members' declared sizes (tar
headers' ``size``, zip entries' ``file_size``), checked before anything is extracted. The
largest sdists on PyPI unpack to a few hundred MB; more is a decompression bomb (a 300 KB
archive that unpacked to 601 MB filled the work directory)."""
MAX_UNPACKED_MEMBERS = 100_000
"""The most members (files, directories, links) an archive may hold, checked with the size
before anything is extracted: each costs an inode and a write, and sdists hold thousands."""
IMPORT_TIMEOUT_S = 120.0
NOT_PACKAGES = frozenset(
    {"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "bench"}
    | {"scripts", "tools", "build", "dist", "site-packages", "node_modules"}
)
NOT_MODULES = frozenset({"setup.py", "conftest.py", "noxfile.py", "tasks.py", "fabfile.py"})
TEST_DIRS = frozenset({"tests", "test", "testing"})
COPY_IGNORE = shutil.ignore_patterns(
    "__pycache__",
    "*.pyc",
    "*.egg-info",
    ".git",
    ".hg",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    ".ruff_cache",
    ".pytest_cache",
    ".mypy_cache",
    ".hypothesis",
    ".remora",
)
_COPIED_TYPES = (stat.S_ISREG, stat.S_ISDIR, stat.S_ISLNK)


def _copy_ignore(directory: str, names: list[str]) -> set[str]:
    """What a scratch copy leaves out of ``directory``: :data:`COPY_IGNORE`'s names and every
    entry that is neither a regular file, a directory nor a symlink (a FIFO, socket or device,
    which ``shutil.copytree`` cannot copy: opening a FIFO blocks, reading a device never ends)."""
    ignored = set(COPY_IGNORE(directory, names))
    for name in names:
        if name in ignored:
            continue
        try:
            mode = os.lstat(os.path.join(directory, name)).st_mode
        except OSError:
            continue  # gone since listed: copytree reports it as it would any other error
        if not any(is_type(mode) for is_type in _COPIED_TYPES):
            ignored.add(name)
    return ignored


def copy_tree(source: Path, dest: Path) -> None:
    """A scratch copy of ``source`` at ``dest`` (which must not exist): symlinks as links,
    without :data:`COPY_IGNORE`'s names, nor FIFOs, sockets or devices."""
    shutil.copytree(source, dest, ignore=_copy_ignore, symlinks=True)


_SUMMARY = re.compile(r"\d+ (passed|failed|error|errors|skipped|deselected|xfailed|xpassed)\b")


def is_test_path(relative: str) -> bool:
    """A test module or anything under a test directory (``tests/``, ``pkg/test/``, ...)."""
    path = PurePosixPath(relative)
    name = path.name
    if name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py"):
        return True
    return any(part in TEST_DIRS for part in path.parts[:-1])


@dataclass(frozen=True)
class PackageSource:
    """Where the package's files are, and how they are laid out.

    ``entries`` are the top-level import packages (directories) or modules (``.py``
    files), relative to ``root / path_entry``; ``copied`` limits a copy to those names
    (a local package directory is copied alone, not its parent).
    """

    spec: str
    name: str
    version: str | None
    root: Path
    path_entry: str
    entries: tuple[str, ...]
    copied: tuple[str, ...] | None = None
    tools: ToolsConfig = field(default_factory=ToolsConfig, compare=False)
    """How the package's code is isolated when it runs (the user's ``tools`` settings)."""

    @property
    def label(self) -> str:
        return f"{self.name}=={self.version}" if self.version else self.name

    def copy_to(self, dest: Path) -> Project:
        """A fresh scratch copy of the package (``dest`` must not exist)."""
        if self.copied is None:
            copy_tree(self.root, dest)
        else:
            dest.mkdir(parents=True)
            for name in self.copied:
                source = self.root / name
                if source.is_dir():
                    copy_tree(source, dest / name)
                elif source.is_file():
                    shutil.copy2(source, dest / name)
        return Project(dest, self)


@dataclass(frozen=True)
class Project:
    """One scratch copy of the package, which one variant of the evaluation may change."""

    root: Path
    source: PackageSource

    @property
    def base(self) -> Path:
        """The directory on ``sys.path`` (the root, or its ``src/``)."""
        return self.root / self.source.path_entry if self.source.path_entry else self.root

    def copy_to(self, dest: Path) -> Project:
        """A copy of this project as it is now (changes included)."""
        copy_tree(self.root, dest)
        return Project(dest, self.source)

    def run(
        self,
        argv: Sequence[str],
        timeout: float,
        *,
        cwd: Path | None = None,
        within: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
        what: str | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
    ) -> CommandResult:
        """Run ``argv`` on the package's code in the project sandbox (``cwd`` defaults to the
        copy's root; ``within`` names other directories it reads or writes, such as a
        scratch directory for reports): the package first on ``sys.path``, no bytecode,
        nothing else from this process's environment but ``env``."""
        return run_isolated(
            argv,
            cwd=cwd or self.root,
            within=[self.root, *within],
            timeout=timeout,
            tools=self.source.tools,
            pythonpath=[self.base],
            env=env,
            what=what or f"{self.source.label}'s code",
            output_limit=output_limit,
        )

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def modules(self) -> list[str]:
        """The package's own modules (tests excluded), relative posix paths, sorted."""
        found: list[str] = []
        for entry in self.source.entries:
            path = self.base / entry
            files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
            for file in files:
                relative = self.relative(file)
                inside = file.relative_to(self.base).as_posix()
                if file.is_file() and not is_test_path(inside):
                    found.append(relative)
        return sorted(found)

    def module_name(self, relative: str) -> str:
        """``src/pkg/sub/core.py`` -> ``pkg.sub.core``; ``pkg/__init__.py`` -> ``pkg``."""
        inside = (self.root / relative).relative_to(self.base).with_suffix("")
        parts = list(inside.parts)
        if parts and parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)

    def test_paths(self) -> list[str]:
        """The package's test directories and top-level test modules."""
        paths: set[str] = set()
        for path in sorted(self.root.rglob("*.py")):
            relative = self.relative(path)
            if ".remora" in PurePosixPath(relative).parts or not is_test_path(relative):
                continue
            parts = PurePosixPath(relative).parts
            index = next((i for i, part in enumerate(parts[:-1]) if part in TEST_DIRS), None)
            if index is not None:
                paths.add("/".join(parts[: index + 1]))
            elif len(parts) == 1 and path.name != "conftest.py":
                paths.add(relative)
        return sorted(paths, key=lambda item: (item.count("/"), item))

    def check_import(self, module: str) -> tuple[bool, str]:
        """Whether ``import module`` works in the project; the error's last line when not."""
        result = self.run([sys.executable, "-c", f"import {module}"], IMPORT_TIMEOUT_S)
        return result.ok, "" if result.ok else result.tail(1)

    def run_tests(self, timeout: float) -> SuiteRun:
        """The package's own test suite: passed, failed, or why it cannot run."""
        paths = self.test_paths()
        if not paths:
            return SuiteRun(status="cannot_run", summary="no tests found", wall_s=0.0)
        result = self.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths], timeout
        )
        return suite_run(result)


def suite_run(result: CommandResult) -> SuiteRun:
    """pytest's outcome: exit 0 passed, 1 failed; anything else means it could not run."""
    lines = [line.strip("= ") for line in result.stdout.strip().splitlines() if line.strip()]
    summary = next((line for line in reversed(lines) if _SUMMARY.search(line)), "")
    if result.timed_out:
        return SuiteRun(status="cannot_run", summary=result.tail(), wall_s=result.wall_s)
    if result.returncode == 0:
        return SuiteRun(status="passed", summary=summary, wall_s=result.wall_s)
    if result.returncode == 1:
        return SuiteRun(status="failed", summary=summary, wall_s=result.wall_s)
    why = {2: "errors while collecting", 4: "pytest usage error", 5: "no tests collected"}
    detail = why.get(result.returncode, f"pytest exit {result.returncode}")
    tail = summary or result.tail(1)
    return SuiteRun(status="cannot_run", summary=f"{detail}: {tail}", wall_s=result.wall_s)


# --- finding the package -------------------------------------------------------------------------


def resolve_package(spec: str, work: Path) -> PackageSource:
    """The package SPEC names: a local path as it is, or a requirement's sdist fetched by pip."""
    if not spec.strip():
        raise EvalError("EVAL_001", "no package given", "e.g. remora eval toolz==1.0.0")
    path = Path(spec).expanduser()
    if path.is_file() and path.name.endswith(ARCHIVES):
        root = _unpack(path.resolve(), work / "sdist")
        return _layout(spec, _archive_name(path), _sdist_version(root), root)
    if path.exists():
        return _local(spec, path.resolve())
    try:
        requirement = Requirement(spec)
    except InvalidRequirement:
        raise EvalError(
            "EVAL_001",
            f"{spec!r} is neither an existing path nor a pip requirement",
            "give a project or package directory, or a requirement such as toolz==1.0.0",
        ) from None
    root = _fetch_sdist(spec, work / "sdist")
    version = _sdist_version(root)
    return _layout(spec, requirement.name, version, root)


def _local(spec: str, path: Path) -> PackageSource:
    if not path.is_dir():
        raise EvalError(
            "EVAL_003",
            f"{spec} is a file" if path.is_file() else f"{spec} is not a directory",
            "give the project directory or the package directory that holds it",
        )
    if (path / "__init__.py").is_file():
        return PackageSource(spec, path.name, None, path.parent, "", (path.name,), (path.name,))
    return _layout(spec, path.name, None, path)


def _layout(spec: str, name: str, version: str | None, root: Path) -> PackageSource:
    for path_entry in ("src", ""):
        base = root / path_entry if path_entry else root
        if not base.is_dir():
            continue
        packages = tuple(
            child.name
            for child in sorted(base.iterdir())
            if child.is_dir()
            and child.name.isidentifier()
            and child.name not in NOT_PACKAGES
            and (child / "__init__.py").is_file()
        )
        if packages:
            return PackageSource(spec, name, version, root, path_entry, packages)
    modules = tuple(
        child.name
        for child in sorted(root.glob("*.py"))
        if child.is_file()
        and child.name not in NOT_MODULES
        and child.stem.isidentifier()
        and not is_test_path(child.name)
    )
    if modules:
        return PackageSource(spec, name, version, root, "", modules)
    raise EvalError(
        "EVAL_003",
        f"{spec} holds no Python package or module",
        "point at a directory with an __init__.py, or at a project holding one (or src/)",
    )


def _fetch_sdist(spec: str, directory: Path) -> Path:
    """``pip download SPEC`` as an sdist into ``directory``, unpacked; its root directory."""
    directory.mkdir(parents=True, exist_ok=True)
    download = run_command(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            spec,
            "--no-deps",
            "--no-binary",
            ":all:",
            "--disable-pip-version-check",
            "-q",
            "-d",
            str(directory),
        ],
        cwd=directory,
        timeout=FETCH_TIMEOUT_S,
    )
    archives = sorted(path for path in directory.iterdir() if path.name.endswith(ARCHIVES))
    if not download.ok or not archives:
        raise EvalError(
            "EVAL_002",
            f"pip could not download the sdist of {spec}: {download.tail(1)}",
            "check the name and version on PyPI (an sdist must exist) and pip's index settings",
        )
    return _unpack(archives[0], directory)


def _unpack(archive: Path, directory: Path) -> Path:
    """The sdist ``archive`` unpacked under ``directory``; its single top directory.

    Its members' declared sizes and count are checked against :data:`MAX_UNPACKED_BYTES` and
    :data:`MAX_UNPACKED_MEMBERS` before anything is extracted (EVAL_002 when over); extraction
    writes no more than the declared sizes (``tarfile`` copies ``size`` bytes, ``zipfile``
    stops at ``file_size``)."""
    unpacked = directory / "unpacked"
    unpacked.mkdir(parents=True, exist_ok=True)
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as opened:
                infos = opened.infolist()
                _check_size(archive, len(infos), sum(info.file_size for info in infos))
                for member in opened.namelist():
                    if member.startswith("/") or ".." in Path(member).parts:
                        raise OSError(f"unsafe member {member!r}")
                opened.extractall(unpacked)
        else:
            with tarfile.open(archive) as opened:
                members = _tar_members(archive, opened)
                opened.extractall(unpacked, members=members, filter="data")
    except (OSError, tarfile.TarError, zipfile.BadZipFile) as exc:
        raise EvalError(
            "EVAL_002",
            f"cannot unpack {archive.name}: {exc}",
            "give an sdist (.tar.gz or .zip) as published on PyPI",
        ) from None
    roots = [path for path in unpacked.iterdir() if path.is_dir()]
    return roots[0] if len(roots) == 1 else unpacked


def _tar_members(archive: Path, opened: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The tar's members, read header by header and refused (EVAL_002) as soon as their count
    or declared size passes the limits, before the data past that header is decompressed."""
    members: list[tarfile.TarInfo] = []
    sizes: dict[str, int] = {}
    total = 0
    for member in opened:
        members.append(member)
        if member.isreg():
            size = member.size
            sizes[member.name] = size
        elif member.islnk():  # extracted as a copy of its target where a link cannot be made
            size = sizes.get(member.linkname, 0)
        else:
            size = 0
        total += size
        _check_size(archive, len(members), total)
    return members


def _check_size(archive: Path, members: int, total: int) -> None:
    """Refuse ``archive`` (EVAL_002) when it holds too many members or unpacks too large."""
    if members > MAX_UNPACKED_MEMBERS:
        what = f"holds more than {MAX_UNPACKED_MEMBERS:,} members"
    elif total > MAX_UNPACKED_BYTES:
        what = (
            f"would unpack to more than {MAX_UNPACKED_BYTES:,} bytes "
            f"(its members declare at least {total:,})"
        )
    else:
        return
    raise EvalError(
        "EVAL_002",
        f"{archive.name} {what}, the limit for an sdist; nothing was unpacked",
        "an sdist this large is not a package's source as published; check the archive",
    )


def _archive_name(archive: Path) -> str:
    """``toolz-1.0.0.tar.gz`` -> ``toolz``."""
    stem = archive.name
    for suffix in ARCHIVES:
        stem = stem.removesuffix(suffix)
    return stem.rsplit("-", 1)[0] if "-" in stem else stem


def _sdist_version(root: Path) -> str | None:
    """The ``Version:`` of the sdist's PKG-INFO, when it has one."""
    try:
        text = (root / "PKG-INFO").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = re.search(r"^Version:\s*(\S+)", text, re.MULTILINE)
    return match.group(1) if match else None
