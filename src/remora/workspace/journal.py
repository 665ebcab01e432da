"""Crash-safe, all-or-nothing application of a set of file changes to the project (accept, undo).

The protocol, so that a ``kill -9`` at any instant leaves every file old or new, and any
failure leaves every file old:

0. check every target can be written: its directory, and the file itself (a read-only or
   immutable file refuses the whole apply with WS_017 before anything changes);
1. write the journal (state ``prepared``) listing every target, its temp file and its
   *keep* name (where its old file waits until the apply is final);
2. write each new content to a temp file next to its target and fsync it;
3. rewrite the journal as ``committed`` (atomic: temp + fsync + rename + dir fsync);
4. for each target: check it still holds what the plan read (someone may be editing it),
   hard-link the old file to its keep name (so readers never see the target missing), then
   rename the temp over it (a delete renames the target to its keep name); fsync the
   directories;
5. remove the keeps (every target is new: nothing is left to undo);
6. run the caller's finalizer (mark the workspace, update the run manifest), then remove
   the journal.

When step 4 fails part-way (a file edited meanwhile: WS_004 for accept, WS_005 for undo; a
permission error: WS_017; no space: WS_015) the apply is undone: the journal becomes
``aborted``, every kept file is renamed back and every created file removed, so the project
is as it was, and no journal is left behind. A failure in steps 0-3 removes the temps; the
project was never touched. A failing finalizer leaves the files applied and the journal
``committed``: the next command records it (WS_014, or WS_015/WS_016 with the cause).

Recovery reads leftover journals: a ``prepared`` one is rolled back (temps removed); a
``committed`` one is rolled forward (remaining renames done, finalizer run again;
finalizers are idempotent), or undone when a rename fails (a target made immutable since);
an ``aborted`` one is undone. A file edited by someone after a crash is left as it is and
reported. Renames are atomic, so no file is ever half-written.

Test hook: ``REMORA_TEST_APPLY_PAUSE=<seconds>`` sleeps after each temp write and each
rename, so a test can SIGKILL a real process in the middle of an accept. It only slows.
"""

from __future__ import annotations

import contextlib
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
from remora.regular_files import NotRegularFileError
from remora.workspace.durable import (
    NO_SPACE_ERRNOS,
    atomic_write,
    file_mode,
    file_sha256,
    fsync_dir,
    os_failure,
    sha256_bytes,
    temp_name,
    write_durable,
)

PAUSE_ENV = "REMORA_TEST_APPLY_PAUSE"
KEEP_SUFFIX = ".remora-old"
"""Suffix of the hidden sibling that holds a target's old file while an apply may be undone."""

ApplyKind = Literal["accept", "undo"]
JournalState = Literal["prepared", "committed", "aborted"]

_NOT_A_FILE = "not a regular file"
_DONE: dict[ApplyKind, str] = {"accept": "written", "undo": "restored"}


class JournalEntry(BaseModel):
    """One target: ``temp`` holds its new content (None: delete the target); ``keep`` names
    where its old file waits while the apply can still be undone (None: there was none)."""

    path: str
    temp: str | None
    keep: str | None = None
    old_sha256: str | None
    new_sha256: str | None


class Journal(BaseModel):
    """An accept or undo in flight."""

    journal_id: str
    kind: ApplyKind
    workspace_id: str
    state: JournalState
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
    """One journal recovery handled: rolled forward, or rolled back / undone."""

    journal: Journal
    rolled_forward: bool
    skipped: list[str] = field(default_factory=list)


Finalizer = Callable[[Journal, list[str]], None]
"""Records a finished apply; gets the journal and the targets left alone (edited after a crash)."""


