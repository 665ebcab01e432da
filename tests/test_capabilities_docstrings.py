"""docstring_get / docstring_set with libcst: styles, placement, comments and formatting kept."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remora.errors import ToolError
from remora.operations.docstring._format import DocstringContent, parse_docstring, render
from remora.operations.docstring.docstrings import docstring_get, docstring_set
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.files import read_file
from tests.stores import capability_context, write_tree

SOURCE = '''#!/usr/bin/env python
# Licence header stays first.
import os  # why os


class Box:
    # comment above the method
    def resize(self, width: int, height=2, *rest, **opts) -> "Box":  # keep me
        # body comment
        if width < 0:
            raise ValueError("width must be positive")
        return self

    def one(self): return 1

    class Inner:
        def deep(self, x):
            """Old summary.

            Args:
                x: The x value, documented before.

            Examples:
                >>> Box.Inner().deep(1)
            """
            return x


def numbers(n: int) -> "Iterator[int]":
    yield from range(n)


def tabbed(a):
\tif a:
\t\treturn a
'''


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    root = write_tree(tmp_path / "proj", {"box.py": SOURCE})
    return capability_context(root, {"options": {"style": "google"}})


def _docstring(ctx: CapabilityContext, qualname: str) -> str | None:
    tree = ast.parse(read_file(ctx, "box.py"))
    node: ast.AST = tree
    for part in qualname.split(".") if qualname else []:
        node = next(
            n
            for n in ast.iter_child_nodes(node)
            if isinstance(n, ast.ClassDef | ast.FunctionDef) and n.name == part
        )
    assert isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
    return ast.get_docstring(node)


def _untouched_lines(before: str, after: str) -> bool:
    """Every line of ``before`` still appears, in order, in ``after``."""
    remaining = iter(after.splitlines())
    return all(any(line == other for other in remaining) for line in before.splitlines())


def test_google_docstring_built_from_signature_and_body(ctx: CapabilityContext) -> None:
    result = docstring_set(
        ctx, "box.py", "Box.resize", "resize the box", params={"width": "new width in px"}
    )
    assert result["action"] == "inserted" and result["style"] == "google"
    # Nothing is made up: what no one described is left out and listed; the raise
    # statement's message describes the exception.
    assert result["undescribed"] == ["height", "rest", "opts", "return"]
    assert _docstring(ctx, "Box.resize") == (
        "Resize the box.\n\n"
        "Args:\n"
        "    width: New width in px.\n\n"
        "Raises:\n"
        "    ValueError: Width must be positive."
    )
    text = read_file(ctx, "box.py")
    assert _untouched_lines(SOURCE, text)
    assert '        """Resize the box.\n\n        Args:\n' in text
    assert text.index('"""Resize') < text.index("# body comment")
    assert "+        Args:" in result["diff"]
    assert (ctx.store.root / "box.py").read_text() == SOURCE
    described = docstring_set(
        ctx,
        "box.py",
        "Box.resize",
        "resize the box",
        params={"height": "new height", "*rest": "more sizes", "**opts": "drawing options"},
        returns="this box, resized",
    )
    assert described["action"] == "replaced" and described["undescribed"] == []
    assert _docstring(ctx, "Box.resize") == (
        "Resize the box.\n\n"
        "Args:\n"
        "    width: New width in px.\n"
        "    height: New height.\n"
        "    *rest: More sizes.\n"
        "    **opts: Drawing options.\n\n"
        "Returns:\n"
        "    Box: This box, resized.\n\n"
        "Raises:\n"
        "    ValueError: Width must be positive."
    )


def test_a_long_summary_stays_on_one_line(ctx: CapabilityContext) -> None:
    summary = "Resize the box to the given width and height, keeping its other settings unchanged"
    assert 80 < len(summary) < 100  # under the agent's limit, over the line left for it
    docstring_set(ctx, "box.py", "Box.resize", summary)
    docstring = _docstring(ctx, "Box.resize")
    assert docstring is not None and docstring.splitlines()[:2] == [summary + ".", ""]


