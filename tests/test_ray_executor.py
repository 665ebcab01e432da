"""Jobs on a real local Ray instance: the same results as the local executor, retries,
stale project copies refused, cancellation, and the ``--executor ray`` command line."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from remora.config import OperationConfig, RemoraConfig
from remora.discovery import discover
from remora.errors import RemoraError
from remora.evaluation.package import resolve_package
from remora.evaluation.session import RemoraSession
from remora.events import CollectingEmitter
from remora.model.base import ModelClient
from remora.operations import installed_operations, load_agents
from remora.orchestration import ReviewService, RunResult, RunStore, plan_jobs, run_jobs
from remora.orchestration.executor import Executor, LocalExecutor, executor_for
from remora.orchestration.job import Job
from remora.runner import AgentResult
from remora.workspace import WorkspaceManager
from tests.support.eval_context import EVAL_PACKAGE
from tests.support.policy import Policy, scripted_model
from tests.support.ray_models import DiesOnce, SlowFactory, broken_factory, scripted_factory

ray = pytest.importorskip("ray")
from remora.orchestration.ray_executor import (  # noqa: E402
    RayExecutor,
    ShippedFile,
    WorkerOutcome,
    record_change,
)

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "sample_project"
AGENTS = REPO / "tests" / "data" / "agents"
SCRIPTED = REPO / "tests" / "support" / "scripted_cli.py"
OPS = ["lint", "docstring", "marker"]


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """One local Ray instance for the module; workers find the ``tests`` package through
    PYTHONPATH, which the instance's processes inherit."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), before]))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def config() -> RemoraConfig:
    settings = installed_operations().config(agents={"dirs": [str(AGENTS)]})
    settings.operations["marker"] = OperationConfig()
    return settings


def example(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / name))


def plan(root: Path, settings: RemoraConfig, ops: Sequence[str] = OPS) -> list[Job]:
    nodes = discover([root], settings.discovery, root=root).nodes
    return plan_jobs(settings, load_agents(settings.agents.dirs), nodes, list(ops)).jobs


def run(
    root: Path,
    executor: Executor,
    *,
    ops: Sequence[str] = OPS,
    settings: RemoraConfig | None = None,
    **kwargs: Any,
) -> tuple[RunResult, WorkspaceManager]:
    settings = settings or config()
    manager = WorkspaceManager(root)
    result = asyncio.run(
        run_jobs(
            plan(root, settings, ops), executor=executor, config=settings, manager=manager, **kwargs
        )
    )
    return result, manager


def statuses(result: RunResult) -> dict[tuple[str, str], str]:
    return {(job.operation, job.node.qualname): out.status for job, out in result.results}


def proposed(result: RunResult, manager: WorkspaceManager) -> dict[tuple[str, str], object]:
    """Each kept change as the diff review shows, by (operation, node)."""
    changes: dict[tuple[str, str], object] = {}
    for job, outcome in result.results:
        if outcome.workspace_id is not None:
            with manager.open(outcome.workspace_id) as store:
                changes[(job.operation, job.node.qualname)] = store.diff()
    return changes


def test_the_example_through_ray_gives_the_local_results(ray_cluster: str, tmp_path: Path) -> None:
    local, local_manager = run(example(tmp_path, "local"), LocalExecutor(scripted_model(Policy())))
    emitter = CollectingEmitter()
    remote, manager = run(
        example(tmp_path, "ray"),
        RayExecutor(workers=2, model_factory=scripted_factory),
        emitter=emitter,
    )
    assert statuses(remote) == statuses(local)
    assert "success" in statuses(remote).values()
    assert proposed(remote, manager) == proposed(local, local_manager) != {}
    manifest = RunStore(manager).read(remote.run_id)
    assert manifest.status == "completed"
    assert [(r.operation, r.node_id) for r in manifest.pending_reviews()] == [
        (r.operation, r.node_id)
        for r in RunStore(local_manager).read(local.run_id).pending_reviews()
    ]
    assert all(manager.exists(r.workspace_id or "") for r in manifest.pending_reviews())
    kinds = [event.type for event in emitter.events]
    assert kinds.count("job_started") == kinds.count("job_finished") == len(remote.results)
    # review cannot tell where it ran: accepting a Ray job's change applies it here
    record = next(r for r in manifest.pending_reviews() if r.operation == "marker")
    ReviewService(manager).accept(record.workspace_id or "")
    applied = (manager.project_root / (record.file_path or "")).read_text()
    assert f"# marked {record.qualname}" in applied


