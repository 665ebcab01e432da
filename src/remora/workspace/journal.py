"""Crash-safe application of a set of file changes to the project (accept and undo).

The protocol, so that a ``kill -9`` at any instant leaves every file old or new:

1. write the journal (state ``prepared``) listing every target and its temp file;
2. write each new content to a temp file next to its target and fsync it;
3. rewrite the journal as ``committed`` (atomic: temp + fsync + rename + dir fsync);
4. rename each temp over its target (or unlink, for a delete) and fsync the directories;
5. run the caller's finalizer (mark the workspace, update the run manifest);
6. remove the journal.

Recovery reads leftover journals: a ``prepared`` one is rolled back (temps removed, the
project was never touched); a ``committed`` one is rolled forward (remaining renames done,
finalizer run again; finalizers are idempotent). A file edited by someone after the crash
is left as it is and reported. Renames are atomic, so no file is ever half-written.

Test hook: ``REMORA_TEST_APPLY_PAUSE=<seconds>`` sleeps after each temp write and each
rename, so a test can SIGKILL a real process in the middle of an accept. It only slows.
"""

from __future__ import annotations

import os
import posixpath
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from remora.errors import WorkspaceError
from remora.workspace.durable import (
    atomic_write,
    file_mode,
    file_sha256,
    fsync_dir,
    sha256_bytes,
    temp_name,
    write_durable,
)

PAUSE_ENV = "REMORA_TEST_APPLY_PAUSE"

ApplyKind = Literal["accept", "undo"]


class JournalEntry(BaseModel):
    """One target: ``temp`` holds its new content (None: delete the target)."""

    path: str
    temp: str | None
    old_sha256: str | None
    new_sha256: str | None


class Journal(BaseModel):
    """An accept or undo in flight."""

    journal_id: str
    kind: ApplyKind
    workspace_id: str
    state: Literal["prepared", "committed"]
    created_dirs: list[str]
    entries: list[JournalEntry]


@dataclass(frozen=True)
class FileOp:
    """Make ``path`` hold ``data`` (None: delete it); ``old_sha256`` is what it holds now."""

    path: str
    data: bytes | None
    old_sha256: str | None


@dataclass
class Recovered:
    """One journal recovery handled."""

    journal: Journal
    rolled_forward: bool
    skipped: list[str] = field(default_factory=list)


Finalizer = Callable[[Journal], None]


def _pause() -> None:
    value = os.environ.get(PAUSE_ENV)
    if not value:
        return
    try:
        time.sleep(float(value))
    except ValueError:
        return


def _journal_path(journal_dir: Path, journal: Journal) -> Path:
    return journal_dir / f"{journal.journal_id}.json"


def _save(journal_dir: Path, journal: Journal) -> None:
    atomic_write(_journal_path(journal_dir, journal), journal.model_dump_json(indent=1).encode())


def _drop(journal_dir: Path, journal: Journal) -> None:
    _journal_path(journal_dir, journal).unlink(missing_ok=True)
    fsync_dir(journal_dir)


def _missing_dirs(root: Path, rel: str, known: list[str]) -> None:
    parents: list[str] = []
    parent = posixpath.dirname(rel)
    while parent and not (root / parent).exists():
        parents.append(parent)
        parent = posixpath.dirname(parent)
    for item in reversed(parents):
        if item not in known:
            known.append(item)


def _rollback(root: Path, journal: Journal) -> None:
    for entry in journal.entries:
        if entry.temp:
            (root / entry.temp).unlink(missing_ok=True)
    for rel in reversed(journal.created_dirs):
        try:
            (root / rel).rmdir()
        except OSError:
            continue


