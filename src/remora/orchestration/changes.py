"""Which jobs a change calls for: changed lines mapped onto the discovered nodes.

``remora analyze --changed [REF]`` reads the changed lines from ``git diff`` hunks (new and
untracked files count whole; renamed files follow git's rename detection, so a file moved
without edits is not a change); ``remora watch`` from the difference between a file's text
before and after a save. Both hand the lines to :func:`changed_jobs`: for each operation,
a changed line selects the innermost node of a type the operation works on that holds it.
A changed method selects the method for the operations on methods, its class only for
operations that work on classes and not on methods, its file for those on files (lint).

Codes: RUN_023 the project is not a git repository, or git cannot be run; RUN_024 the
revision given to ``--changed`` does not exist.
"""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from remora.discovery import CSTNode
from remora.errors import RunnerError
from remora.orchestration.job import Job

ChangedLines = Mapping[str, frozenset[int] | None]
"""Project-relative path (posix) to the changed line numbers of its current text (1-based);
None for a new file, every node of which is changed."""
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_GIT_TIMEOUT_S = 60.0
_NO_PROJECT_COMMANDS = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")
"""git runs outside the sandbox, so nothing a repository's own config names may run: no
filesystem monitor (``core.fsmonitor`` in a copied ``.git/config`` is a command), no hooks;
``--no-ext-diff`` and ``--no-textconv`` keep diff drivers out."""


def changed_jobs(jobs: Sequence[Job], nodes: Sequence[CSTNode], changed: ChangedLines) -> list[Job]:
    """The ``jobs`` whose node is, for the job's operation, the innermost node holding a
    changed line (any node of a new file), in their order."""
    by_file: dict[str, list[CSTNode]] = {}
    for node in nodes:
        by_file.setdefault(node.file_path, []).append(node)
    chosen: set[tuple[str, str]] = set()
    kinds: dict[str, frozenset[str]] = {}
    for job in jobs:
        kinds.setdefault(job.operation, frozenset(job.agent.applies_to))
    for operation, types in kinds.items():
        for path, lines in changed.items():
            eligible = [node for node in by_file.get(path, []) if node.node_type in types]
            if lines is None:
                chosen.update((operation, node.node_id) for node in eligible)
                continue
            for line in lines:
                holding = [node for node in eligible if node.start_line <= line <= node.end_line]
                if holding:
                    inner = min(holding, key=lambda node: node.end_line - node.start_line)
                    chosen.add((operation, inner.node_id))
    return [job for job in jobs if (job.operation, job.node.node_id) in chosen]


def changed_between(before: str, after: str) -> frozenset[int]:
    """The lines of ``after`` that differ from ``before`` (1-based); where lines were only
    deleted, the line after the cut and the one before it."""
    old, new = before.splitlines(), after.splitlines()
    lines: set[int] = set()
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, _, _, start, end in matcher.get_opcodes():
        if tag == "equal":
            continue
        if end > start:
            lines.update(range(start + 1, end + 1))
        else:
            lines.update(line for line in (start, start + 1) if 1 <= line <= max(len(new), 1))
    return frozenset(lines)


def git_changes(root: Path, ref: str = "HEAD") -> dict[str, frozenset[int] | None]:
    """The changed lines of ``root``'s working tree and index against ``ref`` (for another
    revision than ``HEAD``, against where the current branch left it: their merge base),
    with untracked files that are not ignored as new; paths relative to ``root``."""
    top = Path(_git(root, "rev-parse", "--show-toplevel").strip())
    base = ref
    if _git_ok(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}") is None:
        raise RunnerError(
            "RUN_024",
            f"--changed: '{ref}' is not a revision of this repository",
            "give a branch, tag or commit (git fetch it first in CI); write the paths before "
            "--changed, or --changed=HEAD",
        )
    if ref != "HEAD":
        merged = _git_ok(root, "merge-base", ref, "HEAD")
        base = merged.strip() if merged else ref
    diff = _git(
        root,
        "diff",
        "--unified=0",
        "--find-renames",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        base,
        "--",
    )
    changes: dict[str, frozenset[int] | None] = {}
    path: str | None = None
    lines: set[int] = set()
    new_file = False
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            if path is not None:
                changes[path] = None if new_file else frozenset(lines)
            path, lines, new_file = None, set(), False
        elif line.startswith("new file mode"):
            new_file = True
        elif line.startswith("+++ "):
            target = line[4:]
            path = target[2:] if target.startswith("b/") else None
        elif (found := _HUNK.match(line)) is not None:
            start = int(found.group(1))
            count = int(found.group(2)) if found.group(2) is not None else 1
            lines.update(range(start, start + count) if count else (start, start + 1))
    if path is not None:
        changes[path] = None if new_file else frozenset(lines)
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "--full-name", "-z")
    for name in untracked.split("\0"):
        if name:
            changes[name] = None
    return _relative(changes, top, root)


def _relative(
    changes: dict[str, frozenset[int] | None], top: Path, root: Path
) -> dict[str, frozenset[int] | None]:
    """Paths from the repository's top made relative to the project ``root``; files
    outside it are left out."""
    try:
        inside = root.resolve().relative_to(top.resolve())
    except ValueError:
        return changes
    if not inside.parts:
        return changes
    prefix = inside.as_posix() + "/"
    return {
        path[len(prefix) :]: lines for path, lines in changes.items() if path.startswith(prefix)
    }


def _git(root: Path, *args: str) -> str:
    done = _run_git(root, args)
    if done.returncode != 0:
        raise RunnerError(
            "RUN_023",
            f"--changed needs a git repository: git {args[0]} failed in {root}: "
            f"{done.stderr.strip() or done.returncode}",
            "run it inside a git work tree, or leave --changed out to run on every node",
        )
    return done.stdout


def _git_ok(root: Path, *args: str) -> str | None:
    done = _run_git(root, args)
    return done.stdout if done.returncode == 0 else None


def _run_git(root: Path, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("git")
    if executable is None:
        raise RunnerError(
            "RUN_023",
            "--changed needs git, which is not on PATH",
            "install git, or leave --changed out to run on every node",
        )
    try:
        return subprocess.run(
            [executable, *_NO_PROJECT_COMMANDS, "-c", "core.quotepath=off", *args],
            cwd=root,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RunnerError(
            "RUN_023", f"git could not be run in {root}: {exc}", "check the git installation"
        ) from None


def changed_files(root: Path, targets: Sequence[Path], changes: ChangedLines) -> list[Path]:
    """The changed Python files that exist under ``targets`` (the files to discover)."""
    wanted = [target.resolve() for target in targets]
    found: list[Path] = []
    for relative in sorted(changes):
        path = (root / relative).resolve()
        if path.suffix != ".py" or not path.is_file():
            continue
        if any(path == target or target in path.parents for target in wanted):
            found.append(path)
    return found
