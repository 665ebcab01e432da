"""One job: one agent on one node, in one workspace.

This is the seam between the declarative parts (a SubagentDefinition, a CSTNode, the
config) and the machinery (the agent loop, the tool runtime, a model backend). The
scheduler, ``remora harness`` and tests all start agents through :func:`run_job`, so
system inputs, node context and loop settings are built in exactly one place.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from remora.config import RemoraConfig
from remora.contracts import JobKey, SystemInputs
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
    """What to run: the agent, the node, the operation's options, and the job's identity.

    ``system_prompt`` replaces the agent's own (the harness compares prompt variants).
    """

    agent: SubagentDefinition
    node: CSTNode
    key: JobKey
    options: Mapping[str, Any] = field(default_factory=dict)
    system_prompt: str | None = None

    @property
    def operation(self) -> str:
        return self.key.operation

    def system_inputs(self, workspace_id: str | None = None) -> SystemInputs:
        """The values ``.pym`` scripts and the node-context template may use."""
        return SystemInputs.from_node(
            self.node, self.key, options=self.options, workspace_id=workspace_id
        )


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
) -> AgentResult:
    """Run ``job`` to a structured AgentResult; never leaves the store half-used."""
    emitter = emitter or NullEmitter()
    agent = job.agent
    key = job.key
    system = job.system_inputs(workspace_id).as_dict()
    context = CapabilityContext(store=store, config=config.tools, system=system)
    tools = [LoopTool(spec=tool.spec(), effect=tool.effect) for tool in agent.tools]

    async def invoke(name: str, arguments: dict[str, Any]) -> ToolResult:
        return await runtime.run(agent.tool(name), arguments, context)

    operation = config.operations.get(key.operation)
    settings = LoopSettings.from_config(
        config.runner, config.model, agent_max_turns=agent.max_turns
    )
    count_tokens = getattr(model, "count_tokens", None)
    adapter = str(agent.model) if agent.model is not None and config.model.use_adapters else None
    return await run_agent(
        model=model,
        system_prompt=job.system_prompt or agent.initial_context.system_prompt,
        node_context=agent.render_node_context(system),
        tools=tools,
        invoke=invoke,
        settings=settings,
        operation=key.operation,
        node_id=key.node_id,
        changed_paths=store.changed_paths,
        emitter=emitter,
        workspace_id=workspace_id,
        count_tokens=count_tokens if callable(count_tokens) else None,
        conversation_id=key.conversation_id,
        adapter=adapter,
        model_id=operation.model_id if operation is not None else None,
        cancel=cancel,
        transcript_path=transcript_path,
        run_id=key.run_id,
        job_id=key.job_id,
    )
