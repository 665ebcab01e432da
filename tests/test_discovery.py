"""Discovery on tricky sources and trees: what it finds, what it reports, what it never does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import remora.discovery as discovery
from remora.config import DiscoveryConfig
from remora.discovery import CSTNode, discover, find_project_root, make_node_id
from remora.discovery.parser import load_query_pack, parse_source
from remora.errors import DiscoveryError
from remora.regular_files import read_regular_file
from tests.stores import write_tree

PACK = load_query_pack(("core",))


def nodes_of(source: str | bytes, path: str = "mod.py") -> list[CSTNode]:
    data = source.encode("utf-8") if isinstance(source, str) else source
    nodes, problems = parse_source(data, path, PACK)
    assert not problems, problems
    return nodes


def summary(nodes: list[CSTNode]) -> list[tuple[str, str, int, int]]:
    return [(n.node_type, n.qualname, n.start_line, n.end_line) for n in nodes]


TRICKY = '''\
import functools


@functools.cache
def top(a, b=1):
    """Doc."""
    return a + b


class Outer:
    class Inner:
        def method(self):
            def helper():
                return 1
            return helper()

    @staticmethod
    async def fetch(url):
        await something(url)
        # trailing comment inside the body

    @property
    def size(self):
        return 1

    @size.setter
    def size(self, value):
        pass


square = lambda x: x * x
handler = (lambda: None)


async def main():
    async with ctx() as c:
        pass
'''


def test_tricky_file_shapes() -> None:
    nodes = nodes_of(TRICKY)
    assert summary(nodes) == [
        ("file", "mod.py", 1, 37),
        ("function", "top", 4, 7),
        ("class", "Outer", 10, 28),
        ("class", "Outer.Inner", 11, 15),
        ("method", "Outer.Inner.method", 12, 15),
        ("function", "Outer.Inner.method.helper", 13, 14),
        ("method", "Outer.fetch", 17, 19),
        ("method", "Outer.size", 22, 24),
        ("method", "Outer.size", 26, 28),
        ("function", "main", 35, 37),
    ]


def test_decorators_are_part_of_the_text_and_lines_are_whole() -> None:
    nodes = {n.qualname: n for n in nodes_of(TRICKY) if n.qualname in ("top", "Outer.fetch")}
    assert nodes["top"].text.startswith("@functools.cache\ndef top(a, b=1):")
    assert nodes["top"].text.endswith("return a + b")
    fetch = nodes["Outer.fetch"].text
    assert fetch.startswith("    @staticmethod\n    async def fetch(url):")
    assert "trailing comment" not in fetch


def test_byte_offsets_delimit_the_text() -> None:
    source = TRICKY.encode()
    for node in nodes_of(TRICKY):
        assert source[node.start_byte : node.end_byte].decode() == node.text


def test_duplicate_qualnames_get_distinct_stable_ids() -> None:
    sizes = [n for n in nodes_of(TRICKY) if n.qualname == "Outer.size"]
    assert len({n.node_id for n in sizes}) == 2
    assert sizes[0].node_id == make_node_id("mod.py", "method", "Outer.size")


def test_node_ids_survive_edits_elsewhere_in_the_file() -> None:
    before = {n.qualname: n for n in nodes_of(TRICKY)}
    edited = TRICKY.replace("return a + b", "total = a + b\n    return total * 2")
    edited = "# a new header comment\n\n" + edited
    after = {n.qualname: n for n in nodes_of(edited)}
    assert before.keys() == after.keys()
    for qualname in before:
        assert before[qualname].node_id == after[qualname].node_id
    assert before["top"].source_hash != after["top"].source_hash
    assert before["main"].source_hash == after["main"].source_hash
    assert after["main"].start_line == before["main"].start_line + 3


def test_crlf_and_tabs() -> None:
    source = "class A:\r\n\tdef f(self):\r\n\t\treturn 1\r\n\r\ndef g():\r\n\tpass\r\n"
    nodes = nodes_of(source)
    assert summary(nodes) == [
        ("file", "mod.py", 1, 6),
        ("class", "A", 1, 3),
        ("method", "A.f", 2, 3),
        ("function", "g", 5, 6),
    ]
    method = nodes[2]
    assert method.text == "\tdef f(self):\r\n\t\treturn 1"


def test_utf8_bom_and_non_ascii_names() -> None:
    source = "\ufeffdef café():\n    return 'é'\n"
    nodes = nodes_of(source.encode("utf-8"))
    function = nodes[1]
    assert function.name == "café"
    assert function.text == "def café():\n    return 'é'"
    assert source.encode()[function.start_byte : function.end_byte].decode() == function.text


def test_syntax_error_keeps_nodes_outside_the_error_region() -> None:
    source = "def good():\n    return 1\n\ndef broken(:\n    pass\n\nclass Fine:\n    x = 1\n"
    nodes, problems = parse_source(source.encode(), "bad.py", PACK)
    names = [n.qualname for n in nodes]
    assert "good" in names and "Fine" in names
    assert "broken" not in names
    assert [(n.node_type, n.qualname) for n in nodes if n.node_type == "file"] == [
        ("file", "bad.py")
    ]
    assert [(p.code, p.line) for p in problems] == [("DISC_101", 4)]


def test_non_utf8_is_reported_not_parsed() -> None:
    nodes, problems = parse_source(b"def f():\n    return '\xe9'\n", "latin.py", PACK)
    assert nodes == []
    assert problems[0].code == "DISC_102"
    assert problems[0].line == 2


def test_empty_file_is_a_file_node() -> None:
    assert summary(nodes_of("")) == [("file", "mod.py", 1, 1)]


def test_node_type_filter() -> None:
    nodes, _ = parse_source(TRICKY.encode(), "mod.py", PACK, frozenset({"method"}))
    assert {n.node_type for n in nodes} == {"method"}


# --- walking trees -------------------------------------------------------------------------


def files_found(result_nodes: list[CSTNode]) -> list[str]:
    return sorted(n.file_path for n in result_nodes if n.node_type == "file")


def test_walk_honours_gitignore_and_default_ignores(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname='p'\n",
            ".gitignore": "generated/\n*_pb2.py\n",
            "pkg/__init__.py": "",
            "pkg/core.py": "def f():\n    pass\n",
            "pkg/api_pb2.py": "def g():\n    pass\n",
            "pkg/sub/.gitignore": "local.py\n",
            "pkg/sub/local.py": "x = 1\n",
            "pkg/sub/kept.py": "x = 1\n",
            "generated/out.py": "x = 1\n",
            ".venv/lib/site.py": "x = 1\n",
            "env311/pyvenv.cfg": "home = /usr/bin\n",
            "env311/lib/site.py": "x = 1\n",
            "tools/venv/__init__.py": "x = 1\n",
            "build/lib/copy.py": "x = 1\n",
            "pkg/__pycache__/core.py": "x = 1\n",
            "node_modules/x.py": "x = 1\n",
            "pkg.egg-info/x.py": "x = 1\n",
            "notes.txt": "not python",
        },
    )
    result = discover([tmp_path])
    assert files_found(result.nodes) == [
        "pkg/__init__.py",
        "pkg/core.py",
        "pkg/sub/kept.py",
        "tools/venv/__init__.py",
    ]
    assert result.problems == []


def test_gitignore_of_ancestors_applies_to_a_subdirectory_target(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {".gitignore": "skip_me.py\n", "setup.py": "", "pkg/skip_me.py": "", "pkg/ok.py": ""},
    )
    result = discover([tmp_path / "pkg"])
    assert files_found(result.nodes) == ["pkg/ok.py"]


def test_gitignore_can_be_turned_off_and_extra_ignores_added(tmp_path: Path) -> None:
    write_tree(tmp_path, {".gitignore": "a.py\n", "setup.py": "", "a.py": "", "b.py": ""})
    config = DiscoveryConfig(respect_gitignore=False, ignore=["b.py", "setup.py"])
    assert files_found(discover([tmp_path], config).nodes) == ["a.py"]


def test_explicit_file_is_used_even_when_ignored(tmp_path: Path) -> None:
    write_tree(tmp_path, {".gitignore": "a.py\n", "setup.py": "", "a.py": "def f(): pass\n"})
    result = discover([tmp_path / "a.py"])
    assert [n.qualname for n in result.nodes] == ["a.py", "f"]


def test_bad_files_are_reported_and_good_ones_kept(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "setup.py": "",
            "good.py": "def ok():\n    return 1\n",
            "latin.py": b"name = '\xe9'\n",
            "blob.py": b"\x00\x01\x02binary",
            "huge.py": "x = 1\n" * 50,
            "broken.py": "def f(:\n",
        },
    )
    result = discover([tmp_path], DiscoveryConfig(max_file_bytes=200))
    codes = {(p.path, p.code) for p in result.problems}
    assert codes == {
        ("latin.py", "DISC_102"),
        ("blob.py", "DISC_103"),
        ("huge.py", "DISC_104"),
        ("broken.py", "DISC_101"),
    }
    assert "ok" in [n.qualname for n in result.nodes]


def test_unreadable_file_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_tree(tmp_path, {"setup.py": "", "secret.py": "x = 1\n", "open.py": "y = 2\n"})

    def read(path: Path, limit: int, name: str | None = None) -> bytes:
        if path.name == "secret.py":
            raise PermissionError(13, "Permission denied")
        return read_regular_file(path, limit, name)

    monkeypatch.setattr(discovery, "read_regular_file", read)
    result = discover([tmp_path])
    assert [(p.path, p.code) for p in result.problems] == [("secret.py", "DISC_105")]
    assert "open.py" in files_found(result.nodes)


def test_fifo_named_like_python_is_not_read(tmp_path: Path) -> None:
    write_tree(tmp_path, {"setup.py": ""})
    os.mkfifo(tmp_path / "pipe.py")
    assert files_found(discover([tmp_path]).nodes) == ["setup.py"]


def test_symlink_loop_is_reported_when_following_links(tmp_path: Path) -> None:
    write_tree(tmp_path, {"setup.py": "", "pkg/mod.py": "def f():\n    pass\n"})
    (tmp_path / "pkg" / "again").symlink_to(tmp_path / "pkg", target_is_directory=True)
    (tmp_path / "pkg" / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    result = discover([tmp_path], DiscoveryConfig(follow_symlinks=True))
    assert files_found(result.nodes) == ["pkg/mod.py", "setup.py"]
    codes = sorted((p.path, p.code) for p in result.problems)
    assert codes == [("pkg/again", "DISC_106"), ("pkg/dangling.py", "DISC_106")]


def test_symlinks_are_not_followed_by_default(tmp_path: Path) -> None:
    write_tree(tmp_path, {"setup.py": "", "pkg/mod.py": "", "outside/x.py": ""})
    (tmp_path / "pkg" / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    result = discover([tmp_path / "pkg"], root=tmp_path)
    assert files_found(result.nodes) == ["pkg/mod.py"]
    assert result.problems == []


def test_missing_target_and_non_python_file(tmp_path: Path) -> None:
    with pytest.raises(DiscoveryError) as caught:
        discover([tmp_path / "absent"])
    assert caught.value.code == "DISC_001"
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(DiscoveryError) as caught:
        discover([tmp_path / "notes.txt"])
    assert caught.value.code == "DISC_002"


def test_unknown_query_pack(tmp_path: Path) -> None:
    with pytest.raises(DiscoveryError) as caught:
        discover([tmp_path], DiscoveryConfig(query_packs=["nope"]))
    assert caught.value.code == "DISC_003"


def test_user_query_pack_directory(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    query = "(class_definition name: (identifier) @class.name) @class.def"
    (pack / "classes.scm").write_text(query)
    write_tree(tmp_path / "proj", {"setup.py": "", "m.py": "class A:\n    def f(self): pass\n"})
    result = discover([tmp_path / "proj"], DiscoveryConfig(query_packs=[str(pack)]))
    assert summary(result.nodes) == [("class", "A", 1, 2)]


def test_query_pack_with_bad_capture_name(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "x.scm").write_text("(class_definition name: (identifier) @klass) @class.def")
    with pytest.raises(DiscoveryError) as caught:
        discover([tmp_path], DiscoveryConfig(query_packs=[str(pack)]))
    assert caught.value.code == "DISC_003"
    assert "@klass" in caught.value.message


def test_project_root_detection(tmp_path: Path) -> None:
    write_tree(tmp_path, {"proj/pyproject.toml": "", "proj/src/pkg/m.py": ""})
    assert find_project_root(tmp_path / "proj" / "src" / "pkg" / "m.py") == tmp_path / "proj"
    assert find_project_root(tmp_path / "proj" / "src") == tmp_path / "proj"


def test_sample_project_is_discovered() -> None:
    sample = Path(__file__).parent.parent / "examples" / "sample_project"
    result = discover([sample])
    assert result.root == sample.resolve()
    qualnames = {n.qualname for n in result.nodes}
    assert {"Warehouse.remove", "apply_discount", "ReportWriter.write"} <= qualnames
    assert result.problems == []


def test_a_file_qualname_target_selects_that_node_and_its_members(tmp_path: Path) -> None:
    source = "def a():\n    return 1\n\n\nclass K:\n    def m(self):\n        return 2\n"
    project = write_tree(tmp_path, {"pyproject.toml": "", "m.py": source, "n.py": source})
    picked = discover([project / "m.py::K", project / "n.py"], root=project)
    assert sorted((n.file_path, n.qualname) for n in picked.nodes if n.file_path == "m.py") == [
        ("m.py", "K"),
        ("m.py", "K.m"),
    ]
    assert len([n for n in picked.nodes if n.file_path == "n.py"]) == 4  # file, a, K, K.m
    method = discover([project / "m.py::K::m"], root=project)
    assert [n.qualname for n in method.nodes] == ["K.m"]
    with pytest.raises(DiscoveryError, match=r"DISC_004.*no function, class or method named 'z'"):
        discover([project / "m.py::z"], root=project)


def test_a_selector_without_members_is_only_its_node(tmp_path: Path) -> None:
    source = "class K:\n    def m(self):\n        return 2\n"
    project = write_tree(tmp_path, {"pyproject.toml": "", "m.py": source, "n.py": source})
    picked = discover([project / "m.py::K", project / "n.py"], root=project, members=False)
    assert sorted((n.file_path, n.qualname) for n in picked.nodes if n.file_path == "m.py") == [
        ("m.py", "K")
    ]
    assert len([n for n in picked.nodes if n.file_path == "n.py"]) == 3  # file, K, K.m
