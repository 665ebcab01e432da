"""Copy-on-write workspaces: nothing an agent writes reaches the project before review."""

from remora.workspace.base import FileStore, normalize_path, resolve_inside

__all__ = ["FileStore", "normalize_path", "resolve_inside"]
