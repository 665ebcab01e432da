"""An operation a user adds as an installed package (``tests/data/user_operation``, found
through its ``remora.operations`` entry point) is run, evaluated and traced like a
bundled one: the registry is the only place operations are named."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remora.discovery import discover
from remora.errors import AgentDefinitionError
from remora.evaluation.run import EvalOptions, run_eval
from remora.operations import OperationRegistry, bundled_operations, installed_operations
from remora.operations.base import Operation
from remora.orchestration import plan_jobs, run_jobs
from remora.testing import ScriptedModel, call
from remora.training.traces import generate_traces
from remora.workspace import WorkspaceManager
from tests.support.eval_context import EVAL_PACKAGE, scripted_session

PLUGIN = Path(__file__).resolve().parent / "data" / "user_operation"


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[OperationRegistry]:
    """The operations with the plug-in's distribution on the path, as pip would leave it."""
    monkeypatch.syspath_prepend(str(PLUGIN))
    installed_operations.cache_clear()
    try:
        yield installed_operations()
    finally:
        installed_operations.cache_clear()
        sys.modules.pop("remora_todo", None)


def todo_policy(request: object) -> object:
    """What a model should do on the todo_count agent: count, then submit what it said."""
    from remora.model.base import ModelRequest
    from remora.operations.experts import seen_results

    assert isinstance(request, ModelRequest)
    seen = seen_results(request)
    if not seen:
        return call("count_todos")
    return call("submit_result", summary=seen[-1].summary)


def test_the_entry_point_adds_the_operation_and_its_agent(installed: OperationRegistry) -> None:
    assert installed.names == [*bundled_operations().names, "todo_count"]
    assert "count_todos" in installed.capabilities
    assert "count_todos" not in bundled_operations().capabilities
    assert "todo_count" in installed.load_agents()
    assert installed.default_configs()["todo_count"].enabled
    assert "todo_count" in installed.evaluators()
    assert "todo_count" in installed.traced_agents()


def test_the_cli_lists_and_validates_the_installed_agent(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN), *sys.path])}
    listed = subprocess.run(
        [sys.executable, "-m", "remora", "list-agents", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["todo_count"]["ok"] is True
    assert rows["todo_count"]["operations"] == ["todo_count"]


def test_it_runs_through_the_scheduler(installed: OperationRegistry, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "mod.py").write_text("# TODO one\nx = 1  # TODO two\ny = 2\n", encoding="utf-8")
    config = installed.config()
    nodes = discover([project / "mod.py"], config.discovery, root=project).nodes
    plan = plan_jobs(config, installed.load_agents(), nodes, ["todo_count"])
    assert [job.node.node_type for job in plan.jobs] == ["file"]
    run = asyncio.run(
        run_jobs(
            plan.jobs,
            model=ScriptedModel([todo_policy], repeat_last=True),
            config=config,
            manager=WorkspaceManager(project),
        )
    )
    [(_, result)] = run.results
    assert result.status == "success"
    assert result.summary == "mod.py has 2 TODO line(s)"


def test_it_is_evaluated_against_its_baseline(installed: OperationRegistry, tmp_path: Path) -> None:
    options = EvalOptions(spec=str(EVAL_PACKAGE), operations=["todo_count"], limit=2, seed=1)
    report = run_eval(
        options, evaluators=installed.evaluators(), session=scripted_session(todo_policy)
    )
    [measured] = report.reports
    assert measured.error is None, measured.error
    assert len(measured.selection) == 2
    remora = next(score for score in measured.scores if score.kind == "remora")
    assert remora.values["right"] == 1.0
    assert measured.remora[0].jobs == 2


def test_it_is_traced_for_training(installed: OperationRegistry, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "first.py").write_text("# TODO a\nvalue = 1\n", encoding="utf-8")
    (corpus / "second.py").write_text("value = 2\n", encoding="utf-8")
    report = generate_traces(
        "todo_count",
        [corpus],
        tmp_path / "data",
        tokens="estimate",
        config=installed.config(),
        operations=installed,
    )
    assert report.episodes_kept == 2
    assert report.examples == 4  # two turns each: count_todos, submit_result


def test_a_broken_entry_point_is_agent_015(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dist = tmp_path / "broken-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[remora.operations]\nnope = json:dumps\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    installed_operations.cache_clear()
    try:
        with pytest.raises(AgentDefinitionError) as caught:
            installed_operations()
    finally:
        installed_operations.cache_clear()
    assert caught.value.code == "AGENT_015"
    assert "not an Operation" in caught.value.message


def test_two_operations_defining_one_capability_differently_is_agent_015() -> None:
    lint = bundled_operations().get("lint")
    other = dataclasses.replace(
        bundled_operations().get("docstring").capabilities["docstring_set"], name="lint_fix"
    )
    clash = Operation(name="clash", capabilities={"lint_fix": other})
    with pytest.raises(AgentDefinitionError) as caught:
        OperationRegistry([lint, clash])
    assert caught.value.code == "AGENT_015"
