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
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from remora.definitions import SubagentDefinition
from remora.errors import RemoraError, TrainingError
from remora.harness import check_episode, with_host_submit
from remora.model.base import ModelClient, ModelRequest, ModelResponse, ToolCall, sure_of
from remora.operations.base import PlannedEpisode
from remora.orchestration import Job
from remora.runner import AgentResult, parse_response
from remora.runner.parsing import parse_functiongemma_calls
from remora.training.dataset import TrainingExample, read_model
from remora.training.traces import Session


class Score(Protocol):
    """What a table of scores shows of one: its label, size, figure and failures."""

    label: str

    @property
    def size(self) -> int: ...

    def summary(self) -> str: ...

    def details(self) -> list[str]: ...


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

    @property
    def size(self) -> int:
        return self.examples

    def summary(self) -> str:
        return f"{self.exact_rate:.0%} ({self.name_rate:.0%} name)"

    def details(self) -> list[str]:
        return []


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


class EpisodeScore(BaseModel):
    """Whole held-out episodes through the real loop and tools, as ``remora harness``
    judges them: submitted, with every call as the agent's expectation wants."""

    label: str
    episodes: int
    succeeded: int
    not_run: int = Field(default=0, description="Episodes whose node or precheck failed.")
    problems: dict[str, int] = Field(
        default_factory=dict, description="Why episodes failed: first problem -> count."
    )

    @property
    def success_rate(self) -> float:
        return self.succeeded / self.episodes if self.episodes else 0.0

    @property
    def size(self) -> int:
        return self.episodes

    def summary(self) -> str:
        return f"{self.succeeded} ({self.success_rate:.0%})"

    def details(self) -> list[str]:
        """The failures, most common first."""
        return [f"{count} {why}" for why, count in self.problems.items()]


class _GreedyModel:
    """Sends every request greedy with one adapter (None: the base model) and keeps the
    calls as the loop parses them, for the agent's expectation to check."""

    def __init__(self, model: ModelClient, adapter: Path | None) -> None:
        self._model = model
        self._adapter = str(adapter) if adapter is not None else None
        self.calls: list[ToolCall] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        update = {"adapter": self._adapter, "temperature": 0.0, "samples": 1}
        response = await self._model.complete(request.model_copy(update=update))
        self.calls.extend(parse_response(response).calls)
        return sure_of(response, request.samples)

    async def aclose(self) -> None:
        return None  # the caller closes the shared model

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)  # count_tokens, when the backend has it


def episode_failure(
    agent: SubagentDefinition, job: Job, result: AgentResult, calls: list[ToolCall]
) -> str | None:
    """Why a model's episode failed, in the harness's terms (None: it succeeded): the
    first call the agent's expectation did not want, else how the run ended (``partial``
    counts as done: what is left is the person's, as when the expert leaves it)."""
    if agent.expectation is not None:
        expected = agent.expectation.render(job.system_inputs().as_dict())
        problem = check_episode(agent, expected, with_host_submit(calls, result)).problem
        if problem is not None:
            return _problem_kind(problem)
    if result.status not in ("success", "partial"):
        why = _problem_kind(result.error or "")
        return f"ended {result.status}" + (f" ({why})" if why else "")
    return None


def _problem_kind(problem: str) -> str:
    """A problem without its values, so failures group: "write_docstring summary='x',
    expected 'y'" -> 'write_docstring summary'; 'MODEL_020: ...' -> 'MODEL_020'."""
    return re.split(r": | \(|=", problem, maxsplit=1)[0][:80]


async def score_episodes(
    session: Session,
    episodes: Sequence[PlannedEpisode],
    model: ModelClient,
    *,
    label: str,
    adapter: Path | None = None,
    concurrency: int = 2,
    on_episode: Callable[[], None] | None = None,
) -> EpisodeScore:
    """Run every episode through the real loop and tools with ``model`` choosing the calls."""
    if not episodes:
        raise TrainingError(
            "TRAIN_006", "there are no episodes to evaluate", "run remora train generate first"
        )
    gate = asyncio.Semaphore(max(1, concurrency))
    problems: Counter[str] = Counter()
    succeeded = not_run = 0

    async def one(number: int, episode: PlannedEpisode) -> None:
        nonlocal succeeded, not_run
        async with gate:
            greedy = _GreedyModel(model, adapter)
            played = await session.play(episode, number, greedy)
            if isinstance(played, tuple):
                problem = episode_failure(session.agent, *played, greedy.calls)
            elif played.status == "dropped":  # the loop raised: a backend or tool error
                problem = _problem_kind(played.reason)
            else:
                not_run += 1
                problem = ""
            if problem is None:
                succeeded += 1
            elif problem:
                problems[problem] += 1
            if on_episode is not None:
                on_episode()

    await asyncio.gather(*(one(n, e) for n, e in enumerate(episodes, start=1)))
    return EpisodeScore(
        label=label,
        episodes=len(episodes) - not_run,
        succeeded=succeeded,
        not_run=not_run,
        problems=dict(problems.most_common()),
    )


class Scores(BaseModel):
    """What ``remora train evaluate --json`` writes and ``remora train card`` reads: per
    agent, one score per model (base first)."""

    model_config = ConfigDict(extra="forbid")

    next_call: dict[str, list[CallScore]] = Field(default_factory=dict)
    episodes: dict[str, list[EpisodeScore]] = Field(default_factory=dict)


def merge_scores(parts: Sequence[Scores]) -> Scores:
    """One file's scores after another's, per agent (e.g. the base run, then an adapter)."""
    merged = Scores()
    for part in parts:
        for agent, calls in part.next_call.items():
            merged.next_call.setdefault(agent, []).extend(calls)
        for agent, episodes in part.episodes.items():
            merged.episodes.setdefault(agent, []).extend(episodes)
    return merged


def write_scores(path: Path, scores: Scores) -> None:
    """The scores as JSON, for ``remora train card --scores``."""
    path.write_text(scores.model_dump_json(indent=2) + "\n", encoding="utf-8")


def read_scores(path: Path) -> Scores:
    """Scores as ``remora train evaluate --json`` wrote them; TRAIN_001 when unreadable."""
    return read_model(
        path,
        Scores,
        code="TRAIN_001",
        what="scores",
        hint="write them with remora train evaluate --json",
    )
