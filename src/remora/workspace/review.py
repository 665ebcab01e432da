"""Accept, reject, retry and undo workspaces, and recover an interrupted accept or undo.

Accept checks every changed file against the base it was made from. Unchanged base:
the workspace's content is applied. Changed base (the user edited the file, or another
accepted workspace did): a three-way merge; any conflict refuses the whole workspace
with WS_004 and nothing is written. Files are applied through the journal
(:mod:`remora.workspace.journal`): all or nothing, so a crash leaves each file old or new
(the next run's :meth:`WorkspaceReview.recover` finishes the job) and any failure leaves
every file old.

Both directions are all-or-nothing, never "some files skipped":

* a file the user edits *while* an accept runs refuses the whole accept (WS_004) and
  puts back every file it had already replaced, leaving the edit as the user left it;
  accepting again merges the edit;
* what accept overwrote is kept in the workspace, so ``undo`` can restore it (directories
  accept created stay). A file changed since the accept (an edit, a later accept) makes
  undo refuse as a whole (WS_005, naming the files and the later accepts that wrote them, so
  the user knows what to undo first); ``undo(..., keep_changed=True)``
  restores every other file and leaves those as they are (``UndoReport.kept``), so undo
  is never blocked for good;
* a file left alone by the recovery of a crashed accept (edited after the crash) is
  dropped from the undo record, since that accept never wrote it.

Accept never changes a version-control directory (``.git/``, ...): a workspace with such
a change (possible only from before workspaces refused them) is refused whole (WS_019).
Undo may restore what an older accept overwrote there.

Reject must always be possible: a workspace whose storage cannot be read (WS_007) is
removed all the same.

Upper layers learn about applied changes through ``after_apply`` (called with the kind
and the workspace info, also during recovery), which is how run manifests stay in step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from remora.errors import WorkspaceError
from remora.module_union import module_docstring, union_modules
from remora.regular_files import FileTooLargeError, NotRegularFileError
from remora.workspace.base import protected_in, resolve_inside
from remora.workspace.durable import file_sha256, os_failure, read_optional, sha256_bytes
from remora.workspace.journal import (
    ApplyKind,
    FileOp,
    Journal,
    apply_journaled,
    recover_journals,
)
from remora.workspace.manager import WorkspaceManager
from remora.workspace.merge import merge3
from remora.workspace.models import (
    AcceptReport,
    FileAction,
    FileOutcome,
    RecoveryReport,
    RetryRequest,
    UndoReport,
    WorkspaceInfo,
)
from remora.workspace.overlay import Backup, OverlayEntry, OverlayWorkspace

AfterApply = Callable[[ApplyKind, WorkspaceInfo], None]


@dataclass
class _Plan:
    ops: list[FileOp] = field(default_factory=list)
    outcomes: list[FileOutcome] = field(default_factory=list)
    backups: list[Backup] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)


def _target(root: Path, entry: OverlayEntry) -> str:
    """Where to apply: a symlinked file is written through its (in-project) target."""
    path = resolve_inside(root, entry.path)
    if entry.kind == "write" and path.is_symlink():
        return path.resolve().relative_to(root).as_posix()
    return entry.path


def _refuse_protected(root: Path, workspace_id: str, entries: list[OverlayEntry]) -> None:
    """WS_019 before anything is written when a change lies in a version-control directory
    (a workspace from before such writes were refused, or a link the user added since)."""
    found = [(entry.path, part) for entry in entries if (part := protected_in(root, entry.path))]
    if not found:
        return
    path, part = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    raise WorkspaceError(
        "WS_019",
        f"cannot accept {workspace_id}: it changes {path!r}{more} in {part}, version-control "
        "state no workspace may change; nothing was written",
        f"reject it ('remora reject {workspace_id}') or retry it",
    )


def _python_union(path: str, base: bytes, theirs: bytes, ours: bytes) -> bytes | None:
    """Both sides only added imports and definitions to a Python module (tests for two
    functions of one module): their union, see :mod:`remora.module_union`. Modules both
    sides created merge only when they declare one purpose: the same docstring."""
    if not path.endswith(".py"):
        return None
    try:
        texts = base.decode(), theirs.decode(), ours.decode()
    except UnicodeDecodeError:
        return None
    if not base:
        purpose = module_docstring(texts[1])
        if purpose is None or purpose != module_docstring(texts[2]):
            return None
    merged = union_modules(*texts)
    return None if merged is None else merged.encode()


def _plan_accept(root: Path, workspace: OverlayWorkspace, limit: int) -> _Plan:
    plan = _Plan()
    entries = workspace.entries()
    _refuse_protected(root, workspace.workspace_id, entries)
    for entry in entries:
        rel = _target(root, entry)
        target = root / rel
        if target.is_dir():
            plan.conflicts.append(f"{entry.path} is now a directory in the project")
            continue
        try:
            current = read_optional(target, limit)
        except NotADirectoryError:
            plan.conflicts.append(f"a parent of {entry.path} is now a file in the project")
            continue
        except (NotRegularFileError, FileTooLargeError) as exc:
            plan.conflicts.append(f"{entry.path} in the project is {exc.strerror}")
            continue
        except OSError as exc:
            raise os_failure(exc, f"read {entry.path} to accept {workspace.workspace_id}") from None
        current_sha = None if current is None else sha256_bytes(current)
        if current_sha == entry.new_sha256:
            plan.outcomes.append(FileOutcome(path=rel, action="unchanged"))
            continue
        new: bytes | None
        action: FileAction
        if current_sha == entry.base_sha256:
            new = entry.data
            action = "deleted" if new is None else ("created" if current is None else "written")
        elif entry.data is None:
            plan.conflicts.append(f"{entry.path} was changed in the project but deleted here")
            continue
        elif current is None:
            plan.conflicts.append(f"{entry.path} was deleted from the project but changed here")
            continue
        elif entry.base_data is None:
            new = _python_union(rel, b"", current, entry.data)
            if new is None:
                plan.conflicts.append(f"{entry.path} was created both in the project and here")
                continue
            action = "merged"
        else:
            merged = merge3(entry.base_data, current, entry.data)
            new = merged.data if merged.clean else None
            if new is None:
                new = _python_union(rel, entry.base_data, current, entry.data)
            if new is None:
                plan.conflicts.append(
                    f"{entry.path} {merged.describe()} changed both in the project and here"
                )
                continue
            action = "merged"
        plan.ops.append(FileOp(path=rel, data=new, old_sha256=current_sha))
        plan.backups.append(
            Backup(
                path=rel, data=current, applied_sha256=None if new is None else sha256_bytes(new)
            )
        )
        plan.outcomes.append(FileOutcome(path=rel, action=action))
    return plan


class WorkspaceReview:
    """Review operations over the workspaces of one project, serialised by its review lock."""

    def __init__(self, manager: WorkspaceManager, after_apply: AfterApply | None = None) -> None:
        self.manager = manager
        self.after_apply = after_apply

    def recover(self) -> RecoveryReport:
        """Finish or roll back accepts/undos a crash interrupted; sweep dead views."""
        report = RecoveryReport(swept_views=self.manager.sweep_views())
        if not self.manager.journal_dir.is_dir():
            return report
        with self.manager.lock():
            for outcome in recover_journals(
                self.manager.project_root, self.manager.journal_dir, self._finalize_journal
            ):
                workspace_id = outcome.journal.workspace_id
                if outcome.rolled_forward:
                    report.completed.append(workspace_id)
                else:
                    report.rolled_back.append(workspace_id)
                report.skipped_files.extend(outcome.skipped)
        return report

    def accept(self, workspace_id: str) -> AcceptReport:
        """Apply a pending workspace to the project (merging onto changed files), atomically."""
        with self.manager.lock():
            self.recover()
            with self.manager.open(workspace_id) as workspace:
                info = workspace.info()
                if info.status != "pending":
                    raise WorkspaceError(
                        "WS_003",
                        f"workspace {workspace_id} was already accepted",
                        f"'remora undo {workspace_id}' reverts it",
                    )
                root = self.manager.project_root
                plan = _plan_accept(root, workspace, self.manager.max_read_bytes)
                if plan.conflicts:
                    shown = "; ".join(plan.conflicts[:3])
                    more = (
                        f" (and {len(plan.conflicts) - 3} more)" if len(plan.conflicts) > 3 else ""
                    )
                    raise WorkspaceError(
                        "WS_004",
                        f"cannot accept {workspace_id}: {shown}{more}; nothing was written",
                        f"reject it ('remora reject {workspace_id}') or retry it, "
                        "or undo your edit and accept again",
                    )
                workspace.record_backups(plan.backups)
            self._apply("accept", workspace_id, plan.ops)
            return AcceptReport(workspace_id=workspace_id, files=plan.outcomes)

    def undo(self, workspace_id: str, *, keep_changed: bool = False) -> UndoReport:
        """Restore what an accept overwrote; the workspace goes back to pending review.

        A file changed since the accept refuses the whole undo (WS_005), unless
        ``keep_changed``: then it is left as it is and listed in ``UndoReport.kept``.
        """
        with self.manager.lock():
            self.recover()
            with self.manager.open(workspace_id) as workspace:
                if workspace.info().status != "accepted":
                    raise WorkspaceError(
                        "WS_003",
                        f"workspace {workspace_id} has not been accepted, so there is nothing "
                        "to undo",
                        "'remora runs' shows what was accepted",
                    )
                accepted_at = workspace.info().accepted_at
                backups = workspace.backups()
            root = self.manager.project_root
            changed = [b.path for b in backups if _holds(root, b) != b.applied_sha256]
            if changed and not keep_changed:
                raise _undo_refused(
                    workspace_id, changed, self._later_accepts(workspace_id, accepted_at, changed)
                )
            restoring = [b for b in backups if b.path not in changed]
            ops = [FileOp(path=b.path, data=b.data, old_sha256=b.applied_sha256) for b in restoring]
            restored = [
                FileOutcome(path=b.path, action="deleted" if b.data is None else "written")
                for b in restoring
            ]
            self._apply("undo", workspace_id, ops)
            return UndoReport(workspace_id=workspace_id, restored=restored, kept=changed)

    def _later_accepts(
        self, workspace_id: str, accepted_at: float | None, paths: list[str]
    ) -> list[tuple[WorkspaceInfo, list[str]]]:
        """The workspaces accepted after ``workspace_id`` that wrote any of ``paths``, newest
        first (the order to undo them in), each with the paths it shares; one whose storage
        cannot be read is left out."""
        wanted = set(paths)
        found: list[tuple[WorkspaceInfo, list[str]]] = []
        for info in self.manager.list():
            if info.workspace_id == workspace_id or info.status != "accepted":
                continue
            if accepted_at is not None and (info.accepted_at or 0.0) < accepted_at:
                continue
            try:
                with self.manager.open(info.workspace_id) as other:
                    shared = sorted(wanted & {b.path for b in other.backups()})
            except WorkspaceError:
                continue
            if shared:
                found.append((info, shared))
        found.sort(key=lambda item: item[0].accepted_at or 0.0, reverse=True)
        return found

    def reject(self, workspace_id: str) -> WorkspaceInfo:
        """Discard a pending workspace; the project is not touched.

        A workspace whose storage cannot be read (WS_007) is removed all the same (its
        info then comes from its id alone): WS_007's hint sends users here.
        """
        with self.manager.lock():
            try:
                info = self.manager.info(workspace_id)
            except WorkspaceError as exc:
                if exc.code != "WS_007":
                    raise
                info = self.manager.info_from_id(workspace_id)
            if info.status == "accepted":
                raise WorkspaceError(
                    "WS_003",
                    f"workspace {workspace_id} was already accepted; rejecting it now would "
                    "lose the undo record",
                    f"'remora undo {workspace_id}' reverts it, then reject it",
                )
            self.manager.remove(workspace_id)
            return info

    def retry(self, workspace_id: str) -> RetryRequest:
        """Discard a pending workspace and say which (operation, node) to run again."""
        info = self.reject(workspace_id)
        return RetryRequest(
            workspace_id=info.workspace_id,
            operation=info.operation,
            node_id=info.node_id,
            run_id=info.run_id,
            file_path=info.file_path,
        )

    def _apply(self, kind: ApplyKind, workspace_id: str, ops: list[FileOp]) -> None:
        if ops:
            apply_journaled(
                self.manager.project_root,
                self.manager.journal_dir,
                kind,
                workspace_id,
                ops,
                self._finalize_journal,
            )
            return
        try:
            self._finalize(kind, workspace_id, [])
        except OSError as exc:
            raise os_failure(exc, f"record the {kind} of {workspace_id}") from None

    def _finalize_journal(self, journal: Journal, skipped: list[str]) -> None:
        self._finalize(journal.kind, journal.workspace_id, skipped)

    def _finalize(self, kind: ApplyKind, workspace_id: str, skipped: list[str]) -> None:
        if not self.manager.exists(workspace_id):
            return
        with self.manager.open(workspace_id) as workspace:
            if kind == "accept":
                workspace.mark_accepted(never_written=skipped)
            else:
                workspace.mark_pending()
            info = workspace.info()
        if self.after_apply is not None:
            self.after_apply(kind, info)


def _undo_refused(
    workspace_id: str, changed: list[str], later: list[tuple[WorkspaceInfo, list[str]]]
) -> WorkspaceError:
    """WS_005 for an undo refused because ``changed`` files changed since the accept: it
    names the later accepts that wrote them (run, operation, files), newest first, so the
    user knows what to undo before, and otherwise says the change is the user's own."""
    one = len(changed) == 1
    more = f" (and {len(changed) - 3} more)" if changed[3:] else ""
    message = (
        f"cannot undo {workspace_id}: {', '.join(changed[:3])}{more} "
        f"{'has' if one else 'have'} changed since it was accepted"
    )
    keep = (
        f"or undo with --keep-changed to restore the other files and leave "
        f"{'it' if one else 'these'} as {'it is' if one else 'they are'}"
    )
    if not later:
        return WorkspaceError(
            "WS_005",
            f"{message}; nothing was restored",
            f"revert your edits to {'it' if one else 'them'} and undo again, {keep}",
        )
    named = [
        f"{info.workspace_id} ({info.operation}"
        f"{f', run {info.run_id}' if info.run_id else ''}; {', '.join(paths)})"
        for info, paths in later[:5]
    ]
    rest = f" and {len(later) - 5} more" if later[5:] else ""
    by_later = {path for _info, paths in later for path in paths}
    edited = [path for path in changed if path not in by_later]
    also = f"; {', '.join(edited)} changed otherwise (your edits)" if edited else ""
    undo_first = "; ".join(f"'remora undo {info.workspace_id}'" for info, _paths in later)
    return WorkspaceError(
        "WS_005",
        f"{message}, by {len(later)} later accept(s): {'; '.join(named)}{rest}{also}; "
        "nothing was restored",
        f"undo the later accept(s) first, newest first ({undo_first}), then undo "
        f"{workspace_id} again, {keep}",
    )


def _holds(root: Path, backup: Backup) -> str | None:
    """The sha256 a backed-up file holds now (a marker when it is no regular file any more)."""
    try:
        return file_sha256(root / backup.path)
    except (IsADirectoryError, NotADirectoryError, NotRegularFileError):
        return "not a regular file"
    except OSError as exc:
        raise os_failure(exc, f"read {backup.path} to undo it") from None
