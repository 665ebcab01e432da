"""The lint operation: fix what ruff finds with verified, reviewable edits, never ``noqa``.

Its agent (``agents/lint``), capabilities (:mod:`.capabilities`, with Remora's own
rewrites in :mod:`._rewrites`; :mod:`.residue` for the model's step), evaluation against
``ruff --fix`` (:mod:`.evaluation`) and training material (:mod:`.corpus`: an injected
issue no tool may fix, the authors' lines the answer; :mod:`.expert`) live here.

The host takes every step that follows from the state (the agent's precheck applies every
fix it can verify, its submit runs the tests and states the result). The model is asked
only about the manual residue, the issues no tool may fix, when ``options.use_model`` is
set; its rewrites are kept only when verified like every fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from remora.operations.base import Operation
from remora.operations.lint import capabilities, corpus, residue
from remora.operations.lint.options import LintOptions
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
    capabilities=capabilities_of(capabilities, residue),
    options=LintOptions().model_dump(exclude_none=True),
    options_model=LintOptions,
    evaluate=_evaluate,
    plan_episodes=corpus.plan_episodes,
    summary="fix ruff-detectable issues with verified edits (vs ruff --fix)",
    # Training asks the model about the residue, which the default leaves for the person.
    training_options={"use_model": True},
)

__all__ = ["LINT"]