def test_numpy_and_sphinx_styles(ctx: CapabilityContext) -> None:
    bare = docstring_set(ctx, "box.py", "numbers", "Count up.", style="numpy")
    assert bare["undescribed"] == ["n", "yield"]
    assert _docstring(ctx, "numbers") == "Count up."
    docstring_set(
        ctx,
        "box.py",
        "numbers",
        "Count up.",
        style="numpy",
        params={"n": "how many numbers"},
        returns="each number from zero",
    )
    assert _docstring(ctx, "numbers") == (
        "Count up.\n\nParameters\n----------\nn : int\n    How many numbers.\n\n"
        "Yields\n------\nint\n    Each number from zero."
    )
    result = docstring_set(
        ctx,
        "box.py",
        "Box.resize",
        "Resize.",
        style="sphinx",
        params={"width": "new width", "opts": "drawing options"},
        returns="the box",
    )
    assert result["undescribed"] == ["height", "rest"]
    assert _docstring(ctx, "Box.resize") == (
        "Resize.\n\n:param width: New width.\n:type width: int\n"
        ":param **opts: Drawing options.\n:returns: The box.\n:rtype: Box\n"
        ":raises ValueError: Width must be positive."
    )


def test_the_authors_docstring_is_edited_in_place_never_rewritten(
    ctx: CapabilityContext,
) -> None:
    """An authored summary is kept whatever summary is given; what is missing goes into
    its place among the sections, at the docstring's own indentation."""
    result = docstring_set(ctx, "box.py", "Box.Inner.deep", "Go deep.")
    assert result["action"] == "unchanged" and result["undescribed"] == ["return"]
    assert read_file(ctx, "box.py") == SOURCE
    added = docstring_set(ctx, "box.py", "Box.Inner.deep", "Go deep.", returns="the x it got")
    assert added["action"] == "edited" and added["undescribed"] == []
    assert _docstring(ctx, "Box.Inner.deep") == (
        "Old summary.\n\nArgs:\n    x: The x value, documented before.\n\n"
        "Returns:\n    The x it got.\n\n"
        "Examples:\n    >>> Box.Inner().deep(1)"
    )
    text = read_file(ctx, "box.py")
    assert '            """Old summary.\n\n            Args:\n' in text
    assert "            Returns:\n                The x it got.\n\n            Examples:" in text
    again = docstring_set(ctx, "box.py", "Box.Inner.deep", "Go deep.", returns="other words")
    assert again["action"] == "unchanged" and again["diff"] == ""


def test_one_line_body_module_class_and_tabs(ctx: CapabilityContext) -> None:
    docstring_set(ctx, "box.py", "Box.one", "Return one.", returns="always 1")
    docstring_set(ctx, "box.py", "", "Boxes and numbers.")
    docstring_set(ctx, "box.py", "Box", "A resizable box.")
    docstring_set(ctx, "box.py", "tabbed", "Echo a.", params={"a": "what to echo"})
    text = read_file(ctx, "box.py")
    assert text.startswith(
        '#!/usr/bin/env python\n# Licence header stays first.\n"""Boxes and numbers."""\n\n'
        "import os  # why os\n"
    )
    assert '    def one(self):\n        """Return one.\n\n        Returns:\n' in text
    assert "        return 1\n" in text
    assert 'class Box:\n    """A resizable box."""\n\n    # comment above the method\n' in text
    assert 'def tabbed(a):\n\t"""Echo a.\n\n\tArgs:\n\t    a: What to echo.\n' in text
    assert _docstring(ctx, "") == "Boxes and numbers."
    assert _docstring(ctx, "Box") == "A resizable box."
    ast.parse(text)


def test_docstring_get_reports_style_and_gaps(ctx: CapabilityContext) -> None:
    old = docstring_get(ctx, "box.py", "Box.Inner.deep")
    assert old["has_docstring"] is True and old["style"] == "google"
    assert old["summary"] == "Old summary."
    assert old["sections"] == ["params", "examples"]
    assert old["documented_params"] == ["x"] and old["missing_params"] == []
    missing = docstring_get(ctx, "box.py", "Box.resize")
    assert missing["has_docstring"] is False and missing["docstring"] is None
    assert missing["missing_params"] == ["width", "height", "rest", "opts"]
    module = docstring_get(ctx, "box.py", "")
    assert module["kind"] == "module" and module["has_docstring"] is False


