"""One job: one agent on one node, in one workspace.

This is the seam between the declarative parts (a SubagentDefinition, a CSTNode, the
config) and the machinery (the agent loop, the tool runtime, a model backend). The
scheduler, ``remora harness`` and training all run a job through :func:`open_job`: the
workspace is created, the job's context built once (its capabilities and working state,
shared by the precheck and every tool call), the precheck and the agent run, and the
workspace is removed unless the caller keeps it, in exactly one place.

A node whose text would crowd the model's context is shown to the model as an outline
plus its leading lines (see :mod:`remora.orchestration.fit`); the tools still get the
whole text, and the result's ``details["node_outlined"]`` records the cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from remora.config import RemoraConfig
from remora.contracts import JobKey, SystemInputs
from remora.definitions import SubagentDefinition
from remora.discovery import CSTNode
from remora.errors import RemoraError
from remora.events import Emitter
from remora.model.base import ModelClient
from remora.orchestration.fit import READ_TOOL, FittedText, fit_node_text, node_budget
from remora.runner import AgentResult, AgentRun, LoopSettings, LoopTool, run_agent
from remora.runner.history import MESSAGE_OVERHEAD, TokenCounter, estimate_tokens
from remora.runner.observers import watching
from remora.tools.capabilities import CapabilityContext
from remora.tools.result import ToolResult
from remora.tools.runtime import ToolRuntime
from remora.tools.script_tool import ScriptTool
from remora.workspace import WorkspaceManager
from remora.workspace.base import FileStore


@dataclass(frozen=True)
class Job:
    """One agent on one node: the value a job is, from planning to its result.

    It carries what the job needs and nothing bound to the process that planned it (no
    model, workspace or event stream), so it pickles and round-trips through JSON
    (:meth:`to_json`, :meth:`from_json`) to run on another process or machine. ``options``
    are the operation's, as its options model fills them from the config (one source of
    defaults). ``run_id`` is empty until a run takes the job (:meth:`in_run`).
    ``file_sha256`` is the digest of the node's file when the run planned it: a worker
    whose copy of the project differs refuses the job. ``system_prompt`` replaces the
    agent's own (the harness compares prompt variants). ``retry`` marks a rerun a review
    asked for: the model samples (at temperature 0 it would repeat the rejected answer)
    and is shown ``retry_note``, what the person found wrong.
    """

    agent: SubagentDefinition
    node: CSTNode
    operation: str
    options: Mapping[str, Any] = field(default_factory=dict)
    attempt: int = 0
    run_id: str = ""
    file_sha256: str | None = None
    system_prompt: str | None = None
    retry: bool = False
    retry_note: str = ""

    @property
    def key(self) -> JobKey:
        """The job's identity, from which every id (workspace, record, events) derives."""
        return JobKey(self.operation, self.node.node_id, self.run_id or None, self.attempt)

    def in_run(self, run_id: str, *, file_sha256: str | None = None) -> Job:
        """The job as run ``run_id`` takes it (and the digest of its file, when known)."""
        return replace(self, run_id=run_id, file_sha256=file_sha256 or self.file_sha256)

    def system_inputs(self, workspace_id: str | None = None) -> SystemInputs:
        """The values ``.pym`` scripts and the node-context template may use."""
        return SystemInputs.from_node(
            self.node, self.key, options=self.options, workspace_id=workspace_id
        )

    def context(
        self, store: FileStore, config: RemoraConfig, workspace_id: str | None
    ) -> CapabilityContext:
        """What the job's scripts (tools, precheck) run against: its workspace, limits,
        system inputs and the capabilities its agent was checked against."""
        system = self.system_inputs(workspace_id).as_dict()
        return CapabilityContext(
            store=store,
            config=config.tools,
            system=system,
            capabilities=self.agent.capabilities,
        )

    def to_json(self) -> str:
        """The job as JSON: the agent by its definition file, the rest as data."""
        return json.dumps(
            {
                "agent": {"name": self.agent.name, "directory": str(self.agent.directory)},
                "node": self.node.model_dump(mode="json"),
                "operation": self.operation,
                "options": dict(self.options),
                "attempt": self.attempt,
                "run_id": self.run_id,
                "file_sha256": self.file_sha256,
                "system_prompt": self.system_prompt,
                "retry": self.retry,
                "retry_note": self.retry_note,
            }
        )

    @classmethod
    def from_json(cls, text: str, agents: Mapping[str, SubagentDefinition]) -> Job:
        """A job :meth:`to_json` wrote, with its agent found in ``agents`` by name and
        folder (RUN_025 when none of them was loaded from there)."""
        data = json.loads(text)
        wanted = data.pop("agent")
        agent = agents.get(wanted["name"])
        if agent is None or str(agent.directory) != wanted["directory"]:
            raise RemoraError(
                "RUN_025",
                f"the job's agent {wanted['name']} ({wanted['directory']}) is not among the "
                "agents loaded here",
                "load the same agents (agents.dirs) where the job runs",
            )
        return cls(agent=agent, node=CSTNode.model_validate(data.pop("node")), **data)


