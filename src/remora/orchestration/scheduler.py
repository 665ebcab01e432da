"""``run_jobs``: the one scheduler every command that runs agents goes through.

It owns what a run is: a manifest written before the first job (every job ``queued``) and
updated as each job ends, so a crash mid-run leaves a manifest review can still use; one
workspace per job, discarded when the job changed nothing or did not succeed; bounded
concurrency (``runner.concurrency``); the agent's precheck before any model call;
cancellation (``cancel`` set, e.g. by Ctrl-C: running jobs stop between steps, queued jobs
never start, the manifest says ``interrupted``, nothing is half-applied because nothing is
applied before review); events for the run and every job; transcripts when enabled.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from remora.config import RemoraConfig
from remora.contracts import JobKey
from remora.errors import RemoraError
from remora.events import (
    Emitter,
    FanoutEmitter,
    JobFinished,
    JobStarted,
    JsonlEmitter,
    NullEmitter,
    RunFinished,
    RunStarted,
)
from remora.model.base import ModelClient
from remora.orchestration.job import Job, open_job
from remora.orchestration.planning import PlannedJob
from remora.orchestration.runs import JobRecord, RunManifest, RunStatus, RunStore, new_run_id
from remora.runner import AgentResult, AgentStatus
from remora.tools.runtime import ToolRuntime
from remora.workspace import WorkspaceManager


@dataclass
class RunResult:
    """What a finished (or interrupted) run did: its manifest and each job's result."""

    manifest: RunManifest
    results: list[tuple[PlannedJob, AgentResult]] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    def count(self, status: str) -> int:
        return sum(result.status == status for _job, result in self.results)

    @property
    def changed(self) -> int:
        return sum(bool(record.changed_files) for record in self.manifest.jobs)


JobCallback = Callable[[PlannedJob, AgentResult], Any]


def open_emitter(config: RemoraConfig, state_path: Path, *extra: Emitter) -> Emitter:
    """The JSONL event stream the config asks for (``events.*``), plus ``extra`` emitters."""
    emitters = list(extra)
    if config.events.enabled:
        emitters.append(JsonlEmitter(config.events.path or state_path / "events.jsonl"))
    if not emitters:
        return NullEmitter()
    return emitters[0] if len(emitters) == 1 else FanoutEmitter(*emitters)


def job_key(job: PlannedJob, run_id: str) -> JobKey:
    return JobKey(job.operation, job.node.node_id, run_id, job.attempt)


async def run_jobs(
    jobs: Sequence[PlannedJob],
    *,
    model: ModelClient,
    config: RemoraConfig,
    manager: WorkspaceManager,
    targets: Sequence[str] = (),
    operations: Sequence[str] = (),
    emitter: Emitter | None = None,
    cancel: asyncio.Event | None = None,
    run_id: str | None = None,
    concurrency: int | None = None,
    on_done: JobCallback | None = None,
) -> RunResult:
    """Run ``jobs`` (``concurrency`` at a time, default ``runner.concurrency``) as one run."""
    emitter = emitter or NullEmitter()
    cancel = cancel or asyncio.Event()
    store = RunStore(manager)
    run_id = run_id or new_run_id()
    keys = [job_key(job, run_id) for job in jobs]
    manifest = store.start(
        list(targets), list(operations or dict.fromkeys(job.operation for job in jobs)), run_id
    )
    manifest.jobs = [JobRecord.queued(key, job.node) for key, job in zip(keys, jobs, strict=True)]
    store.write(manifest)
    emitter.emit(
        RunStarted(run_id=run_id, targets=manifest.targets, operations=manifest.operations)
    )
    result = RunResult(manifest)
    gate = asyncio.Semaphore(concurrency or config.runner.concurrency)
    transcripts = manager.state_path / "transcripts" / run_id if config.events.transcript else None

    with ToolRuntime(config.tools, emitter) as runtime:

        async def one(job: PlannedJob, key: JobKey) -> None:
            async with gate:
                if cancel.is_set():
                    outcome = _ended(
                        key, "interrupted", "RUN_004: the run was cancelled before this job started"
                    )
                else:
                    outcome = await _run_one(
                        job, key, model, runtime, manager, config, emitter, cancel, transcripts
                    )
            record = JobRecord.from_result(outcome, job.node, key)
            store.record_job(run_id, record)
            result.results.append((job, outcome))
            if on_done is not None:
                on_done(job, outcome)

        await asyncio.gather(*(one(job, key) for job, key in zip(jobs, keys, strict=True)))

    status: RunStatus = "interrupted" if cancel.is_set() else "completed"
    result.manifest = store.finish(run_id, status)
    emitter.emit(RunFinished(run_id=run_id, status=status, jobs=len(jobs)))
    return result


async def _run_one(
    job: PlannedJob,
    key: JobKey,
    model: ModelClient,
    runtime: ToolRuntime,
    manager: WorkspaceManager,
    config: RemoraConfig,
    emitter: Emitter,
    cancel: asyncio.Event,
    transcripts: Path | None,
) -> AgentResult:
    """One job in its own workspace; every failure becomes a failed result, never a crash."""
    node = job.node
    started = time.monotonic()
    emitter.emit(
        JobStarted(
            run_id=key.run_id,
            job_id=key.job_id,
            operation=key.operation,
            node_id=node.node_id,
            qualname=node.qualname,
            file_path=node.file_path,
        )
    )
    task = Job(
        agent=job.agent,
        node=node,
        key=key,
        options=job.options,
        system_prompt=job.system_prompt,
        retry=job.retry,
        retry_note=job.retry_note,
    )
    try:
        with open_job(task, manager=manager, runtime=runtime, config=config) as opened:
            outcome = await opened.precheck()
            if outcome is None:
                outcome = await opened.run(
                    model,
                    emitter=emitter,
                    cancel=cancel,
                    transcript_path=transcripts / key.transcript_name if transcripts else None,
                )
            opened.keep = outcome.status in ("success", "partial") and bool(
                opened.store.changed_paths()
            )
            keep = opened.keep
    except RemoraError as exc:
        outcome, keep = _ended(key, "failed", exc.render()), False
    except Exception as exc:  # a bug must cost one job, not the run
        outcome, keep = _ended(key, "failed", f"{type(exc).__name__}: {exc}"), False
    if not keep:
        outcome = outcome.model_copy(update={"workspace_id": None, "changed_files": []})
    emitter.emit(
        JobFinished(
            run_id=key.run_id,
            job_id=key.job_id,
            operation=key.operation,
            node_id=node.node_id,
            status=outcome.status,
            summary=outcome.summary,
            error=outcome.error,
            changed_files=outcome.changed_files,
            wall_time_s=round(time.monotonic() - started, 3),
        )
    )
    return outcome


def _ended(key: JobKey, status: AgentStatus, error: str) -> AgentResult:
    """The result of a job the agent loop did not finish (not started, or crashed)."""
    return AgentResult(status=status, operation=key.operation, node_id=key.node_id, error=error)


@contextlib.contextmanager
def interrupt_on_sigint(cancel: asyncio.Event) -> Iterator[None]:
    """While running: the first Ctrl-C sets ``cancel`` (jobs stop between steps, the run is
    recorded ``interrupted``); a second one raises KeyboardInterrupt at once."""
    loop = asyncio.get_running_loop()

    def first() -> None:
        cancel.set()
        loop.remove_signal_handler(signal.SIGINT)
        loop.add_signal_handler(signal.SIGINT, second)

    def second() -> None:
        loop.remove_signal_handler(signal.SIGINT)  # back to Python's KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGINT)

    try:
        loop.add_signal_handler(signal.SIGINT, first)
    except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
