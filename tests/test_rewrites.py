"""Host-side rewrites: exact before/after text, and refusals wherever safety is not shown."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from textwrap import dedent
from unittest import mock

import pytest

from remora.operations.lint._rewrites import REWRITE_CODES, Rewrite, RewriteRefused, rewrite

RUFF = Path(sys.executable).with_name("ruff")


def fixed(source: str, code: str, line: int) -> str:
    return rewrite(dedent(source), code, line).text


def refused(source: str, code: str, line: int) -> str:
    with pytest.raises(RewriteRefused) as caught:
        rewrite(dedent(source), code, line)
    return str(caught.value)


def ruff_rows(source: str, code: str) -> list[int]:
    done = subprocess.run(
        [str(RUFF), "check", "--isolated", "--select", code, "--output-format", "json", "-"],
        input=source,
        capture_output=True,
        text=True,
        check=False,
    )
    return [item["location"]["row"] for item in json.loads(done.stdout)]


# General behaviour ---------------------------------------------------------------------------


def test_the_codes_with_a_rewrite() -> None:
    assert {"E722", "B006", "E711", "B007", "E721", "B904", "E701", "E702"} == REWRITE_CODES


def test_a_code_without_a_rewrite_is_refused() -> None:
    assert "no rewrite for F401" in refused("import os\n", "F401", 1)


def test_a_source_that_does_not_parse_is_refused() -> None:
    assert "does not parse" in refused("if x == None\n", "E711", 1)


def test_the_result_is_a_rewrite_with_a_description() -> None:
    done = rewrite("if x == None:\n    pass\n", "E711", 1)
    assert done == Rewrite("if x is None:\n    pass\n", "x == None -> x is None")


def test_crlf_newlines_are_kept_including_inserted_lines() -> None:
    source = 'def f(a=[]):\r\n    """Doc."""\r\n    return x == None\r\n'
    assert rewrite(source, "B006", 1).text == (
        'def f(a=None):\r\n    """Doc."""\r\n    if a is None:\r\n        a = []\r\n'
        "    return x == None\r\n"
    )
    assert rewrite(source, "E711", 3).text == source.replace("x == None", "x is None")


def test_a_non_ascii_line_is_edited_at_the_right_column() -> None:
    assert fixed('s = "été€"; ok = x==None\n', "E711", 1) == 's = "été€"; ok = x is None\n'
    assert fixed('def f(s="ü😀", a=[]):\n    return s, a\n', "B006", 1) == (
        'def f(s="ü😀", a=None):\n    if a is None:\n        a = []\n    return s, a\n'
    )
    assert fixed('ok = "😀" and type(x) != int\n', "E721", 1) == (
        'ok = "😀" and type(x) is not int\n'
    )


def test_every_occurrence_on_the_line_is_rewritten_and_other_lines_are_not() -> None:
    source = """\
    a = x == None  # first
    b = x == None or y != None or None == z
    """
    assert fixed(source, "E711", 2) == dedent("""\
    a = x == None  # first
    b = x is None or y is not None or None is z
    """)


def test_one_unsafe_occurrence_refuses_the_whole_line() -> None:
    source = "ok = x == None or a == None == b\n"
    assert "chain" in refused(source, "E711", 1)


def test_nothing_matching_on_the_line_is_refused() -> None:
    assert "line 2" in refused("if x == None:\n    pass\n", "E711", 2)
    assert "line 99" in refused("x = 1\n", "B007", 99)


@pytest.mark.parametrize(
    ("code", "source", "line"),
    [
        ("E722", "try:\n    f()\nexcept:\n    pass\n", 3),
        ("B006", "def f(a, b={}):\n    return a, b\n", 1),
        ("E711", "ok = x != None\n", 1),
        ("B007", "def f(a):\n    for i, x in enumerate(a):\n        print(x)\n", 2),
        ("E721", "ok = type(x) == int or bool != type(x)\n", 1),
        ("B904", "try:\n    f()\nexcept ValueError as e:\n    raise KeyError(1)\n", 4),
        ("E701", "if x: y = 1\nelse: y = 2\n", 2),
        ("E702", "x = 1; y = 2\n", 1),
    ],
)
def test_ruff_no_longer_reports_the_rewritten_code(code: str, source: str, line: int) -> None:
    before = ruff_rows(source, code)
    assert line in before
    after = ruff_rows(rewrite(source, code, line).text, code)
    assert len(after) == len(before) - before.count(line)


# E722 ----------------------------------------------------------------------------------------


def test_e722_bare_except_becomes_except_exception() -> None:
    source = """\
    try:
        work()
    except:  # keep this comment
        pass
    """
    done = rewrite(dedent(source), "E722", 3)
    assert done.text == dedent(source).replace("except:", "except Exception:")
    assert done.description == "bare except: -> except Exception:"


@pytest.mark.parametrize(
    ("body", "handler", "why"),
    [
        ("yield 1", "pass", "yields"),
        ("yield from items", "pass", "yields"),
        ("await task", "pass", "awaits"),
        ("async for x in it:\n            pass", "pass", "awaits"),
        ("raise SystemExit(2)", "pass", "SystemExit"),
        ("work(KeyboardInterrupt)", "pass", "KeyboardInterrupt"),
        ("sys.exit(1)", "pass", "sys.exit"),
        ("exit()", "pass", "exit"),
        ("quit()", "pass", "quit"),
        ("work()", "log()\n        raise", "bare raise"),
        ("work()", "if sys.exc_info()[0] is GeneratorExit:\n            return", "GeneratorExit"),
    ],
)
def test_e722_keeps_catching_everything_where_the_handler_may_expect_it(
    body: str, handler: str, why: str
) -> None:
    header = "async def" if "a" in body.split()[0] else "def"
    source = f"{header} f():\n    try:\n        {body}\n    except:\n        {handler}\n"
    line = source[: source.index("except:")].count("\n") + 1
    done = rewrite(source, "E722", line)
    assert done.text == source.replace("except:", "except BaseException:")
    assert why in done.description


def test_e722_refuses_a_line_without_a_bare_except() -> None:
    source = "try:\n    f()\nexcept ValueError:\n    pass\n"
    assert "no bare except" in refused(source, "E722", 3)


# B006 ----------------------------------------------------------------------------------------


def test_b006_default_becomes_none_and_is_built_after_the_docstring() -> None:
    source = '''\
    def first(items, default=[]):
        """Return the first item.

        Or the default.
        """
        # a comment
        return items[0] if items else default
    '''
    assert fixed(source, "B006", 1) == dedent('''\
    def first(items, default=None):
        """Return the first item.

        Or the default.
        """
        if default is None:
            default = []
        # a comment
        return items[0] if items else default
    ''')


def test_b006_every_default_on_the_line_without_a_docstring() -> None:
    source = """\
    class C:
        def f(self, a={}, *, b=set(), c=[i * 2 for i in range(3)], d=(1,)):
            @decorate
            def g():
                pass
            return a, b, c, d, g
    """
    done = rewrite(dedent(source), "B006", 2)
    assert done.text == dedent("""\
    class C:
        def f(self, a=None, *, b=None, c=None, d=(1,)):
            if a is None:
                a = {}
            if b is None:
                b = set()
            if c is None:
                c = [i * 2 for i in range(3)]
            @decorate
            def g():
                pass
            return a, b, c, d, g
    """)
    assert done.description.startswith("a={} -> a=None, with a fresh {} per call; b=set()")


def test_b006_multi_line_default_and_tabs() -> None:
    source = "def f(\n\ta=[\n\t\t1,\n\t],\n):\n\treturn a\n"
    assert rewrite(source, "B006", 2).text == (
        "def f(\n\ta=None,\n):\n\tif a is None:\n\t\ta = [\n\t\t1,\n\t]\n\treturn a\n"
    )


def test_b006_fresh_default_behaves_the_same_per_call() -> None:
    source = "def f(a=[1, 2]):\n    return sum(a)\n"
    before: dict[str, object] = {}
    after: dict[str, object] = {}
    exec(source, before)
    exec(rewrite(source, "B006", 1).text, after)
    assert before["f"]() == after["f"]() == 3  # type: ignore[operator]
    assert before["f"]([5]) == after["f"]([5]) == 5  # type: ignore[operator]


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("def f(a: list = []):\n    return a\n", "annotated"),
        ("def f(a=[]): return a\n", "def line"),
        ("def f(a=[]):\n    a.append(1)\n    return a\n", "mutated in the body (append)"),
        ("def f(a={}):\n    a.setdefault(1, 2)\n", "(setdefault)"),
        ("def f(a=[]):\n    a[0].extend([1])\n", "(extend)"),
        ("def f(k, seen={}):\n    seen[k] = True\n", "mutated"),
        ("def f(a=[]):\n    del a[0]\n", "(del)"),
        ("def f(a=[]):\n    a += [1]\n    return a\n", "augmented assignment"),
        ("def f(a=[]):\n    list.append(a, 1)\n", "(append)"),
        ("def f(a=[]):\n    heapq.heappush(a, 1)\n", "(heappush)"),
        ("def f(a=[]):\n    for a[0] in range(3):\n        pass\n", "mutated"),
        ("def f(results_cache={}):\n    return results_cache\n", "cache"),
        ("def f(memo={}):\n    return memo\n", "cache"),
        ("def f(_seen=set()):\n    return _seen\n", "cache"),
        ("def f(a=[]):\n    def g():\n        return a\n    return g\n", "nested"),
        ("def f(a=[]):\n    return lambda: a\n", "nested"),
        ("def f(a=[]):\n    return locals()\n", "locals()"),
        ("def f(a=[]):\n    return vars()\n", "vars()"),
        ("def f(a=[]):\n    if a is None:\n        return 0\n", "compares a with None"),
        ("def f(a=[K]):\n    return a\n", "reads K"),
        ("def f(a=list(DEFAULTS)):\n    return a\n", "reads DEFAULTS"),
        ("def f(a=[x.y]):\n    return a\n", "reads x.y"),
        ("def f(a=[]):\n    '''Doc.'''; return a\n", "follows the docstring"),
        ("from collections import deque\ndef f(a=deque()):\n    return a\n", "deque()"),
    ],
)
def test_b006_refuses_when_the_shared_default_may_matter(source: str, reason: str) -> None:
    line = 2 if source.startswith("from") else 1
    assert reason in refused(source, "B006", line)


def test_b006_refuses_a_builtin_the_module_rebinds() -> None:
    source = "def f(a=list()):\n    return a\n\nlist = tuple\n"
    assert "reads list" in refused(source, "B006", 1)
    star = "from helpers import *\n\ndef f(a=list()):\n    return a\n"
    assert "reads list" in refused(star, "B006", 3)


# E711 ----------------------------------------------------------------------------------------


def test_e711_equality_with_none_becomes_identity() -> None:
    assert fixed("if x != None:\n    pass\n", "E711", 1) == "if x is not None:\n    pass\n"
    assert fixed("ok = None == x\n", "E711", 1) == "ok = None is x\n"
    assert fixed("ok = (x)==(None)\n", "E711", 1) == "ok = (x) is (None)\n"


def test_e711_matches_the_line_ruff_reports_the_none_on() -> None:
    source = "ok = (x ==\n      None)\n"
    assert fixed(source, "E711", 2) == "ok = (x is\n      None)\n"
    assert "no == None" in refused(source, "E711", 1)


@pytest.mark.parametrize(
    "header",
    [
        "import numpy as np",
        "import pandas",
        "from sqlalchemy.orm import Session",
        "import torch.nn",
        "def g():\n    import polars",
    ],
)
def test_e711_refuses_when_a_library_overloads_equality(header: str) -> None:
    source = f"{header}\nok = x == None\n"
    line = source.count("\n")
    assert "overload ==" in refused(source, "E711", line)


def test_e711_refuses_a_chain_and_a_module_defining_eq() -> None:
    assert "chain" in refused("ok = a == None == b\n", "E711", 1)
    own_eq = "class V:\n    def __eq__(self, other):\n        return True\n\nok = v == None\n"
    assert "__eq__" in refused(own_eq, "E711", 5)


def test_e711_does_not_treat_a_relative_or_similar_import_as_a_library() -> None:
    source = "from . import numpy\nimport numpyish\nok = x == None\n"
    assert fixed(source, "E711", 3).endswith("ok = x is None\n")


# B007 ----------------------------------------------------------------------------------------


def test_b007_unused_loop_variables_get_an_underscore() -> None:
    source = """\
    def f(pairs):
        for i in range(3):
            print("hi")
        for key, (value, extra) in pairs:
            print(value)
    """
    assert fixed(source, "B007", 2) == dedent(source).replace("for i in", "for _i in")
    assert fixed(source, "B007", 4) == dedent(source).replace(
        "key, (value, extra)", "_key, (value, _extra)"
    )


def test_b007_module_level_loop() -> None:
    assert fixed("for n in range(2):\n    pass\n", "B007", 1) == "for _n in range(2):\n    pass\n"


@pytest.mark.parametrize(
    ("source", "line", "reason"),
    [
        ("def f():\n    for i in range(3):\n        pass\n    return i\n", 2, "line 4"),
        ("def f():\n    for i in range(3):\n        pass\n    else:\n        print(i)\n", 2, "i "),
        ("def f():\n    for i in x:\n        pass\n    g = lambda: i\n", 2, "used elsewhere"),
        ("def f():\n    for i in x:\n        pass\n    del i\n", 2, "used elsewhere"),
        ("def f():\n    global i\n    for i in x:\n        pass\n", 3, "used elsewhere"),
        ("def f():\n    for i in x:\n        pass\n    return locals()\n", 2, "locals()"),
        ("def f():\n    for i in x:\n        pass\n    eval('i')\n", 2, "eval()"),
        ("def f():\n    _i = 1\n    for i in x:\n        pass\n", 3, "_i already exists"),
        ("class C:\n    for i in x:\n        pass\n", 2, "class body"),
        ("__all__ = ['i']\nfor i in x:\n    pass\n", 2, "string"),
        ("for i in x:\n    pass\n\ndef g():\n    return i\n", 1, "line 5"),
    ],
)
def test_b007_refuses_when_the_name_may_be_read(source: str, line: int, reason: str) -> None:
    assert reason in refused(source, "B007", line)


def test_b007_a_used_loop_variable_is_not_a_match() -> None:
    assert "no unused loop variable" in refused("for i in x:\n    print(i)\n", "B007", 1)


# E721 ----------------------------------------------------------------------------------------


def test_e721_type_equality_becomes_identity() -> None:
    assert fixed("ok = type(x) == int\n", "E721", 1) == "ok = type(x) is int\n"
    assert fixed("ok = type(x) != dict\n", "E721", 1) == "ok = type(x) is not dict\n"
    assert fixed("ok = str == type(x)\n", "E721", 1) == "ok = str is type(x)\n"
    assert fixed("ok = type(x) == bool\n", "E721", 1) == "ok = type(x) is bool\n"


def test_e721_keeps_the_expression_structure_around_the_comparison() -> None:
    source = "ok = not type(x) != range and y or type(z) == slice\n"
    done = fixed(source, "E721", 1)
    assert done == "ok = not type(x) is not range and y or type(z) is slice\n"
    expected = ast.dump(ast.parse(source)).replace("NotEq()", "IsNot()").replace("Eq()", "Is()")
    assert ast.dump(ast.parse(done)) == expected


def test_e721_never_writes_isinstance_because_class_can_be_faked() -> None:
    """Why bool/range/slice/memoryview get ``is`` too: isinstance trusts ``__class__``."""
    fake = mock.Mock(spec=bool)
    assert isinstance(fake, bool)
    assert type(fake) is not bool
    assert "isinstance" not in fixed("ok = type(x) != bool\n", "E721", 1)


@pytest.mark.parametrize(
    ("source", "line", "reason"),
    [
        ("ok = type(a) == type(b)\n", 1, "not a builtin type name"),
        ("ok = type(a) == MyType\n", 1, "not a builtin type name"),
        ("ok = type(a) == int == b\n", 1, "chain"),
        ("class int:\n    pass\nok = type(a) == int\n", 3, "rebinds int"),
        ("from numbers import int\nok = type(a) == int\n", 2, "rebinds int"),
        ("def f(str):\n    return type(a) == str\n", 2, "rebinds str"),
        ("type = print\nok = type(a) == int\n", 2, "rebinds type"),
        ("from x import *\nok = type(a) == int\n", 2, "star import"),
        (
            "class M(type):\n    def __eq__(s, o):\n        return 1\nok = type(a) == int\n",
            4,
            "__eq__",
        ),
        ("ok = type(a) is int\n", 1, "no type(...) =="),
    ],
)
def test_e721_refuses_when_identity_may_differ(source: str, line: int, reason: str) -> None:
    assert reason in refused(source, "E721", line)


# B904 ----------------------------------------------------------------------------------------


def test_b904_raise_in_a_handler_is_chained_to_the_caught_exception() -> None:
    source = """\
    def load(path):
        try:
            return read(path)
        except OSError as exc:
            if missing(path):
                raise KeyError(path)  # say which
            raise LoadError(
                path,
            )
    """
    assert fixed(source, "B904", 6) == dedent(source).replace(
        "KeyError(path)", "KeyError(path) from exc"
    )
    assert fixed(source, "B904", 7) == dedent(source).replace("    )\n", "    ) from exc\n")


def test_b904_uses_the_nearest_handlers_name() -> None:
    source = """\
    try:
        f()
    except ValueError as outer:
        try:
            g()
        except KeyError as inner:
            raise TypeError(1)
    """
    assert fixed(source, "B904", 7).endswith("raise TypeError(1) from inner\n")


@pytest.mark.parametrize(
    ("handler", "reason"),
    [
        ("except ValueError:\n    raise KeyError(1)", "no 'as' name"),
        ("except ValueError as e:\n    def g():\n        raise KeyError(1)", "nested function"),
        ("except ValueError as e:\n    raise KeyError(1) from None", "already has a from"),
        ("except ValueError as e:\n    raise", "bare raise"),
        (
            "except ValueError as e:\n    try:\n        g()\n    except KeyError:\n"
            "        pass\n    else:\n        raise KeyError(1)",
            "nested try",
        ),
        ("except ValueError as e:\n    raise e", "itself"),
        ("except ValueError as e:\n    raise e.with_traceback(None)", "itself"),
        ("except ValueError as e:\n    e = KeyError()\n    raise KeyError(1)", "rebinds e"),
        (
            "except ValueError as e:\n    try:\n        pass\n    except KeyError as e:\n"
            "        pass\n    raise KeyError(1)",
            "rebinds e",
        ),
        (
            "except ValueError as e:\n    try:\n        g()\n"
            "    finally:\n        raise KeyError(1)",
            "finally block",
        ),
        (
            "except ValueError as e:\n    try:\n        g()\n"
            "    except KeyError:\n        raise KeyError(1)",
            "no 'as' name",
        ),
    ],
)
def test_b904_refuses_unless_chaining_is_plainly_right(handler: str, reason: str) -> None:
    source = f"try:\n    f()\n{handler}\n"
    line = len(source.splitlines())
    assert reason in refused(source, "B904", line)


def test_b904_a_raise_outside_a_handler_is_not_a_match() -> None:
    assert "no raise inside an except" in refused("raise KeyError(1)\n", "B904", 1)


# E701 and E702 -------------------------------------------------------------------------------


def test_e701_moves_each_clause_body_to_its_own_line() -> None:
    source = """\
    def f(x):
        if x: y = 1  # one
        elif x is None: y = 2
        else: y = 3; z = 4
        try: g()
        except (ValueError,
                KeyError): pass
        finally: h()
        class C(Base): attr = 1
        with open(x) as fh: data = fh.read()
        while x: x -= 1
        for i in x: print(i)
        match x:
            case 1: pass
    """
    expected = {
        2: "    if x:\n        y = 1  # one\n",
        3: "    elif x is None:\n        y = 2\n",
        4: "    else:\n        y = 3; z = 4\n",
        5: "    try:\n        g()\n",
        7: "    except (ValueError,\n            KeyError):\n        pass\n",
        8: "    finally:\n        h()\n",
        9: "    class C(Base):\n        attr = 1\n",
        10: "    with open(x) as fh:\n        data = fh.read()\n",
        11: "    while x:\n        x -= 1\n",
        12: "    for i in x:\n        print(i)\n",
        14: "        case 1:\n            pass\n",
    }
    for line, text in expected.items():
        done = fixed(source, "E701", line)
        assert text in done, line
        assert len(done.splitlines()) == len(dedent(source).splitlines()) + 1


def test_e701_follows_the_files_indentation() -> None:
    source = "def f(x):\n\tif x: return 1\n"
    assert rewrite(source, "E701", 2).text == "def f(x):\n\tif x:\n\t\treturn 1\n"
    two = "def f(x):\n  if x: return 1\n"
    assert rewrite(two, "E701", 2).text == "def f(x):\n  if x:\n    return 1\n"


def test_e701_refuses_what_ruff_does_not_report() -> None:
    assert "no statement after a colon" in refused("class C: ...\n", "E701", 1)
    assert "no statement after a colon" in refused("x = {1: 2}\n", "E701", 1)
    assert "no statement after a colon" in refused("def f(): return 1\n", "E701", 1)


def test_e702_splits_statements_at_their_indentation() -> None:
    source = """\
    def f():
        a = 1; b = 2  ;c = 3  # trailing
        return a, b, c
    """
    assert fixed(source, "E702", 2) == dedent("""\
    def f():
        a = 1
        b = 2
        c = 3  # trailing
        return a, b, c
    """)
    multi = "x = f(\n    1); y = 2\n"
    assert fixed(multi, "E702", 2) == "x = f(\n    1)\ny = 2\n"


def test_e702_refuses_statements_after_a_colon_and_a_trailing_semicolon() -> None:
    assert "fix E701 first" in refused("while x: x -= 1; y = 2\n", "E702", 1)
    assert "no semicolon between statements" in refused("x = 1;\n", "E702", 1)
