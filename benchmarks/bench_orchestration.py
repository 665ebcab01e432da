"""What orchestration costs: the scheduler per job, and a save-to-result round trip in watch.

Side by side in one run (this machine is shared and noisy):

* scheduler: N harness jobs with an instant scripted model through ``run_jobs`` (manifest
  written before and after every job, events, a workspace per job, precheck lookup) next
  to the same N jobs through ``run_job`` directly, each in its own workspace (the agent
  loop and the tools, without the scheduler). Target: under 5 ms per job on top.
* watch: a ``Watcher`` with the default debounce (``watch.debounce_ms``) on a small
  project; the time from saving a one-function edit to the re-run's result. Target: < 1 s.

    python benchmarks/bench_orchestration.py [--jobs 40] [--rounds 3] [--saves 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from remora.config import RemoraConfig
from remora.discovery import discover
from remora.operations import load_agents
from remora.orchestration import plan_jobs, run_job, run_jobs
from remora.tools.runtime import ToolRuntime
from remora.watch import WatchCallbacks, Watcher
from remora.workspace import WorkspaceManager

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.policy import Policy, scripted_model  # noqa: E402


def project(root: Path, functions: int) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
    (root / "pkg" / "__init__.py").write_text("")
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(functions))
    (root / "pkg" / "mod.py").write_text(body)
    return root


def harness_config() -> RemoraConfig:
    config = RemoraConfig.model_validate({"operations": {"harness": {"agent": "harness"}}})
    config.events.enabled = False
    return config


async def scheduled(root: Path, jobs: int, run: int) -> float:
    config = harness_config()
    nodes = discover([root], config.discovery, root=root).nodes
    plan = plan_jobs(config, load_agents(), nodes, ["harness"])
    start = time.perf_counter()
    await run_jobs(
        plan.jobs[:jobs],
        model=scripted_model(Policy()),
        config=config,
        manager=WorkspaceManager(root, f".remora-sched-{run}"),
        concurrency=1,
    )
    return time.perf_counter() - start


async def direct(root: Path, jobs: int, run: int) -> float:
    config = harness_config()
    nodes = discover([root], config.discovery, root=root).nodes
    plan = plan_jobs(config, load_agents(), nodes, ["harness"])
    manager = WorkspaceManager(root, f".remora-direct-{run}")
    model = scripted_model(Policy())
    start = time.perf_counter()
    with ToolRuntime(config.tools) as runtime:
        for planned in plan.jobs[:jobs]:
            job = planned.in_run(f"direct-{run}")
            with manager.create("harness", planned.node.node_id, job.run_id) as store:
                await run_job(
                    job,
                    model=model,
                    runtime=runtime,
                    store=store,
                    config=config,
                    workspace_id=store.workspace_id,
                )
    return time.perf_counter() - start


async def save_to_result(root: Path, saves: int) -> list[float]:
    config = harness_config()
    results: asyncio.Queue[float] = asyncio.Queue()
    watcher = Watcher(
        config=config,
        root=root,
        targets=[root],
        agents=load_agents(),
        model=scripted_model(Policy()),
        manager=WorkspaceManager(root),
        ops=["harness"],
        callbacks=WatchCallbacks(on_run=lambda _result: results.put_nowait(time.perf_counter())),
    )
    ready = asyncio.Event()
    watcher.callbacks.on_ready = lambda _nodes, _files: ready.set()
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.watch(stop))
    await ready.wait()
    module = root / "pkg" / "mod.py"
    latencies = []
    for number in range(saves):
        text = module.read_text().replace("return x + 0\n", f"return x + 0 + {number + 1}\n", 1)
        text = text.replace(f"return x + 0 + {number}\n", "return x + 0\n", 1)
        saved = time.perf_counter()
        module.write_text(text)
        latencies.append(await asyncio.wait_for(results.get(), timeout=30) - saved)
        await asyncio.sleep(0.2)
    stop.set()
    await task
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--saves", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="remora-bench-") as temp:
        root = project(Path(temp) / "proj", args.jobs)
        asyncio.run(direct(root, 2, -1))  # warm-up: imports, the sandbox pool
        with_scheduler, without = [], []
        for run in range(args.rounds):
            without.append(asyncio.run(direct(root, args.jobs, run)))
            with_scheduler.append(asyncio.run(scheduled(root, args.jobs, run)))
        small = project(Path(temp) / "watched", 5)
        latencies = asyncio.run(save_to_result(small, args.saves))
    bare, full = statistics.median(without), statistics.median(with_scheduler)
    per_job = (full - bare) / args.jobs * 1000
    print(f"{args.jobs} harness jobs, scripted model, {args.rounds} rounds interleaved (medians)")
    print(f"  run_job directly   {bare * 1000:8.1f} ms  ({bare / args.jobs * 1000:.1f} ms/job)")
    print(f"  through run_jobs   {full * 1000:8.1f} ms  ({full / args.jobs * 1000:.1f} ms/job)")
    print(f"  scheduler overhead {per_job:+.2f} ms per job  (target < 5 ms)")
    print(
        f"watch, debounce {harness_config().watch.debounce_ms} ms: save -> result median "
        f"{statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms "
        f"over {len(latencies)} saves  (target < 1000 ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
