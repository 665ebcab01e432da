"""Source files are read the way Python reads them (BOM, PEP 263 coding line) and written back
in the encoding they declare: by discovery, and by the capabilities' shared read/write helpers.

A latin-1 file with ``# -*- coding: latin-1 -*-`` used to be rejected as "not UTF-8"; now its
nodes are found, node offsets count the file's own bytes, and an edit keeps it latin-1. Text
the declared encoding cannot store is a coded error for the model, never a crash or a file
whose bytes contradict its coding line.
"""

from __future__ import annotations

import ast
import codecs
from pathlib import Path

import pytest

from remora.config import DiscoveryConfig
from remora.discovery import discover
from remora.discovery.encoding import (
    SourceDecodeError,
    SourceEncodeError,
    decode_source,
    encode_source,
)
from remora.discovery.parser import load_query_pack, parse_source
from remora.errors import ToolError
from remora.operations.docstring.docstrings import docstring_set
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.files import node_source, read_file, write_file
from remora.tools.capabilities.store_io import read_source, read_text, scan_text, write_text
from tests.stores import capability_context, write_tree

PACK = load_query_pack(("core",))

LATIN1 = (
    "# -*- coding: latin-1 -*-\n"
    '"""Café menu."""\n'
    "PRICE = 'crème brûlée'\n"
    "\n"
    "\n"
    "class Menu:\n"
    "    def déjà(self):\n"
    "        return 'à la carte'\n"
    "\n"
    "\n"
    "def naïve(x):\n"
    "    return x + 'é'\n"
).encode("latin-1")

SHIFT_JIS = (
    "#!/usr/bin/env python\n# vim: set fileencoding=shift_jis :\n"
    "NAME = '日本語のテキスト'\n\ndef 関数():\n    return '値'\n"
).encode("shift_jis")


