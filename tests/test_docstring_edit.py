"""The authors' docstrings are edited in place: every line of theirs stays, examples run.

``docstring_set`` on a real overlay workspace, as the docstring agent's host steps call it:
what is missing is inserted where the docstring's convention has a place for it, the
summary gets only its mechanical fixes, and the project's convention decides the rest.
"""

from __future__ import annotations

import ast
import doctest
import inspect
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remora.operations.docstring import docstrings
from remora.operations.docstring._edit import kept_lines
from remora.operations.docstring.docstrings import docstring_set, project_convention
from remora.operations.docstring.write import docstring_host_only
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.files import read_file
from tests.stores import capability_context, write_tree

PROSE = '''def merge(*dicts, **kwargs):
    """ Merge a collection of dictionaries

    >>> merge({1: 'one'}, {2: 'two'})
    {1: 'one', 2: 'two'}

    Later dictionaries have precedence

    >>> merge({1: 2, 3: 4}, {3: 3, 4: 4})
    {1: 2, 3: 3, 4: 4}

    See Also:
        merge_with
    """
    if len(dicts) == 1 and not isinstance(dicts[0], dict):
        dicts = dicts[0]
    rv = {}
    for d in dicts:
        rv.update(d)
    return rv


def valmap(func, d):
    """ Apply function to values of dictionary

    >>> bills = {"Alice": [20, 15, 30], "Bob": [10, 35]}
    >>> valmap(sum, bills)  # doctest: +SKIP
    {'Alice': 65, 'Bob': 45}

    See Also:
        keymap
    """
    if not callable(func):
        raise TypeError("func must be callable")
    return {k: func(v) for k, v in d.items()}


def get_in(keys, coll):
    """ Returns coll[i0][i1]...[iX] where [i0, i1, ..., iX]==keys.

    Literal blocks stay as they are::

        get_in(['a', 'b'], {'a': {'b': 1}})
            == 1
    """
    for key in keys:
        coll = coll[key]
    return coll
'''


def _set(root: Path, qualname: str, style: str = "auto", **given: object) -> dict[str, object]:
    ctx = capability_context(root, {"options": {"style": style}, "file_path": "mod.py"})
    result = docstring_set(ctx, "mod.py", qualname, "A summary nobody asked for.", **given)  # type: ignore[arg-type]
    (root / "mod.py").write_text(read_file(ctx, "mod.py"), encoding="utf-8")
    return result


def _doc(root: Path, name: str) -> str:
    tree = ast.parse((root / "mod.py").read_text())
    node = next(n for n in ast.walk(tree) if getattr(n, "name", None) == name)
    return ast.get_docstring(node, clean=False) or ""  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _fresh_conventions() -> None:
    docstrings._conventions.clear()


def test_a_prose_project_keeps_every_byte_of_its_docstrings(tmp_path: Path) -> None:
    """toolz as published: no sections bolted on, the summary and examples untouched, the
    missing final period not added where the project's summaries have none."""
    root = write_tree(tmp_path / "proj", {"mod.py": PROSE})
    result = _set(root, "valmap", params={"func": "the function", "d": "the dictionary"})
    assert result["style"] == "plain" and result["action"] == "unchanged"
    assert result["undescribed"] == []
    assert (root / "mod.py").read_text() == PROSE


def test_a_third_person_summary_gets_exactly_the_mood_fix(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"mod.py": PROSE})
    result = _set(root, "get_in")
    assert result["action"] == "edited" and result["fixes"] == ["mood: Returns -> Return"]
    after = (root / "mod.py").read_text()
    assert after == PROSE.replace('""" Returns coll', '""" Return coll')


def test_mood_is_left_to_nouns_properties_and_two_verb_summaries(tmp_path: Path) -> None:
    source = (
        "class Frame:\n"
        "    @property\n"
        "    def rows(self):\n"
        '        """Returns the rows."""\n'
        "        return []\n\n\n"
        "def series(n):\n"
        '    """Series of numbers up to n."""\n'
        "    return list(range(n))\n\n\n"
        "def apply(f, x):\n"
        '    """Applies f and returns what it gives."""\n'
        "    return f(x)\n"
    )
    root = write_tree(tmp_path / "proj", {"mod.py": source})
    _set(root, "Frame.rows", style="plain")
    _set(root, "series", style="plain")
    _set(root, "apply", style="plain")  # "Apply f and returns" would read worse
    assert (root / "mod.py").read_text() == source


def test_the_project_convention_decides_the_final_period(tmp_path: Path) -> None:
    dotted = "\n\n".join(
        f'def f{i}(x):\n    """Return x plus {i}."""\n    return x + {i}\n' for i in range(3)
    )
    source = dotted + '\n\ndef g(x):\n    """Return x twice"""\n    return 2 * x\n'
    root = write_tree(tmp_path / "proj", {"mod.py": source})
    result = _set(root, "g", style="plain")
    assert result["fixes"] == ["final period"]
    assert '"""Return x twice."""' in (root / "mod.py").read_text()