def test_a_worker_that_dies_mid_job_is_restarted_and_its_job_retried(
    ray_cluster: str, tmp_path: Path
) -> None:
    marker = tmp_path / "died"
    result, manager = run(
        example(tmp_path, "proj"),
        RayExecutor(workers=1, model_factory=DiesOnce(str(marker))),
        ops=["marker"],
    )
    assert marker.exists()  # a worker did die
    dead = marker.read_text()  # its pid: the worker that replaced it swept its workspaces
    assert not list(Path(tempfile.gettempdir()).glob(f"remora-worker-{dead}-*"))
    assert set(statuses(result).values()) == {"success"}
    assert len(result.results) == 9 and len(manager.list()) == 9


def test_workers_that_cannot_start_fail_each_job_with_run_029(
    ray_cluster: str, tmp_path: Path
) -> None:
    result, manager = run(
        example(tmp_path, "proj"),
        RayExecutor(workers=1, model_factory=broken_factory, retries=0),
        ops=["marker"],
    )
    assert result.manifest.status == "completed" and len(result.results) == 9
    cause = "RUN_029: a Ray worker could not start: RuntimeError: no model here ("
    assert all((o.error or "").startswith(cause) for _j, o in result.results)
    assert manager.list() == []


def test_a_stale_project_copy_is_refused_before_anything_runs(
    ray_cluster: str, tmp_path: Path
) -> None:
    driver, worker_copy = example(tmp_path, "driver"), example(tmp_path, "workers")
    pricing = driver / "inventory" / "pricing.py"
    pricing.write_text(pricing.read_text() + "\n\ndef added():\n    return 0\n")
    result, manager = run(
        driver,
        RayExecutor(workers=2, model_factory=scripted_factory, project_path=str(worker_copy)),
        ops=["marker"],
    )
    refused = [o for j, o in result.results if j.node.file_path == "inventory/pricing.py"]
    others = [o for j, o in result.results if j.node.file_path != "inventory/pricing.py"]
    assert refused and all(o.status == "failed" for o in refused)
    assert all((o.error or "").startswith("RUN_027: the worker's copy of") for o in refused)
    assert all(o.workspace_id is None for o in refused)
    assert others and {o.status for o in others} == {"success"}
    assert {info.node_id for info in manager.list()} == {
        j.node.node_id for j, o in result.results if o.status == "success"
    }


def test_cancel_interrupts_the_unfinished_jobs_and_keeps_the_finished(
    ray_cluster: str, tmp_path: Path
) -> None:
    async def scenario() -> tuple[RunResult, WorkspaceManager]:
        root = example(tmp_path, "proj")
        settings = config()
        manager = WorkspaceManager(root)
        cancel = asyncio.Event()
        return (
            await run_jobs(
                plan(root, settings, ["marker"]),
                executor=RayExecutor(workers=2, model_factory=SlowFactory(0.5)),
                config=settings,
                manager=manager,
                cancel=cancel,
                on_done=lambda _job, _outcome: cancel.set(),
            ),
            manager,
        )

    result, manager = asyncio.run(scenario())
    assert result.manifest.status == "interrupted"
    finished = [o for _j, o in result.results if o.status == "success"]
    stopped = [o for _j, o in result.results if o.status == "interrupted"]
    assert len(result.results) == 9 and finished and len(stopped) >= 5
    assert all((o.error or "").startswith("RUN_004") for o in stopped)
    assert {info.workspace_id for info in manager.list()} == {o.workspace_id for o in finished}