def definitions(data: bytes) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of every definition, as ``ast`` sees the bytes."""
    found = []
    for node in ast.walk(ast.parse(data)):
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            assert node.end_lineno is not None
            found.append((node.name, node.lineno, node.end_lineno))
    return sorted(found)


@pytest.mark.parametrize(
    ("data", "encoding"), [(LATIN1, "latin-1"), (SHIFT_JIS, "shift_jis")], ids=["latin1", "sjis"]
)
def test_discovery_reads_a_declared_encoding_like_python(data: bytes, encoding: str) -> None:
    nodes, problems = parse_source(data, "menu.py", PACK)
    assert problems == []
    file_node, *defs = nodes
    assert file_node.node_type == "file"
    assert file_node.text == data.decode(encoding)
    assert (file_node.start_byte, file_node.end_byte) == (0, len(data))
    assert sorted((n.name, n.start_line, n.end_line) for n in defs) == definitions(data)
    for node in nodes:
        assert data[node.start_byte : node.end_byte].decode(encoding) == node.text


def test_offsets_count_the_bytes_after_a_bom() -> None:
    data = codecs.BOM_UTF8 + "def é():\n    return 'ü'\n".encode()
    nodes, problems = parse_source(data, "bom.py", PACK)
    assert problems == []
    assert [(n.node_type, n.start_byte, n.end_byte) for n in nodes] == [
        ("file", 3, len(data)),
        ("function", 3, len(data) - 1),
    ]
    assert data[nodes[1].start_byte : nodes[1].end_byte].decode() == nodes[1].text


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"x = '\xe9'\n", ["not UTF-8", "line 1", "no coding line"]),
        (b"# coding: ascii\nx = '\xe9'\n", ["not valid ascii", "line 2"]),
        (b"# coding: klingon\nx = 1\n", ["unknown encoding 'klingon'"]),
        (codecs.BOM_UTF8 + b"# coding: latin-1\nx = 1\n", ["byte order mark"]),
        (b"x = 1\n# coding: latin-1\nname = '\xe9'\n", ["not UTF-8", "line 3"]),
    ],
    ids=["no-cookie", "ascii", "unknown", "bom-conflict", "cookie-too-late"],
)
def test_undecodable_sources_are_a_disc_102_that_says_why(data: bytes, words: list[str]) -> None:
    nodes, problems = parse_source(data, "bad.py", PACK)
    assert nodes == []
    assert [p.code for p in problems] == ["DISC_102"]
    for word in words:
        assert word in problems[0].message
    assert problems[0].render().startswith("DISC_102: bad.py")
    assert "coding" in (problems[0].hint or "")


def test_a_walk_keeps_declared_encodings_and_skips_undecodable_files(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "proj",
        {"pyproject.toml": "", "menu.py": LATIN1, "jp.py": SHIFT_JIS, "bad.py": b"x = '\xe9'\n"},
    )
    before = {p.name: p.read_bytes() for p in root.iterdir()}
    result = discover([root], DiscoveryConfig())
    assert result.files == 2
    assert sorted(n.file_path for n in result.nodes if n.node_type == "file") == [
        "jp.py",
        "menu.py",
    ]
    assert [(p.path, p.code) for p in result.problems] == [("bad.py", "DISC_102")]
    assert {p.name: p.read_bytes() for p in root.iterdir()} == before


def test_encode_follows_the_coding_line_of_the_new_text() -> None:
    assert encode_source("# coding: latin-1\nx = 'é'\n") == "# coding: latin-1\nx = 'é'\n".encode(
        "latin-1"
    )
    assert encode_source("x = 'é'\n", bom=True) == codecs.BOM_UTF8 + "x = 'é'\n".encode()
    assert encode_source("# coding: latin-1\nx = 'é'\n", python=False) == (
        "# coding: latin-1\nx = 'é'\n".encode()
    )
    with pytest.raises(SourceEncodeError) as info:
        encode_source("# coding: latin-1\nx = '€'\n")
    assert "'€'" in info.value.message and "line 2" in info.value.message
    assert "latin-1" in info.value.message
    with pytest.raises(SourceEncodeError):
        encode_source("# coding: klingon\n")
    with pytest.raises(SourceEncodeError) as lone:
        encode_source("x = '\ud800'\n")
    assert "UTF-8" in lone.value.message
    for data in (LATIN1, SHIFT_JIS, codecs.BOM_UTF8 + b"x = 1\n", b"plain = 1\n"):
        decoded = decode_source(data)
        assert encode_source(decoded.text, bom=decoded.bom) == data
    with pytest.raises(SourceDecodeError):
        decode_source(b"\xff\xfe", python=False)


# --- the capabilities' shared helpers -------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": "[project]\nname = 'p'\n",
            "menu.py": LATIN1,
            "notes.txt": b"# coding: latin-1\ncaf\xe9\n",
            "bom.py": codecs.BOM_UTF8 + b"def f():\n    return 1\n",
        },
    )


@pytest.fixture
def ctx(project: Path) -> CapabilityContext:
    return capability_context(project)


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".remora" not in p.parts
    }


def test_reads_decode_a_python_file_by_its_coding_line(
    project: Path, ctx: CapabilityContext
) -> None:
    before = snapshot(project)
    assert read_file(ctx, "menu.py") == LATIN1.decode("latin-1")
    assert read_text(ctx, "menu.py")[1] == LATIN1.decode("latin-1")
    assert read_source(ctx, "bom.py") == ("bom.py", "def f():\n    return 1\n", True)
    assert node_source(ctx, "menu.py", "naïve")["text"] == "def naïve(x):\n    return x + 'é'"
    assert scan_text(ctx, "menu.py") == LATIN1.decode("latin-1")
    with pytest.raises(ToolError) as info:
        read_file(ctx, "notes.txt")
    assert info.value.code == "TOOL_102" and "not UTF-8" in info.value.message
    assert scan_text(ctx, "notes.txt") == "# coding: latin-1\ncaf\ufffd\n"
    assert snapshot(project) == before


def test_an_edit_writes_a_latin1_file_back_in_latin1(project: Path, ctx: CapabilityContext) -> None:
    before = snapshot(project)
    result = docstring_set(ctx, "menu.py", "naïve", "Return x with an accent (é).")
    assert result["action"] in ("inserted", "replaced")
    stored = ctx.store.read("menu.py")
    text = stored.decode("latin-1")
    assert text.startswith("# -*- coding: latin-1 -*-\n")
    assert "Return x with an accent (é)." in text
    assert [name for name, _, _ in definitions(stored)] == ["Menu", "déjà", "naïve"]
    assert read_file(ctx, "menu.py") == text
    assert snapshot(project) == before


def test_text_the_declared_encoding_cannot_store_is_tool_109(
    project: Path, ctx: CapabilityContext
) -> None:
    before = snapshot(project)
    with pytest.raises(ToolError) as info:
        docstring_set(ctx, "menu.py", "naïve", "Return x in euros (€).")
    assert info.value.code == "TOOL_109"
    assert "menu.py" in info.value.message and "'€'" in info.value.message
    assert "latin-1" in info.value.message and info.value.hint
    with pytest.raises(ToolError) as written:
        write_file(ctx, "menu.py", LATIN1.decode("latin-1") + "EURO = '€'\n")
    assert written.value.code == "TOOL_109"
    assert ctx.store.read("menu.py") == LATIN1
    assert "menu.py" not in ctx.store.changed_paths()
    assert snapshot(project) == before


def test_a_new_coding_line_decides_how_a_file_is_written(
    project: Path, ctx: CapabilityContext
) -> None:
    before = snapshot(project)
    write_text(ctx, "new.py", "# coding: cp1252\nEURO = '€'\n")
    assert ctx.store.read("new.py") == "# coding: cp1252\nEURO = '€'\n".encode("cp1252")
    write_text(ctx, "menu.py", "CAFE = 'café'\n")
    assert ctx.store.read("menu.py") == "CAFE = 'café'\n".encode()
    write_text(ctx, "bom.py", "x = 'é'\n", bom=True)
    assert ctx.store.read("bom.py") == codecs.BOM_UTF8 + "x = 'é'\n".encode()
    write_text(ctx, "plain.txt", "# coding: latin-1\né\n")
    assert ctx.store.read("plain.txt") == "# coding: latin-1\né\n".encode()
    assert snapshot(project) == before
