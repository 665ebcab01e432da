"""The docstring operation: write and check a definition's docstring in the project's style.

Its agent (``agents/docstring``), capabilities (:mod:`.docstrings` to read and write,
:mod:`.check` to check), evaluation against the original docstrings (:mod:`.evaluation`),
expert policy (:mod:`.expert`) and training material (:mod:`.corpus`) live here.
"""

from __future__ import annotations

from pathlib import Path

from remora.operations.base import Operation
from remora.operations.docstring import check, corpus, docstrings, evaluation
from remora.tools.capabilities import capabilities_of

DOCSTRING = Operation(
    name="docstring",
    agent_dirs=(Path(__file__).resolve().parent / "agents",),
    capabilities=capabilities_of(docstrings, check),
    options={"style": "google"},
    evaluate=evaluation.evaluate,
    plan_episodes=corpus.plan_episodes,
    summary="write docstrings checked by pydoclint and ruff (vs the original docstrings)",
)

__all__ = ["DOCSTRING"]