@dataclass
class OpenJob:
    """A job with its workspace open (see :func:`open_job`); set ``keep`` to leave the
    workspace for review when it closes."""

    job: Job
    store: FileStore
    workspace_id: str
    context: CapabilityContext
    runtime: ToolRuntime
    config: RemoraConfig
    keep: bool = False
    evidence: str = ""
    """What the precheck found for the model to decide on (shown after the node context)."""
    precheck_s: float = 0.0
    """Seconds the precheck took; a result's ``wall_time_s`` includes them."""

    async def precheck(self) -> AgentResult | None:
        """The job's result when the agent's precheck ends it without the model (nothing to
        do, or the host did it all), else None; what it found for the model is kept in
        :attr:`evidence`."""
        started = time.monotonic()
        verdict = await _precheck(self.job, self.runtime, self.context)
        self.precheck_s = time.monotonic() - started
        if isinstance(verdict, str):
            self.evidence = verdict
            return None
        if verdict is not None:
            verdict.telemetry.wall_time_s = self.precheck_s
        if verdict is not None and verdict.status != "skipped":
            verdict.workspace_id = self.workspace_id
            verdict.changed_files = sorted(self.store.changed_paths())
        return verdict

    async def run(
        self,
        model: ModelClient,
        *,
        emitter: Emitter | None = None,
        cancel: asyncio.Event | None = None,
        transcript_path: Path | None = None,
    ) -> AgentResult:
        """The agent's loop on the job, with ``model`` choosing the calls."""
        result = await run_job(
            self.job,
            model=model,
            runtime=self.runtime,
            store=self.store,
            config=self.config,
            emitter=emitter,
            cancel=cancel,
            transcript_path=transcript_path,
            workspace_id=self.workspace_id,
            context=self.context,
            evidence=self.evidence,
        )
        result.telemetry.wall_time_s += self.precheck_s
        return result


@contextlib.contextmanager
def open_job(
    job: Job,
    *,
    manager: WorkspaceManager,
    runtime: ToolRuntime,
    config: RemoraConfig,
    workspace_id: str | None = None,
) -> Iterator[OpenJob]:
    """The job in a new workspace (``workspace_id``, default the job key's), removed when
    the block ends unless ``keep`` was set; the job's working state goes with it."""
    key = job.key
    workspace_id = workspace_id or key.workspace_id
    opened: OpenJob | None = None
    try:
        with manager.create(
            key.operation,
            job.node.node_id,
            key.run_id,
            file_path=job.node.file_path,
            workspace_id=workspace_id,
        ) as store:
            opened = OpenJob(
                job=job,
                store=store,
                workspace_id=workspace_id,
                context=job.context(store, config, workspace_id),
                runtime=runtime,
                config=config,
            )
            yield opened
    finally:
        if opened is None or not opened.keep:
            with contextlib.suppress(RemoraError, OSError):
                manager.remove(workspace_id)


HOST_STATUSES = ("success", "partial", "left", "failed")
"""What a precheck that did the whole job may report (``done``)."""


async def _precheck(
    job: Job, runtime: ToolRuntime, context: CapabilityContext
) -> AgentResult | str | None:
    """The agent's precheck, run on the host without the model.

    Its result is a mapping: ``{"skip": true, "reason": ...}`` ends the job ``skipped``
    (nothing to do); ``{"done": true, "status": "success" | "partial" | "left" | "failed",
    "summary": ...}`` ends it with the host's own account (the host did every step, so no
    model decision is left); ``{"evidence": "..."}`` is what the model decides on, shown to
    it after the node context (returned as the string). A precheck that errors does not
    skip: the agent runs and finds out for itself.
    """
    if job.agent.precheck is None:
        return None
    script = ScriptTool(name=f"{job.agent.name}.precheck", pym=job.agent.precheck)
    checked = await runtime.run(script, {}, context)
    verdict = checked.result if isinstance(checked.result, dict) else {}
    if checked.outcome == "error":
        return None
    key = job.key
    if verdict.get("skip"):
        reason = str(verdict.get("reason") or checked.summary or "nothing to do")
        return AgentResult(
            status="skipped", operation=key.operation, node_id=key.node_id, summary=reason
        )
    status = verdict.get("status")
    if verdict.get("done") and status in HOST_STATUSES:
        details = verdict.get("details")
        return AgentResult(
            status=status,
            operation=key.operation,
            node_id=key.node_id,
            summary=str(verdict.get("summary") or checked.summary),
            details={"host_only": True, **(details if isinstance(details, dict) else {})},
        )
    evidence = verdict.get("evidence")
    return evidence if isinstance(evidence, str) and evidence.strip() else None


RETRY_TEMPERATURE = 0.7
"""A rerun a review asked for samples at least this hot: at temperature 0 the model would
give the rejected answer again, byte for byte."""


def _with_retry_note(evidence: str, note: str) -> str:
    """The evidence with what the person said about the rejected attempt."""
    said = (
        f"A person rejected the previous attempt: {note.strip()}"
        if note.strip()
        else "A person rejected the previous attempt; do it differently."
    )
    return f"{evidence.strip()}\n\n{said}".strip()


