"""The lint operation: fix what ruff finds with verified, reviewable edits, never ``noqa``.

Its agent (``agents/lint``), capabilities (:mod:`.capabilities`, with Remora's own
rewrites), evaluation against ``ruff --fix`` (:mod:`.evaluation`), expert policy
(:mod:`.expert`) and training material (:mod:`.corpus`) live here.

The host takes every step (the agent's precheck applies every fix it can verify, runs the
tests and states the result), so no model decision is left and nothing is traced for
training: the expert and the planner stay for the step that will ask the model about the
issues no tool can fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from remora.operations.base import Operation
from remora.operations.lint import capabilities
from remora.tools.capabilities import capabilities_of

if TYPE_CHECKING:
    from remora.evaluation import EvalContext, OperationReport


def _evaluate(context: EvalContext) -> OperationReport:
    """:func:`.evaluation.evaluate`, imported when ``remora eval`` runs it: loading the
    registry (every command does) need not load the evaluation framework."""
    from remora.operations.lint.evaluation import evaluate

    return evaluate(context)


LINT = Operation(
    name="lint",
    agent_dirs=(Path(__file__).resolve().parent / "agents",),
    capabilities=capabilities_of(capabilities),
    evaluate=_evaluate,
    summary="fix ruff-detectable issues with verified edits (vs ruff --fix)",
)

__all__ = ["LINT"]
