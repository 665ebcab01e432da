"""Three-way merge (diff3, line based) for accepting a workspace onto a project that moved on.

``base`` is what the workspace started from, ``theirs`` the project file now (the user's
edit, or another accepted workspace), ``ours`` the workspace's content. Regions of the
base unchanged on both sides are kept; a region changed on one side takes that side; a
region changed identically on both sides merges; different changes to the same region
conflict, like diff3 and git do. One refinement over plain diff3: when one side only
inserted lines right before or after a region the other side changed (a docstring added
under a ``def`` whose first body line lint rewrote), both are kept, insertion first or
last, instead of reporting a conflict.

Lines are compared without their line endings, so a CRLF file and an LF edit still line
up; the merged file uses the project file's line ending when it has one consistent style,
so CRLF files stay CRLF. Files containing NUL bytes are binary: they merge only when one
side is unchanged or both made the same change.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher

from pydantic import BaseModel, Field


class ConflictRegion(BaseModel):
    """Base lines ``start``..``end`` (1-based, inclusive) changed differently on both sides.

    ``end == start - 1`` marks an insertion point: both sides added different lines
    after line ``end``.
    """

    start: int
    end: int

    def describe(self) -> str:
        if self.end < self.start:
            return f"after line {self.end}" if self.end else "at the start of the file"
        if self.end == self.start:
            return f"line {self.start}"
        return f"lines {self.start}-{self.end}"


class MergeResult(BaseModel):
    """The merged bytes when clean; otherwise the conflicting regions."""

    clean: bool
    data: bytes | None = None
    conflicts: list[ConflictRegion] = Field(default_factory=list)
    binary: bool = False

    def describe(self) -> str:
        if self.binary:
            return "binary file changed on both sides"
        return ", ".join(region.describe() for region in self.conflicts)


def _key(line: bytes) -> bytes:
    return line.rstrip(b"\r\n")


def _uniform_eol(lines: Sequence[bytes]) -> bytes | None:
    endings = {line[len(_key(line)) :] for line in lines}
    endings.discard(b"")
    return endings.pop() if len(endings) == 1 else None


def _sync_regions(
    base: Sequence[bytes], ours: Sequence[bytes], theirs: Sequence[bytes]
) -> list[tuple[int, int, int, int]]:
    """Base ranges unchanged on both sides: (base_start, base_end, ours_start, theirs_start)."""
    ours_blocks = SequenceMatcher(None, base, ours, autojunk=False).get_matching_blocks()
    theirs_blocks = SequenceMatcher(None, base, theirs, autojunk=False).get_matching_blocks()
    regions: list[tuple[int, int, int, int]] = []
    i = j = 0
    while i < len(ours_blocks) and j < len(theirs_blocks):
        o_base, o_at, o_len = ours_blocks[i]
        t_base, t_at, t_len = theirs_blocks[j]
        start = max(o_base, t_base)
        end = min(o_base + o_len, t_base + t_len)
        if start < end:
            regions.append((start, end, o_at + start - o_base, t_at + start - t_base))
        if o_base + o_len < t_base + t_len:
            i += 1
        else:
            j += 1
    regions.append((len(base), len(base), len(ours), len(theirs)))
    return regions


def _finish(lines: list[bytes], theirs: Sequence[bytes]) -> bytes:
    style = _uniform_eol(theirs)
    last = len(lines) - 1
    out: list[bytes] = []
    for index, line in enumerate(lines):
        key = _key(line)
        ending = line[len(key) :]
        if ending or index < last:
            ending = style or ending or b"\n"
        out.append(key + ending)
    return b"".join(out)


def _insertion_around(
    base: list[bytes], inserting: list[bytes], changing: list[bytes]
) -> tuple[int, int] | None:
    """Lines ``inserting`` added before (prefix) and after (suffix) an unchanged ``base``.

    None unless ``inserting`` is exactly prefix + base + suffix with something inserted,
    and ``changing`` did not make the same insertion (that would duplicate it).
    """
    if not base or len(inserting) <= len(base):
        return None
    for prefix in range(len(inserting) - len(base) + 1):
        suffix = len(inserting) - len(base) - prefix
        if inserting[prefix : prefix + len(base)] != base:
            continue
        if prefix and changing[:prefix] == inserting[:prefix]:
            return None
        if suffix and changing[len(changing) - suffix :] == inserting[len(inserting) - suffix :]:
            return None
        return prefix, suffix
    return None


def _resolve(
    base: list[bytes],
    ours: list[bytes],
    theirs: list[bytes],
    ours_lines: list[bytes],
    theirs_lines: list[bytes],
) -> list[bytes] | None:
    """Merged lines of a chunk both sides changed, when one side only inserted around it."""
    around = _insertion_around(base, ours, theirs)
    if around is not None:
        prefix, suffix = around
        return [*ours_lines[:prefix], *theirs_lines, *ours_lines[len(ours_lines) - suffix :]]
    around = _insertion_around(base, theirs, ours)
    if around is not None:
        prefix, suffix = around
        return [*theirs_lines[:prefix], *ours_lines, *theirs_lines[len(theirs_lines) - suffix :]]
    return None


def merge3(base: bytes, theirs: bytes, ours: bytes) -> MergeResult:
    """Merge ``ours`` (the workspace) into ``theirs`` (the project now), both made from ``base``."""
    if theirs in (base, ours):
        return MergeResult(clean=True, data=ours)
    if ours == base:
        return MergeResult(clean=True, data=theirs)
    if any(b"\x00" in side for side in (base, theirs, ours)):
        return MergeResult(clean=False, binary=True)
    base_lines = base.splitlines(keepends=True)
    ours_lines = ours.splitlines(keepends=True)
    theirs_lines = theirs.splitlines(keepends=True)
    base_keys = [_key(line) for line in base_lines]
    ours_keys = [_key(line) for line in ours_lines]
    theirs_keys = [_key(line) for line in theirs_lines]

    merged: list[bytes] = []
    conflicts: list[ConflictRegion] = []
    b_at = o_at = t_at = 0
    for b_start, b_end, o_start, t_start in _sync_regions(base_keys, ours_keys, theirs_keys):
        base_chunk = base_keys[b_at:b_start]
        ours_chunk = ours_keys[o_at:o_start]
        theirs_chunk = theirs_keys[t_at:t_start]
        if ours_chunk == base_chunk:
            merged.extend(theirs_lines[t_at:t_start])
        elif theirs_chunk in (base_chunk, ours_chunk):
            merged.extend(ours_lines[o_at:o_start])
        else:
            resolved = _resolve(
                base_chunk,
                ours_chunk,
                theirs_chunk,
                ours_lines[o_at:o_start],
                theirs_lines[t_at:t_start],
            )
            if resolved is None:
                conflicts.append(ConflictRegion(start=b_at + 1, end=b_start))
            else:
                merged.extend(resolved)
        length = b_end - b_start
        merged.extend(theirs_lines[t_start : t_start + length])
        b_at, o_at, t_at = b_end, o_start + length, t_start + length
    if conflicts:
        return MergeResult(clean=False, conflicts=conflicts)
    return MergeResult(clean=True, data=_finish(merged, theirs_lines))
