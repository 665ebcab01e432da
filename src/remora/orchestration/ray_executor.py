"""Jobs on Ray workers, recorded on the driver as if they had run here.

The driver hands each :class:`~remora.orchestration.job.Job` value to a worker actor (one
per worker process) and gets back the job's result and its change as data: each changed
file's new bytes (None when deleted) with the content it was made against. It then writes
that change into a workspace of its own project under the result's ``workspace_id``, so
the run's manifest, ``remora review``, ``accept``, ``undo`` and ``watch`` cannot tell
where a job ran, and accept's 3-way merge still refuses or merges a change whose file the
user edited meanwhile.

A worker builds its model once (``model_factory(config.model)``: the embedded llama.cpp
in that process, or a client of a shared OpenAI-compatible server), its own sandbox pool
and its own workspaces over its copy of the project, with a private state directory (a
temporary one, never the driver's ``.remora/``). The copy is the driver's project path
when every worker sees it (``project="shared"``: one machine, or a shared filesystem), or
the project uploaded as Ray's ``runtime_env`` ``working_dir`` (``project="upload"``).
Either way the worker checks its copy of the node's file against the digest the driver
took when the run started and refuses a job on a stale copy (RUN_027).

A worker process that dies is restarted by Ray and its job retried (``max_restarts`` and
``max_task_retries`` on the actors), on whichever node has room.

Ray is imported here only, and only when a run uses it: without the ``ray`` extra, asking
for this executor is RUN_026, and nothing else in Remora notices.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from remora.config import ModelConfig, RemoraConfig
from remora.errors import RemoraError, RunnerError
from remora.events import NullEmitter
from remora.model.base import ModelClient
from remora.orchestration.executor import (
    NOT_STARTED,
    JobDone,
    RunServices,
    ended,
    finished_event,
    run_in_workspace,
    started_event,
)
from remora.orchestration.job import Job
from remora.runner import AgentResult
from remora.tools.runtime import ToolRuntime
from remora.workspace import WorkspaceManager
from remora.workspace.durable import sha256_bytes
from remora.workspace.materialize import process_alive

ModelFactory = Callable[[ModelConfig], ModelClient]
ProjectCopy = Literal["shared", "upload"]

CANCELLED_RUNNING = "RUN_004: the run was cancelled while this job ran on a Ray worker"
WORKER_NICENESS = "RAY_worker_niceness"
"""Read by the raylet a local instance starts: the niceness of its worker processes."""
SETTLE_S = 5.0
"""How long a cancelled run waits for its workers' jobs to stop before ending them."""


def import_ray() -> Any:
    """The ``ray`` module, or RUN_026 when it is not installed or cannot be imported."""
    try:
        import ray
    except ImportError as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name == "ray":
            raise RunnerError(
                "RUN_026",
                "Ray is not installed, so jobs cannot run on a Ray cluster",
                "pip install 'remora[ray]', or run with --executor local",
            ) from None
        raise RunnerError(
            "RUN_026",
            f"Ray is installed but cannot be imported: {exc}",
            "check the Ray installation (python -c 'import ray'), or run with --executor local",
        ) from None
    return ray


@dataclass(frozen=True)
class ShippedFile:
    """One changed file of a worker's workspace, as data: ``data`` None is a delete,
    ``base`` what the worker's copy held (None: no such file there)."""

    path: str
    data: bytes | None
    base: bytes | None
    base_sha256: str | None


@dataclass(frozen=True)
class WorkerOutcome:
    """What a worker sends back for one job: its result, its change and its transcript."""

    result: AgentResult
    files: tuple[ShippedFile, ...] = ()
    transcript: str | None = None
    worker: str = ""


def _sha256(path: Path) -> str | None:
    try:
        return sha256_bytes(path.read_bytes())
    except OSError:
        return None


def stale_copy(job: Job, root: Path) -> AgentResult | None:
    """RUN_027 as a failed result when the worker's copy of the job's file is not the one
    the driver planned the job on (None: same file, or the driver had no digest)."""
    if job.file_sha256 is None or _sha256(root / job.node.file_path) == job.file_sha256:
        return None
    return ended(
        job,
        "failed",
        RunnerError(
            "RUN_027",
            f"the worker's copy of {job.node.file_path} differs from the driver's (stale "
            "project copy); nothing was run",
            "give the workers the project as it is on the driver (a shared path, or "
            "executor.ray_project: upload) and run again",
        ).render(),
    )


