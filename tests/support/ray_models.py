"""Model factories for Ray workers in the tests: importable by name, so a worker process
(which imports them by reference) builds the same scripted model as the driver would."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from remora.config import ModelConfig
from remora.model.base import ModelRequest, ToolCall
from remora.testing import ScriptedModel
from tests.support.policy import Policy, scripted_model


def scripted_factory(config: ModelConfig) -> ScriptedModel:
    """The tests' scripted policy (tests.support.policy), one per worker."""
    return scripted_model(Policy())


@dataclass
class SlowFactory:
    """The scripted policy taking ``delay`` seconds per answer (to cancel mid-run)."""

    delay: float

    def __call__(self, config: ModelConfig) -> ScriptedModel:
        return scripted_model(Policy(delay=self.delay))


@dataclass
class DiesOnce:
    """A model whose first answer kills its worker process, once: ``marker`` is created
    just before, so the restarted worker answers as the scripted policy does."""

    marker: str

    def __call__(self, config: ModelConfig) -> ScriptedModel:
        policy = Policy()
        marker = Path(self.marker)

        async def answer(request: ModelRequest) -> ToolCall:
            if not marker.exists():
                marker.write_text(str(os.getpid()), encoding="utf-8")
                os._exit(1)
            return await policy(request)

        return ScriptedModel([answer], repeat_last=True)


def broken_factory(config: ModelConfig) -> ScriptedModel:
    """A model that cannot be built on the worker (a model file missing there, say)."""
    raise RuntimeError("no model here")


class Niceness:
    """A worker that says how nice its process is."""

    def value(self) -> int:
        return os.nice(0)
