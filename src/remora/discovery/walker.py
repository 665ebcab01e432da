"""Find the Python files under the targets, honouring .gitignore and default ignores."""

from __future__ import annotations

import os
import re
import stat
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pathspec
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from remora.discovery.models import DiscoveryProblem
from remora.errors import ConfigError, DiscoveryError
from remora.regular_files import FileTooLargeError, NotRegularFileError, read_regular_file

# Besides these names, any directory holding a pyvenv.cfg (a virtual environment,
# whatever it is called) is skipped; a package merely named "venv" is not.
DEFAULT_IGNORES = (
    ".git/",
    ".hg/",
    ".svn/",
    ".venv/",
    "__pycache__/",
    ".remora/",
    "node_modules/",
    "build/",
    "dist/",
    "*.egg-info/",
    ".eggs/",
    ".tox/",
    ".nox/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
)

PROJECT_MARKERS = ("remora.yaml", "remora.yml", "pyproject.toml", "setup.py", "setup.cfg", ".git")


PROJECT_VENVS = (".venv", "venv")
"""Virtual environments in a project's root (a directory holding ``pyvenv.cfg``): where the
project's Python is found (:mod:`remora.tools.interpreter`), so one marks the root too."""


def find_project_root(target: Path, cwd: Path | None = None) -> Path:
    """The project a target belongs to; every command (``analyze``, ``doctor``, ``review``,
    ``watch``...) finds it by this one rule:

    1. the nearest ancestor of the target (itself, when a directory) holding a project
       marker (``remora.yaml``, ``pyproject.toml``, ``setup.py``, ``setup.cfg``, ``.git``...);
    2. else, when the target lies in the current directory ``cwd``, the nearest directory
       from the target's up to ``cwd`` holding a virtual environment (``.venv/`` or
       ``venv/`` with a ``pyvenv.cfg``), since that is where the project's Python is taken
       from: ``remora doctor`` run in a directory and ``remora analyze sub/file.py`` run
       there agree on the project and its Python;
    3. else the target's own directory (a file's parent).

    The search for a virtual environment stops at ``cwd``, so one in the home directory does
    not make it the root of every stray script under it.
    """
    target = target.resolve()
    start = target if target.is_dir() else target.parent
    for candidate in (start, *start.parents):
        if any((candidate / marker).exists() for marker in PROJECT_MARKERS):
            return candidate
    try:
        here = (cwd or Path.cwd()).resolve()
    except OSError:  # the current directory was removed
        return start
    if start == here or here in start.parents:
        for candidate in (start, *start.parents):
            if any(_is_file(candidate / name / "pyvenv.cfg") for name in PROJECT_VENVS):
                return candidate
            if candidate == here:
                break
    return start


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # unreadable directory: no environment found there
        return False


GITIGNORE_MAX_BYTES = 1_000_000
"""Largest ``.gitignore`` read (the default ``discovery.max_file_bytes``); ``WalkOptions`` can
raise it. Reading stops there, so a link to ``/dev/zero`` cannot exhaust memory."""


def _gitignore_spec(
    directory: Path, limit: int, problems: list[DiscoveryProblem], root: Path
) -> pathspec.PathSpec[Any] | None:
    """The rules of ``directory/.gitignore``; one that is no regular file or too large is a
    problem (DISC_105, DISC_104) and ignored, since a FIFO would block the walk forever."""
    path = directory / ".gitignore"
    try:
        data = read_regular_file(path, limit)
    except FileNotFoundError:
        return None
    except FileTooLargeError as exc:
        problems.append(
            _problem(
                "DISC_104",
                path,
                root,
                f"{exc.strerror}, over discovery.max_file_bytes; its rules are not applied",
                "raise discovery.max_file_bytes to apply them",
            )
        )
        return None
    except NotRegularFileError as exc:
        problems.append(
            _problem("DISC_105", path, root, f"{exc.strerror}; its rules are not applied")
        )
        return None
    except IsADirectoryError:
        problems.append(
            _problem(
                "DISC_105",
                path,
                root,
                "not a regular file but a directory; its rules are not applied",
            )
        )
        return None
    except OSError as exc:
        problems.append(
            _problem(
                "DISC_105", path, root, f"cannot read: {exc.strerror}; its rules are not applied"
            )
        )
        return None
    spec, _unusable = compile_patterns(data.decode("utf-8", errors="replace").splitlines())
    return spec