STATE_PREFIX = "remora-worker-"
"""A worker's private state directory is ``<tmp>/remora-worker-<pid>-<random>``."""


def sweep_dead_workers(folder: Path) -> None:
    """Remove the state directories of workers whose process is gone (killed, or died
    mid-job before it could clean up), so dead workers do not leave workspaces behind."""
    for path in folder.glob(f"{STATE_PREFIX}*-*"):
        pid = path.name[len(STATE_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


class JobWorker:
    """One Ray worker process: a model, a sandbox pool and private workspaces, built once,
    then any number of jobs (Ray makes it an actor)."""

    def __init__(
        self,
        config: RemoraConfig,
        project: str | None,
        model_factory: ModelFactory,
    ) -> None:
        self.config = config
        self.root = Path(project) if project else Path.cwd()
        self.model = model_factory(config.model)
        sweep_dead_workers(Path(tempfile.gettempdir()))
        self.state = Path(tempfile.mkdtemp(prefix=f"{STATE_PREFIX}{os.getpid()}-"))
        self.manager = WorkspaceManager(
            self.root,
            self.state,
            keep_views=config.workspace.keep_views,
            max_read_bytes=config.workspace.max_read_mb * 1024 * 1024,
            max_bytes=config.workspace.max_mb * 1024 * 1024,
        )
        # Hide the project's own state directory (the driver's .remora/, on a shared path)
        # from the worker's jobs, as the driver's workspaces do.
        with contextlib.suppress(ValueError):
            state = (self.root / config.workspace.state_dir).resolve()
            self.manager.hidden = state.relative_to(self.root.resolve()).as_posix()
        self.runtime = ToolRuntime(config.tools, NullEmitter()).__enter__()
        self.name = f"{os.uname().nodename}:{os.getpid()}"

    async def run(self, job: Job, transcripts: bool) -> WorkerOutcome:
        """Run ``job`` here and send back its result and change; never keeps a workspace."""
        refused = stale_copy(job, self.root)
        if refused is not None:
            return WorkerOutcome(refused, worker=self.name)
        folder = Path(tempfile.mkdtemp(dir=self.state)) if transcripts else None
        try:
            result = await run_in_workspace(
                job,
                self.model,
                self.runtime,
                self.manager,
                self.config,
                NullEmitter(),
                asyncio.Event(),
                folder,
            )
            files: tuple[ShippedFile, ...] = ()
            if result.workspace_id is not None:
                try:
                    with self.manager.open(result.workspace_id) as store:
                        files = tuple(
                            ShippedFile(e.path, e.data, e.base_data, e.base_sha256)
                            for e in store.entries()
                        )
                finally:
                    with contextlib.suppress(RemoraError, OSError):
                        self.manager.remove(result.workspace_id)
            transcript = None
            if folder is not None:
                with contextlib.suppress(OSError):
                    transcript = (folder / job.key.transcript_name).read_text(encoding="utf-8")
            return WorkerOutcome(result, files, transcript, self.name)
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    async def close(self) -> None:
        """Stop the sandbox pool and the model and remove the private state."""
        self.runtime.close()
        with contextlib.suppress(Exception):
            await self.model.aclose()
        shutil.rmtree(self.state, ignore_errors=True)


def record_change(job: Job, outcome: WorkerOutcome, manager: WorkspaceManager) -> AgentResult:
    """The worker's result with its change written into a workspace of ``manager`` under
    the result's ``workspace_id``; a change that cannot be recorded fails the job."""
    result = outcome.result
    if result.workspace_id is None or not outcome.files:
        return result.model_copy(update={"workspace_id": None, "changed_files": []})
    key = job.key
    try:
        with manager.create(
            key.operation,
            job.node.node_id,
            key.run_id,
            file_path=job.node.file_path,
            workspace_id=result.workspace_id,
        ) as store:
            for shipped in outcome.files:
                store.record(shipped.path, shipped.data, shipped.base)
            changed = store.changed_paths()
    except RemoraError as exc:
        if manager.exists(result.workspace_id) and exc.code != "WS_012":
            with contextlib.suppress(RemoraError, OSError):
                manager.remove(result.workspace_id)
        return ended(job, "failed", exc.render())
    if not changed:
        with contextlib.suppress(RemoraError, OSError):
            manager.remove(result.workspace_id)
        return result.model_copy(update={"workspace_id": None, "changed_files": []})
    return result.model_copy(update={"changed_files": changed})


@dataclass
class _Slot:
    """One job's room on a worker actor."""

    actor: Any


class RayExecutor:
    """Jobs on Ray worker actors, ``jobs_per_worker`` at a time on each.

    ``address`` None starts a local Ray instance for the run (``workers`` CPUs, default
    this machine's) and stops it after; ``"auto"`` joins the cluster ``ray start`` began
    on this machine; anything else is a cluster address (``ray://host:10001`` or
    ``host:6379``). A Ray already initialised in this process is used as it is and left
    running. ``workers`` defaults to, and is at most, the cluster's CPU count. ``project``
    says how workers see the project (module docstring); ``project_path`` is where a
    shared project is on the workers when not at the driver's path (another mount point).
    ``retries`` is how often a dead worker is restarted
    and its job retried.
    """

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        model_factory: ModelFactory | None = None,
        *,
        project: ProjectCopy = "shared",
        project_path: str | None = None,
        jobs_per_worker: int = 1,
        retries: int = 3,
        runtime_env: dict[str, Any] | None = None,
    ) -> None:
        if workers is not None and workers < 1:
            raise ValueError("workers must be at least 1")
        import_ray()  # RUN_026 now, before a run is recorded, when Ray is missing
        self.address = address
        self.workers = workers
        self.model_factory = model_factory
        self.project = project
        self.project_path = project_path
        self.jobs_per_worker = max(1, jobs_per_worker)
        self.retries = retries
        self.runtime_env = runtime_env

    def _factory(self) -> ModelFactory:
        if self.model_factory is not None:
            return self.model_factory
        import remora.model  # looked up now, so a test's or plugin's replacement is used

        return remora.model.create_client

    def _connect(self, ray: Any, services: RunServices) -> bool:
        """Join or start Ray; True when this run started it (and must stop it).

        Ray uploads a local ``working_dir`` only for a whole Ray job (``ray.init``), so the
        project is uploaded here; a Ray already initialised by the caller keeps its own
        ``runtime_env`` (and a worker whose copy differs refuses its jobs, RUN_027)."""
        if ray.is_initialized():
            return False
        runtime_env = dict(self.runtime_env or {})
        if self.project == "upload":
            state = Path(services.config.workspace.state_dir).as_posix()
            runtime_env["working_dir"] = str(services.manager.project_root)
            runtime_env.setdefault("excludes", [f"/{state}/", "/.git/"])
        _init(ray, self.address, self.workers or os.cpu_count() or 1, runtime_env)
        return True

    def _start_workers(self, ray: Any, services: RunServices) -> list[_Slot]:
        # Each worker asks for a CPU: one more than the cluster has would never start, and
        # the jobs handed to it would wait for ever.
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        count = min(self.workers or cpus, cpus)
        project: str | None = None  # uploaded: the worker's working directory
        if self.project != "upload":
            project = self.project_path or str(services.manager.project_root)
        actor = ray.remote(JobWorker).options(
            num_cpus=1,
            max_restarts=self.retries,
            max_task_retries=self.retries,
            max_concurrency=self.jobs_per_worker,
        )
        factory = self._factory()
        slots: list[_Slot] = []
        for _ in range(count):
            handle = actor.remote(services.config, project, factory)
            slots.extend(_Slot(handle) for _ in range(self.jobs_per_worker))
        return slots

    async def execute(self, jobs: Sequence[Job], services: RunServices, done: JobDone) -> None:
        """Hand jobs to free worker slots, record each result as it arrives."""
        ray = import_ray()
        started_ray = self._connect(ray, services)
        slots: list[_Slot] = []
        try:
            slots = self._start_workers(ray, services)
            await self._dispatch(ray, jobs, slots, services, done)
        finally:
            await self._stop(ray, slots)
            if started_ray:
                ray.shutdown()

    async def _dispatch(
        self,
        ray: Any,
        jobs: Sequence[Job],
        slots: list[_Slot],
        services: RunServices,
        done: JobDone,
    ) -> None:
        queue = deque(jobs)
        free = list(slots)
        running: dict[asyncio.Future[Any], tuple[Job, _Slot, Any, float]] = {}
        transcripts = services.transcripts is not None
        cancelled = asyncio.ensure_future(services.cancel.wait())

        def hand_out() -> None:
            while queue and free and not services.cancel.is_set():
                job, slot = queue.popleft(), free.pop()
                services.emitter.emit(started_event(job))
                ref = slot.actor.run.remote(job, transcripts)
                running[asyncio.wrap_future(ref.future())] = (job, slot, ref, time.monotonic())

        try:
            while queue or running:
                hand_out()
                if services.cancel.is_set() or not running:
                    break
                finished, _ = await asyncio.wait(
                    [*running, cancelled], return_when=asyncio.FIRST_COMPLETED
                )
                now = time.monotonic()
                arrived = [(f, *running.pop(f)) for f in finished if f is not cancelled]
                free.extend(slot for _f, _job, slot, _ref, _began in arrived)
                hand_out()  # the workers start their next jobs while the driver records these
                for future, job, _slot, _ref, began in arrived:
                    outcome = self._outcome(ray, job, future, services)
                    services.emitter.emit(finished_event(job, outcome, now - began))
                    done(job, outcome)
            if running:
                await self._cancel(ray, running, services, done)
            for job in queue:
                done(job, ended(job, "interrupted", NOT_STARTED))
        finally:
            cancelled.cancel()

    def _outcome(
        self, ray: Any, job: Job, future: asyncio.Future[Any], services: RunServices
    ) -> AgentResult:
        try:
            shipped = future.result()
        except ray.exceptions.RayActorError as exc:
            return ended(job, "failed", _died(exc, self.retries).render())
        except ray.exceptions.TaskCancelledError:
            return ended(job, "interrupted", CANCELLED_RUNNING)
        except Exception as exc:  # the worker's bug, or a value that would not travel
            return ended(job, "failed", f"{type(exc).__name__}: {exc}")
        if not isinstance(shipped, WorkerOutcome):
            return ended(job, "failed", f"the worker sent back {type(shipped).__name__}")
        if shipped.transcript is not None and services.transcripts is not None:
            with contextlib.suppress(OSError):
                services.transcripts.mkdir(parents=True, exist_ok=True)
                path = services.transcripts / job.key.transcript_name
                path.write_text(shipped.transcript, encoding="utf-8")
        return record_change(job, shipped, services.manager)

    async def _cancel(
        self,
        ray: Any,
        running: dict[asyncio.Future[Any], tuple[Job, _Slot, Any, float]],
        services: RunServices,
        done: JobDone,
    ) -> None:
        """Cancel the jobs still on workers and report each ``interrupted``."""
        for _job, _slot, ref, _began in running.values():
            with contextlib.suppress(Exception):
                ray.cancel(ref)
        with contextlib.suppress(Exception):
            await asyncio.wait(list(running), timeout=SETTLE_S)
        for future, (job, _slot, _ref, began) in running.items():
            finished = future.done() and not future.cancelled() and future.exception() is None
            # a job that finished before the cancel reached it keeps its result
            outcome = (
                self._outcome(ray, job, future, services)
                if finished
                else ended(job, "interrupted", CANCELLED_RUNNING)
            )
            services.emitter.emit(finished_event(job, outcome, time.monotonic() - began))
            done(job, outcome)

    async def _stop(self, ray: Any, slots: list[_Slot]) -> None:
        """Let each worker clean up (its sandbox pool, model, private state), then end it."""
        await _close(ray, list({id(slot.actor): slot.actor for slot in slots}.values()))


def _init(ray: Any, address: str | None, cpus: int, runtime_env: dict[str, Any] | None) -> None:
    """Join the cluster at ``address``, or start a local instance with ``cpus`` CPUs whose
    workers run at the driver's priority: Ray's default gives them niceness 15, so on a
    machine doing anything else (an editor, a build, a training run) every job's thread
    handoffs and file syncs waited behind it, ten times slower than the same job locally.
    An explicit ``RAY_worker_niceness`` in the environment wins. Ray logs only warnings,
    and its workers' output stays out of the driver's terminal."""
    settings: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    if runtime_env:
        settings["runtime_env"] = runtime_env
    if address is not None:
        ray.init(address=address, **settings)
        return
    os.environ.setdefault(WORKER_NICENESS, "0")
    ray.init(num_cpus=cpus, include_dashboard=False, **settings)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _died(exc: BaseException, retries: int) -> RunnerError:
    """Why a job's worker is gone: RUN_029 when it could not start (its model could not
    be built, say), RUN_028 when it died running the job, and so did every retry."""
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip()]
    if getattr(exc, "actor_init_failed", False):
        return RunnerError(
            "RUN_029",
            f"a Ray worker could not start: {lines[-1] if lines else type(exc).__name__}",
            "a worker builds its model (model.*) and sandbox pool as it starts: check that "
            "the model and adapter files, or model.base_url, are reachable from every "
            "worker; 'ray logs' has the worker's traceback",
        )
    first = lines[0] if lines else type(exc).__name__
    return RunnerError(
        "RUN_028",
        f"the Ray worker running this job died and {retries} retries did too ({first})",
        "look at the worker's log (ray logs), e.g. for running out of memory; "
        "the other jobs' results are kept",
    )


