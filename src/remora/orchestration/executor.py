"""Where a run's jobs run: the seam between the scheduler and the machines.

:func:`~remora.orchestration.scheduler.run_jobs` owns what a run is (its manifest, its
events, cancellation); an :class:`Executor` owns where and how many jobs run at once. The
:class:`LocalExecutor` runs them in this process's asyncio lanes, each in its own workspace;
:mod:`remora.orchestration.ray_executor` runs them on Ray workers and brings each change
back as data. Both hand every result to the same ``done`` callback, on the driver's event
loop, so what is recorded and reviewed does not depend on where a job ran.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from remora.config import ModelConfig, RemoraConfig
from remora.errors import RemoraError
from remora.events import Emitter, JobFinished, JobStarted
from remora.model.base import ModelClient
from remora.orchestration.job import Job, open_job
from remora.runner import AgentResult, AgentStatus
from remora.tools.runtime import ToolRuntime
from remora.workspace import WorkspaceManager

JobDone = Callable[[Job, AgentResult], None]
"""Called on the driver as each job ends, in the order they end."""

NOT_STARTED = "RUN_004: the run was cancelled before this job started"


@dataclass(frozen=True)
class RunServices:
    """What the driver lends an executor for one run: the configuration, the project's
    workspaces (where kept changes are recorded), the event stream, the run's cancel
    event, where transcripts go (None: not kept) and how many jobs may run at once."""

    config: RemoraConfig
    manager: WorkspaceManager
    emitter: Emitter
    cancel: asyncio.Event
    transcripts: Path | None
    concurrency: int


class Executor(Protocol):
    """Runs a run's jobs somewhere and reports each result through ``done``.

    Every job gets exactly one ``done`` call: a job never started because ``cancel`` was
    set ends ``interrupted``; a job whose work failed ends ``failed`` with the reason. A
    kept change is a workspace of ``services.manager`` named by the result's
    ``workspace_id`` by the time ``done`` is called."""

    async def execute(self, jobs: Sequence[Job], services: RunServices, done: JobDone) -> None:
        """Return once every job has been reported."""
        ...


class LocalExecutor:
    """Jobs in this process, ``services.concurrency`` at a time, with one model."""

    def __init__(self, model: ModelClient) -> None:
        self.model = model

    async def execute(self, jobs: Sequence[Job], services: RunServices, done: JobDone) -> None:
        gate = asyncio.Semaphore(services.concurrency)
        with ToolRuntime(services.config.tools, services.emitter) as runtime:

            async def one(job: Job) -> None:
                async with gate:
                    if services.cancel.is_set():
                        outcome = ended(job, "interrupted", NOT_STARTED)
                    else:
                        outcome = await run_in_workspace(
                            job,
                            self.model,
                            runtime,
                            services.manager,
                            services.config,
                            services.emitter,
                            services.cancel,
                            services.transcripts,
                        )
                done(job, outcome)

            await asyncio.gather(*(one(job) for job in jobs))


async def run_in_workspace(
    job: Job,
    model: ModelClient,
    runtime: ToolRuntime,
    manager: WorkspaceManager,
    config: RemoraConfig,
    emitter: Emitter,
    cancel: asyncio.Event,
    transcripts: Path | None,
) -> AgentResult:
    """One job in its own workspace of ``manager``, kept only when the job succeeded (or
    partly) and changed something; every failure becomes a failed result, never a crash."""
    key = job.key
    started = time.monotonic()
    emitter.emit(started_event(job))
    try:
        with open_job(job, manager=manager, runtime=runtime, config=config) as opened:
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
        outcome, keep = ended(job, "failed", exc.render()), False
    except Exception as exc:  # a bug must cost one job, not the run
        outcome, keep = ended(job, "failed", f"{type(exc).__name__}: {exc}"), False
    if not keep:
        outcome = outcome.model_copy(update={"workspace_id": None, "changed_files": []})
    emitter.emit(finished_event(job, outcome, time.monotonic() - started))
    return outcome


def started_event(job: Job) -> JobStarted:
    """The event that says ``job`` has started (or was handed to a worker)."""
    key = job.key
    return JobStarted(
        run_id=key.run_id,
        job_id=key.job_id,
        operation=key.operation,
        node_id=job.node.node_id,
        qualname=job.node.qualname,
        file_path=job.node.file_path,
    )


def finished_event(job: Job, outcome: AgentResult, seconds: float) -> JobFinished:
    """The event that says ``job`` ended with ``outcome`` after ``seconds``."""
    key = job.key
    return JobFinished(
        run_id=key.run_id,
        job_id=key.job_id,
        operation=key.operation,
        node_id=job.node.node_id,
        status=outcome.status,
        summary=outcome.summary,
        error=outcome.error,
        changed_files=outcome.changed_files,
        wall_time_s=round(seconds, 3),
    )


def ended(job: Job, status: AgentStatus, error: str) -> AgentResult:
    """The result of a job the agent loop did not finish (not started, or crashed)."""
    return AgentResult(
        status=status, operation=job.operation, node_id=job.node.node_id, error=error
    )


def executor_for(
    config: RemoraConfig,
    model: ModelClient | None = None,
    *,
    model_factory: Callable[[ModelConfig], ModelClient] | None = None,
) -> Executor:
    """The executor ``executor.kind`` names: this process's lanes with ``model``, or Ray
    workers that each build their model with ``model_factory`` (default the configured
    backend); Ray is imported only then, and RUN_026 says when it is not installed."""
    settings = config.executor
    if settings.kind == "ray":
        from remora.orchestration.ray_executor import RayExecutor

        return RayExecutor(
            settings.ray_address,
            settings.ray_workers,
            model_factory,
            project=settings.ray_project,
        )
    if model is None:
        raise TypeError("the local executor needs a model")
    return LocalExecutor(model)
