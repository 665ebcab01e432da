"""Copy-on-write workspaces: nothing an agent writes reaches the project before review."""

from remora.workspace.base import FileStore, normalize_path, resolve_inside
from remora.workspace.manager import WorkspaceManager, check_workspace_id, make_workspace_id
from remora.workspace.materialize import sweep_stale_views
from remora.workspace.merge import ConflictRegion, MergeResult, merge3
from remora.workspace.models import (
    AcceptReport,
    Change,
    FileOutcome,
    RecoveryReport,
    RetryRequest,
    UndoReport,
    WorkspaceInfo,
    WorkspaceState,
)
from remora.workspace.overlay import OverlayWorkspace, unified_diff
from remora.workspace.review import WorkspaceReview

__all__ = [
    "AcceptReport",
    "Change",
    "ConflictRegion",
    "FileOutcome",
    "FileStore",
    "MergeResult",
    "OverlayWorkspace",
    "RecoveryReport",
    "RetryRequest",
    "UndoReport",
    "WorkspaceInfo",
    "WorkspaceManager",
    "WorkspaceReview",
    "WorkspaceState",
    "check_workspace_id",
    "make_workspace_id",
    "merge3",
    "normalize_path",
    "resolve_inside",
    "sweep_stale_views",
    "unified_diff",
]