class _Edited(Exception):
    """A target no longer holds what the plan read: someone is editing it."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


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


def _keep_name(rel: str, token: str) -> str:
    name = posixpath.basename(rel)
    return posixpath.join(posixpath.dirname(rel), f".{name[:80]}.{token}{KEEP_SUFFIX}")


def _missing_dirs(root: Path, rel: str, known: list[str]) -> None:
    parents: list[str] = []
    parent = posixpath.dirname(rel)
    while parent and not (root / parent).exists():
        parents.append(parent)
        parent = posixpath.dirname(parent)
    for item in reversed(parents):
        if item not in known:
            known.append(item)


def _can_write(path: Path, mode: int) -> bool:
    """access(2) with the effective ids: false for read-only and immutable files and mounts."""
    return os.access(path, mode, effective_ids=os.access in os.supports_effective_ids)


def _unwritable(root: Path, ops: Sequence[FileOp]) -> list[str]:
    """Targets, and directories holding them, that this process cannot change."""
    blocked: list[str] = []
    directories: dict[Path, bool] = {}
    for op in ops:
        target = root / op.path
        directory = target.parent
        while directory != root and not directory.exists():
            directory = directory.parent
        if directory not in directories:
            directories[directory] = _can_write(directory, os.W_OK | os.X_OK)
            if not directories[directory]:
                rel = directory.relative_to(root).as_posix()
                blocked.append("the project directory" if rel == "." else f"{rel}/")
        if target.is_file() and not target.is_symlink() and not _can_write(target, os.W_OK):
            blocked.append(op.path)
    return blocked


def _current_sha(target: Path) -> str | None:
    """The target's sha256; None when absent; a marker for a directory or special file."""
    try:
        return file_sha256(target)
    except (IsADirectoryError, NotADirectoryError, NotRegularFileError):
        return _NOT_A_FILE


def _link_keep(target: Path, keep: Path) -> None:
    """Keep the target's current file under ``keep`` (a hard link; a copy where links fail)."""
    try:
        os.link(target, keep)
    except OSError:
        write_durable(keep, target.read_bytes(), file_mode(target))


def _replace(root: Path, entry: JournalEntry) -> None:
    """Put the entry's new state in place, keeping the old file under its keep name."""
    target = root / entry.path
    keep = root / entry.keep if entry.keep else None
    if entry.temp is None:
        if keep is not None:
            os.replace(target, keep)
        else:
            target.unlink(missing_ok=True)
        return
    if keep is not None and not os.path.lexists(keep):
        _link_keep(target, keep)
    os.replace(root / entry.temp, target)


def _rollback(root: Path, journal: Journal) -> list[OSError]:
    """Remove the temps and created directories of a journal that never touched a target."""
    failures: list[OSError] = []
    for entry in journal.entries:
        for name in (entry.temp, entry.keep):
            if name:
                try:
                    (root / name).unlink(missing_ok=True)
                except OSError as exc:
                    failures.append(exc)
    for rel in reversed(journal.created_dirs):
        with contextlib.suppress(OSError):
            (root / rel).rmdir()
    return failures


def _commit_strict(root: Path, journal: Journal) -> None:
    """Replace every target, refusing (``_Edited``) one that changed since the plan."""
    touched: set[Path] = set()
    for entry in journal.entries:
        target = root / entry.path
        if _current_sha(target) != entry.old_sha256:
            raise _Edited(entry.path)
        try:
            _replace(root, entry)
        except OSError as exc:
            raise _naming(exc, entry.path) from exc
        touched.add(target.parent)
        _pause()
    for directory in touched:
        fsync_dir(directory)


def _roll_forward(root: Path, journal: Journal) -> list[str]:
    """Finish a committed journal after a crash; returns targets left alone (edited since)."""
    skipped: list[str] = []
    touched: set[Path] = set()
    for entry in journal.entries:
        target = root / entry.path
        current = _current_sha(target)
        temp = root / entry.temp if entry.temp else None
        if temp is None:
            if current is not None and current == entry.old_sha256:
                _replace(root, entry)
                touched.add(target.parent)
            elif current is not None:
                skipped.append(entry.path)
        elif temp.exists():
            if current == entry.new_sha256:
                temp.unlink()
            elif current == entry.old_sha256:
                _replace(root, entry)
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


def _restore(root: Path, journal: Journal) -> list[str]:
    """Undo a partly committed journal: kept files back, created files removed.

    Returns the targets left alone because someone changed them after they were replaced.
    """
    left: list[str] = []
    touched: set[Path] = set()
    for entry in reversed(journal.entries):
        target = root / entry.path
        if entry.temp:
            (root / entry.temp).unlink(missing_ok=True)
        current = _current_sha(target)
        keep = root / entry.keep if entry.keep else None
        if keep is not None and os.path.lexists(keep):
            if current == entry.new_sha256:
                os.replace(keep, target)
                touched.add(target.parent)
            else:
                keep.unlink()
                if current != entry.old_sha256:
                    left.append(entry.path)
        elif entry.old_sha256 is None and current is not None and current == entry.new_sha256:
            target.unlink()
            touched.add(target.parent)
    for rel in reversed(journal.created_dirs):
        with contextlib.suppress(OSError):
            (root / rel).rmdir()
    for directory in touched:
        fsync_dir(directory)
    return left