def test_bad_requests(ctx: CapabilityContext) -> None:
    with pytest.raises(ToolError) as info:
        docstring_set(ctx, "box.py", "Box.resize", "   ")
    assert info.value.code == "TOOL_601"
    with pytest.raises(ToolError) as info:
        docstring_set(ctx, "box.py", "Box.resize", "Fine.", style="epytext")
    assert info.value.code == "TOOL_601"
    with pytest.raises(ToolError) as info:
        docstring_set(ctx, "box.py", "Box.resise", "Fine.")
    assert info.value.code == "TOOL_105" and "Box.resize" in (info.value.hint or "")
    ctx.store.write("broken.py", b"def f(:\n")
    with pytest.raises(ToolError) as info:
        docstring_get(ctx, "broken.py", "f")
    assert info.value.code == "TOOL_106"
    unknown = docstring_set(ctx, "box.py", "numbers", "Count.", params={"m": "nope"})
    assert unknown["ignored_params"] == ["m"]


def test_backslashes_and_quotes_stay_valid(ctx: CapabilityContext) -> None:
    docstring_set(ctx, "box.py", "numbers", r'Match \d+ in "quoted" text')
    text = read_file(ctx, "box.py")
    assert 'r"""Match \\d+ in "quoted" text.' in text
    docstring = _docstring(ctx, "numbers")
    assert docstring is not None and docstring.startswith(r'Match \d+ in "quoted" text.')
    docstring_set(ctx, "box.py", "tabbed", 'Say "hi"')
    assert _docstring(ctx, "tabbed") == 'Say "hi".'
    assert 'def tabbed(a):\n\t"""Say "hi"."""\n' in read_file(ctx, "box.py")
    docstring_set(
        ctx, "box.py", "tabbed", 'Say "hi"', params={"a": 'a "word"'}, returns=r"a, as in \a"
    )
    assert (
        _docstring(ctx, "tabbed")
        == 'Say "hi".\n\nArgs:\n    a: A "word".\n\nReturns:\n    A, as in \\a.'
    )


_words = st.lists(st.from_regex(r"[a-j]{1,6}", fullmatch=True), min_size=1, max_size=8).map(
    " ".join
)
_names = st.lists(
    st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), min_size=0, max_size=4, unique=True
)


@settings(max_examples=40, deadline=None)
@given(
    style=st.sampled_from(["google", "numpy", "sphinx"]),
    summary=_words,
    names=_names,
    text=_words,
    returns=st.booleans(),
)
def test_rendered_docstrings_parse_back(
    style: str, summary: str, names: list[str], text: str, returns: bool
) -> None:
    content = DocstringContent(
        summary=summary + ".",
        params=tuple((name, "int", f"{text} {name}.") for name in names),
        returns=("str", f"{text}.") if returns else None,
        raises=(("ValueError", f"{text} error."),),
    )
    parsed = parse_docstring("\n".join(render(content, style, 60)))
    assert parsed.style == style
    assert parsed.summary == summary + "."
    assert parsed.params == {name: f"{text} {name}." for name in names}
    assert parsed.returns == (f"{text}." if returns else "")
    assert parsed.raises == {"ValueError": f"{text} error."}


def test_placeholder_bodies_give_way_to_the_docstring(tmp_path: Path) -> None:
    source = (
        "class Empty: ...\n\n\nclass Marker:\n    pass\n\n\ndef keep():\n    pass  # on purpose\n"
    )
    ctx = capability_context(write_tree(tmp_path, {"m.py": source}))
    for qualname in ("Empty", "Marker", "keep"):
        docstring_set(ctx, "m.py", qualname, f"The {qualname.lower()} thing.")
    assert read_file(ctx, "m.py") == (
        'class Empty:\n    """The empty thing."""\n\n\n'
        'class Marker:\n    """The marker thing."""\n\n\n'
        'def keep():\n    """The keep thing."""\n    pass  # on purpose\n'
    )


def test_crlf_files_stay_crlf(tmp_path: Path) -> None:
    ctx = capability_context(tmp_path)
    ctx.store.write("w.py", b"def f(a):\r\n    return a\r\n")
    docstring_set(ctx, "w.py", "f", "Echo.", params={"a": "what to echo"})
    data = ctx.store.read("w.py")
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert data.startswith(
        b'def f(a):\r\n    """Echo.\r\n\r\n    Args:\r\n        a: What to echo.\r\n'
    )
