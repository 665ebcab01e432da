"""Checked access to the job's FileStore: path rules, text decoding, helpful not-found errors
and the bounded diffs editing capabilities report.

Every capability reads and writes through these helpers, so the path policy lives in one
place: paths are normalised with :func:`normalize_path` (WS_001 for absolute or
``..``-escaping paths) and resolved with :func:`resolve_inside` (WS_001 for symlinks that
leave the root) before the store sees them.

Reads go through :func:`store_read`: the overlay refuses FIFOs, devices and sockets (a read
could block forever or never end) and files over its read limit, and this turns that into a
coded error naming the file; :func:`scan_text` is the lenient form for searching files the
model did not name (None instead of an error).

Text is decoded as Python decodes source: a ``.py``/``.pyi``/``.pyw`` file by its BOM or
PEP 263 coding line (``# -*- coding: latin-1 -*-``), any other file as UTF-8 (a BOM
dropped). :func:`write_text` stores a Python file in the encoding its new text's coding line
declares, so a file is written back in the encoding it was read in for as long as its
coding line stays, and never with bytes its coding line contradicts.

Codes: TOOL_101 file or directory not found (the message names nearby entries), TOOL_102
file is not text in its encoding (binary, not UTF-8 and no coding line, or not valid in the
encoding declared), TOOL_103 a directory where a file was expected or the reverse, or a
FIFO, device or socket where a regular file was expected, TOOL_108 a file over the read
limit, TOOL_109 text a Python file's declared encoding cannot store, TOOL_110 a file the
system does not let Remora read (an I/O error, a link loop).
"""

from __future__ import annotations

import difflib
import posixpath
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path

from remora.discovery.encoding import (
    DecodedSource,
    SourceDecodeError,
    SourceEncodeError,
    decode_source,
    encode_source,
    is_python_path,
)
from remora.errors import ToolError, WorkspaceError
from remora.regular_files import FileTooLargeError, NotRegularFileError
from remora.tools.capabilities.registry import CapabilityContext
from remora.workspace.base import normalize_path, resolve_inside

DIFF_LIMIT = 4000
_SHOWN_ENTRIES = 12
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "venv", "site-packages"})


def checked_path(ctx: CapabilityContext, path: str, *, allow_root: bool = False) -> str:
    """``path`` normalised and verified to stay inside the workspace; ``""`` is the root."""
    if allow_root and isinstance(path, str) and path.strip() in ("", ".", "./"):
        return ""
    relative = normalize_path(path)
    if not relative and not allow_root:
        raise ToolError("TOOL_103", "the workspace root is a directory, not a file", "name a file")
    resolve_inside(ctx.store.root, relative)
    return relative


