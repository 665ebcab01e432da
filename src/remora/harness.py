"""The tool-call harness: how reliably a model drives an agent's tools.

It runs an agent (by default the bundled ``harness`` agent: echo, then submit) on real
nodes, once per (prompt variant, request), with bounded concurrency, through the same
scheduler as a real run (:func:`~remora.orchestration.run_jobs`), and reduces each run's
telemetry to the rates that matter for small models: how often a response holds a usable
call, how often a call is valid, misses, repeats, turns, latency percentiles, token
throughput and the share of prompt tokens served from the KV cache.

Well-formed is not correct: a model can echo the tool's description instead of the node's
name and submit an invented summary with every call valid. So each call is also checked
against the agent's ``expectation`` (its YAML; see :class:`~remora.definitions.Expectation`)
rendered for the node, and an episode is a success only when it submitted and every call
was as expected at its position.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from remora.config import RemoraConfig
from remora.contracts import HOST_STEP_ID, SUBMIT_TOOL
from remora.definitions import RenderedCall, SubagentDefinition
from remora.discovery import CSTNode
from remora.errors import RunnerError
from remora.events import Emitter
from remora.model.base import ModelClient, ModelRequest, ModelResponse, ToolCall, ToolSpec
from remora.orchestration import Job, new_run_id, run_jobs
from remora.orchestration.job import open_job
from remora.runner import AgentResult, parse_response
from remora.runner.guards import call_signature
from remora.tools.runtime import ToolRuntime
from remora.workspace import WorkspaceManager

DEFAULT_VARIANT = "default"
VARIANTS_FILE = "variants.yaml"


class CheckedCall(BaseModel):
    """One call the model made, and whether it was the call expected at its position."""

    tool: str
    arguments: dict[str, Any]
    expected: bool
    problem: str | None = Field(default=None, description="Why it was not the expected call.")


class EpisodeCheck(BaseModel):
    """An episode's calls checked against the agent's expectation."""

    calls: list[CheckedCall]
    correct: bool
    problem: str | None = Field(default=None, description="The first reason it is not correct.")


class EpisodeRecord(BaseModel):
    """One agent run, reduced to the counts the report needs."""

    variant: str
    node: str
    status: str
    error: str | None = None
    correct: bool | None = Field(
        default=None, description="Every call as expected; None when the agent declares none."
    )
    correct_calls: int = 0
    problem: str | None = Field(default=None, description="Why the episode is not correct.")
    checked_calls: list[CheckedCall] = Field(default_factory=list)
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

    @property
    def success(self) -> bool:
        """Submitted, and correct where the agent says what correct is."""
        return self.status == "success" and self.correct is not False


class VariantStats(BaseModel):
    """Rates for one prompt variant over all its episodes."""

    variant: str
    episodes: int
    success_rate: float = Field(
        description="Episodes that submitted with every call as expected (only submitted "
        "when the agent declares no expectation)."
    )
    correct_call_rate: float | None = Field(
        description="Calls whose name and arguments were as expected at their position; "
        "None when the agent declares no expectation."
    )
    submitted_rate: float = Field(description="Episodes that ended with a successful submit.")
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
    expectation: str | None = Field(description="What a correct episode is, as declared.")
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
    checked = [e for e in episodes if e.correct is not None]
    latencies = [value for e in episodes for value in e.latencies_s]
    model_time = sum(latencies)
    prompt = sum(e.prompt_tokens for e in episodes)
    cached = sum(e.cached_prompt_tokens for e in episodes)
    return VariantStats(
        variant=variant,
        episodes=len(episodes),
        success_rate=_ratio(sum(e.success for e in episodes), len(episodes)),
        correct_call_rate=(
            _ratio(sum(e.correct_calls for e in checked), sum(e.calls for e in checked))
            if checked
            else None
        ),
        submitted_rate=_ratio(sum(e.status == "success" for e in episodes), len(episodes)),
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


def _text(value: Any) -> str:
    """An argument as expectations compare it: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _short(value: Any, limit: int = 60) -> str:
    text = _text(value)
    return json.dumps(text if len(text) <= limit else text[:limit] + "...")


