"""Run one bundled operation on one file with a scripted model, the way ``analyze`` does.

Real discovery, planning, scheduler, workspaces and tools; only the model is scripted.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from remora.discovery import discover
from remora.events import CollectingEmitter, ToolResultEvent
from remora.model.base import ModelRequest
from remora.operations import installed_operations, load_agents
from remora.orchestration import plan_jobs, run_jobs
from remora.runner import AgentResult
from remora.testing import ScriptedModel, Step
from remora.workspace import WorkspaceManager


@dataclass
class ToolOutcomes:
    names: list[str]
    errors: int


@dataclass
class Outcome:
    result: AgentResult
    changed: dict[str, str]
    tools: ToolOutcomes
    tool_summaries: list[str] = field(default_factory=list)
    model_calls: int = 0
    offered_tools: list[str] = field(default_factory=list)
    requests: list[ModelRequest] = field(default_factory=list)


def run_operation(
    project: Path,
    operation: str,
    file_path: str,
    script: list[Step],
    *,
    qualname: str | None = None,
    options: dict[str, object] | None = None,
) -> Outcome:
    """The one job of ``operation`` on ``file_path`` (and ``qualname``), scripted."""
    config = installed_operations().config()
    if options:
        config.operations[operation].options.update(options)
    nodes = discover([project / file_path], config.discovery, root=project).nodes
    plan = plan_jobs(config, load_agents(config.agents.dirs), nodes, [operation])
    jobs = [
        job
        for job in plan.jobs
        if job.node.file_path == file_path and (qualname is None or job.node.qualname == qualname)
    ]
    assert len(jobs) == 1, [job.node.qualname for job in plan.jobs]
    model = ScriptedModel(script)
    emitter = CollectingEmitter()
    manager = WorkspaceManager(project)
    run = asyncio.run(
        run_jobs(
            jobs,
            model=model,
            config=config,
            manager=manager,
            targets=[str(project)],
            emitter=emitter,
        )
    )
    [(_, result)] = run.results
    changed: dict[str, str] = {}
    if result.workspace_id:
        store = manager.open(result.workspace_id)
        changed = {path: store.read(path).decode() for path in store.changed_paths()}
    results = [event for event in emitter.events if isinstance(event, ToolResultEvent)]
    return Outcome(
        result=result,
        changed=changed,
        tools=ToolOutcomes(
            [event.tool for event in results],
            sum(1 for event in results if event.outcome == "error"),
        ),
        tool_summaries=[event.summary for event in results],
        model_calls=len(model.requests),
        offered_tools=[tool.name for tool in model.requests[0].tools] if model.requests else [],
        requests=list(model.requests),
    )
