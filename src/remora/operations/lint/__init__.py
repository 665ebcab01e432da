"""The lint operation: fix what ruff finds with verified, reviewable edits, never ``noqa``.

Its agent (``agents/lint``), capabilities (:mod:`.capabilities`, with Remora's own
rewrites), evaluation against ``ruff --fix`` (:mod:`.evaluation`), expert policy
(:mod:`.expert`) and training material (:mod:`.corpus`) live here.
"""

from __future__ import annotations

from pathlib import Path

from remora.operations.base import Operation
from remora.operations.lint import capabilities, corpus, evaluation
from remora.tools.capabilities import capabilities_of

LINT = Operation(
    name="lint",
    agent_dirs=(Path(__file__).resolve().parent / "agents",),
    capabilities=capabilities_of(capabilities),
    evaluate=evaluation.evaluate,
    plan_episodes=corpus.plan_episodes,
    summary="fix ruff-detectable issues with verified edits (vs ruff --fix)",
)

__all__ = ["LINT"]
