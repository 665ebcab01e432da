"""File capabilities: read, write, list and search the job's workspace, and find its node.

Everything goes through the job's FileStore, never the real filesystem, so writes stay in
the workspace until review. ``node_source`` re-locates the job's node by qualname in the
*current* content, so it keeps working after earlier writes moved or changed the node.

``search_content`` runs patterns on RE2, a linear-time engine: a pattern such as ``(a+)+$``
cannot backtrack for minutes while holding the GIL. The input is bounded too: each line is
searched up to ``MAX_SEARCH_LINE_CHARS`` and one call reads at most ``MAX_SEARCH_BYTES``.

Codes: TOOL_101..TOOL_103 (see ``_store_io``), TOOL_104 empty or too long search pattern, a
regular expression RE2 cannot run (backreferences, lookaround) or an unusable argument value
(see ``_values``), TOOL_105 no definition with that qualname, TOOL_107 a line range that is
empty or outside the file (``read_lines``), TOOL_108 a file too large to read (``_store_io``).
"""

from __future__ import annotations

import re
from typing import Any

import re2

from remora.discovery.outline import number_lines
from remora.discovery.parser import load_query_pack, parse_source
from remora.errors import ToolError
from remora.tools.capabilities.pysource import definition_not_found, syntax_error
from remora.tools.capabilities.registry import CapabilityContext, capability
from remora.tools.capabilities.store_io import (
    checked_path,
    decode_text,
    is_dir,
    list_entries,
    not_found,
    read_bytes,
    read_text,
    store_read,
    walk_files,
    write_text,
)
from remora.tools.capabilities.values import as_int, as_text

MAX_SEARCH_RESULTS = 200
MAX_READ_LINES = 200
"""Lines one ``read_lines`` call returns at most."""
MAX_LINE_CHARS = 500
"""Characters of one line ``read_lines`` returns; longer lines are cut and marked."""
_LINE_PREVIEW = 200
MAX_PATTERN_CHARS = 1000
"""Longest search pattern accepted; RE2 compiles in time and memory that grow with it."""
MAX_SEARCH_LINE_CHARS = 10_000
"""Characters of one line that ``search_content`` looks at; the rest of a longer line is not."""
MAX_SEARCH_BYTES = 32 * 1024 * 1024
"""Bytes one ``search_content`` call reads in all; it stops (``truncated``) past them."""
_RE2_MAX_MEM = 64 * 1024 * 1024
_SHOWN_SKIPPED = 20


@capability
def read_file(ctx: CapabilityContext, path: str) -> str:
    """Return the text of a UTF-8 file in the workspace, with any edits made so far."""
    return read_text(ctx, path)[1]


@capability
def read_lines(ctx: CapabilityContext, path: str, start: int, end: int) -> dict[str, Any]:
    """Lines ``start`` to ``end`` (1-based, inclusive) of a UTF-8 file, numbered ``"12| ..."``.

    At most 200 lines per call: a longer range returns its first 200 and ``next_start``,
    the line to continue from. An ``end`` past the last line stops at the last line.
    """
    relative, text = read_text(ctx, path)
    first, last = as_int(start, "start"), as_int(end, "end")
    lines = text.splitlines()
    total = len(lines)
    if first < 1:
        raise ToolError("TOOL_107", f"start must be at least 1, got {first}", _range_hint(total))
    if last < first:
        raise ToolError(
            "TOOL_107", f"end ({last}) is before start ({first})", "give an end >= start"
        )
    if first > total:
        raise ToolError(
            "TOOL_107",
            f"start {first} is past the end of '{relative}' ({total} lines)",
            _range_hint(total),
        )
    wanted = min(last, total)
    stop = min(wanted, first + MAX_READ_LINES - 1)
    shown = [_clip_line(line) for line in lines[first - 1 : stop]]
    return {
        "path": relative,
        "start": first,
        "end": stop,
        "total_lines": total,
        "text": "\n".join(number_lines(shown, first)),
        "next_start": stop + 1 if stop < wanted else None,
    }


def _range_hint(total: int) -> str:
    return f"lines are numbered 1 to {total}" if total else "the file is empty"


def _clip_line(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}... ({len(line) - MAX_LINE_CHARS} more characters)"


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
    is searched literally and the result says so. Hidden directories and caches are skipped,
    and so are FIFOs, devices and over-large files (listed in ``skipped``; an error when such
    a file is the ``path`` searched).
    """
    if not isinstance(pattern, str) or not pattern:
        raise ToolError("TOOL_104", "the search pattern is empty", "give a word or expression")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(
            "TOOL_104",
            f"the search pattern is {len(pattern)} characters long",
            f"give a pattern of at most {MAX_PATTERN_CHARS} characters",
        )
    relative = checked_path(ctx, path, allow_root=True)
    compiled, mode = _compile_pattern(pattern, regex)
    limit = max(1, min(as_int(max_results, "max_results"), MAX_SEARCH_RESULTS))
    directory = is_dir(ctx, relative)
    if directory:
        paths = walk_files(ctx, relative)
    elif ctx.store.exists(relative):
        paths = [relative]
    else:
        raise not_found(ctx, relative, "path")
    matches: list[dict[str, Any]] = []
    skipped: list[str] = []
    searched = 0
    budget = MAX_SEARCH_BYTES
    truncated = False
    clipped = 0
    for file_path in paths:
        try:
            data = store_read(ctx, file_path)
        except (FileNotFoundError, IsADirectoryError):
            continue
        except ToolError as exc:
            if not directory:
                raise
            skipped.append(exc.message)
            continue
        if len(data) > budget:
            truncated = True
            break
        budget -= len(data)
        try:
            text = decode_text(file_path, data)
        except ToolError:
            continue
        searched += 1
        for number, line in enumerate(text.splitlines(), start=1):
            if len(line) > MAX_SEARCH_LINE_CHARS:
                line = line[:MAX_SEARCH_LINE_CHARS]
                clipped += 1
            if compiled.search(line):
                if len(matches) == limit:
                    truncated = True
                    break
                matches.append({"path": file_path, "line": number, "text": line[:_LINE_PREVIEW]})
        if truncated:
            break
    result: dict[str, Any] = {
        "pattern": pattern,
        "mode": mode,
        "matches": matches,
        "files_searched": searched,
        "truncated": truncated,
    }
    if skipped:
        result["skipped"] = skipped[:_SHOWN_SKIPPED]
    if clipped:
        result["note"] = (
            f"{clipped} lines longer than {MAX_SEARCH_LINE_CHARS} characters were searched"
            " only up to that length"
        )
    return result


def _compile_pattern(pattern: str, regex: bool) -> tuple[Any, str]:
    """(RE2 pattern, mode): RE2 because it runs in linear time, whatever the pattern.

    A pattern Python's ``re`` rejects is searched literally, as before; one Python accepts
    but RE2 cannot run (backreferences, lookaround) is a TOOL_104 the caller can fix.
    """
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _RE2_MAX_MEM
    mode = "regex"
    if regex:
        try:
            re.compile(pattern)
        except (re.error, RecursionError, OverflowError):
            regex, mode = False, "literal (not a valid regex)"
    else:
        mode = "literal"
    try:
        return re2.compile(pattern if regex else re2.escape(pattern), options), mode
    except re2.error as exc:
        raw = exc.args[0] if exc.args else exc
        reason = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        raise ToolError(
            "TOOL_104",
            f"the regular expression {pattern!r} cannot be searched: {reason}",
            "backreferences (\\1) and lookaround ((?=...), (?!...), (?<=...)) are not"
            " supported; rewrite the pattern without them, or pass regex=False to search"
            " for the text literally",
        ) from None


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