class RayWorkers:
    """Instances of ``worker`` (a class) as Ray actors, one process each, for work that is
    not a run's :class:`Job` (the expert episodes of ``remora train generate``): the same
    connection rules as :class:`RayExecutor` (``address`` None starts a local instance for
    the block and stops it after; ``"auto"`` joins this machine's cluster; a Ray already
    initialised is used as it is), one CPU each, restarted with their call retried when
    their process dies. Use as ``async with RayWorkers(...) as workers`` and call
    ``await workers.call(index, "method", *args)``; each worker's ``close()`` (when it has
    one) runs when the block ends.
    """

    def __init__(
        self,
        worker: type,
        *args: Any,
        count: int,
        address: str | None = None,
        retries: int = 3,
        runtime_env: dict[str, Any] | None = None,
    ) -> None:
        if count < 1:
            raise ValueError("count must be at least 1")
        self.worker = worker
        self.args = args
        self.count = count
        self.address = address
        self.retries = retries
        self.runtime_env = runtime_env
        self._ray: Any = None
        self._started = False
        self._actors: list[Any] = []

    async def __aenter__(self) -> RayWorkers:
        ray = self._ray = import_ray()
        if not ray.is_initialized():
            _init(ray, self.address, self.count, self.runtime_env)
            self._started = True
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        actor = ray.remote(self.worker).options(
            num_cpus=1, max_restarts=self.retries, max_task_retries=self.retries
        )
        self._actors = [actor.remote(*self.args) for _ in range(min(self.count, cpus))]
        return self

    @property
    def size(self) -> int:
        """How many workers there are (at most the cluster's CPUs)."""
        return len(self._actors)

    async def call(self, index: int, method: str, *args: Any) -> Any:
        """``method(*args)`` on worker ``index``; a worker that died through every retry
        raises RUN_028, one that could not start RUN_029."""
        ray = self._ray
        ref = getattr(self._actors[index], method).remote(*args)
        try:
            return await asyncio.wrap_future(ref.future())
        except ray.exceptions.RayActorError as exc:
            raise _died(exc, self.retries) from None

    async def __aexit__(self, *exc: object) -> None:
        await _close(self._ray, self._actors, call_close=hasattr(self.worker, "close"))
        if self._started:
            self._ray.shutdown()


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Read a finished future's exception (an actor killed before it closed)."""
    if not future.cancelled():
        future.exception()


async def _close(ray: Any, actors: Sequence[Any], *, call_close: bool = True) -> None:
    """Let each actor clean up (``close()``, within :data:`SETTLE_S`), then end it."""
    closing = (
        [asyncio.wrap_future(actor.close.remote().future()) for actor in actors]
        if call_close
        else []
    )
    for future in closing:  # retrieved, so asyncio does not report them unread
        future.add_done_callback(_retrieved)
    if closing:
        with contextlib.suppress(Exception):
            await asyncio.wait(closing, timeout=SETTLE_S)
    for actor in actors:
        with contextlib.suppress(Exception):
            ray.kill(actor)