def _commit(root: Path, journal: Journal) -> list[str]:
    """Perform every remaining rename/unlink; returns files left alone (edited meanwhile)."""
    skipped: list[str] = []
    touched: set[Path] = set()
    for entry in journal.entries:
        target = root / entry.path
        try:
            current = file_sha256(target)
        except (IsADirectoryError, NotADirectoryError):
            skipped.append(entry.path)
            continue
        if entry.temp is None:
            if current is not None and current == entry.old_sha256:
                target.unlink()
                touched.add(target.parent)
            elif current is not None:
                skipped.append(entry.path)
        else:
            temp = root / entry.temp
            if temp.exists():
                if current in (entry.old_sha256, entry.new_sha256):
                    os.replace(temp, target)
                    touched.add(target.parent)
                else:
                    temp.unlink()
                    skipped.append(entry.path)
            elif current != entry.new_sha256:
                skipped.append(entry.path)
        _pause()
    for directory in touched:
        fsync_dir(directory)
    return skipped


def apply_journaled(
    root: Path,
    journal_dir: Path,
    kind: ApplyKind,
    workspace_id: str,
    ops: Sequence[FileOp],
    finalize: Finalizer,
) -> list[str]:
    """Apply ``ops`` to ``root`` crash-safely, then ``finalize``; returns skipped paths."""
    token = secrets.token_hex(4)
    created_dirs: list[str] = []
    entries: list[JournalEntry] = []
    for op in ops:
        temp: str | None = None
        new_sha: str | None = None
        if op.data is not None:
            _missing_dirs(root, op.path, created_dirs)
            temp = temp_name(Path(op.path), token).as_posix()
            new_sha = sha256_bytes(op.data)
        entries.append(
            JournalEntry(path=op.path, temp=temp, old_sha256=op.old_sha256, new_sha256=new_sha)
        )
    journal = Journal(
        journal_id=f"{kind}-{workspace_id}-{token}",
        kind=kind,
        workspace_id=workspace_id,
        state="prepared",
        created_dirs=created_dirs,
        entries=entries,
    )
    journal_dir.mkdir(parents=True, exist_ok=True)
    _save(journal_dir, journal)
    try:
        for rel in created_dirs:
            (root / rel).mkdir(exist_ok=True)
        temp_dirs: set[Path] = set()
        for op, entry in zip(ops, entries, strict=True):
            if op.data is not None and entry.temp is not None:
                write_durable(root / entry.temp, op.data, file_mode(root / op.path))
                temp_dirs.add((root / entry.temp).parent)
                _pause()
        for directory in temp_dirs:
            fsync_dir(directory)
        journal.state = "committed"
        _save(journal_dir, journal)
    except BaseException:
        _rollback(root, journal)
        _drop(journal_dir, journal)
        raise
    try:
        skipped = _commit(root, journal)
    except OSError as exc:
        raise WorkspaceError(
            "WS_014",
            f"{kind} of {workspace_id} was interrupted: {exc}",
            "fix the cause (permissions, disk space); the next Remora command completes it",
        ) from None
    finalize(journal)
    _drop(journal_dir, journal)
    return skipped


def recover_journals(root: Path, journal_dir: Path, finalize: Finalizer) -> list[Recovered]:
    """Roll back prepared journals and roll forward committed ones."""
    try:
        names = sorted(os.listdir(journal_dir))
    except FileNotFoundError:
        return []
    outcomes: list[Recovered] = []
    for name in names:
        path = journal_dir / name
        if name.endswith(".remora-tmp"):
            path.unlink(missing_ok=True)
            continue
        if not name.endswith(".json"):
            continue
        try:
            journal = Journal.model_validate_json(path.read_bytes())
        except (OSError, ValidationError) as exc:
            raise WorkspaceError(
                "WS_014",
                f"cannot read the interrupted-apply journal {path}: {exc}",
                "inspect it; each listed file is either old or new, then delete the journal",
            ) from None
        if journal.state == "prepared":
            _rollback(root, journal)
            _drop(journal_dir, journal)
            outcomes.append(Recovered(journal=journal, rolled_forward=False))
            continue
        skipped = _commit(root, journal)
        finalize(journal)
        _drop(journal_dir, journal)
        outcomes.append(Recovered(journal=journal, rolled_forward=True, skipped=skipped))
    return outcomes