def compile_patterns(lines: Iterable[str]) -> tuple[pathspec.PathSpec[Any], list[str]]:
    """The gitignore rules of ``lines``, and the lines that are no usable pattern.

    Git accepts every line: one it cannot read (``!`` alone, a trailing backslash) matches
    nothing, and a reversed range such as ``[z-a]`` matches only its first character.
    pathspec raises on those, so each line is compiled on its own, a reversed range is
    rewritten as git reads it, and a line that still does not compile is left out. The
    fast backend (re2) refuses some regexes Python's accepts (``[[::]``); the rules then
    run on Python's.
    """
    patterns: list[GitIgnoreSpecPattern] = []
    unusable: list[str] = []
    for line in lines:
        if not line:
            continue
        pattern = _pattern(line)
        if pattern is None:
            unusable.append(line)
        else:
            patterns.append(pattern)
    try:
        return pathspec.GitIgnoreSpec(patterns), unusable
    except Exception:  # re2's own error type, not importable without re2
        return pathspec.GitIgnoreSpec(patterns, backend="simple"), unusable


def _pattern(line: str) -> GitIgnoreSpecPattern | None:
    for text in dict.fromkeys((line, _git_ranges(line))):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # re's "possible nested set"
                return GitIgnoreSpecPattern(text)
        except (ValueError, re.error):
            continue
    return None


def _git_ranges(line: str) -> str:
    """``line`` with each reversed range ``[...c-a...]`` reduced to ``c``, which is all git's
    wildmatch matches of it (the range itself matches nothing)."""
    out: list[str] = []
    index, length = 0, len(line)
    while index < length:
        char = line[index]
        if char == "\\":
            out.append(line[index : index + 2])
            index += 2
            continue
        if char != "[":
            out.append(char)
            index += 1
            continue
        close = _bracket_end(line, index)
        if close < 0:
            out.append(line[index:])
            break
        out.append(_bracket_without_reversed_ranges(line[index : close + 1]))
        index = close + 1
    return "".join(out)


def _bracket_end(line: str, start: int) -> int:
    """Index of the ``]`` closing the bracket expression at ``start``, or -1."""
    index = start + 1
    if index < len(line) and line[index] in "!^":
        index += 1
    if index < len(line) and line[index] == "]":
        index += 1
    while index < len(line):
        if line[index] == "\\":
            index += 2
            continue
        if line[index] == "]":
            return index
        index += 1
    return -1


def _bracket_without_reversed_ranges(expression: str) -> str:
    """A ``[...]`` expression with its reversed ranges reduced to their first character."""
    head = 2 if expression[1:2] in ("!", "^") else 1
    body = expression[head:-1]
    items: list[str] = []
    dashes = ""
    reversed_range = False
    index = 0
    while index < len(body):
        first = body[index : index + 2] if body[index] == "\\" else body[index]
        after = index + len(first)
        if body[after : after + 1] == "-" and after + 1 < len(body):
            last = body[after + 1 : after + 3] if body[after + 1] == "\\" else body[after + 1]
            index = after + 1 + len(last)
            if first[-1] <= last[-1]:
                items.append(f"{first}-{last}")
            else:
                items.append(first)
                reversed_range = True
            continue
        if first == "-":
            dashes = "-"  # last in the set, where it cannot join two items into a range
        else:
            items.append(first)
        index = after
    if not reversed_range:
        return expression
    return expression[:head] + "".join(items) + dashes + "]"


@dataclass
class _Rules:
    """Ignore rules in force for one directory: (base directory, spec) pairs."""

    specs: list[tuple[Path, pathspec.PathSpec[Any]]] = field(default_factory=list)

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for base, spec in self.specs:
            try:
                relative = path.relative_to(base).as_posix()
            except ValueError:
                continue
            if spec.match_file(relative + "/" if is_dir else relative):
                return True
        return False

    def with_directory(
        self, directory: Path, options: WalkOptions, problems: list[DiscoveryProblem], root: Path
    ) -> _Rules:
        if not options.respect_gitignore:
            return self
        spec = _gitignore_spec(directory, options.max_file_bytes, problems, root)
        return _Rules([*self.specs, (directory, spec)]) if spec else self


@dataclass
class WalkOptions:
    respect_gitignore: bool = True
    ignore: tuple[str, ...] = ()
    follow_symlinks: bool = False
    max_file_bytes: int = GITIGNORE_MAX_BYTES
    """Largest ignore file read; discovery passes ``discovery.max_file_bytes``."""


