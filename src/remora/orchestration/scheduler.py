"""``run_jobs``: the one scheduler every command that runs agents goes through.

It owns what a run is: a manifest written before the first job (every job ``queued``) and
updated as each job ends, so a crash mid-run leaves a manifest review can still use; one
workspace per job, discarded when the job changed nothing or did not succeed; bounded
concurrency (``runner.concurrency``); the agent's precheck before any model call;
cancellation (``cancel`` set, e.g. by Ctrl-C: running jobs stop between steps, queued jobs
never start, the manifest says ``interrupted``, nothing is half-applied because nothing is
applied before review); events for the run and every job; transcripts when enabled.
Where the jobs run is the executor's business (:mod:`remora.orchestration.executor`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from remora.config import RemoraConfig
from remora.events import (
    Emitter,
    FanoutEmitter,
    JsonlEmitter,
    NullEmitter,
    RunFinished,
    RunStarted,
)
from remora.model.base import ModelClient
from remora.orchestration.executor import Executor, LocalExecutor, RunServices
from remora.orchestration.job import Job
from remora.orchestration.runs import JobRecord, RunManifest, RunStatus, RunStore, new_run_id
from remora.runner import AgentResult
from remora.workspace import WorkspaceManager
from remora.workspace.durable import sha256_bytes


@dataclass
class RunResult:
    """What a finished (or interrupted) run did: its manifest and each job's result."""

    manifest: RunManifest
    results: list[tuple[Job, AgentResult]] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    def count(self, status: str) -> int:
        return sum(result.status == status for _job, result in self.results)

    @property
    def changed(self) -> int:
        return sum(bool(record.changed_files) for record in self.manifest.jobs)


JobCallback = Callable[[Job, AgentResult], Any]


def open_emitter(config: RemoraConfig, state_path: Path, *extra: Emitter) -> Emitter:
    """The JSONL event stream the config asks for (``events.*``), plus ``extra`` emitters."""
    emitters = list(extra)
    if config.events.enabled:
        emitters.append(JsonlEmitter(config.events.path or state_path / "events.jsonl"))
    if not emitters:
        return NullEmitter()
    return emitters[0] if len(emitters) == 1 else FanoutEmitter(*emitters)


async def run_jobs(
    jobs: Sequence[Job],
    *,
    config: RemoraConfig,
    manager: WorkspaceManager,
    model: ModelClient | None = None,
    executor: Executor | None = None,
    targets: Sequence[str] = (),
    operations: Sequence[str] = (),
    emitter: Emitter | None = None,
    cancel: asyncio.Event | None = None,
    run_id: str | None = None,
    concurrency: int | None = None,
    on_done: JobCallback | None = None,
) -> RunResult:
    """Run ``jobs`` as one run on ``executor`` (default: this process's lanes with
    ``model``, ``concurrency`` at a time, default ``runner.concurrency``)."""
    if executor is None:
        if model is None:
            raise TypeError("run_jobs needs a model or an executor")
        executor = LocalExecutor(model)
    emitter = emitter or NullEmitter()
    cancel = cancel or asyncio.Event()
    store = RunStore(manager)
    run_id = run_id or new_run_id()
    digests = _file_digests(manager.project_root, jobs)
    jobs = [job.in_run(run_id, file_sha256=digests.get(job.node.file_path)) for job in jobs]
    manifest = store.start(
        list(targets), list(operations or dict.fromkeys(job.operation for job in jobs)), run_id
    )
    manifest.jobs = [JobRecord.queued(job.key, job.node) for job in jobs]
    store.write(manifest)
    emitter.emit(
        RunStarted(run_id=run_id, targets=manifest.targets, operations=manifest.operations)
    )
    result = RunResult(manifest)
    transcripts = manager.state_path / "transcripts" / run_id if config.events.transcript else None
    services = RunServices(
        config=config,
        manager=manager,
        emitter=emitter,
        cancel=cancel,
        transcripts=transcripts,
        concurrency=concurrency or config.runner.concurrency,
    )

    def done(job: Job, outcome: AgentResult) -> None:
        store.record_job(run_id, JobRecord.from_result(outcome, job.node, job.key))
        result.results.append((job, outcome))
        if on_done is not None:
            on_done(job, outcome)

    await executor.execute(jobs, services, done)
    status: RunStatus = "interrupted" if cancel.is_set() else "completed"
    result.manifest = store.finish(run_id, status)
    emitter.emit(RunFinished(run_id=run_id, status=status, jobs=len(jobs)))
    return result


def _file_digests(root: Path, jobs: Sequence[Job]) -> dict[str, str]:
    """sha256 of each job's file as the run starts (one read per file; a file that cannot
    be read has none, and its jobs fail on their own)."""
    digests: dict[str, str] = {}
    for path in dict.fromkeys(job.node.file_path for job in jobs):
        with contextlib.suppress(OSError):
            digests[path] = sha256_bytes((root / path).read_bytes())
    return digests


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
