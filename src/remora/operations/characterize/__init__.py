"""The test and sample_data operations: characterize a function by running it.

Both observe real calls in the isolated runner from the same inputs (:mod:`.inputs`:
candidates from the code, the model's proposals); ``test`` writes characterization tests
(:mod:`.characterization`), ``sample_data`` fixtures (:mod:`.fixtures`); :mod:`.steps` holds
the host's evidence and verdicts around the model's one decision. Their agents
(``agents/test``, ``agents/sample_data``), evaluation against
Hypothesis (:mod:`.evaluation`), expert policies (:mod:`.expert`) and training material
(:mod:`.corpus`) live here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from remora.operations.base import Operation
from remora.operations.characterize import characterization, corpus, fixtures, inputs, steps
from remora.operations.characterize.options import SampleDataOptions, TestOptions
from remora.tools.capabilities import capabilities_of

if TYPE_CHECKING:
    from remora.evaluation import EvalContext, OperationReport


def _evaluate_test(context: EvalContext) -> OperationReport:
    """The test evaluation, imported when ``remora eval`` runs it: loading the registry
    (every command does) need not load the evaluation framework."""
    from remora.operations.characterize.evaluation import evaluate_test

    return evaluate_test(context)


def _evaluate_sample_data(context: EvalContext) -> OperationReport:
    """The sample_data evaluation, imported when ``remora eval`` runs it."""
    from remora.operations.characterize.evaluation import evaluate_sample_data

    return evaluate_sample_data(context)


_AGENTS = (Path(__file__).resolve().parent / "agents",)
_CAPABILITIES = capabilities_of(characterization, fixtures, inputs, steps)

TEST = Operation(
    name="test",
    agent_dirs=_AGENTS,
    capabilities=_CAPABILITIES,
    options=TestOptions().model_dump(),
    options_model=TestOptions,
    evaluate=_evaluate_test,
    plan_episodes=corpus.plan_episodes,
    training_options={"model_inputs": True},
    gate_metric="mutation_score",
    summary="characterization tests that pin observed behaviour (vs hypothesis write)",
)
SAMPLE_DATA = Operation(
    name="sample_data",
    agent_dirs=_AGENTS,
    capabilities=_CAPABILITIES,
    options=SampleDataOptions().model_dump(),
    options_model=SampleDataOptions,
    evaluate=_evaluate_sample_data,
    plan_episodes=corpus.plan_episodes,
    training_options={"model_inputs": True},
    gate_metric="with_fixture",
    summary="fixtures a function accepts (vs st.builds/st.from_type)",
)

__all__ = ["SAMPLE_DATA", "TEST"]
