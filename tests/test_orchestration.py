"""Planning as pure functions, and the scheduler with scripted models on real workspaces."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from remora.config import OperationConfig, RemoraConfig
from remora.discovery import discover
from remora.events import CollectingEmitter
from remora.operations import installed_operations, load_agents
from remora.orchestration import RunStore, open_emitter, plan_jobs, run_jobs
from remora.workspace import WorkspaceManager
from tests.stores import write_tree
from tests.support.policy import Policy, scripted_model

AGENTS = Path(__file__).parent / "data" / "agents"
SOURCE = {
    "pkg/__init__.py": "",
    "pkg/mod.py": (
        "class Box:\n    def open(self):\n        return 1\n\n\n"
        "def first():\n    return 1\n\n\ndef second():\n    return 2\n\n\n"
        "def skip_me():\n    return 3\n"
    ),
}


def config_with(**operations: dict[str, object]) -> RemoraConfig:
    """The default config (lint, docstring, test, sample_data) plus ``operations``."""
    config = installed_operations().config(agents={"dirs": [str(AGENTS)]})
    for name, settings in operations.items():
        config.operations[name] = OperationConfig.model_validate(settings)
    return config


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "proj", SOURCE)


def nodes(root: Path) -> list:
    return discover([root], RemoraConfig().discovery, root=root).nodes


def test_plan_applies_agents_to_their_node_types(project: Path) -> None:
    config = config_with(harness={"agent": "harness"}, marker={})
    plan = plan_jobs(config, load_agents(config.agents.dirs), nodes(project), ["harness", "marker"])
    assert plan.operations == ["harness", "marker"]
    harness = {job.node.qualname for job in plan.jobs_for("harness")}
    marker = {job.node.qualname for job in plan.jobs_for("marker")}
    assert {"pkg/mod.py", "Box", "Box.open", "first"} <= harness
    assert marker == {"first", "second", "skip_me"}  # functions only, no methods
    assert plan.problems == []


def test_plan_honours_enabled_and_ops_and_reports_what_cannot_run(project: Path) -> None:
    config = config_with(harness={"agent": "harness", "enabled": False}, marker={})
    agents = load_agents(config.agents.dirs)
    found = nodes(project)
    default = plan_jobs(config, agents, found)
    assert default.operations == ["lint", "docstring", "test", "sample_data", "marker"]
    assert default.problems == []
    explicit = plan_jobs(config, agents, found, ["harness"])
    assert explicit.operations == ["harness"]  # --ops wins over enabled: false
    orphan = config_with(marker={}, orphan={"agent": "nowhere"})
    broken = plan_jobs(orphan, agents, found, ["markr", "orphan"])
    assert broken.jobs == []
    assert [p.operation for p in broken.problems] == ["markr", "orphan"]
    assert "did you mean 'marker'" in broken.problems[0].hint
    assert "no agent named 'nowhere'" in broken.problems[1].message


def run(project: Path, config: RemoraConfig, policy: Policy, **kwargs: object):  # type: ignore[no-untyped-def]
    plan = plan_jobs(config, load_agents(config.agents.dirs), nodes(project), ["marker"])
    manager = WorkspaceManager(project)
    result = asyncio.run(
        run_jobs(
            plan.jobs,
            model=scripted_model(policy),
            config=config,
            manager=manager,
            targets=[str(project)],
            **kwargs,  # type: ignore[arg-type]
        )
    )
    return result, manager


def test_run_records_changes_skips_by_precheck_and_keeps_the_project(project: Path) -> None:
    before = (project / "pkg/mod.py").read_bytes()
    emitter = CollectingEmitter()
    policy = Policy()
    result, manager = run(project, config_with(marker={}), policy, emitter=emitter)
    statuses = {job.node.qualname: outcome.status for job, outcome in result.results}
    assert statuses == {"first": "success", "second": "success", "skip_me": "skipped"}
    assert policy.calls == 4  # two turns per marked function, none for the skipped one
    assert (project / "pkg/mod.py").read_bytes() == before
    manifest = RunStore(manager).read(result.run_id)
    assert manifest.status == "completed"
    pending = manifest.pending_reviews()
    assert [job.qualname for job in pending] == ["first", "second"]
    assert all(job.changed_files == ["pkg/mod.py"] for job in pending)
    assert [info.workspace_id for info in manager.list()] == [
        job.workspace_id for job in pending
    ]  # the skipped job left no workspace behind
    kinds = [event.type for event in emitter.events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("job_started") == 3 and kinds.count("job_finished") == 3


def test_concurrency_is_respected(project: Path) -> None:
    config = config_with(marker={})
    config.runner.concurrency = 2
    policy = Policy(delay=0.05)
    write_tree(project, {f"pkg/more{i}.py": f"def f{i}():\n    return {i}\n" for i in range(4)})
    run(project, config, policy)
    assert policy.most_in_flight == 2
    config.runner.concurrency = 1
    single = Policy(delay=0.01)
    run(project, config, single)
    assert single.most_in_flight == 1


def test_a_job_past_its_timeout_stops_and_the_run_goes_on(project: Path) -> None:
    config = config_with(marker={})
    config.runner.job_timeout = 0.2
    result, _ = run(project, config, Policy(delay=0.5))
    timed_out = [outcome for _job, outcome in result.results if outcome.status == "interrupted"]
    assert len(timed_out) == 2 and all("RUN_005" in (o.error or "") for o in timed_out)
    assert result.manifest.status == "completed"


def test_cancel_stops_running_jobs_and_marks_the_run_interrupted(project: Path) -> None:
    config = config_with(marker={})
    config.runner.concurrency = 1

    async def scenario() -> object:
        cancel = asyncio.Event()
        policy = Policy(delay=0.3)
        plan = plan_jobs(config, load_agents(config.agents.dirs), nodes(project), ["marker"])
        task = asyncio.ensure_future(
            run_jobs(
                plan.jobs,
                model=scripted_model(policy),
                config=config,
                manager=WorkspaceManager(project),
                cancel=cancel,
            )
        )
        await asyncio.sleep(0.1)
        cancel.set()
        return await task

    result = asyncio.run(scenario())
    assert result.manifest.status == "interrupted"  # type: ignore[attr-defined]
    assert {o.status for _j, o in result.results} <= {"interrupted", "skipped"}  # type: ignore[attr-defined]


def test_events_and_transcripts_go_where_the_config_says(project: Path, tmp_path: Path) -> None:
    config = config_with(marker={})
    config.events.path = tmp_path / "events.jsonl"
    config.events.transcript = True
    manager = WorkspaceManager(project)
    emitter = open_emitter(config, manager.state_path)
    result, _ = run(project, config, Policy(), emitter=emitter)
    emitter.close()
    lines = [json.loads(line) for line in config.events.path.read_text().splitlines()]
    kinds = {line["type"] for line in lines}
    assert {"run_started", "job_started", "tool_call", "job_finished", "run_finished"} <= kinds
    assert all(line["run_id"] == result.run_id for line in lines if line["type"] == "job_started")
    transcripts = sorted((manager.state_path / "transcripts" / result.run_id).iterdir())
    assert len(transcripts) == 2 and "mark" in transcripts[0].read_text()
