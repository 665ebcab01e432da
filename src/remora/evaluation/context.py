"""What every operation's evaluation gets: the package, its pristine copy, a work directory,
the seeded selection settings, Remora, and a progress reporter."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from remora.evaluation.package import Project
from remora.evaluation.report import ADAPTER_ROW, BASE_MODEL_ROW, OperationReport, SuiteRun
from remora.evaluation.session import RemoraSession

T = TypeVar("T")
DEFAULT_TEST_TIMEOUT_S = 900.0


class ProgressSink(Protocol):
    """Where an evaluation reports progress (the CLI draws one bar per operation)."""

    def update(
        self,
        operation: str,
        *,
        total: int | None = None,
        advance: int = 0,
        description: str | None = None,
    ) -> None: ...


class NullProgress:
    """Reports nowhere."""

    def update(
        self,
        operation: str,
        *,
        total: int | None = None,
        advance: int = 0,
        description: str | None = None,
    ) -> None:
        return None


@dataclass
class OperationProgress:
    """One operation's progress: a number of steps, each done once, with what is going on."""

    operation: str
    sink: ProgressSink

    def expect(self, total: int) -> None:
        self.sink.update(self.operation, total=total)

    def doing(self, description: str) -> None:
        self.sink.update(self.operation, description=description)

    def done(self, amount: int = 1) -> None:
        self.sink.update(self.operation, advance=amount)


@dataclass
class EvalContext:
    """An operation's inputs. ``original`` is shared and must not change: work on
    :meth:`scratch` copies, under ``work`` (the operation's own, empty directory)."""

    original: Project
    work: Path
    seed: int
    limit: int
    session: RemoraSession
    suite: SuiteRun
    progress: OperationProgress
    test_timeout: float = DEFAULT_TEST_TIMEOUT_S
    rows: frozenset[str] | None = None
    """Remora's rows to measure, by name (None: all); an operation whose rows cannot be
    chosen measures them all."""

    baselines: bool = True
    """Whether to measure the baseline tools' rows (an operation whose baseline is part of
    its measure of Remora's rows measures it anyway)."""

    def measures(self, row: str) -> bool:
        """Whether this run measures Remora's row ``row``."""
        return self.rows is None or row in self.rows

    def base_model_repeats(self, operation: str, sets: Sequence[str]) -> str | None:
        """Why this run leaves out :data:`BASE_MODEL_ROW` (None: it does not): the rows were
        not named and ``operation``'s agent, under the adapter row's ``sets``, has no adapter,
        so the base-model row would repeat that row's run. A gate names its rows and always
        gets the row."""
        if self.rows is not None or self.session.adapter(self.original, operation, sets):
            return None
        return (
            f"{BASE_MODEL_ROW} not run: the {operation} agent runs without an adapter, so it "
            f"is the same run as {ADAPTER_ROW}"
        )

    def scratch(self, name: str, base: Project | None = None) -> Project:
        """A fresh copy of ``base`` (default: the pristine package) named ``name``."""
        return (base or self.original).copy_to(self.work / name)

    def rng(self, *labels: str) -> random.Random:
        return seeded(self.seed, *labels)

    def pick(self, items: Sequence[T], *labels: str) -> list[T]:
        """``limit`` of ``items`` (all when fewer), seeded by ``labels``, in their order."""
        return pick(items, self.limit, seeded(self.seed, *labels))


def seeded(seed: int, *labels: str) -> random.Random:
    """A generator for one decision: the same seed and labels give the same draws, whatever
    else the run draws (string seeds hash with SHA-512, not the salted ``hash``)."""
    return random.Random(":".join([str(seed), *labels]))


def pick(items: Sequence[T], count: int, rng: random.Random) -> list[T]:
    """``count`` of ``items`` (all when fewer), kept in their original order."""
    if count >= len(items):
        return list(items)
    chosen = sorted(rng.sample(range(len(items)), count))
    return [items[index] for index in chosen]


Evaluator = Callable[[EvalContext], OperationReport]
"""Measures one operation on the package: Remora beside the best deterministic tool."""