def iter_python_files(
    targets: list[Path], root: Path, options: WalkOptions, problems: list[DiscoveryProblem]
) -> Iterator[Path]:
    """Yield each Python file once, in a stable order; problems are appended, not raised.

    Files named explicitly are always yielded; ignore rules apply to what a directory
    walk finds.
    """
    defaults, unusable = compile_patterns([*DEFAULT_IGNORES, *options.ignore])
    if unusable:
        raise ConfigError(
            "CONFIG_003",
            f"invalid value for 'discovery.ignore': {unusable[0]!r} is no gitignore pattern "
            "(git would ignore the line, so it would skip nothing)",
            "fix or remove it: a trailing backslash escapes nothing, '!' alone negates nothing",
        )
    seen: set[Path] = set()
    for target in targets:
        if not target.exists():
            if target.is_symlink():
                raise DiscoveryError(
                    "DISC_001", f"{target} is a broken symbolic link", "fix or remove the link"
                )
            raise DiscoveryError("DISC_001", f"{target} does not exist", "check the path")
        resolved = target.resolve()
        if resolved.is_file():
            if ".pyi" in (resolved.suffix, target.suffix):
                raise DiscoveryError(
                    "DISC_002",
                    f"{target} is a stub file: typing information, not code to run operations on",
                    "pass the .py module it describes, or a directory (stubs are left out)",
                )
            if resolved.suffix != ".py" and target.suffix != ".py":
                raise DiscoveryError(
                    "DISC_002", f"{target} is not a Python file", "pass .py files or directories"
                )
            if resolved not in seen:
                seen.add(resolved)
                yield resolved
            continue
        inside = resolved == root or root in resolved.parents
        rules = _Rules([(root if inside else resolved, defaults)])
        if inside:
            for directory in reversed(resolved.parents):
                if directory == root or root in directory.parents:
                    rules = rules.with_directory(directory, options, problems, root)
        yield from _walk(resolved, rules, options, problems, seen, root, ancestry=frozenset())


def _walk(
    directory: Path,
    rules: _Rules,
    options: WalkOptions,
    problems: list[DiscoveryProblem],
    seen: set[Path],
    root: Path,
    ancestry: frozenset[tuple[int, int]],
) -> Iterator[Path]:
    try:
        info = directory.stat()
    except OSError as exc:
        problems.append(_problem("DISC_105", directory, root, f"cannot read directory: {exc}"))
        return
    key = (info.st_dev, info.st_ino)
    if key in ancestry:
        problems.append(_problem("DISC_106", directory, root, "symbolic link loop; not followed"))
        return
    ancestry = ancestry | {key}
    rules = rules.with_directory(directory, options, problems, root)
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError as exc:
        problems.append(_problem("DISC_105", directory, root, f"cannot read directory: {exc}"))
        return
    for entry in entries:
        path = Path(entry.path)
        if not _utf8(entry.name):
            problems.append(
                _problem("DISC_107", path, root, "the name is not valid UTF-8; skipped (rename it)")
            )
            continue
        is_link = entry.is_symlink()
        if is_link and not options.follow_symlinks:
            continue
        try:
            mode = (
                os.stat(entry.path).st_mode
                if is_link
                else entry.stat(follow_symlinks=False).st_mode
            )
        except OSError as exc:
            if is_link:
                problems.append(_problem("DISC_106", path, root, f"broken or looping link: {exc}"))
            else:
                problems.append(_problem("DISC_105", path, root, f"cannot stat: {exc}"))
            continue
        if stat.S_ISDIR(mode):
            if rules.ignored(path, is_dir=True) or _is_virtualenv(path):
                continue
            yield from _walk(path, rules, options, problems, seen, root, ancestry)
        elif stat.S_ISREG(mode) and entry.name.endswith(".py"):
            if rules.ignored(path, is_dir=False):
                continue
            resolved = path.resolve() if is_link else path
            if resolved not in seen:
                seen.add(resolved)
                yield path


def _utf8(name: str) -> bool:
    """Whether a name the OS decoded with surrogate escapes is valid UTF-8 text (node ids,
    ignore rules, manifests and the terminal all need text)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_virtualenv(directory: Path) -> bool:
    """A directory holding ``pyvenv.cfg``; an unreadable one is not (the walk reports it)."""
    try:
        return (directory / "pyvenv.cfg").exists()
    except OSError:
        return False


def relative_to_root(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _problem(
    code: str, path: Path, root: Path, message: str, hint: str | None = None
) -> DiscoveryProblem:
    """A problem whose path is printable text (undecodable bytes shown as U+FFFD); without
    a ``hint``, its code's usual one."""
    relative = relative_to_root(path, root).encode("utf-8", "surrogateescape")
    return DiscoveryProblem(
        code=code, path=relative.decode("utf-8", "replace"), message=message, hint=hint
    )
