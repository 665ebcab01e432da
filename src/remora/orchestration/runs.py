"""Run manifests and review bookkeeping: what a run did per job, and what a human decided.

Every run writes ``<state_dir>/runs/<run_id>.json`` (atomically: temp + fsync + rename)
so review can happen later, from another process. While it runs, each finished job is
appended to ``<run_id>.jobs.jsonl`` beside it (one line, flushed and fsynced) instead of
rewriting the manifest, so recording a job costs the same in a run of 80,000 jobs as in a
run of ten; every read applies those lines, and the next rewrite (the run's end, a review)
folds them into the manifest and removes the file. Each job records its node, operation,
status, workspace id, summary and telemetry, plus its review state:

* ``none``: nothing to review (no changes, or the agent did not succeed);
* ``pending``: changes wait for a decision;
* ``accepted`` / ``rejected``: decided (undo puts an accepted job back to ``pending``);
* ``retry_requested``: the workspace was discarded; the coordinator reruns the job.

The workspace layer is the source of truth for what reached the project; manifests follow
it. Accept and undo update the manifest before their journal is removed, so recovery
after a crash brings both back in step, and :meth:`ReviewService.reconcile` repairs any
other drift (a reject interrupted between discarding and recording).
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import socket
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from remora.contracts import JobKey
from remora.discovery import CSTNode
from remora.errors import WorkspaceError
from remora.runner.result import AgentResult, AgentTelemetry
from remora.workspace import (
    WorkspaceManager,
)
from remora.workspace.durable import atomic_write, os_failure

MANIFEST_VERSION = 1
JOURNAL_SUFFIX = ".jobs.jsonl"
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")

ReviewState = Literal["none", "pending", "accepted", "rejected", "retry_requested", "retried"]
JobStatus = Literal[
    "queued", "running", "success", "partial", "left", "failed", "skipped", "interrupted"
]
RunStatus = Literal["running", "completed", "failed", "interrupted"]


def new_run_id(now: float | None = None) -> str:
    """``YYYYMMDD-HHMMSSmmm-<6 hex>`` in UTC: sorts by time (to the millisecond, so two runs
    in one second still sort in order), unique across processes."""
    now = time.time() if now is None else now
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    return f"{stamp}{int(now * 1000) % 1000:03d}-{secrets.token_hex(3)}"


def check_run_id(run_id: str) -> str:
    """``run_id`` itself, or WS_009 when it could not name a run."""
    if not _RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise WorkspaceError(
            "WS_009", f"{run_id!r} is not a valid run id", "'remora runs' lists the runs"
        )
    return run_id


class JobRecord(BaseModel):
    """One (operation, node) job of a run, as review needs it."""

    job_id: str
    operation: str
    node_id: str
    node_type: str | None = None
    qualname: str | None = None
    file_path: str | None = None
    start_line: int | None = None
    status: JobStatus = "queued"
    workspace_id: str | None = None
    changed_files: list[str] = Field(default_factory=list)
    summary: str = ""
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    telemetry: AgentTelemetry = Field(default_factory=AgentTelemetry)
    review: ReviewState = "none"
    reviewed_at: float | None = None
    retry_note: str = ""
    """What the person said was wrong when they asked for a retry (shown to the model)."""

    @classmethod
    def queued(cls, key: JobKey, node: CSTNode) -> JobRecord:
        """The record of a job that has not run yet."""
        return cls(
            job_id=key.job_id,
            operation=key.operation,
            node_id=key.node_id,
            node_type=node.node_type,
            qualname=node.qualname,
            file_path=node.file_path,
            start_line=node.start_line,
        )

    @classmethod
    def from_result(
        cls, result: AgentResult, node: CSTNode | None = None, key: JobKey | None = None
    ) -> JobRecord:
        """A record for a finished job; successful jobs with changes await review."""
        reviewable = (
            result.status in ("success", "partial")
            and result.workspace_id is not None
            and bool(result.changed_files)
        )
        key = key or JobKey(result.operation, result.node_id)
        return cls(
            job_id=key.job_id,
            operation=result.operation,
            node_id=result.node_id,
            node_type=node.node_type if node else None,
            qualname=node.qualname if node else None,
            file_path=node.file_path if node else None,
            start_line=node.start_line if node else None,
            status=result.status,
            workspace_id=result.workspace_id,
            changed_files=list(result.changed_files),
            summary=result.summary,
            details=dict(result.details),
            error=result.error,
            telemetry=result.telemetry,
            review="pending" if reviewable else "none",
        )

    @property
    def label(self) -> str:
        """``qualname`` (or node id) and location, for people."""
        where = self.file_path or ""
        if where and self.start_line:
            where = f"{where}:{self.start_line}"
        name = self.qualname or self.node_id
        return f"{name} ({where})" if where else name


class RunSummary(BaseModel):
    """One line of ``remora runs``."""

    run_id: str
    created_at: float
    finished_at: float | None = None
    status: RunStatus | Literal["unreadable"]
    jobs: int = 0
    succeeded: int = 0
    partial: int = Field(default=0, description="Jobs that did part of their work.")
    left: int = Field(default=0, description="Jobs that ran and left their work to the person.")
    failed: int = 0
    pending: int = 0
    accepted: int = 0
    rejected: int = 0
    retry_requested: int = 0
    retried: int = Field(default=0, description="Jobs a later run ('remora retry') redid.")


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started, as Linux counts it (so a reused pid is another
    process); None where /proc does not say."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


_PID_MAX = 2**31 - 1
"""The largest process id there can be (``pid_t``); a larger one, zero or a negative one
names no process (``os.kill`` would overflow or signal a whole group)."""


class RunOwner(BaseModel):
    """The process running a run: a run whose owner is gone can never finish."""

    pid: int
    host: str
    started: str | None = None

    @classmethod
    def current(cls) -> RunOwner:
        return _this_process().model_copy()

    def gone(self) -> bool:
        """Whether the owner has ended (only known on its own host)."""
        if self == _this_process() or self.host != socket.gethostname():
            return False  # this very process (each job's record reads it), or unknowable
        if not 0 < self.pid <= _PID_MAX:
            return True  # no process has that id (a damaged or forged manifest)
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return self.started is not None and _process_start(self.pid) != self.started


@functools.cache
def _this_process() -> RunOwner:
    pid = os.getpid()
    return RunOwner(pid=pid, host=socket.gethostname(), started=_process_start(pid))


ORPHANED = "the run's process ended before this job finished (killed with its terminal?)"


class RunManifest(BaseModel):
    """Everything one run did; the file review reads."""

    format_version: int = MANIFEST_VERSION
    run_id: str
    created_at: float = Field(default_factory=time.time)
    finished_at: float | None = None
    status: RunStatus = "running"
    project_root: str
    targets: list[str] = Field(default_factory=list)
    operations: list[str] = Field(default_factory=list)
    jobs: list[JobRecord] = Field(default_factory=list)
    owner: RunOwner | None = None

    def orphaned(self) -> bool:
        """Still ``running`` though the process running it has ended."""
        return self.status == "running" and self.owner is not None and self.owner.gone()

    def job_for_workspace(self, workspace_id: str) -> JobRecord | None:
        return next((job for job in self.jobs if job.workspace_id == workspace_id), None)

    def upsert(self, job: JobRecord) -> None:
        """Add ``job`` or replace the record with the same job id."""
        self.upsert_all([job])

    def upsert_all(self, jobs: Iterable[JobRecord]) -> None:
        """:meth:`upsert` each of ``jobs``, in order, in one pass over the records."""
        where = {existing.job_id: index for index, existing in enumerate(self.jobs)}
        for job in jobs:
            index = where.get(job.job_id)
            if index is None:
                where[job.job_id] = len(self.jobs)
                self.jobs.append(job)
            else:
                self.jobs[index] = job

    def pending_reviews(self, operation: str | None = None) -> list[JobRecord]:
        """Jobs awaiting a decision, grouped by operation in run order, then by location."""
        return self._in_review_order(
            job
            for job in self.jobs
            if job.review == "pending" and operation in (None, job.operation)
        )

    def left_for_person(self, operation: str | None = None) -> list[JobRecord]:
        """Jobs that proposed no change because what they needed is the person's to give
        (a docstring whose every summary was refused: ``left``) or that failed, nothing to
        review, in the order of :meth:`pending_reviews`."""
        return self._in_review_order(
            job
            for job in self.jobs
            if job.status in ("left", "failed")
            and job.review == "none"
            and operation in (None, job.operation)
        )

    def _in_review_order(self, jobs: Iterable[JobRecord]) -> list[JobRecord]:
        """``jobs`` grouped by operation in run order, then by location."""
        order = {name: index for index, name in enumerate(self.operations)}
        return sorted(
            jobs,
            key=lambda job: (
                order.get(job.operation, len(order)),
                job.operation,
                job.file_path or "",
                job.start_line or 0,
            ),
        )

    def summary(self) -> RunSummary:
        reviews = [job.review for job in self.jobs]
        return RunSummary(
            run_id=self.run_id,
            created_at=self.created_at,
            finished_at=self.finished_at,
            status=self.status,
            jobs=len(self.jobs),
            succeeded=sum(job.status == "success" for job in self.jobs),
            partial=sum(job.status == "partial" for job in self.jobs),
            left=sum(job.status == "left" for job in self.jobs),
            failed=sum(job.status == "failed" for job in self.jobs),
            pending=reviews.count("pending"),
            accepted=reviews.count("accepted"),
            rejected=reviews.count("rejected"),
            retry_requested=reviews.count("retry_requested"),
            retried=reviews.count("retried"),
        )


class RunStore:
    """The run manifests of one project, sharing the workspace manager's state dir and lock."""

    def __init__(self, manager: WorkspaceManager) -> None:
        self.manager = manager

    @property
    def runs_dir(self) -> Path:
        return self.manager.state_path / "runs"

    def path(self, run_id: str) -> Path:
        return self.runs_dir / f"{check_run_id(run_id)}.json"

    def journal_path(self, run_id: str) -> Path:
        """Where the jobs a run finished since its manifest was last written are appended."""
        return self.runs_dir / f"{check_run_id(run_id)}{JOURNAL_SUFFIX}"

    def start(
        self, targets: list[str], operations: list[str], run_id: str | None = None
    ) -> RunManifest:
        """Write the manifest of a new run (status ``running``)."""
        manifest = RunManifest(
            run_id=check_run_id(run_id or new_run_id()),
            project_root=str(self.manager.project_root),
            targets=targets,
            operations=operations,
            owner=RunOwner.current(),
        )
        self.write(manifest)
        return manifest

    def write(self, manifest: RunManifest) -> None:
        """Replace the manifest atomically (readers see the old or the new file), with the
        journaled jobs folded in: ``manifest`` must have been read with them (as
        :meth:`read` gives it), since the journal is removed once it is written."""
        with self.manager.lock():
            try:
                self.manager.prepare_state()
                data = manifest.model_dump_json(indent=2).encode()
                atomic_write(self.path(manifest.run_id), data)
                self.journal_path(manifest.run_id).unlink(missing_ok=True)
            except OSError as exc:
                raise os_failure(exc, f"write run manifest {manifest.run_id}") from None

    def exists(self, run_id: str) -> bool:
        return self.path(run_id).is_file()

    def read(self, run_id: str) -> RunManifest:
        path = self.path(run_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise WorkspaceError(
                "WS_009", f"no run {run_id} in {self.runs_dir}", "'remora runs' lists the runs"
            ) from None
        try:
            manifest = RunManifest.model_validate_json(data)
        except ValidationError as exc:
            raise WorkspaceError(
                "WS_010",
                f"run manifest {path} is invalid: {exc.errors()[0]['msg']}",
                "restore it from a backup or delete it; workspaces are kept separately",
            ) from None
        manifest.upsert_all(self._journaled(run_id))
        if manifest.orphaned():  # shown as it is; the next update writes it so
            manifest.status = "interrupted"
            for job in manifest.jobs:
                if job.status in ("queued", "running"):
                    job.status = "interrupted"
                    job.summary = job.summary or ORPHANED
        return manifest

    def update(self, run_id: str, mutate: Callable[[RunManifest], None]) -> RunManifest:
        """Read, change and rewrite one manifest under the project's review lock."""
        with self.manager.lock():
            manifest = self.read(run_id)
            mutate(manifest)
            self.write(manifest)
            return manifest

    def record_job(self, run_id: str, job: JobRecord) -> None:
        """Add or replace one job's record (what the coordinator calls as jobs finish):
        one line appended to the run's journal, whatever the run's size."""
        line = job.model_dump_json().encode() + b"\n"
        with self.manager.lock():
            try:
                self.manager.prepare_state()
                with self.journal_path(run_id).open("ab") as handle:
                    handle.write(line)
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as exc:
                raise os_failure(exc, f"record a job of run {run_id}") from None

    def _journaled(self, run_id: str) -> list[JobRecord]:
        """The jobs appended since the manifest was written; a line cut short by a crash
        (the last one) is left out."""
        try:
            data = self.journal_path(run_id).read_bytes()
        except FileNotFoundError:
            return []
        jobs = []
        for line in data.splitlines():
            try:
                jobs.append(JobRecord.model_validate_json(line))
            except ValidationError:
                continue
        return jobs

    def finish(self, run_id: str, status: RunStatus = "completed") -> RunManifest:
        def close(manifest: RunManifest) -> None:
            manifest.status = status
            manifest.finished_at = time.time()

        return self.update(run_id, close)

    def run_ids(self) -> list[str]:
        """Every run id on disk, newest first."""
        try:
            names = os.listdir(self.runs_dir)
        except FileNotFoundError:
            return []
        ids = [
            name[:-5] for name in names if name.endswith(".json") and _RUN_ID.fullmatch(name[:-5])
        ]
        return sorted(ids, reverse=True)

    def list(self) -> list[RunSummary]:
        """A summary per run, newest first; unreadable manifests are listed, not fatal."""
        summaries = []
        for run_id in self.run_ids():
            try:
                summaries.append(self.read(run_id).summary())
            except WorkspaceError:
                summaries.append(
                    RunSummary(
                        run_id=run_id,
                        created_at=self.path(run_id).stat().st_mtime,
                        status="unreadable",
                    )
                )
        return summaries

    def resolve(self, run_id: str | None) -> RunManifest:
        """The named run, or the newest one; WS_009 when there is none."""
        if run_id is not None:
            return self.read(run_id)
        ids = self.run_ids()
        if not ids:
            raise WorkspaceError(
                "WS_009",
                f"no runs recorded in {self.runs_dir}",
                "run 'remora analyze' first; review works on its results",
            )
        return self.read(ids[0])
