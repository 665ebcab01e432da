"""What discovery produces: CSTNode (the contract every later layer uses) and problems."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
    decorators included) with indentation kept, decoded as Python decodes the file (its
    BOM or PEP 263 coding line; UTF-8 otherwise). ``start_byte``/``end_byte`` delimit it
    in the file's own bytes on disk: after a UTF-8 BOM, in the file's declared encoding
    (a latin-1 file's offsets count latin-1 bytes), the end excluding the final line
    terminator. So ``data[start_byte:end_byte].decode(encoding) == text``; ``len(text)``
    counts characters and may differ from ``end_byte - start_byte``.
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


PROBLEM_HINTS = {
    "DISC_101": "fix it to have every definition in the file found",
    "DISC_102": "save it as UTF-8, or name its encoding in a coding line such as "
    "'# -*- coding: latin-1 -*-'",
    "DISC_103": "add it to discovery.ignore to silence this",
    "DISC_104": "raise discovery.max_file_bytes to read it, or add it to discovery.ignore",
    "DISC_105": "only regular files and readable directories are read; check its type and "
    "permissions",
    "DISC_106": "fix or remove the link",
    "DISC_107": "rename it to a UTF-8 name",
    "DISC_108": "raise discovery.parse_timeout, or add it to discovery.ignore",
}
"""The hint of each problem code, used when a problem names no hint of its own."""


class DiscoveryProblem(BaseModel):
    """Something discovery skipped or only partly understood; never fatal.

    Codes: DISC_101 syntax error (the file node and the definitions outside the error
    region kept), DISC_102 not decodable (not UTF-8 and no PEP 263 coding line declaring
    what it is, or not valid in the encoding declared), DISC_103 binary file, DISC_104 file
    over ``discovery.max_file_bytes``, DISC_105 unreadable file or directory (or not a
    regular file), DISC_106 symlink loop, DISC_107 a file name that is not valid UTF-8,
    DISC_108 parsing and querying the file took longer than ``discovery.parse_timeout``
    (only its file node kept). Files with DISC_102-105 are skipped: they have no node and
    are not counted in ``DiscoveryResult.files``.
    """

    model_config = ConfigDict(frozen=True)

    code: str
    path: str
    message: str
    line: int | None = None
    hint: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _default_hint(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("hint") is None:
            return {**data, "hint": PROBLEM_HINTS.get(str(data.get("code")))}
        return data

    def render(self) -> str:
        """The one-line form users see: ``CODE: path:line: message (hint)``."""
        where = f"{self.path}:{self.line}" if self.line else self.path
        text = f"{self.code}: {where}: {self.message}"
        return f"{text} ({self.hint})" if self.hint else text


class DiscoveryResult(BaseModel):
    root: Path
    files: int = Field(
        default=0,
        description="Python files read and parsed; files skipped for a problem are not counted.",
    )
    nodes: list[CSTNode] = Field(default_factory=list)
    problems: list[DiscoveryProblem] = Field(default_factory=list)
