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
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from remora.operations.base import Operation
from remora.operations.characterize import characterization, corpus, fixtures, inputs, steps
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


class TestOptions(BaseModel):
    """``operations.test.options``."""

    model_config = ConfigDict(extra="forbid")

    # The model's inputs for the lines the host's tests leave uncovered added no coverage
    # beyond the spread across seeds in `remora eval` (docs/evaluation.md): the host's
    # tests are the job unless model_inputs is set.
    model_inputs: bool = False
    write_test_file: bool = False
    # Argument lists (as source) the host leaves out of its own; `remora train generate`
    # withholds some so that they become the model's answers.
    withhold_cases: list[str] = []
    # Private and special names (_helper), and code under tests/, are skipped unless set.
    include_private: bool = False
    include_tests: bool = False


class SampleDataOptions(BaseModel):
    """``operations.sample_data.options``."""

    model_config = ConfigDict(extra="forbid")

    # The model's fixtures added no function with a fixture in `remora eval`
    # (docs/evaluation.md): the host alone writes them unless model_inputs is set.
    model_inputs: bool = False
    format: Literal["json", "yaml"] = "json"
    # Private and special names (_helper), and code under tests/, are skipped unless set.
    include_private: bool = False
    include_tests: bool = False


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
