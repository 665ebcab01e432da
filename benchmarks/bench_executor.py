"""Jobs per minute on this machine: the local executor next to Ray with 1 and 2 workers.

Side by side in one run (this machine is shared and noisy), on the bundled example
(``examples/sample_project``, ``--copies`` copies of its package) with the tests' scripted
model, so no job waits on a language model: what is measured is the host's work (the
operations' prechecks, sandboxed observation and test runs, workspaces) and what Ray adds
to it. Each executor first runs an empty job list, so its fixed start (Ray actors, their
sandbox pools and models; the local sandbox pool) is known and left out of the per-job
figures.

* jobs/min per executor, and the median job's own time (from the local run);
* Ray's per-job overhead: its time per job minus the local executor's at the same
  parallelism, in ms and as a share of the median and the mean job; and the same on a
  probe of near-instant jobs (the tests' ``marker`` agent on ``--probe-copies`` copies,
  ``--rounds`` rounds alternating local and Ray, the median kept), where nearly all of a
  job's time is what the executor adds;
* the driver's cost of recording one job: writing a worker's change into a workspace
  (``record_change``), and updating the run manifest (``RunStore.record_job``) at several
  manifest sizes, since the manifest is rewritten whole for every job.

    python benchmarks/bench_executor.py [--ops lint,docstring,test,sample_data] [--copies 1]
        [--probe-copies 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.policy import Policy, scripted_model  # noqa: E402
from tests.support.ray_models import scripted_factory  # noqa: E402

from remora.config import OperationConfig, RemoraConfig  # noqa: E402
from remora.discovery import discover  # noqa: E402
from remora.operations import installed_operations, load_agents  # noqa: E402
from remora.orchestration import JobRecord, RunStore, plan_jobs, run_jobs  # noqa: E402
from remora.orchestration.executor import Executor, LocalExecutor  # noqa: E402
from remora.orchestration.job import Job  # noqa: E402
from remora.orchestration.ray_executor import (  # noqa: E402
    WORKER_NICENESS,
    RayExecutor,
    ShippedFile,
    WorkerOutcome,
    import_ray,
    record_change,
)
from remora.runner import AgentResult  # noqa: E402
from remora.workspace import WorkspaceManager  # noqa: E402

EXAMPLE = REPO / "examples" / "sample_project"
AGENTS = REPO / "tests" / "data" / "agents"


@dataclass
class Measured:
    name: str
    jobs: int
    start_s: float
    total_s: float
    job_seconds: list[float]
    lanes: int

    @property
    def per_job_s(self) -> float:
        return (self.total_s - self.start_s) / self.jobs

    @property
    def outside_ms(self) -> float:
        """Wall time per job on a lane beyond the job's own run (its workspace, the
        driver's recording, and for Ray the trip): what the executor adds, measured
        against the same jobs' own times, so a job running slower this time cancels out."""
        return (self.per_job_s * self.lanes - statistics.mean(self.job_seconds)) * 1000

    @property
    def jobs_per_min(self) -> float:
        return 60.0 / self.per_job_s


def make_project(root: Path, copies: int) -> Path:
    """The example, with its package copied ``copies`` times (inventory, inventory_1, ...)."""
    shutil.copytree(EXAMPLE, root)
    for index in range(1, copies):
        shutil.copytree(root / "inventory", root / f"inventory_{index}")
    return root


def config() -> RemoraConfig:
    settings = installed_operations().config(agents={"dirs": [str(AGENTS)]})
    settings.operations["marker"] = OperationConfig()
    settings.events.enabled = False
    return settings


def plan(root: Path, settings: RemoraConfig, ops: Sequence[str]) -> list[Job]:
    nodes = discover([root], settings.discovery, root=root).nodes
    return plan_jobs(settings, load_agents(settings.agents.dirs), nodes, list(ops)).jobs


