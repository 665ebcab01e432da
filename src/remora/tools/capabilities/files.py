"""File capabilities: read, write, list and search the job's workspace, and find its node.

Everything goes through the job's FileStore, never the real filesystem, so writes stay in
the workspace until review. ``node_source`` re-locates the job's node by qualname in the
*current* content, so it keeps working after earlier writes moved or changed the node.

Codes: TOOL_101..TOOL_103 (see ``_store_io``), TOOL_104 empty search pattern or an unusable
argument value (see ``_values``), TOOL_105 no definition with that qualname.
"""

from __future__ import annotations

import re
from typing import Any

from remora.discovery.parser import load_query_pack, parse_source
from remora.errors import ToolError
from remora.tools.capabilities._pysource import definition_not_found, syntax_error
from remora.tools.capabilities._registry import CapabilityContext, capability
from remora.tools.capabilities._store_io import (
    checked_path,
    decode_text,
    is_dir,
    list_entries,
    not_found,
    read_bytes,
    read_text,
    walk_files,
    write_text,
)
from remora.tools.capabilities._values import as_int, as_text

MAX_SEARCH_RESULTS = 200
_LINE_PREVIEW = 200


@capability
def read_file(ctx: CapabilityContext, path: str) -> str:
    """Return the text of a UTF-8 file in the workspace, with any edits made so far."""
    return read_text(ctx, path)[1]


@capability
def write_file(ctx: CapabilityContext, path: str, content: str) -> dict[str, Any]:
    """Replace (or create) a text file in the workspace; the project itself is untouched.

    For ``.py`` files the result reports ``syntax_error`` (None when the code parses) so the
    caller can fix a broken edit straight away.
    """
    relative = checked_path(ctx, path)
    content = as_text(content, "content")
    created = not ctx.store.exists(relative)
    write_text(ctx, relative, content)
    result: dict[str, Any] = {
        "path": relative,
        "created": created,
        "bytes": len(content.encode("utf-8")),
        "lines": len(content.splitlines()),
    }
    if relative.endswith((".py", ".pyi")):
        result["syntax_error"] = syntax_error(content)
    return result


@capability
def file_exists(ctx: CapabilityContext, path: str) -> bool:
    """Whether a file or directory exists in the workspace (after this job's edits)."""
    relative = checked_path(ctx, path, allow_root=True)
    return is_dir(ctx, relative) or ctx.store.exists(relative)


@capability
def list_dir(ctx: CapabilityContext, path: str = "") -> list[str]:
    """Sorted entries of a workspace directory; sub-directories end in '/'."""
    relative = checked_path(ctx, path, allow_root=True)
    entries = list_entries(ctx, relative) if is_dir(ctx, relative) else None
    if entries is None:
        if ctx.store.exists(relative):
            raise ToolError(
                "TOOL_103", f"'{relative}' is a file, not a directory", "call read_file instead"
            )
        raise not_found(ctx, relative, "directory")
    return entries


@capability
def search_content(
    ctx: CapabilityContext,
    pattern: str,
    path: str = "",
    max_results: int = 50,
    regex: bool = True,
) -> dict[str, Any]:
    """Find lines matching ``pattern`` in one file or every text file under a directory.

    ``pattern`` is a regular expression unless ``regex`` is false; one that does not compile
    is searched literally and the result says so. Hidden directories and caches are skipped.
    """
    if not isinstance(pattern, str) or not pattern:
        raise ToolError("TOOL_104", "the search pattern is empty", "give a word or expression")
    relative = checked_path(ctx, path, allow_root=True)
    mode = "regex" if regex else "literal"
    try:
        compiled = re.compile(pattern if regex else re.escape(pattern))
    except re.error:
        compiled, mode = re.compile(re.escape(pattern)), "literal (not a valid regex)"
    limit = max(1, min(as_int(max_results, "max_results"), MAX_SEARCH_RESULTS))
    if is_dir(ctx, relative):
        paths = walk_files(ctx, relative)
    elif ctx.store.exists(relative):
        paths = [relative]
    else:
        raise not_found(ctx, relative, "path")
    matches: list[dict[str, Any]] = []
    searched = 0
    truncated = False
    for file_path in paths:
        try:
            text = decode_text(file_path, ctx.store.read(file_path))
        except (ToolError, FileNotFoundError, IsADirectoryError):
            continue
        searched += 1
        for number, line in enumerate(text.splitlines(), start=1):
            if compiled.search(line):
                if len(matches) == limit:
                    truncated = True
                    break
                matches.append({"path": file_path, "line": number, "text": line[:_LINE_PREVIEW]})
        if truncated:
            break
    return {
        "pattern": pattern,
        "mode": mode,
        "matches": matches,
        "files_searched": searched,
        "truncated": truncated,
    }


@capability
def node_source(
    ctx: CapabilityContext, path: str | None = None, qualname: str | None = None
) -> dict[str, Any]:
    """The current source of a node (by default the job's own), found again by qualname.

    Without a qualname, or for a file node, the whole file is returned.
    """
    path = path if path is not None else str(ctx.system.get("file_path") or "")
    if qualname is None and path == ctx.system.get("file_path"):
        qualname = None if ctx.system.get("node_type") == "file" else ctx.system.get("qualname")
    relative, data = read_bytes(ctx, path)
    text = decode_text(relative, data)
    if not qualname:
        return _node_dict(relative, "", "file", 1, max(len(text.splitlines()), 1), text)
    pack = load_query_pack(("core",))
    nodes, _ = parse_source(data, relative, pack, frozenset({"class", "function", "method"}))
    for node in nodes:
        if node.qualname == qualname:
            return _node_dict(
                relative, node.qualname, node.node_type, node.start_line, node.end_line, node.text
            )
    raise definition_not_found(relative, qualname, [node.qualname for node in nodes])


def _node_dict(
    path: str, qualname: str, node_type: str, start: int, end: int, text: str
) -> dict[str, Any]:
    return {
        "path": path,
        "qualname": qualname,
        "node_type": node_type,
        "start_line": start,
        "end_line": end,
        "text": text,
    }
