"""The test and sample_data operations: characterize a function by running it.

Both observe real calls in the isolated runner from the same inputs (:mod:`.inputs`:
candidates from the code, the model's proposals); ``test`` writes characterization tests
(:mod:`.characterization`), ``sample_data`` fixtures (:mod:`.fixtures`). Their agents
(``agents/test``, ``agents/sample_data``, one shared adapter), evaluation against
Hypothesis (:mod:`.evaluation`), expert policies (:mod:`.expert`) and training material
(:mod:`.corpus`) live here.
"""

from __future__ import annotations

from pathlib import Path

from remora.operations.base import Operation
from remora.operations.characterize import characterization, corpus, evaluation, fixtures, inputs
from remora.tools.capabilities import capabilities_of

_AGENTS = (Path(__file__).resolve().parent / "agents",)
_CAPABILITIES = capabilities_of(characterization, fixtures, inputs)

TEST = Operation(
    name="test",
    agent_dirs=_AGENTS,
    capabilities=_CAPABILITIES,
    options={"model_inputs": True, "write_test_file": False},
    evaluate=evaluation.evaluate_test,
    plan_episodes=corpus.plan_episodes,
    summary="characterization tests that pin observed behaviour (vs hypothesis write)",
)
SAMPLE_DATA = Operation(
    name="sample_data",
    agent_dirs=_AGENTS,
    capabilities=_CAPABILITIES,
    options={"model_inputs": True, "format": "json"},
    evaluate=evaluation.evaluate_sample_data,
    plan_episodes=corpus.plan_episodes,
    summary="fixtures a function accepts (vs st.builds/st.from_type)",
)

__all__ = ["SAMPLE_DATA", "TEST"]
