"""The value one agent run is: what the loop is asked to do, as data.

Everything the loop needs that is not bound to this process (the prompts, the tools as the
model sees them, the settings, the ids) is one frozen value; what is bound to the process
(the model, the tool runtime, the workspace, the observers) is passed beside it to
:func:`~remora.runner.loop.run_agent`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from remora.runner.catalog import LoopTool
from remora.runner.settings import LoopSettings


@dataclass(frozen=True)
class AgentRun:
    """One agent on one job.

    ``opening`` names host steps (tools marked ``host_step``) the host takes before the
    model's first turn, in order, as if each were the only next tool.
    ``declare_allowed_only`` declares to the model only the tools it may call that turn
    (a short decision prompt) instead of the whole catalog. ``conversation_id`` names the
    model conversation (the backend keys its cache on it); ``adapter`` and ``model_id``
    pick the weights that answer.
    """

    system_prompt: str
    node_context: str
    tools: Sequence[LoopTool]
    operation: str
    node_id: str
    settings: LoopSettings = field(default_factory=LoopSettings)
    run_id: str | None = None
    job_id: str | None = None
    workspace_id: str | None = None
    conversation_id: str | None = None
    adapter: str | None = None
    model_id: str | None = None
    opening: Sequence[str] = ()
    declare_allowed_only: bool = False