def list_entries(ctx: CapabilityContext, directory: str) -> list[str] | None:
    """Entries of ``directory`` in the merged view, or None when it is not a directory."""
    try:
        return list(ctx.store.list_dir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return None


def is_dir(ctx: CapabilityContext, relative: str) -> bool:
    """Whether ``relative`` is a directory in the merged view (its parent lists it with '/')."""
    if not relative:
        return True
    parent, name = posixpath.split(relative)
    entries = list_entries(ctx, parent) if is_dir(ctx, parent) else None
    return entries is not None and name + "/" in entries


def not_found(ctx: CapabilityContext, relative: str, what: str = "file") -> ToolError:
    """TOOL_101 naming the closest existing entries, so the caller can correct the path."""
    parent = posixpath.dirname(relative)
    while parent and not is_dir(ctx, parent):
        parent = posixpath.dirname(parent)
    entries = list_entries(ctx, parent) or []
    wanted = relative[len(parent) :].lstrip("/").split("/", 1)[0]
    close = difflib.get_close_matches(wanted, entries, n=3, cutoff=0.5)
    where = f"{parent}/" if parent else "the project root"
    if close:
        hint = "did you mean " + ", ".join(repr(posixpath.join(parent, c)) for c in close) + "?"
    elif entries:
        shown = entries[:_SHOWN_ENTRIES]
        more = f" and {len(entries) - len(shown)} more" if len(entries) > len(shown) else ""
        hint = f"{where} contains: {', '.join(shown)}{more}"
    else:
        hint = f"{where} is empty; call list_dir to see what exists"
    return ToolError("TOOL_101", f"{what} '{relative}' does not exist", hint)


def store_read(ctx: CapabilityContext, relative: str) -> bytes:
    """``relative``'s content; TOOL_103/TOOL_108 when it is no regular file or too large,
    TOOL_110 when the system refuses to read it. (FileNotFoundError, NotADirectoryError and
    IsADirectoryError pass through: callers say what was meant.)"""
    try:
        return ctx.store.read(relative)
    except NotRegularFileError as exc:
        raise ToolError(
            "TOOL_103",
            f"'{relative}' is {exc.strerror}; it cannot be read",
            "only regular files can be read; leave this one alone",
        ) from None
    except FileTooLargeError as exc:
        raise ToolError(
            "TOOL_108",
            f"'{relative}' is too large to read ({exc.strerror})",
            "work on smaller files; this one cannot be loaded by a tool",
        ) from None
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise
    except OSError as exc:
        raise ToolError(
            "TOOL_110",
            f"'{relative}' cannot be read: {exc.strerror or exc}",
            "leave this file alone and work on another",
        ) from None


def read_bytes(ctx: CapabilityContext, path: str) -> tuple[str, bytes]:
    """(normalised path, content) of an existing file."""
    relative = checked_path(ctx, path)
    try:
        return relative, store_read(ctx, relative)
    except (FileNotFoundError, NotADirectoryError):
        if not is_dir(ctx, relative):
            raise not_found(ctx, relative) from None
    except IsADirectoryError:
        pass
    raise ToolError("TOOL_103", f"'{relative}' is a directory", "call list_dir to see its files")


def decode_text(relative: str, data: bytes) -> str:
    """The text of a file's bytes (see the module docstring), or TOOL_102 for binary files
    and bytes that are not text in the file's encoding."""
    return _decoded(relative, data).text


def _decoded(relative: str, data: bytes) -> DecodedSource:
    if b"\x00" in data[:8192]:
        raise ToolError(
            "TOOL_102", f"'{relative}' is a binary file", "only text files can be read or edited"
        )
    python = is_python_path(relative)
    try:
        return decode_source(data, python=python)
    except SourceDecodeError as exc:
        hint = (
            "it can be read once it is UTF-8 or names its encoding in a coding line"
            if python
            else "only UTF-8 text files can be read or edited"
        )
        raise ToolError("TOOL_102", f"'{relative}' is {exc.message}", hint) from None


def read_text(ctx: CapabilityContext, path: str) -> tuple[str, str]:
    """(normalised path, text) of an existing text file."""
    relative, data = read_bytes(ctx, path)
    return relative, decode_text(relative, data)


def write_text(ctx: CapabilityContext, relative: str, text: str, *, bom: bool = False) -> None:
    """Store ``text`` at a checked path that is not a directory: a Python file in the
    encoding its coding line declares, anything else as UTF-8; behind a UTF-8 BOM if asked
    (and the encoding is UTF-8). TOOL_109 when the encoding cannot store the text."""
    if is_dir(ctx, relative):
        raise ToolError(
            "TOOL_103", f"'{relative}' is a directory", "give the path of a file inside it"
        )
    try:
        data = encode_source(text, bom=bom, python=is_python_path(relative))
    except SourceEncodeError as exc:
        raise ToolError(
            "TOOL_109",
            f"'{relative}' was not written: {exc.message}",
            "write that character as an escape inside a string ('\\u00e9'), leave it out, "
            "or keep to characters the file's encoding has",
        ) from None
    ctx.store.write(relative, data)


def read_source(ctx: CapabilityContext, path: str) -> tuple[str, str, bool]:
    """(normalised path, text, whether it had a UTF-8 BOM), for edits that must keep it;
    :func:`write_text` keeps any other encoding through the text's coding line."""
    relative, data = read_bytes(ctx, path)
    decoded = _decoded(relative, data)
    return relative, decoded.text, decoded.bom


def scan_text(ctx: CapabilityContext, relative: str) -> str | None:
    """The text of a file searched without being asked for (test files, call sites): decoded
    as :func:`decode_text` does, undecodable bytes replaced; None when it cannot be read
    (gone, no regular file, too large, unreadable), so a FIFO can never block a search."""
    try:
        data = store_read(ctx, relative)
    except (ToolError, OSError):
        return None
    try:
        return _decoded(relative, data).text
    except ToolError:
        return data.decode("utf-8", errors="replace").removeprefix("\ufeff")


def bounded_diff(relative: str, before: str, after: str, *, context: int = 3) -> str:
    """A unified diff of an edit to ``relative``, cut after ``DIFF_LIMIT`` characters."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        f"a/{relative}",
        f"b/{relative}",
        n=context,
    )
    text = "".join(lines)
    return text if len(text) <= DIFF_LIMIT else text[:DIFF_LIMIT] + "\n... (diff truncated)"


def walk_files(ctx: CapabilityContext, directory: str, suffixes: tuple[str, ...] = ()) -> list[str]:
    """Files under ``directory`` in the merged view, skipping hidden directories and caches."""
    found: list[str] = []
    for entry in list_entries(ctx, directory) or []:
        name = entry.rstrip("/")
        if name.startswith("."):
            continue
        full = posixpath.join(directory, name) if directory else name
        if entry.endswith("/"):
            if name not in _SKIPPED_DIRS and _inside(ctx, full):
                found.extend(walk_files(ctx, full, suffixes))
        elif (not suffixes or name.endswith(suffixes)) and _inside(ctx, full):
            found.append(full)
    return found


def _inside(ctx: CapabilityContext, relative: str) -> bool:
    """Whether ``relative`` stays inside the root (symlinks that leave it are skipped)."""
    try:
        resolve_inside(ctx.store.root, relative)
    except WorkspaceError:
        return False
    return True


def materialize(
    ctx: CapabilityContext, writable: Iterable[str] = ()
) -> AbstractContextManager[Path]:
    """The store's materialized view, in which the ``writable`` paths are real copies.

    The overlay builds views from symlinks into the project and makes the ``writable``
    paths real copies, so a subprocess writing there cannot reach the project.
    """
    return ctx.store.materialize(writable=sorted(set(writable)))
