"""How well a model, with or without an adapter, makes the calls the expert made.

Next-call exact match replays each held-out example's request through a backend (the
same grammar, tools and choices as at run time) and compares the call it makes with the
expert's: the name, and the name with every argument equal. Episode success runs whole
episodes through the real loop and tools (``remora harness``), where the agent's own
expectation decides what a correct episode is.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from remora.errors import RemoraError, TrainingError
from remora.model.base import ModelClient, ModelRequest, ModelResponse, ToolCall
from remora.runner.parsing import parse_functiongemma_calls
from remora.training.dataset import TrainingExample


class CallScore(BaseModel):
    """Next-call agreement with the expert over held-out examples."""

    label: str = Field(description="What was scored, e.g. 'base' or the adapter's name.")
    examples: int
    exact: int = Field(description="Calls with the expert's name and arguments.")
    named: int = Field(description="Calls with the expert's tool name.")
    failed: int = Field(default=0, description="Turns the backend could not complete.")
    by_tool: dict[str, tuple[int, int]] = Field(
        default_factory=dict, description="Expected tool -> (exact, examples)."
    )

    @property
    def exact_rate(self) -> float:
        return self.exact / self.examples if self.examples else 0.0

    @property
    def name_rate(self) -> float:
        return self.named / self.examples if self.examples else 0.0


def response_call(response: ModelResponse) -> ToolCall | None:
    """The first call a response makes: a native one, else one parsed from its text."""
    if response.tool_calls:
        return response.tool_calls[0]
    calls = parse_functiongemma_calls(response.raw_text or response.content)
    return calls[0] if calls else None


def _canonical(arguments: Any) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False)


def same_call(made: ToolCall | None, expected: dict[str, Any]) -> tuple[bool, bool]:
    """(same name, same name and arguments) of ``made`` against an example's call."""
    if made is None or made.name != expected.get("name"):
        return False, False
    return True, _canonical(made.arguments) == _canonical(expected.get("arguments", {}))


def example_request(example: TrainingExample, adapter: Path | None) -> ModelRequest:
    """The example's turn as a request, greedy, for ``adapter`` (None: the base model)."""
    request = ModelRequest.model_validate(example.request)
    return request.model_copy(
        update={
            "adapter": str(adapter) if adapter is not None else None,
            "temperature": 0.0,
            "conversation_id": f"eval-{example.episode}",
        }
    )


async def score_next_calls(
    examples: Sequence[TrainingExample],
    model: ModelClient,
    *,
    label: str,
    adapter: Path | None = None,
    concurrency: int = 2,
    on_example: Callable[[], None] | None = None,
) -> CallScore:
    """Replay every example's request through ``model`` and count calls that match."""
    if not examples:
        raise TrainingError(
            "TRAIN_006", "there are no examples to evaluate", "run remora train generate first"
        )
    gate = asyncio.Semaphore(max(1, concurrency))
    outcomes: list[tuple[str, bool, bool, bool]] = []

    async def one(example: TrainingExample) -> None:
        async with gate:
            try:
                response = await model.complete(example_request(example, adapter))
            except RemoraError:
                outcomes.append((example.call["name"], False, False, True))
            else:
                named, exact = same_call(response_call(response), example.call)
                outcomes.append((example.call["name"], named, exact, False))
            if on_example is not None:
                on_example()

    await asyncio.gather(*(one(example) for example in examples))
    by_tool: dict[str, tuple[int, int]] = {}
    for tool, _, exact, _ in outcomes:
        hits, total = by_tool.get(tool, (0, 0))
        by_tool[tool] = (hits + exact, total + 1)
    return CallScore(
        label=label,
        examples=len(outcomes),
        exact=sum(exact for _, _, exact, _ in outcomes),
        named=sum(named for _, named, _, _ in outcomes),
        failed=sum(failed for *_, failed in outcomes),
        by_tool=dict(sorted(by_tool.items())),
    )


def write_scores(path: Path, scores: Mapping[str, Sequence[CallScore]]) -> None:
    """Scores per agent as JSON: what ``remora train card --scores`` reads back."""
    payload = {agent: [score.model_dump() for score in row] for agent, row in scores.items()}
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


def read_scores(path: Path) -> dict[str, list[CallScore]]:
    """Scores as ``remora train evaluate --json`` wrote them; TRAIN_001 when unreadable."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        return {
            agent: [CallScore.model_validate(score) for score in row]
            for agent, row in payload.items()
        }
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        raise TrainingError(
            "TRAIN_001",
            f"cannot read scores {path}: {str(exc).splitlines()[0]}",
            "write them with remora train evaluate --json",
        ) from None
