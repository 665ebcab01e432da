"""The docstring operation: write and check a definition's docstring in the project's style.

Its agent (``agents/docstring``), capabilities (:mod:`.docstrings` to read and write,
:mod:`.check` to check, :mod:`.write` for the agent's host steps), evaluation against the
original docstrings (:mod:`.evaluation`), expert policy (:mod:`.expert`) and training
material (:mod:`.corpus`) live here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from remora.operations.base import Operation
from remora.operations.docstring import check, corpus, docstrings, similar, write
from remora.operations.docstring.options import DocstringOptions
from remora.tools.capabilities import capabilities_of

if TYPE_CHECKING:
    from remora.evaluation import EvalContext, OperationReport


def _evaluate(context: EvalContext) -> OperationReport:
    """:func:`.evaluation.evaluate`, imported when ``remora eval`` runs it: loading the
    registry (every command does) need not load the evaluation framework."""
    from remora.operations.docstring.evaluation import evaluate

    return evaluate(context)


DOCSTRING = Operation(
    name="docstring",
    agent_dirs=(Path(__file__).resolve().parent / "agents",),
    capabilities=capabilities_of(docstrings, check, write),
    options=DocstringOptions().model_dump(),
    options_model=DocstringOptions,
    evaluate=_evaluate,
    plan_episodes=corpus.plan_episodes,
    # Episodes exercise every description decision, in the sectioned style the shipped
    # adapter was trained on (auto would give prose packages no sections to describe), with
    # the summaries of similar documented code in the prompt, so the next adapter learns to
    # use them (the shipped one was trained without them).
    training_options={"describe": True, "style": "google", "similar_examples": True},
    gate_metric="meaning",
    build_index=similar.build_index,
    summary="write docstrings checked by pydoclint and ruff (vs the original docstrings)",
)

__all__ = ["DOCSTRING"]
