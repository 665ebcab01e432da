"""A user's operation as a third-party package publishes it: count a file's TODO lines.

Everything an operation brings is here, the way docs/writing-an-agent.md describes it: an
agent folder, a capability, an evaluation against a deterministic baseline, an expert
policy and its episode planner, and the ``remora.operations`` entry point in the
distribution's metadata (``remora_todo-0.1.0.dist-info/entry_points.txt``).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from remora.definitions import SubagentDefinition
from remora.evaluation import EvalContext
from remora.evaluation.report import Column, OperationReport, Score
from remora.model.base import ModelRequest, ToolCall
from remora.operations import Operation
from remora.operations.base import CorpusFile, PlannedEpisode, digest
from remora.operations.experts import call, seen_results
from remora.tools.capabilities import CapabilityContext, capabilities_of, capability
from remora.tools.capabilities.store_io import read_text


def todo_lines(text: str) -> int:
    return sum("TODO" in line for line in text.splitlines())


@capability
def count_todos(ctx: CapabilityContext, path: str) -> dict[str, Any]:
    """Count the lines of a text file that mention TODO."""
    relative, text = read_text(ctx, path)
    count = todo_lines(text)
    return {"outcome": "success", "summary": f"{relative} has {count} TODO line(s)", "result": count}


def expert(request: ModelRequest) -> ToolCall:
    """Count first, then submit what the tool said."""
    seen = seen_results(request)
    if not seen:
        return call("count_todos")
    return call("submit_result", summary=seen[-1].summary)


def plan_episodes(
    agent: SubagentDefinition,
    file: CorpusFile,
    text: str,
    seed: int,
    skipped: Counter[str],
    mistakes: float,
) -> Iterator[PlannedEpisode]:
    """One episode per file: the file node itself."""
    yield PlannedEpisode(f"{file.source}#todo", file, "", "file", text, expert, digest(text))


def evaluate(context: EvalContext) -> OperationReport:
    """Remora's counts beside ``str.count`` on the seeded selection of modules."""
    modules = context.pick(context.original.modules(), "todo_count")
    project = context.scratch("remora")
    run = context.session.run(project, modules, ["todo_count"])
    right = 0
    for module in modules:
        count = todo_lines((context.original.root / module).read_text(encoding="utf-8"))
        job = run.job("todo_count", module, None)
        right += job is not None and f"has {count} TODO" in job.summary
    return OperationReport(
        operation="todo_count",
        unit="modules",
        selection=modules,
        columns=[Column(key="right", label="right counts", kind="rate")],
        scores=[
            Score(tool="str.count", kind="baseline", values={"right": 1.0}),
            Score(tool="remora", kind="remora", values={"right": right / len(modules)}),
        ],
        remora=[run.figures("remora", "todo_count")],
    )


TODO_COUNT = Operation(
    name="todo_count",
    agent_dirs=(Path(__file__).resolve().parent / "agents",),
    capabilities=capabilities_of(sys.modules[__name__]),
    evaluate=evaluate,
    plan_episodes=plan_episodes,
    summary="count the TODO lines of a file",
)