def _discard_keeps(root: Path, journal: Journal) -> None:
    for entry in journal.entries:
        if entry.keep:
            with contextlib.suppress(OSError):
                (root / entry.keep).unlink(missing_ok=True)


def _naming(exc: OSError, rel: str) -> OSError:
    """The same OS error, naming the project path rather than a temp or keep file."""
    return OSError(exc.errno, exc.strerror or str(exc), rel)


def _nothing_changed(error: WorkspaceError, kind: ApplyKind) -> WorkspaceError:
    return WorkspaceError(error.code, f"{error.message}; nothing was {_DONE[kind]}", error.hint)


def _edited_error(kind: ApplyKind, workspace_id: str, path: str) -> WorkspaceError:
    if kind == "accept":
        return WorkspaceError(
            "WS_004",
            f"cannot accept {workspace_id}: {path} changed while it was being accepted; "
            "nothing was written",
            f"accept it again once the file is saved ('remora accept {workspace_id}'); "
            "your edit is merged with the change",
        )
    return WorkspaceError(
        "WS_005",
        f"cannot undo {workspace_id}: {path} changed while it was being undone; "
        "nothing was restored",
        f"undo it again once the file is saved ('remora undo {workspace_id}')",
    )


def _unrecorded(exc: OSError | WorkspaceError, journal: Journal) -> WorkspaceError:
    """The error for a finalizer that failed after every file was applied."""
    applied = "applied" if journal.kind == "accept" else "restored"
    what = f"the files of {journal.workspace_id} were {applied}, but recording the {journal.kind}"
    if isinstance(exc, WorkspaceError):
        code, cause, hint = exc.code, exc.message, exc.hint or "fix the cause"
    elif exc.errno in NO_SPACE_ERRNOS:
        code, cause, hint = "WS_015", str(exc), "free some disk space"
    else:
        code, cause, hint = "WS_014", str(exc), "fix the cause"
    return WorkspaceError(
        code, f"{what} failed: {cause}", f"{hint}; the next Remora command records it"
    )


def _abort(
    root: Path, journal_dir: Path, journal: Journal, error: WorkspaceError
) -> WorkspaceError:
    """Undo a commit that failed part-way; returns the error to raise."""
    journal.state = "aborted"
    with contextlib.suppress(OSError):
        _save(journal_dir, journal)
    try:
        left = _restore(root, journal)
    except OSError as exc:
        return WorkspaceError(
            "WS_014",
            f"{journal.kind} of {journal.workspace_id} failed ({error.message}) and could not "
            f"be undone: {exc}",
            "fix the cause (permissions, disk space); the next Remora command completes or "
            "undoes it, so every file ends old or new",
        )
    with contextlib.suppress(OSError):
        _drop(journal_dir, journal)
    if left:
        return WorkspaceError(
            error.code,
            f"{error.message}; {', '.join(left)} changed meanwhile and was left as it is",
            error.hint,
        )
    return error