def test_the_prose_docstrings_doctests_still_pass_after_every_edit(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"mod.py": PROSE})
    for name in ("merge", "valmap", "get_in"):
        _set(root, name, params={"d": "a mapping"}, raises={"TypeError": "func is no callable"})
    module = types.ModuleType("mod")
    exec(compile((root / "mod.py").read_text(), "mod.py", "exec"), module.__dict__)
    failed, attempted = doctest.testmod(module, verbose=False)
    assert (failed, attempted) == (0, 3)


GOOGLE = '''def resize(box, width, height):
    """Resize a box.

    Args:
      box: The box to resize.

    Examples:
        >>> resize(None, 1, 2)
    """
    if width < 0:
        raise ValueError("width must be positive")
    return box


def area(w, h):
    """Multiply the sides.

    Args:
        w: Width.
        h: Height.

    Returns:
        The area.

    Raises:
        OverflowError: When it does not fit.
    """
    if w < 0:
        raise ValueError("no negative widths")
    if h > 10**9:
        raise OverflowError()
    return w * h


def one(x):
    """Return x."""
    if x is None:
        raise TypeError("x must not be None")
    return x
'''


def test_google_entries_join_their_section_at_its_own_indentation(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"mod.py": GOOGLE})
    result = _set(root, "resize", params={"width": "new width", "box": "ignored: theirs"})
    assert result["style"] == "google" and result["action"] == "edited"
    assert _doc(root, "resize") == (
        "Resize a box.\n\n"
        "    Args:\n"
        "      box: The box to resize.\n"
        "      width: New width.\n\n"
        "    Raises:\n"
        "        ValueError: Width must be positive.\n\n"
        "    Examples:\n"
        "        >>> resize(None, 1, 2)\n"
        "    "
    )
    assert result["undescribed"] == ["height", "return"]


def test_a_missing_raise_joins_the_existing_raises_section(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"mod.py": GOOGLE})
    _set(root, "area")
    assert _doc(root, "area").endswith(
        "    Raises:\n"
        "        OverflowError: When it does not fit.\n"
        "        ValueError: No negative widths.\n"
        "    "
    )


def test_a_one_line_docstring_opens_up_for_a_section(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"mod.py": GOOGLE})
    _set(root, "one", returns="x itself")
    assert (
        '    """Return x.\n\n    Returns:\n        X itself.\n\n    Raises:\n'
        in (root / "mod.py").read_text()
    )
    assert _doc(root, "one").endswith("TypeError: X must not be None.\n    ")


NUMPY = '''def scale(values, factor):
    """Scale every value.

    Parameters
    ----------
    values : list
        The values.

    Examples
    --------
    >>> scale([1], 2)
    [2]
    """
    return [v * factor for v in values]


def shift(values, by):
    """Shift every value.

    Parameters
    ----------
    values : list
        The values.
    by : int
        How far.
    """
    return [v + by for v in values]


def first(values):
    """The first value.

    Parameters
    ----------
    values : list
        The values.
    """
    return values[0]
'''


def test_numpy_entries_and_sections_in_place(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"mod.py": NUMPY})
    _set(root, "scale", params={"factor": "what to multiply by"}, returns="the scaled values")
    assert inspect.cleandoc(_doc(root, "scale")) == (
        "Scale every value.\n\nParameters\n----------\nvalues : list\n    The values.\n"
        "factor\n    What to multiply by.\n\n"
        "Returns\n-------\nresult\n    The scaled values.\n\n"
        "Examples\n--------\n>>> scale([1], 2)\n[2]"
    )


SPHINX = '''def div(a, b):
    """Divide a by b.

    :param a: The dividend.
    :returns: The quotient.

    More prose after the fields.
    """
    if b == 0:
        raise ZeroDivisionError("b must not be zero")
    return a / b


def mul(a, b):
    """Multiply.

    :param a: One.
    :param b: Other.
    """
    return a * b


def add(a, b):
    """Add.

    :param a: One.
    :param b: Other.
    """
    return a + b
'''


def test_sphinx_fields_join_the_field_list(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"mod.py": SPHINX})
    result = _set(root, "div", params={"b": "the divisor"})
    assert result["style"] == "sphinx"
    assert inspect.cleandoc(_doc(root, "div")) == (
        "Divide a by b.\n\n:param a: The dividend.\n:param b: The divisor.\n"
        ":returns: The quotient.\n:raises ZeroDivisionError: B must not be zero.\n\n"
        "More prose after the fields."
    )


