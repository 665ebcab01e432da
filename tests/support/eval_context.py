"""An evaluation context on the tiny synthetic package in ``tests/data/eval_package``.

Everything is real (the package copy, its test suite, Remora's discovery, scheduler,
workspaces and tools) except the model: ``policy`` answers every model request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from remora.evaluation.context import EvalContext, OperationProgress
from remora.evaluation.package import resolve_package
from remora.evaluation.session import RemoraSession
from remora.model.base import ModelRequest
from remora.operations import installed_operations
from remora.testing import ScriptedModel, Step

EVAL_PACKAGE = Path(__file__).resolve().parents[1] / "data" / "eval_package"
Policy = Callable[[ModelRequest], "Step | Awaitable[Step]"]


@dataclass
class RecordingProgress:
    """A progress sink that keeps every update, to check the bars move."""

    updates: list[tuple[str, int | None, int, str | None]] = field(default_factory=list)

    def update(
        self,
        operation: str,
        *,
        total: int | None = None,
        advance: int = 0,
        description: str | None = None,
    ) -> None:
        self.updates.append((operation, total, advance, description))

    def advanced(self, operation: str) -> int:
        return sum(advance for op, _, advance, _ in self.updates if op == operation)


def scripted_session(policy: Policy, *assignments: str) -> RemoraSession:
    """A session with the installed operations whose every model is ``policy`` (a fresh
    scripted model per run)."""
    installed = installed_operations()
    return RemoraSession(
        installed.library,
        installed.default_configs(),
        assignments=list(assignments),
        model_factory=lambda config: ScriptedModel([policy], repeat_last=True),
    )


def eval_context(
    tmp_path: Path,
    operation: str,
    policy: Policy,
    *,
    limit: int = 2,
    seed: int = 0,
    source: Path = EVAL_PACKAGE,
    rows: frozenset[str] | None = None,
    baselines: bool = True,
) -> tuple[EvalContext, RecordingProgress]:
    """A context for ``operation`` on a fresh copy of the synthetic package (measuring only
    Remora's ``rows`` when given, and no baseline without ``baselines``)."""
    package = resolve_package(str(source), tmp_path / "fetch")
    original = package.copy_to(tmp_path / "original")
    suite = original.run_tests(120)
    progress = RecordingProgress()
    work = tmp_path / operation
    work.mkdir()
    context = EvalContext(
        original=original,
        work=work,
        seed=seed,
        limit=limit,
        session=scripted_session(policy),
        suite=suite,
        progress=OperationProgress(operation, progress),
        test_timeout=120,
        rows=rows,
        baselines=baselines,
    )
    return context, progress
