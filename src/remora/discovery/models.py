"""What discovery produces: CSTNode (the contract every later layer uses) and problems."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from remora.config import NodeType


def make_node_id(relative_path: str, node_type: str, qualname: str, occurrence: int = 1) -> str:
    """First 16 hex digits of sha256(``path:type:qualname``).

    A qualname that occurs more than once in a file (a property and its setter, a
    function defined in both branches of an ``if``) gets ``#N`` appended from its
    second occurrence on, so ids stay unique and the first keeps the plain
    ``path:type:qualname`` id.
    """
    key = f"{relative_path}:{node_type}:{qualname}"
    if occurrence > 1:
        key += f"#{occurrence}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CSTNode(BaseModel):
    """One file, class, function or method, located in its file.

    ``text`` is whole lines from ``start_line`` to ``end_line`` (1-based, inclusive,
    decorators included) with indentation kept; ``start_byte``/``end_byte`` delimit it
    in the file's bytes (end excludes the final line terminator).
    """

    model_config = ConfigDict(frozen=True)

    node_id: str
    node_type: NodeType
    name: str
    qualname: str
    file_path: str = Field(description="POSIX path relative to the project root.")
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    text: str
    source_hash: str


class DiscoveryProblem(BaseModel):
    """Something discovery skipped or only partly understood; never fatal.

    Codes: DISC_101 syntax error (nodes outside the error region kept), DISC_102
    non-UTF-8 file, DISC_103 binary file, DISC_104 file over the size limit,
    DISC_105 unreadable file or directory, DISC_106 symlink loop, DISC_107 a file name that
    is not valid UTF-8.
    """

    model_config = ConfigDict(frozen=True)

    code: str
    path: str
    message: str
    line: int | None = None


class DiscoveryResult(BaseModel):
    root: Path
    files: int = 0
    nodes: list[CSTNode] = Field(default_factory=list)
    problems: list[DiscoveryProblem] = Field(default_factory=list)