def timed_run(
    root: Path, settings: RemoraConfig, jobs: Sequence[Job], executor: Executor, concurrency: int
) -> tuple[float, list[AgentResult]]:
    manager = WorkspaceManager(root)
    started = time.perf_counter()
    result = asyncio.run(
        run_jobs(jobs, executor=executor, config=settings, manager=manager, concurrency=concurrency)
    )
    seconds = time.perf_counter() - started
    for info in manager.list():
        manager.remove(info.workspace_id)
    return seconds, [outcome for _job, outcome in result.results]


def measure(
    name: str,
    make: Callable[[], Executor],
    root: Path,
    settings: RemoraConfig,
    jobs: Sequence[Job],
    concurrency: int,
    *,
    quiet: bool = False,
) -> Measured:
    start_s, _ = timed_run(root, settings, [], make(), concurrency)
    total_s, results = timed_run(root, settings, jobs, make(), concurrency)
    statuses: dict[str, int] = {}
    for outcome in results:
        statuses[outcome.status] = statuses.get(outcome.status, 0) + 1
    if not quiet:
        print(f"  {name}: {total_s:.1f} s ({start_s:.1f} s to start and stop), {statuses}")
    seconds = [r.telemetry.wall_time_s for r in results]
    return Measured(name, len(jobs), start_s, total_s, seconds, concurrency)