def _mismatch(call: ToolCall, expected: RenderedCall, spec: ToolSpec | None) -> str | None:
    """Why ``call`` is not ``expected``, or None when it is.

    A named argument must equal its rendered value (``any``: be given, or have a default);
    an argument the expectation does not name must keep the tool's default.
    """
    if call.name != expected.tool:
        return f"{call.name} instead of {expected.tool}"
    properties: Mapping[str, Any] = (spec.parameters if spec else {}).get("properties", {})
    for name in call.arguments:
        if name not in properties:
            return f"{call.name} has no argument '{name}'"
    for name, schema in properties.items():
        given = name in call.arguments
        default = schema.get("default") if isinstance(schema, dict) else None
        has_default = isinstance(schema, dict) and "default" in schema
        if name in expected.arguments:
            want = expected.arguments[name]
            if not given and not has_default:
                return f"{call.name} without '{name}'"
            actual = call.arguments[name] if given else default
            if want is not None and _text(actual) != want:
                return f"{call.name} {name}={_short(actual)}, expected {_short(want)}"
        elif given and not (has_default and _text(call.arguments[name]) == _text(default)):
            return f"{call.name} {name}={_short(call.arguments[name])}, expected its default"
    return None


def with_host_submit(calls: Sequence[ToolCall], result: AgentResult) -> list[ToolCall]:
    """The model's ``calls`` and, when the host called ``submit_result`` itself (a host
    step: nothing was left for the model), that call last, as the episode's calls."""
    made = sum(1 for call in calls if call.name == SUBMIT_TOOL)
    if result.telemetry.tool_calls.get(SUBMIT_TOOL, 0) > made:
        return [*calls, ToolCall(id=HOST_STEP_ID, name=SUBMIT_TOOL, arguments={})]
    return list(calls)


def check_episode(
    agent: SubagentDefinition,
    expected: Sequence[RenderedCall],
    calls: Sequence[ToolCall],
    specs: Mapping[str, ToolSpec] | None = None,
) -> EpisodeCheck:
    """Check an episode's calls, in order, against the calls expected on its node.

    Every expected call but the last is checked at its position; the episode's last call
    against the last expected call (``submit_result``). In between, ``exact`` allows
    nothing; ``prefix`` allows calls of the agent's other tools that repeat no earlier call
    (same name and arguments, with no write in between: the runner's own repeat rule).
    """
    assert agent.expectation is not None, "check_episode needs an agent with an expectation"
    specs = specs if specs is not None else {spec.name: spec for spec in agent.tool_specs()}
    effects = agent.effects
    prefix, terminal = list(expected[:-1]), expected[-1]
    free = agent.expectation.match == "prefix"
    seen: set[str] = set()
    checked: list[CheckedCall] = []
    for index, call in enumerate(calls):
        signature = call_signature(call.name, call.arguments)
        if index < len(prefix):
            problem = _mismatch(call, prefix[index], specs.get(call.name))
        elif index == len(calls) - 1:
            problem = _mismatch(call, terminal, specs.get(call.name))
        elif not free:
            problem = f"{call.name} after the expected calls, before {terminal.tool}"
        elif call.name not in effects or call.name == SUBMIT_TOOL:
            problem = f"{call.name} is not one of the tools expected between"
        elif signature in seen:
            problem = f"{call.name} repeats an earlier call"
        else:
            problem = None
        if effects.get(call.name) == "write":
            seen.clear()
        seen.add(signature)
        checked.append(
            CheckedCall(
                tool=call.name,
                arguments=dict(call.arguments),
                expected=problem is None,
                problem=problem,
            )
        )
    first = next((c.problem for c in checked if c.problem is not None), None)
    if first is None and len(calls) < len(expected):
        names = ", ".join(call.tool for call in expected[len(calls) :])
        first = f"ended after {len(calls)} call(s), before {names}"
    return EpisodeCheck(calls=checked, correct=first is None, problem=first)


class _RecordingModel:
    """Passes requests to the model and keeps every response's calls by conversation: the
    loop's telemetry counts calls but does not keep their arguments, which correctness needs.

    Calls are parsed as the loop parses them (:func:`~remora.runner.parse_response`), so
    they are the calls the episode's ``calls`` count counts.
    """

    def __init__(self, model: ModelClient) -> None:
        self._model = model
        self.calls: dict[str, list[ToolCall]] = defaultdict(list)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self._model.complete(request)
        self.calls[request.conversation_id or ""].extend(parse_response(response).calls)
        return response

    async def aclose(self) -> None:
        await self._model.aclose()

    def __getattr__(self, name: str) -> Any:
        # Optional backend extras the job looks up (count_tokens) stay visible.
        return getattr(self._model, name)


