"""Python source bytes as text, decoded the way Python decodes them (PEP 263, PEP 3120).

A UTF-8 byte order mark, or a coding line in the first two lines
(``# -*- coding: latin-1 -*-``), decides a Python file's encoding; without either it is
UTF-8. Discovery reads files with :func:`decode_source`, and the capabilities write them
back with :func:`encode_source`, which follows the coding line of the text being written,
so a latin-1 file stays latin-1 and never ends up with bytes its coding line contradicts.

Node positions are computed on the text's UTF-8 form; :class:`FileOffsets` maps them back
to offsets in the file's own bytes (exact for every stateless encoding, which covers the
encodings Python source is written in).
"""

from __future__ import annotations

import bisect
import codecs
import io
import tokenize
from dataclasses import dataclass, field

PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")
"""File names whose bytes are decoded by their coding line; other text is UTF-8."""

_UTF8 = "utf-8"
_UTF8_BOM = "utf-8-sig"


class SourceDecodeError(ValueError):
    """Bytes that are not text in the encoding they declare (or UTF-8, declaring none)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class SourceEncodeError(ValueError):
    """Text whose characters the encoding its coding line declares cannot store."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(frozen=True)
class DecodedSource:
    """A file's text and the codec that decoded it (``utf-8-sig`` when it has a BOM)."""

    text: str
    encoding: str

    @property
    def bom(self) -> bool:
        return self.encoding == _UTF8_BOM

    @property
    def utf8(self) -> bool:
        """Whether the file's bytes are the text's UTF-8 form (behind a BOM, maybe)."""
        return _canonical(self.encoding) in (_UTF8, _UTF8_BOM)


def is_python_path(path: str) -> bool:
    return path.endswith(PYTHON_SUFFIXES)


def decode_source(data: bytes, *, python: bool = True) -> DecodedSource:
    """``data`` as text: by its BOM and coding line when ``python``, else UTF-8 (BOM dropped).

    Raises SourceDecodeError saying which byte and line do not decode, or why the declared
    encoding cannot be used.
    """
    encoding = _detect(data) if python else _UTF8_BOM
    if encoding == _UTF8_BOM and not data.startswith(codecs.BOM_UTF8):
        encoding = _UTF8
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        if _canonical(encoding) in (_UTF8, _UTF8_BOM):
            declared = " and no coding line declares another encoding" if python else ""
            message = f"not UTF-8 (byte {exc.start}, line {line}){declared}"
        else:
            message = (
                f"not valid {_spelled(data) or encoding}, the encoding its coding line "
                f"declares (byte {exc.start}, line {line})"
            )
        raise SourceDecodeError(message, line) from None
    return DecodedSource(text, encoding)


def encode_source(text: str, *, bom: bool = False, python: bool = True) -> bytes:
    """The bytes of ``text`` in the encoding its own coding line declares (when ``python``),
    else UTF-8; a BOM is kept when asked for and the encoding is UTF-8.

    Raises SourceEncodeError naming the first character the declared encoding cannot
    store, or an unknown declared encoding.
    """
    encoding = _declared(text) if python else _UTF8
    declared = _canonical(encoding) not in (_UTF8, _UTF8_BOM)
    if not declared:
        encoding = _UTF8_BOM if bom else _UTF8
    try:
        return text.encode(encoding)
    except UnicodeEncodeError as exc:
        line = text.count("\n", 0, exc.start) + 1
        char = text[exc.start]
        name = _spelled(text.encode(_UTF8, "surrogatepass")) or encoding
        which = f"{name}, the encoding its coding line declares," if declared else "UTF-8"
        raise SourceEncodeError(
            f"the text has {char!r} (U+{ord(char):04X}) on line {line}, which {which} cannot store",
            line,
        ) from None


def _detect(data: bytes) -> str:
    """The codec Python would decode ``data`` with (``tokenize.detect_encoding``)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return _detect_problem(data, str(exc.msg))
    return encoding


def _detect_problem(data: bytes, reason: str) -> str:
    """UTF-8 for a first line that is merely not UTF-8 (decoding then says where), else
    the reason the declared encoding cannot be used."""
    line = 1 if b"coding" in data.split(b"\n", 1)[0] else 2
    if reason.startswith("unknown encoding"):
        name = reason.partition(":")[2].strip()
        raise SourceDecodeError(f"its coding line declares an unknown encoding '{name}'", line)
    if reason.startswith("encoding problem"):
        raise SourceDecodeError("it has a UTF-8 byte order mark but declares another encoding", 1)
    return _UTF8


def _declared(text: str) -> str:
    """The encoding ``text``'s coding line declares (UTF-8 without one)."""
    head = "\n".join(text.split("\n", 2)[:2]).encode(_UTF8, "surrogatepass")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(head).readline)
    except SyntaxError as exc:
        reason = str(exc.msg)
        if reason.startswith("unknown encoding"):
            name = reason.partition(":")[2].strip()
            raise SourceEncodeError(
                f"its coding line declares an unknown encoding '{name}'", 1
            ) from None
        return _UTF8
    return encoding


def _spelled(data: bytes) -> str | None:
    """The encoding's name as the coding line in the first two lines writes it."""
    for line in data.split(b"\n", 2)[:2]:
        match = tokenize.cookie_re.match(line.decode("latin-1"))
        if match:
            return match.group(1)
    return None


def _canonical(encoding: str) -> str:
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        return encoding


@dataclass
class FileOffsets:
    """Maps offsets in a text's UTF-8 form to offsets in the file's bytes.

    For a UTF-8 file that is only the BOM's length; for another encoding each line's
    start is recorded in both forms and the rest of a line is re-encoded.
    """

    source: DecodedSource
    body: bytes
    """The text's UTF-8 form (what the parser reads)."""
    _shift: int | None = None
    _utf8_starts: list[int] = field(default_factory=list)
    _file_starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.source.utf8:
            self._shift = len(codecs.BOM_UTF8) if self.source.bom else 0
            return
        utf8_at = file_at = 0
        for line in self.source.text.splitlines(keepends=True):
            self._utf8_starts.append(utf8_at)
            self._file_starts.append(file_at)
            utf8_at += len(line.encode(_UTF8, "surrogatepass"))
            file_at += len(line.encode(self.source.encoding, "replace"))

    def file_offset(self, utf8_offset: int) -> int:
        if self._shift is not None:
            return utf8_offset + self._shift
        if not self._utf8_starts:
            return 0
        index = bisect.bisect_right(self._utf8_starts, utf8_offset) - 1
        start = self._utf8_starts[index]
        partial = self.body[start:utf8_offset].decode(_UTF8, "replace")
        return self._file_starts[index] + len(partial.encode(self.source.encoding, "replace"))
