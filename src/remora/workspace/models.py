"""What the workspace layer hands to other layers: changes, workspace info, review reports."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ChangeKind = Literal["write", "delete"]
WorkspaceStatus = Literal["pending", "accepted"]
WorkspaceState = Literal["pending", "accepted", "discarded"]
FileAction = Literal["written", "created", "deleted", "merged", "unchanged"]


class Change(BaseModel):
    """One path a workspace changed, with the hashes accept checks against.

    ``base_sha256`` is the project file the change was made against (None: it did not
    exist); ``new_sha256`` is the workspace's content (None: deleted).
    """

    model_config = ConfigDict(frozen=True)

    path: str
    kind: ChangeKind
    base_sha256: str | None
    new_sha256: str | None
    size: int = Field(default=0, description="Bytes of the new content; 0 for a delete.")


class WorkspaceInfo(BaseModel):
    """Identity and review status of one workspace."""

    model_config = ConfigDict(frozen=True)

    workspace_id: str
    operation: str
    node_id: str
    run_id: str | None = None
    file_path: str | None = None
    created_at: float
    status: WorkspaceStatus = "pending"
    accepted_at: float | None = None
    changes: int = 0


class FileOutcome(BaseModel):
    """What accept (or undo) did to one project file."""

    path: str
    action: FileAction


class AcceptReport(BaseModel):
    """The result of accepting one workspace."""

    workspace_id: str
    files: list[FileOutcome] = Field(default_factory=list)

    @property
    def merged(self) -> list[str]:
        return [item.path for item in self.files if item.action == "merged"]


class UndoReport(BaseModel):
    """The files an undo put back, and those it left as they are (``keep_changed``)."""

    workspace_id: str
    restored: list[FileOutcome] = Field(default_factory=list)
    kept: list[str] = Field(
        default_factory=list, description="Files changed since the accept, left as they are."
    )


class RetryRequest(BaseModel):
    """What the coordinator must rerun after ``retry`` discarded a workspace."""

    workspace_id: str
    operation: str
    node_id: str
    run_id: str | None = None
    file_path: str | None = None


class RecoveryReport(BaseModel):
    """What recovery found after an interrupted accept or undo."""

    completed: list[str] = Field(default_factory=list, description="Workspace ids rolled forward.")
    rolled_back: list[str] = Field(default_factory=list, description="Workspace ids rolled back.")
    skipped_files: list[str] = Field(
        default_factory=list, description="Files edited after the crash, left as they are."
    )
    swept_views: int = 0

    @property
    def touched(self) -> list[str]:
        return [*self.completed, *self.rolled_back]
