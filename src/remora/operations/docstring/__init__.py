"""The docstring operation: write and check a definition's docstring in the project's style.

Its agent (``agents/docstring``), capabilities (:mod:`.docstrings` to read and write,
:mod:`.check` to check, :mod:`.write` for the agent's host steps), evaluation against the
original docstrings (:mod:`.evaluation`), expert policy (:mod:`.expert`) and training
material (:mod:`.corpus`) live here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from remora.operations.base import Operation
from remora.operations.docstring import check, corpus, docstrings, similar, write
from remora.tools.capabilities import capabilities_of

if TYPE_CHECKING:
    from remora.evaluation import EvalContext, OperationReport


def _evaluate(context: EvalContext) -> OperationReport:
    """:func:`.evaluation.evaluate`, imported when ``remora eval`` runs it: loading the
    registry (every command does) need not load the evaluation framework."""
    from remora.operations.docstring.evaluation import evaluate

    return evaluate(context)


class DocstringOptions(BaseModel):
    """``operations.docstring.options``."""

    model_config = ConfigDict(extra="forbid")

    # auto: the convention the project's docstrings already follow (google, numpy, sphinx,
    # or plain prose without sections), google where there are none to follow.
    style: Literal["auto", "google", "numpy", "sphinx", "plain"] = "auto"
    # The model writes the summary; asked for descriptions, the bundled adapter wrote
    # filler or wrong ones (docs/evaluation.md), so they are left for the person unless
    # describe is set.
    use_model: bool = True
    describe: bool = False
    # Show the model how maintainers summed up similar documented code: the project's own
    # functions first, then the index of the training corpus shipped with Remora. Off until
    # an adapter trained with them in its prompt beats the one without (docs/evaluation.md).
    similar_examples: bool = False
    missing_only: bool = False
    include_private: bool = False
    include_tests: bool = False


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