def test_a_docstring_without_a_summary_gets_one_above_the_authors_text(tmp_path: Path) -> None:
    source = 'def f(x):\n    """\n    Args:\n        x: A thing.\n    """\n    return x\n'
    root = write_tree(tmp_path / "proj", {"mod.py": source})
    ctx = capability_context(root, {"options": {"style": "google"}})
    docstring_set(ctx, "mod.py", "f", "Echo a thing.")
    assert read_file(ctx, "mod.py") == (
        'def f(x):\n    """Echo a thing.\n\n    Args:\n        x: A thing.\n    """\n    return x\n'
    )


def test_escapes_raw_strings_single_quotes_and_crlf_stay_valid(tmp_path: Path) -> None:
    source = (
        'def a(x):\r\n    r"""Match \\d+ in x"""\r\n    if x:\r\n'
        '        raise ValueError("no \\\\ here")\r\n    return x\r\n\r\n\r\n'
        "def b(x):\r\n    'Return x'\r\n    if x:\r\n"
        '        raise KeyError("bad key")\r\n    return x\r\n'
    )
    root = tmp_path / "proj"
    root.mkdir()
    (root / "mod.py").write_bytes(source.encode())
    ctx = capability_context(root, {"options": {"style": "google"}})
    docstring_set(ctx, "mod.py", "a", "x")
    docstring_set(ctx, "mod.py", "b", "x")
    after = read_file(ctx, "mod.py")
    tree = ast.parse(after)
    docs = [ast.get_docstring(node) for node in tree.body]  # type: ignore[arg-type]
    # the raw docstring cannot hold the message's backslash: no Raises written into it
    assert docs[0] == "Match \\d+ in x."
    assert docs[1] == "Return x."  # one quote pair has no room for sections
    assert "\r\n" in after and "\n" not in after.replace("\r\n", "")


def test_host_only_skips_what_is_complete_in_its_own_convention(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"mod.py": PROSE})
    ctx = capability_context(root, {"options": {"style": "auto"}, "file_path": "mod.py"})
    verdict = docstring_host_only(ctx, "mod.py", "merge")
    assert verdict["status"] == "skipped"
    assert "complete in its own convention (plain)" in verdict["summary"]
    fixed = docstring_host_only(ctx, "mod.py", "get_in")
    assert fixed["status"] == "success"
    assert fixed["summary"].startswith("Docstring of get_in (mood: Returns -> Return):")


@pytest.mark.parametrize(
    ("files", "style", "periods"),
    [
        ({"mod.py": PROSE}, "plain", False),
        ({"mod.py": GOOGLE}, "google", True),
        ({"mod.py": NUMPY}, "numpy", True),
        ({"mod.py": SPHINX}, "sphinx", True),
        ({"mod.py": "def f(x):\n    return x\n"}, "google", True),
    ],
)
def test_the_project_convention_is_read_from_its_docstrings(
    tmp_path: Path, files: dict[str, str], style: str, periods: bool
) -> None:
    ctx = capability_context(write_tree(tmp_path / "proj", files), {"options": {}})
    convention = project_convention(ctx)
    assert (convention.style, convention.periods) == (style, periods)


_LINE = st.text(alphabet=st.sampled_from(list("abc xyz.:>()-*0123")), min_size=0, max_size=24).map(
    str.rstrip
)


@settings(max_examples=60, deadline=None)
@given(
    paragraphs=st.lists(st.lists(_LINE, min_size=1, max_size=4), min_size=1, max_size=4),
    style=st.sampled_from(["google", "numpy", "sphinx"]),
)
def test_every_authors_line_survives_any_insertion(
    tmp_path_factory: pytest.TempPathFactory, paragraphs: list[list[str]], style: str
) -> None:
    body = "\n\n".join("\n".join(f"    {line}" for line in lines) for lines in paragraphs)
    source = (
        f'def f(a, b):\n    """Summary.\n\n{body}\n    """\n'
        '    if a:\n        raise ValueError("a is set")\n    return b\n'
    )
    root = write_tree(tmp_path_factory.mktemp("proj"), {"mod.py": source})
    ctx: CapabilityContext = capability_context(root, {"options": {"style": style}})
    docstring_set(ctx, "mod.py", "f", "x", params={"a": "the a"}, returns="the b")
    after = read_file(ctx, "mod.py")
    old = ast.get_docstring(ast.parse(source).body[0], clean=False)  # type: ignore[arg-type]
    new = ast.get_docstring(ast.parse(after).body[0], clean=False)  # type: ignore[arg-type]
    assert old is not None and new is not None and kept_lines(old, new)


def test_a_module_docstring_is_edited_in_place_too(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"mod.py": '"""Tools for ledgers\n\nMore."""\n\nX = 1\n'})
    result = _set(root, "", style="google")
    assert result["action"] == "edited" and result["undescribed"] == []
    assert (root / "mod.py").read_text() == '"""Tools for ledgers.\n\nMore."""\n\nX = 1\n'
