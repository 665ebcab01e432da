"""Review: accept, reject, retry, undo and diff the workspaces of a run, with its manifest in step.

The workspace layer (:class:`~remora.workspace.WorkspaceReview`) applies changes atomically
and keeps backups for undo; this service adds the run's bookkeeping: each job's review
state follows what happened to its workspace, and a retry marks the job for the
coordinator to run again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from remora.errors import WorkspaceError
from remora.orchestration.runs import JobRecord, ReviewState, RunManifest, RunStore
from remora.workspace import (
    AcceptReport,
    RecoveryReport,
    RetryRequest,
    UndoReport,
    WorkspaceInfo,
    WorkspaceManager,
    WorkspaceReview,
)
from remora.workspace.journal import ApplyKind


@dataclass
class PendingChanges:
    """The changes awaiting a decision across runs (:meth:`ReviewService.pending_everywhere`):
    the newest per node and operation, how many runs they come from, and how many older
    ones of the same nodes were left out."""

    jobs: list[JobRecord] = field(default_factory=list)
    runs: int = 0
    hidden: int = 0


class ReviewService:
    """Accept, reject, retry, undo and diff workspaces, keeping run manifests in step.

    This is what the review CLI and the coordinator call; ``recover()`` first, so an
    accept interrupted by a crash is finished before anything else happens.
    """

    def __init__(self, manager: WorkspaceManager, store: RunStore | None = None) -> None:
        self.manager = manager
        self.store = store or RunStore(manager)
        self.workspaces = WorkspaceReview(manager, after_apply=self._on_applied)

    def recover(self) -> RecoveryReport:
        """Finish or roll back interrupted accepts/undos (their manifests follow)."""
        return self.workspaces.recover()

    def pending_everywhere(self, operation: str | None = None) -> PendingChanges:
        """Every change awaiting a decision in any run, newest per node and operation: each
        watch save and retry makes a new run, so one node's changes spread over runs. The
        older ones of a node stay pending (``hidden`` counts them); an unreadable run is
        skipped."""
        found = PendingChanges()
        seen: set[tuple[str, str]] = set()
        order: dict[str, int] = {}  # operations in the newest runs' order
        for run_id in self.store.run_ids():  # newest first
            try:
                manifest = self.reconcile(run_id)
            except WorkspaceError:
                continue
            for name in manifest.operations:
                order.setdefault(name, len(order))
            fresh = False
            for job in manifest.pending_reviews(operation):
                key = (job.operation, job.node_id)
                if key in seen:
                    found.hidden += 1
                    continue
                seen.add(key)
                found.jobs.append(job)
                fresh = True
            found.runs += fresh
        found.jobs.sort(
            key=lambda job: (
                order.get(job.operation, len(order)),
                job.operation,
                job.file_path or "",
                job.start_line or 0,
            )
        )
        return found

    def reconcile(self, run_id: str | None) -> RunManifest:
        """Make each job's review state agree with its workspace on disk (None: newest run)."""
        with self.manager.lock():
            manifest = self.store.resolve(run_id)
            changed = False
            for job in manifest.jobs:
                if job.workspace_id is None or job.review == "none":
                    continue
                try:
                    state = self.manager.state(job.workspace_id)
                except WorkspaceError:
                    continue  # unreadable storage: leave the record as it is
                if job.review == "retried":
                    continue
                if job.review == "retry_requested":
                    if state == "pending":
                        self.manager.remove(job.workspace_id)
                    continue
                wanted: ReviewState = job.review
                if state == "accepted":
                    wanted = "accepted"
                elif state == "pending":
                    wanted = "pending"
                elif job.review in ("pending", "accepted"):
                    wanted = "rejected"
                if wanted != job.review:
                    job.review = wanted
                    job.reviewed_at = time.time()
                    changed = True
            if changed:
                self.store.write(manifest)
            return manifest

    def accept(self, workspace_id: str) -> AcceptReport:
        return self.workspaces.accept(workspace_id)

    def undo(self, workspace_id: str, *, keep_changed: bool = False) -> UndoReport:
        return self.workspaces.undo(workspace_id, keep_changed=keep_changed)

    def reject(self, workspace_id: str) -> WorkspaceInfo:
        with self.manager.lock():
            info = self.workspaces.reject(workspace_id)
            self._set_review(info.run_id, workspace_id, "rejected")
            return info

    def retry(self, workspace_id: str, note: str = "") -> RetryRequest:
        """Mark the job for a rerun, then discard its workspace; returns what to rerun.
        ``note`` (what the person found wrong) is kept for the rerun's model."""
        with self.manager.lock():
            try:
                info = self.manager.info(workspace_id)
            except WorkspaceError as exc:
                if exc.code != "WS_007":
                    raise
                info = self.manager.info_from_id(workspace_id)  # storage unreadable: discard it
            if info.status == "pending":
                self._set_review(info.run_id, workspace_id, "retry_requested", note)
            return self.workspaces.retry(workspace_id)

    def diff(self, workspace_id: str, context: int = 3) -> dict[str, str]:
        with self.manager.open(workspace_id) as workspace:
            return workspace.diff(context)

    def _on_applied(self, kind: ApplyKind, info: WorkspaceInfo) -> None:
        self._set_review(
            info.run_id, info.workspace_id, "accepted" if kind == "accept" else "pending"
        )

    def _set_review(
        self, run_id: str | None, workspace_id: str, review: ReviewState, note: str = ""
    ) -> None:
        if run_id is None or not self.store.exists(run_id):
            return

        def mark(manifest: RunManifest) -> None:
            job = manifest.job_for_workspace(workspace_id)
            if job is not None:
                job.review = review
                job.reviewed_at = time.time()
                if note:
                    job.retry_note = note

        self.store.update(run_id, mark)