async def run_job(
    job: Job,
    *,
    model: ModelClient,
    runtime: ToolRuntime,
    store: FileStore,
    config: RemoraConfig,
    emitter: Emitter | None = None,
    cancel: asyncio.Event | None = None,
    transcript_path: Path | None = None,
    workspace_id: str | None = None,
    context: CapabilityContext | None = None,
    evidence: str = "",
) -> AgentResult:
    """Run ``job`` to a structured AgentResult; never leaves the store half-used.

    ``context`` is the job's (from :func:`open_job`); without one a fresh one is built.
    ``evidence`` (what the precheck found) follows the node context in the first message."""
    agent = job.agent
    key = job.key
    context = context or job.context(store, config, workspace_id)
    system = dict(context.system)
    tools = [
        LoopTool(
            spec=tool.spec(),
            effect=tool.effect,
            host_step=tool.host_step,
            screened=tool.screen is not None,
        )
        for tool in agent.tools
        if tool.offered(job.options)
    ]

    async def invoke(
        name: str, arguments: dict[str, Any], *, deadline: float | None = None
    ) -> ToolResult:
        return await runtime.run(agent.tool(name), arguments, context, deadline=deadline)

    async def screen(
        name: str, arguments: dict[str, Any], *, deadline: float | None = None
    ) -> ToolResult:
        tool = agent.tool(name).screen
        if tool is None:
            return ToolResult.failure(f"tool {name} has no screen")
        return await runtime.run(tool, arguments, context, deadline=deadline)

    operation = config.operations.get(key.operation)
    settings = LoopSettings.from_config(
        config.runner, config.model, agent_max_turns=agent.max_turns, tools=config.tools
    )
    if job.retry:
        settings = replace(settings, temperature=max(settings.temperature, RETRY_TEMPERATURE))
        evidence = _with_retry_note(evidence, job.retry_note)
    count_tokens = getattr(model, "count_tokens", None)
    counter = count_tokens if callable(count_tokens) else None
    system_prompt = job.system_prompt or agent.initial_context.system_prompt
    node_context, fitted = _node_context(
        job, system, system_prompt, tools, settings, counter, evidence
    )
    chosen = config.model.adapter_for(agent.name, agent.model)
    adapter = str(chosen) if chosen is not None else None
    run = AgentRun(
        system_prompt=system_prompt,
        node_context=node_context,
        tools=tuple(tools),
        operation=key.operation,
        node_id=key.node_id,
        settings=settings,
        run_id=key.run_id,
        job_id=key.job_id,
        workspace_id=workspace_id,
        conversation_id=key.conversation_id,
        adapter=adapter,
        model_id=operation.model_id if operation is not None else None,
        opening=tuple(agent.opening),
        declare_allowed_only=agent.initial_context.declared_tools == "allowed",
    )
    result = await run_agent(
        run,
        model=model,
        invoke=invoke,
        changed_paths=store.changed_paths,
        screen=screen,
        cancel=cancel,
        count_tokens=counter,
        observers=watching(emitter, transcript_path),
    )
    if fitted is not None and fitted.cut:
        result.details["node_outlined"] = fitted.describe()
    return result


def _node_context(
    job: Job,
    system: dict[str, Any],
    system_prompt: str,
    tools: list[LoopTool],
    settings: LoopSettings,
    count_tokens: TokenCounter | None,
    evidence: str = "",
) -> tuple[str, FittedText | None]:
    """The first user message, with the node text fitted to its share of the prompt and
    the precheck's ``evidence`` after it.

    The share is :func:`~remora.orchestration.fit.node_budget` of the prompt budget after
    the system prompt, the tool catalog (counted as the runner counts it), the evidence and
    the template rendered without the node text.
    """
    count = count_tokens or estimate_tokens
    tail = f"\n\n{evidence.strip()}" if evidence.strip() else ""

    def render(variables: dict[str, Any]) -> str:
        return job.agent.render_node_context(variables) + tail

    if "node_text" not in job.agent.initial_context.node_context:
        return render(system), None  # the template does not show the node: nothing to fit
    catalog = json.dumps([tool.spec.model_dump() for tool in tools], ensure_ascii=False)
    fixed = (
        count(system_prompt)
        + count(catalog)
        + count(render({**system, "node_text": ""}))
        + 2 * MESSAGE_OVERHEAD
    )
    node = job.node
    budget = node_budget(settings.prompt_budget, fixed_tokens=fixed)
    cap = job.agent.initial_context.node_max_tokens
    fitted = fit_node_text(
        node.text,
        path=node.file_path,
        start_line=node.start_line,
        budget_tokens=budget if cap is None else min(budget, cap),
        count_tokens=count_tokens,
        read_tool=READ_TOOL if any(tool.spec.name == READ_TOOL for tool in tools) else None,
    )
    return render({**system, "node_text": fitted.text} if fitted.cut else system), fitted