def test_without_ray_installed_asking_for_it_is_run_026(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    settings = config()
    settings.executor.kind = "ray"
    with pytest.raises(RemoraError) as raised:
        executor_for(settings)
    assert raised.value.code == "RUN_026" and "remora[ray]" in raised.value.render()
    assert raised.value.exit_code == 2  # an installation problem, like a usage error
    model: ModelClient = scripted_model(Policy())
    settings.executor.kind = "local"
    assert isinstance(executor_for(settings, model), LocalExecutor)


def test_analyze_with_executor_ray_records_a_reviewable_run(
    ray_cluster: str, tmp_path: Path
) -> None:
    root = example(tmp_path, "proj")
    done = subprocess.run(
        [  # not run as a script: its folder (tests/support, with http.py) would shadow http
            sys.executable,
            "-c",
            f"import runpy; runpy.run_path({str(SCRIPTED)!r}, run_name='__main__')",
            "--set",
            f"agents.dirs=[{AGENTS}]",
            "--set",
            "operations.marker.agent=marker",
            "analyze",
            ".",
            "--ops",
            "marker",
            "--ray-address",  # implies --executor ray
            ray_cluster,
            "--format",
            "json",
        ],
        cwd=root,
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    manager = WorkspaceManager(root)
    manifest = RunStore(manager).read(RunStore(manager).list()[-1].run_id)
    assert manifest.status == "completed"
    assert len(manifest.pending_reviews()) == 9
    assert all(r.changed_files == [r.file_path] for r in manifest.pending_reviews())


def test_ray_is_imported_only_when_a_run_asks_for_it() -> None:
    code = (
        "import sys, remora.cli.analyze, remora.orchestration.ray_executor; "
        "sys.exit('ray' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False, timeout=60).returncode == 0


def test_a_change_made_on_a_worker_merges_at_accept_against_the_workers_base(
    tmp_path: Path,
) -> None:
    root = example(tmp_path, "proj")
    settings = config()
    job = next(j for j in plan(root, settings, ["marker"]) if j.node.qualname == "format_cents")
    job = job.in_run("20261206-000000000-abcdef")
    path = root / job.node.file_path
    base = path.read_bytes()
    shipped = WorkerOutcome(
        AgentResult(
            status="success",
            operation="marker",
            node_id=job.node.node_id,
            workspace_id=job.key.workspace_id,
            changed_files=[job.node.file_path],
        ),
        (ShippedFile(job.node.file_path, base + b"# from the worker\n", base, None),),
    )
    path.write_bytes(b"# the user's edit meanwhile\n" + base)  # the driver's file moved on
    manager = WorkspaceManager(root)
    recorded = record_change(job, shipped, manager)
    assert recorded.workspace_id == job.key.workspace_id
    assert recorded.changed_files == [job.node.file_path]
    ReviewService(manager).accept(job.key.workspace_id)
    assert path.read_bytes() == b"# the user's edit meanwhile\n" + base + b"# from the worker\n"


def test_ctrl_c_on_analyze_with_ray_leaves_the_run_interrupted_and_reviewable(
    ray_cluster: str, tmp_path: Path
) -> None:
    """Ctrl-C as a terminal sends it: to the whole process group, Ray's own processes
    included (the command starts a Ray instance of its own here)."""
    root = example(tmp_path, "proj")
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import runpy; runpy.run_path({str(SCRIPTED)!r}, run_name='__main__')",
            *("--set", f"agents.dirs=[{AGENTS}]", "--set", "operations.marker.agent=marker"),
            *("analyze", ".", "--ops", "marker", "--executor", "ray"),
        ],
        cwd=root,
        env={**os.environ, "REMORA_TEST_MODEL_DELAY": "0.7"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    runs = root / ".remora" / "runs"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until a job has finished
        journals = list(runs.glob("*.jobs.jsonl")) if runs.is_dir() else []
        if journals and '"status":"success"' in journals[0].read_text():
            break
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGINT)
    _out, err = process.communicate(timeout=90)
    assert process.returncode == 130, err
    manifest = RunStore(WorkspaceManager(root)).resolve(None)
    assert manifest.status == "interrupted"
    statuses = [job.status for job in manifest.jobs]
    assert "success" in statuses and "interrupted" in statuses
    assert manifest.pending_reviews(), "finished jobs stay reviewable"


def test_an_eval_session_runs_its_jobs_on_ray_with_the_local_results(
    ray_cluster: str, tmp_path: Path
) -> None:
    package = resolve_package(str(EVAL_PACKAGE), tmp_path / "fetch")
    installed = installed_operations()
    jobs = {}
    for kind in ("local", "ray"):
        session = RemoraSession(
            installed.library,
            installed.default_configs(),
            assignments=[f"executor.kind={kind}"],
            model_factory=scripted_factory,
        )
        run = session.run(package.copy_to(tmp_path / kind), ["."], ["lint", "docstring"])
        assert run.error is None
        jobs[kind] = sorted((j.operation, j.qualname, j.status, j.review) for j in run.jobs)
    assert jobs["ray"] == jobs["local"] != []


def test_record_stores_a_change_made_elsewhere_against_its_own_base(tmp_path: Path) -> None:
    root = example(tmp_path, "proj")
    manager = WorkspaceManager(root)
    with manager.create("marker", "abc", workspace_id="marker-abc") as store:
        store.record("inventory/new.py", b"x = 1\n", None)  # a file the worker created
        store.record("inventory/models.py", None, b"elsewhere\n")  # deleted there
        store.record("inventory/pricing.py", b"same\n", b"same\n")  # no change at all
        changes = {entry.path: entry for entry in store.entries()}
    assert sorted(changes) == ["inventory/models.py", "inventory/new.py"]
    assert changes["inventory/new.py"].base_data is None
    assert changes["inventory/models.py"].kind == "delete"
    assert changes["inventory/models.py"].base_data == b"elsewhere\n"


def test_generate_on_ray_workers_records_the_local_examples(
    ray_cluster: str, tmp_path: Path
) -> None:
    """``remora train generate --executor ray``: the expert episodes run on Ray workers
    (each its own session: sandbox pool, scratch copies) and give the examples a local
    run gives, episode for episode."""
    import json

    from remora.training.dataset import read_examples
    from remora.training.traces import TRAIN_FILE, VALIDATION_FILE, generate_traces

    stdlib = Path(shutil.__file__).parent
    corpus = tmp_path / "corpus"
    (corpus / "kit").mkdir(parents=True)
    (corpus / "kit" / "__init__.py").write_text("", encoding="utf-8")
    shutil.copy(stdlib / "fnmatch.py", corpus / "kit" / "fnmatch.py")
    shutil.copy(stdlib / "textwrap.py", corpus / "textwrap.py")
    paths = [corpus / "kit", corpus / "textwrap.py"]

    def examples(out: Path) -> list[tuple[str, str, str]]:
        folder = out / "docstring"
        found = [*read_examples(folder / TRAIN_FILE), *read_examples(folder / VALIDATION_FILE)]
        return sorted((e.episode, e.prompt, e.completion) for e in found)

    local = generate_traces(
        "docstring", paths, tmp_path / "local", limit=3, seed=2, tokens="estimate", concurrency=2
    )
    remote = generate_traces(
        "docstring",
        paths,
        tmp_path / "ray",
        limit=3,
        seed=2,
        tokens="estimate",
        concurrency=2,
        executor="ray",
        ray_address=ray_cluster,
    )
    assert remote.episodes_kept == local.episodes_kept >= 2
    assert examples(tmp_path / "ray") == examples(tmp_path / "local")
    journal = (tmp_path / "ray" / "docstring" / "episodes.jsonl").read_text(encoding="utf-8")
    assert {json.loads(line)["status"] for line in journal.splitlines()} <= {
        "kept",
        "dropped",
        "skipped",
    }