def apply_journaled(
    root: Path,
    journal_dir: Path,
    kind: ApplyKind,
    workspace_id: str,
    ops: Sequence[FileOp],
    finalize: Finalizer,
) -> None:
    """Apply ``ops`` to ``root`` crash-safely and all-or-nothing, then ``finalize``.

    Every failure is a WorkspaceError that says whether anything was changed (see the
    module docstring); nothing is left half-applied.
    """
    doing = f"{kind} {workspace_id}"
    blocked = _unwritable(root, ops)
    if blocked:
        shown = ", ".join(blocked[:3]) + (f" (and {len(blocked) - 3} more)" if blocked[3:] else "")
        raise WorkspaceError(
            "WS_017",
            f"cannot {doing}: {shown} {'is' if len(blocked) == 1 else 'are'} not writable "
            f"(read-only or immutable); nothing was {_DONE[kind]}",
            f"make {'it' if len(blocked) == 1 else 'them'} writable (chmod u+w; chattr -i for "
            f"an immutable file or directory), then {kind} again",
        )
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
        keep = _keep_name(op.path, token) if op.old_sha256 is not None else None
        entries.append(
            JournalEntry(
                path=op.path, temp=temp, keep=keep, old_sha256=op.old_sha256, new_sha256=new_sha
            )
        )
    journal = Journal(
        journal_id=f"{kind}-{workspace_id}-{token}",
        kind=kind,
        workspace_id=workspace_id,
        state="prepared",
        created_dirs=created_dirs,
        entries=entries,
    )
    try:
        journal_dir.mkdir(parents=True, exist_ok=True)
        _save(journal_dir, journal)
    except OSError as exc:
        raise _nothing_changed(os_failure(exc, doing), kind) from None
    try:
        for rel in created_dirs:
            (root / rel).mkdir(exist_ok=True)
        temp_dirs: set[Path] = set()
        for op, entry in zip(ops, entries, strict=True):
            if op.data is not None and entry.temp is not None:
                try:
                    write_durable(root / entry.temp, op.data, file_mode(root / op.path))
                except OSError as exc:
                    raise _naming(exc, op.path) from exc
                temp_dirs.add((root / entry.temp).parent)
                _pause()
        for directory in temp_dirs:
            fsync_dir(directory)
        journal.state = "committed"
        _save(journal_dir, journal)
    except BaseException as exc:
        journal.state = "prepared"
        failures = _rollback(root, journal)
        with contextlib.suppress(OSError):
            if failures:
                _save(journal_dir, journal)
            else:
                _drop(journal_dir, journal)
        if isinstance(exc, OSError):
            raise _nothing_changed(os_failure(exc, doing), kind) from None
        raise
    try:
        _commit_strict(root, journal)
    except _Edited as exc:
        raise _abort(
            root, journal_dir, journal, _edited_error(kind, workspace_id, exc.path)
        ) from None
    except OSError as exc:
        error = _nothing_changed(os_failure(exc, doing), kind)
        raise _abort(root, journal_dir, journal, error) from None
    _discard_keeps(root, journal)
    try:
        finalize(journal, [])
    except (OSError, WorkspaceError) as exc:
        raise _unrecorded(exc, journal) from None
    with contextlib.suppress(OSError):
        _drop(journal_dir, journal)


def _recover_one(
    root: Path, journal_dir: Path, journal: Journal, finalize: Finalizer
) -> Recovered | None:
    """Handle one leftover journal; None when it must wait (temps that cannot be removed
    yet: the project was never touched, so that blocks nothing)."""
    if journal.state == "prepared":
        if _rollback(root, journal):
            return None
        _drop(journal_dir, journal)
        return Recovered(journal=journal, rolled_forward=False)
    if journal.state == "committed":
        try:
            skipped = _roll_forward(root, journal)
        except OSError:
            journal.state = "aborted"
            with contextlib.suppress(OSError):
                _save(journal_dir, journal)
        else:
            try:
                finalize(journal, skipped)
            except (OSError, WorkspaceError) as exc:
                raise _unrecorded(exc, journal) from None
            _discard_keeps(root, journal)
            _drop(journal_dir, journal)
            return Recovered(journal=journal, rolled_forward=True, skipped=skipped)
    left = _restore(root, journal)
    _drop(journal_dir, journal)
    return Recovered(journal=journal, rolled_forward=False, skipped=left)


def recover_journals(root: Path, journal_dir: Path, finalize: Finalizer) -> list[Recovered]:
    """Roll back prepared journals, roll forward committed ones, undo aborted ones."""
    try:
        names = sorted(os.listdir(journal_dir))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise os_failure(exc, "read the journal of interrupted accepts and undos") from None
    outcomes: list[Recovered] = []
    for name in names:
        path = journal_dir / name
        if name.endswith(".remora-tmp"):
            with contextlib.suppress(OSError):
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
        try:
            outcome = _recover_one(root, journal_dir, journal, finalize)
        except OSError as exc:
            raise WorkspaceError(
                "WS_014",
                f"cannot finish the interrupted {journal.kind} of {journal.workspace_id}: {exc}",
                "fix the cause (permissions, disk space); every file is old or new, and the "
                "next Remora command tries again",
            ) from None
        if outcome is not None:
            outcomes.append(outcome)
    return outcomes
