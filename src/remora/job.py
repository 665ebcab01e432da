"""One job: one agent on one node, in one workspace.

This is the seam between the declarative parts (a SubagentDefinition, a CSTNode, the
config) and the machinery (the agent loop, the tool runtime, a model backend). The
coordinator, ``remora harness`` and tests all start agents through :func:`run_job`, so
system inputs, node context and loop settings are built in exactly one place.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from remora.config import RemoraConfig
from remora.definitions import SubagentDefinition
from remora.discovery import CSTNode
from remora.events import Emitter, NullEmitter
from remora.model.base import ModelClient
from remora.runner import AgentResult, LoopSettings, LoopTool, run_agent
from remora.tools.capabilities import CapabilityContext
from remora.tools.result import ToolResult
from remora.tools.runtime import ToolRuntime
from remora.workspace.base import FileStore


@dataclass
class Job:
    """What to run: the agent, the node, the operation's options and identifiers."""

    agent: SubagentDefinition
    node: CSTNode
    operation: str
    options: Mapping[str, Any] = field(default_factory=dict)
    workspace_id: str | None = None
    run_id: str | None = None
    job_id: str | None = None

    def system_inputs(self) -> dict[str, Any]:
        """The values ``.pym`` scripts and the node-context template may use."""
        node = self.node
        system: dict[str, Any] = {
            "node_text": node.text,
            "file_path": node.file_path,
            "node_name": node.name,
            "node_type": node.node_type,
            "qualname": node.qualname,
            "node_id": node.node_id,
            "workspace_id": self.workspace_id or "",
            "operation": self.operation,
            "options": dict(self.options),
        }
        if self.run_id:
            system["run_id"] = self.run_id
        if self.job_id:
            system["job_id"] = self.job_id
        return system


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
    system_prompt: str | None = None,
) -> AgentResult:
    """Run ``job`` to a structured AgentResult; never leaves the store half-used.

    ``system_prompt`` replaces the agent's own (the harness compares prompt variants).
    """
    emitter = emitter or NullEmitter()
    agent = job.agent
    system = job.system_inputs()
    context = CapabilityContext(store=store, config=config.tools, system=system)
    tools = [LoopTool(spec=tool.spec(), effect=tool.effect) for tool in agent.tools]

    async def invoke(name: str, arguments: dict[str, Any]) -> ToolResult:
        return await runtime.run(agent.tool(name), arguments, context)

    operation = config.operations.get(job.operation)
    settings = LoopSettings.from_config(
        config.runner, config.model, agent_max_turns=agent.max_turns
    )
    count_tokens = getattr(model, "count_tokens", None)
    adapter = str(agent.model) if agent.model is not None and config.model.use_adapters else None
    return await run_agent(
        model=model,
        system_prompt=system_prompt or agent.initial_context.system_prompt,
        node_context=agent.render_node_context(system),
        tools=tools,
        invoke=invoke,
        settings=settings,
        operation=job.operation,
        node_id=job.node.node_id,
        changed_paths=store.changed_paths,
        emitter=emitter,
        workspace_id=job.workspace_id,
        count_tokens=count_tokens if callable(count_tokens) else None,
        conversation_id=job.job_id or f"{job.operation}:{job.node.node_id}",
        adapter=adapter,
        model_id=operation.model_id if operation is not None else None,
        cancel=cancel,
        transcript_path=transcript_path,
        run_id=job.run_id,
        job_id=job.job_id,
    )