def record_costs(root: Path, settings: RemoraConfig, jobs: Sequence[Job]) -> dict[str, float]:
    """ms per job on the driver: a worker's change into a workspace, and the manifest
    update at several manifest sizes."""
    manager = WorkspaceManager(root)
    first = next(j for j in jobs if j.node.node_type == "function")
    job = first.in_run("20261206-000000000-bench0")
    base = (root / job.node.file_path).read_bytes()
    outcome = WorkerOutcome(
        AgentResult(
            status="success",
            operation=job.operation,
            node_id=job.node.node_id,
            workspace_id=job.key.workspace_id,
            changed_files=[job.node.file_path],
        ),
        (ShippedFile(job.node.file_path, base + b"# changed\n", base, None),),
    )
    rounds = 30
    spent = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        record_change(job, outcome, manager)
        spent += time.perf_counter() - started
        manager.remove(job.key.workspace_id)
    costs = {"change into a workspace": spent / rounds * 1000}
    store = RunStore(manager)
    for size in (100, 1000, 10000):
        manifest = store.start([str(root)], [job.operation])
        key = job.in_run(manifest.run_id).key
        queued = JobRecord.queued(key, job.node)
        manifest.jobs = [
            queued.model_copy(update={"job_id": f"{queued.job_id}-{i}"}) for i in range(size)
        ]
        store.write(manifest)
        record = JobRecord.from_result(outcome.result, job.node, key)
        record = record.model_copy(update={"job_id": manifest.jobs[size // 2].job_id})
        tries = 5 if size >= 10000 else 20
        started = time.perf_counter()
        for _ in range(tries):
            store.record_job(manifest.run_id, record)
        costs[f"manifest update, {size} jobs"] = (time.perf_counter() - started) / tries * 1000
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="lint,docstring,test,sample_data")
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--probe-copies", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--model",
        choices=["scripted", "embedded"],
        default="scripted",
        help="embedded: the bundled model decides where the operations ask it (each Ray "
        "worker loads its own), so the jobs are those a user gets",
    )
    parser.add_argument(
        "--lanes", default="1,2", help="the parallelism to compare at (local -j N vs N workers)"
    )
    args = parser.parse_args()
    lanes = [int(part) for part in args.lanes.split(",") if part.strip()]
    if args.model == "embedded":
        from remora.model import create_client

        def local_model() -> Any:
            return create_client(settings.model)

        worker_factory: Any = None  # RayExecutor's default: create_client, in each worker
    else:

        def local_model() -> Any:
            return scripted_model(Policy())

        worker_factory = scripted_factory
    ray = import_ray()
    with tempfile.TemporaryDirectory(prefix="remora-bench-executor-") as scratch:
        root = make_project(Path(scratch) / "proj", args.copies)
        settings = config()
        ops = [op.strip() for op in args.ops.split(",") if op.strip()]
        jobs = plan(root, settings, ops)
        print(f"{len(jobs)} jobs ({', '.join(ops)}) on {root.name}, {os.cpu_count()} CPUs")
        started = time.perf_counter()
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(REPO), os.environ.get("PYTHONPATH")])
        )
        # As a Ray instance Remora starts itself: workers at the driver's priority (Ray's
        # default niceness 15 would measure the machine's other work, not Ray).
        os.environ.setdefault(WORKER_NICENESS, "0")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        ray_start = time.perf_counter() - started
        print(f"  ray.init (a local instance): {ray_start:.1f} s, not counted below")
        try:
            runs: list[Measured] = []
            for lane in lanes:
                runs.append(
                    measure(
                        f"local -j {lane}",
                        lambda: LocalExecutor(local_model()),
                        root,
                        settings,
                        jobs,
                        lane,
                    )
                )
                runs.append(
                    measure(
                        f"ray, {lane} worker{'s' if lane > 1 else ''}",
                        lambda lane=lane: RayExecutor(workers=lane, model_factory=worker_factory),
                        root,
                        settings,
                        jobs,
                        lane,
                    )
                )
            probe_root = make_project(Path(scratch) / "probe", args.probe_copies)
            if args.model == "embedded":
                args.rounds = 0  # the probe's jobs ask no model
            probe_jobs = plan(probe_root, settings, ["marker"])
            probe: list[float] = []
            probe_outside: list[float] = []
            for _ in range(args.rounds):
                local = measure(
                    "probe local",
                    lambda: LocalExecutor(scripted_model(Policy())),
                    probe_root,
                    settings,
                    probe_jobs,
                    1,
                    quiet=True,
                )
                remote = measure(
                    "probe ray",
                    lambda: RayExecutor(workers=1, model_factory=scripted_factory),
                    probe_root,
                    settings,
                    probe_jobs,
                    1,
                    quiet=True,
                )
                probe.append((remote.per_job_s - local.per_job_s) * 1000)
                probe_outside.append(remote.outside_ms - local.outside_ms)
        finally:
            ray.shutdown()
        costs = record_costs(root, settings, jobs)
    median = statistics.median(runs[0].job_seconds)
    mean = runs[0].per_job_s
    print()
    print(
        "| executor | jobs/min | s per job | a job's own s (mean) | ms per job outside it "
        "| fixed start s |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for run in runs:
        own = statistics.mean(run.job_seconds)
        print(
            f"| {run.name} | {run.jobs_per_min:.0f} | {run.per_job_s:.3f} | {own:.3f} "
            f"| {run.outside_ms:.1f} | {run.start_s:.1f} |"
        )
    print()
    print(
        "| Ray per-job overhead | ms per job "
        f"| of the median job ({median:.3f} s) | of the mean job ({mean:.3f} s) |"
    )
    print("| --- | ---: | ---: | ---: |")
    pairs = list(zip(runs[::2], runs[1::2], strict=True))
    rows = [
        (f"{remote.name} vs {local.name}, wall", (remote.per_job_s - local.per_job_s) * 1000)
        for local, remote in pairs
    ]
    rows += [
        (f"{remote.name} vs {local.name}, outside the job", remote.outside_ms - local.outside_ms)
        for local, remote in pairs
    ]
    if probe:
        rows.append(
            (
                f"probe: {len(probe_jobs)} instant jobs (1 vs -j 1), wall, median of {len(probe)}",
                statistics.median(probe),
            )
        )
        rows.append(
            (
                f"probe, outside the job, median of {len(probe)}",
                statistics.median(probe_outside),
            )
        )
    for name, overhead in rows:
        print(
            f"| {name} | {overhead:.1f} "
            f"| {overhead / 1000 / median:.1%} | {overhead / 1000 / mean:.1%} |"
        )
    print()
    print("| driver, per job | ms |")
    print("| --- | ---: |")
    for name, ms in costs.items():
        print(f"| {name} | {ms:.1f} |")


if __name__ == "__main__":
    main()
