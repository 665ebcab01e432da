"""The tool-call harness: how reliably a model drives an agent's tools.

It runs an agent (by default the bundled ``harness`` agent: echo, then submit) on real
nodes, once per (prompt variant, request), with bounded concurrency, through the same
scheduler as a real run (:func:`~remora.orchestration.run_jobs`), and reduces each run's
telemetry to the rates that matter for small models: how often a response holds a usable
call, how often a call is valid, misses, repeats, turns, latency percentiles, token
throughput and the share of prompt tokens served from the KV cache.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from remora.config import RemoraConfig
from remora.definitions import SubagentDefinition
from remora.discovery import CSTNode
from remora.errors import RunnerError
from remora.events import Emitter
from remora.model.base import ModelClient
from remora.orchestration import PlannedJob, run_jobs
from remora.runner import AgentResult
from remora.workspace import WorkspaceManager

DEFAULT_VARIANT = "default"
VARIANTS_FILE = "variants.yaml"


class EpisodeRecord(BaseModel):
    """One agent run, reduced to the counts the report needs."""

    variant: str
    node: str
    status: str
    error: str | None = None
    turns: int
    responses: int
    calls: int
    invalid_calls: int
    misses: int
    repeats: int
    textual_call_patterns: int
    latencies_s: list[float]
    prompt_tokens: int
    completion_tokens: int
    cached_prompt_tokens: int
    wall_s: float


class VariantStats(BaseModel):
    """Rates for one prompt variant over all its episodes."""

    variant: str
    episodes: int
    success_rate: float
    tool_call_rate: float = Field(description="Responses holding at least one usable call.")
    valid_call_rate: float = Field(description="Calls that passed schema validation.")
    miss_rate: float = Field(description="Responses without a usable call.")
    repeat_rate: float = Field(description="Calls identical to an earlier one.")
    mean_turns: float
    latency_p50_s: float
    latency_p95_s: float
    prompt_tokens_per_s: float = Field(description="Prompt tokens evaluated (not cached) / s.")
    generated_tokens_per_s: float
    cache_hit_ratio: float = Field(description="Prompt tokens served from the KV cache.")


class HarnessReport(BaseModel):
    agent: str
    backend: str
    requests: int
    concurrency: int
    temperature: float
    tool_choice: str
    variants: list[VariantStats]
    episodes: list[EpisodeRecord]


def load_variants(agent: SubagentDefinition) -> dict[str, str]:
    """The agent's own prompt as ``default`` plus those in its ``variants.yaml``."""
    variants = {DEFAULT_VARIANT: agent.initial_context.system_prompt}
    path = agent.directory / VARIANTS_FILE
    if path.is_file():
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in data.items()
        ):
            raise RunnerError(
                "RUN_010",
                f"{path} must map variant names to system prompts",
                "write 'name: |' followed by the prompt text",
            )
        variants.update(data)
    return variants


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def _percentile(values: Sequence[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def summarize(variant: str, episodes: Sequence[EpisodeRecord]) -> VariantStats:
    responses = sum(e.responses for e in episodes)
    calls = sum(e.calls for e in episodes)
    latencies = [value for e in episodes for value in e.latencies_s]
    model_time = sum(latencies)
    prompt = sum(e.prompt_tokens for e in episodes)
    cached = sum(e.cached_prompt_tokens for e in episodes)
    return VariantStats(
        variant=variant,
        episodes=len(episodes),
        success_rate=_ratio(sum(e.status == "success" for e in episodes), len(episodes)),
        tool_call_rate=_ratio(responses - sum(e.misses for e in episodes), responses),
        valid_call_rate=_ratio(calls - sum(e.invalid_calls for e in episodes), calls),
        miss_rate=_ratio(sum(e.misses for e in episodes), responses),
        repeat_rate=_ratio(sum(e.repeats for e in episodes), calls),
        mean_turns=statistics.fmean(e.turns for e in episodes) if episodes else 0.0,
        latency_p50_s=_percentile(latencies, 0.5),
        latency_p95_s=_percentile(latencies, 0.95),
        prompt_tokens_per_s=_ratio(prompt - cached, model_time),
        generated_tokens_per_s=_ratio(sum(e.completion_tokens for e in episodes), model_time),
        cache_hit_ratio=_ratio(cached, prompt),
    )


async def run_harness(
    *,
    agent: SubagentDefinition,
    nodes: Sequence[CSTNode],
    root: Path,
    model: ModelClient,
    config: RemoraConfig,
    backend: str,
    variants: Sequence[str] = (DEFAULT_VARIANT,),
    requests: int = 4,
    concurrency: int = 1,
    emitter: Emitter | None = None,
    on_episode: Callable[[EpisodeRecord], Any] | None = None,
    cancel: asyncio.Event | None = None,
) -> HarnessReport:
    """Run ``requests`` episodes per variant, ``concurrency`` at a time, and report rates.

    Episodes cycle through ``nodes``. Workspaces live in a temporary state directory so
    the harness leaves nothing behind in the project.
    """
    prompts = load_variants(agent)
    unknown = [name for name in variants if name not in prompts]
    if unknown:
        raise RunnerError(
            "RUN_011",
            f"unknown prompt variant(s): {', '.join(unknown)}",
            f"choose from: {', '.join(prompts)}",
        )
    usable = [node for node in nodes if node.node_type in agent.applies_to]
    if not usable:
        raise RunnerError(
            "RUN_012",
            f"no {'/'.join(agent.applies_to)} nodes to run the {agent.name} agent on",
            "point the harness at a Python file or project with functions or classes",
        )
    if requests < 1 or concurrency < 1:
        raise RunnerError("RUN_013", "requests and concurrency must be at least 1", None)
    episodes = [(variant, index) for variant in variants for index in range(requests)]
    jobs = [
        PlannedJob(
            agent=agent,
            node=usable[index % len(usable)],
            operation=agent.name,
            attempt=number,
            system_prompt=prompts[variant],
        )
        for number, (variant, index) in enumerate(episodes, start=1)
    ]
    records: list[EpisodeRecord] = []

    def record(job: PlannedJob, result: AgentResult) -> None:
        telemetry = result.telemetry
        episode = EpisodeRecord(
            variant=episodes[job.attempt - 1][0],
            node=job.node.qualname,
            status=result.status,
            error=result.error,
            turns=telemetry.turns,
            responses=telemetry.model_calls,
            calls=sum(telemetry.parse_paths.values()),
            invalid_calls=telemetry.invalid_calls,
            misses=telemetry.tool_misses,
            repeats=telemetry.repeats,
            textual_call_patterns=telemetry.textual_tool_call_patterns,
            latencies_s=telemetry.model_latency_s,
            prompt_tokens=telemetry.prompt_tokens,
            completion_tokens=telemetry.completion_tokens,
            cached_prompt_tokens=telemetry.cached_prompt_tokens,
            wall_s=telemetry.wall_time_s,
        )
        records.append(episode)
        if on_episode is not None:
            on_episode(episode)

    with tempfile.TemporaryDirectory(prefix="remora-harness-") as state:
        await run_jobs(
            jobs,
            model=model,
            config=config,
            manager=WorkspaceManager(root, Path(state)),
            targets=[str(root)],
            emitter=emitter,
            cancel=cancel,
            concurrency=concurrency,
            on_done=record,
        )

    ordered = sorted(records, key=lambda r: (list(variants).index(r.variant), r.node))
    return HarnessReport(
        agent=agent.name,
        backend=backend,
        requests=requests,
        concurrency=concurrency,
        temperature=config.runner.temperature,
        tool_choice=config.runner.tool_choice,
        variants=[summarize(name, [r for r in ordered if r.variant == name]) for name in variants],
        episodes=ordered,
    )