def operation_options(config: RemoraConfig, agent: SubagentDefinition) -> dict[str, Any]:
    """The options a real run would give the agent: those of the operation that runs it
    (the one of the same name first), or none when no operation does."""
    ranked = sorted(config.operations.items(), key=lambda item: item[0] != agent.name)
    for name, operation in ranked:
        if config.agent_of(name) == agent.name:
            return dict(operation.options)
    return {}


async def _nodes_with_work(
    agent: SubagentDefinition,
    nodes: Sequence[CSTNode],
    *,
    needed: int,
    options: Mapping[str, Any],
    config: RemoraConfig,
    manager: WorkspaceManager,
    cancel: asyncio.Event | None,
) -> tuple[list[CSTNode], list[str]]:
    """Up to ``needed`` nodes the agent's precheck does not skip, and the skip reasons met.

    A skipped episode makes no model call and says nothing about the model, so episodes
    only go to nodes where a real run would call it.
    """
    if agent.precheck is None:
        return list(nodes[:needed]), []
    chosen: list[CSTNode] = []
    reasons: list[str] = []
    with ToolRuntime(config.tools) as runtime:
        for node in nodes:
            if len(chosen) == needed or (cancel is not None and cancel.is_set()):
                break
            job = Job(agent=agent, node=node, operation=agent.name, options=options)
            key = job.key
            with open_job(
                job,
                manager=manager,
                runtime=runtime,
                config=config,
                workspace_id=f"precheck-{key.job_id}",
            ) as opened:
                skipped = await opened.precheck()
            if skipped is None:
                chosen.append(node)
            else:
                reasons.append(f"{node.qualname}: {skipped.summary}")
    return chosen, reasons


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

    Episodes cycle through the nodes the agent applies to whose precheck finds work, with
    the options of the agent's operation in ``config``. Workspaces live in a temporary state
    directory so the harness leaves nothing behind in the project.
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
    options = operation_options(config, agent)
    specs = {spec.name: spec for spec in agent.tool_specs()}
    run_id = new_run_id()
    recorder = _RecordingModel(model)
    records: list[EpisodeRecord] = []
    episodes = [(variant, index) for variant in variants for index in range(requests)]

    def record(job: Job, result: AgentResult) -> None:
        telemetry = result.telemetry
        made = recorder.calls.pop(job.key.conversation_id, [])
        check = None
        if agent.expectation is not None:
            system = job.system_inputs()
            expected = agent.expectation.render(system.as_dict())
            check = check_episode(agent, expected, with_host_submit(made, result), specs)
        episode = EpisodeRecord(
            variant=episodes[job.attempt - 1][0],
            node=job.node.qualname,
            status=result.status,
            error=result.error,
            correct=check.correct if check else None,
            correct_calls=sum(c.expected for c in check.calls) if check else 0,
            problem=check.problem if check else None,
            checked_calls=check.calls if check else [],
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
        manager = WorkspaceManager(root, Path(state))
        with_work, skips = await _nodes_with_work(
            agent,
            usable,
            needed=requests,
            options=options,
            config=config,
            manager=manager,
            cancel=cancel,
        )
        if not with_work:
            shown = "; ".join(skips[:3]) + (f"; {len(skips) - 3} more" if len(skips) > 3 else "")
            raise RunnerError(
                "RUN_012",
                f"the {agent.name} agent's precheck finds nothing to do on any of the "
                f"{len(usable)} {'/'.join(agent.applies_to)} node(s): {shown}",
                "point the harness at code the agent has work on",
            )
        jobs = [
            Job(
                agent=agent,
                node=with_work[index % len(with_work)],
                operation=agent.name,
                options=options,
                attempt=number,
                system_prompt=prompts[variant],
            )
            for number, (variant, index) in enumerate(episodes, start=1)
        ]
        await run_jobs(
            jobs,
            model=recorder,
            config=config,
            manager=manager,
            targets=[str(root)],
            emitter=emitter,
            cancel=cancel,
            run_id=run_id,
            concurrency=concurrency,
            on_done=record,
        )

    ordered = sorted(records, key=lambda r: (list(variants).index(r.variant), r.node))
    return HarnessReport(
        agent=agent.name,
        expectation=agent.expectation.describe() if agent.expectation else None,
        backend=backend,
        requests=requests,
        concurrency=concurrency,
        temperature=config.runner.temperature,
        tool_choice=config.runner.tool_choice,
        variants=[summarize(name, [r for r in ordered if r.variant == name]) for name in variants],
        episodes=ordered,
    )
