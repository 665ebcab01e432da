"""The vocabulary every layer shares, written once: tool effects, the submit tool, job ids and
the system inputs scripts and node templates receive.

This module sits at the bottom of the layer order (with ``errors`` and ``events``): it
imports nothing from Remora, so the checker of ``.pym`` scripts, agent definitions, the
runner, workspaces and the coordinator all agree on these names by construction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

Effect = Literal["read", "write", "terminal"]
"""What a tool does: reads, writes the workspace, or ends the run. Drives stall detection."""
EFFECTS: Final[tuple[Effect, ...]] = ("read", "write", "terminal")
SUBMIT_TOOL: Final = "submit_result"
"""The one terminal tool every agent has."""

HOST_STEP_ID: Final = "host_"
"""How the ids of the calls the runner makes itself (an agent's host steps) begin."""


class NodeLike(Protocol):
    """What system inputs need of a discovered node (``remora.discovery.CSTNode`` has it)."""

    @property
    def node_id(self) -> str: ...

    @property
    def node_type(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def qualname(self) -> str: ...

    @property
    def file_path(self) -> str: ...

    @property
    def text(self) -> str: ...


@dataclass(frozen=True)
class JobKey:
    """The identity of one job: which run, which operation, which node (and which attempt,
    when one run repeats a node, as the harness does).

    Every id derived from a job — workspace, manifest record, events, transcripts, the
    model's conversation — comes from here, so they always agree.
    """

    operation: str
    node_id: str
    run_id: str | None = None
    attempt: int = 0

    @property
    def job_id(self) -> str:
        """``<operation>-<node_id>[-<attempt>]``: unique within a run."""
        suffix = f"-{self.attempt}" if self.attempt else ""
        return f"{self.operation}-{self.node_id}{suffix}"

    @property
    def workspace_id(self) -> str:
        """The job id plus 6 hex of sha256(run id): readable, distinct across runs."""
        if not self.run_id:
            return self.job_id
        return f"{self.job_id}-{hashlib.sha256(self.run_id.encode('utf-8')).hexdigest()[:6]}"

    @property
    def conversation_id(self) -> str:
        """Names the model conversation (the backend keys its KV cache on it)."""
        return f"{self.run_id or 'adhoc'}:{self.job_id}"

    @property
    def transcript_name(self) -> str:
        return f"{self.job_id}.txt"


class SystemInputs(BaseModel):
    """The values the runner injects into ``.pym`` scripts and node-context templates.

    Never shown to the model. A script declares the ones it needs as ``Input("name")``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    node_text: str = Field(description="The node's source, whole lines, indentation kept.")
    file_path: str = Field(description="Project-relative path of the node's file.")
    node_name: str
    node_type: str = Field(description="file, class, function or method.")
    qualname: str = Field(description="Dotted name inside the file, e.g. Outer.method.")
    node_id: str
    workspace_id: str = ""
    operation: str
    options: dict[str, Any] = Field(default_factory=dict)
    run_id: str = ""
    job_id: str = ""

    @classmethod
    def from_node(
        cls,
        node: NodeLike,
        key: JobKey,
        *,
        options: Mapping[str, Any] | None = None,
        workspace_id: str | None = None,
    ) -> SystemInputs:
        return cls(
            node_text=node.text,
            file_path=node.file_path,
            node_name=node.name,
            node_type=node.node_type,
            qualname=node.qualname,
            node_id=node.node_id,
            workspace_id=workspace_id if workspace_id is not None else key.workspace_id,
            operation=key.operation,
            options=dict(options or {}),
            run_id=key.run_id or "",
            job_id=key.job_id,
        )

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump()


def _json_type(annotation: Any) -> str:
    return "object" if annotation is dict or str(annotation).startswith("dict") else "string"


SYSTEM_INPUTS: Final[Mapping[str, str]] = {
    name: _json_type(field.annotation) for name, field in SystemInputs.model_fields.items()
}
"""System input names with their JSON type, as the ``.pym`` checker validates them."""
