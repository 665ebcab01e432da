"""Candidate argument sets proposed for characterizing one function, without running it."""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest

from remora.tools.capabilities.candidates import Candidate, callable_params, candidate_inputs


def calls(candidates: list[Candidate]) -> list[tuple[list[Any], dict[str, Any], str]]:
    """Each candidate's values (literal arguments evaluated back), keywords and source."""
    return [
        (
            [ast.literal_eval(a) for a in c.args],
            {k: ast.literal_eval(v) for k, v in c.kwargs.items()},
            c.source,
        )
        for c in candidates
    ]


def values(candidate: Candidate) -> tuple[Any, ...]:
    return tuple(ast.literal_eval(a) for a in candidate.args)


DOCTESTED = '''
def scale(values, factor=2, *, options=None):
    """Multiply.

    >>> scale([1, 2], 3)
    [3, 6]
    >>> scale([1, [2, 3]], factor=0.5, options={"round": True, "tags": ["a"]})
    ...
    >>> scale(
    ...     [4], 1)
    >>> scale(VALUES, 2)
    >>> scale((1, 2))
    """
    return values
'''


def test_doctests_come_first_and_are_parsed_exactly() -> None:
    found = candidate_inputs(DOCTESTED, "scale")
    assert calls(found[:3]) == [
        ([[1, 2], 3], {}, "doctest"),
        ([[1, [2, 3]]], {"factor": 0.5, "options": {"round": True, "tags": ["a"]}}, "doctest"),
        ([[4], 1], {}, "doctest"),
    ]
    # A name the module does not define is left out; a tuple is a literal like any other.
    assert [c.case.text for c in found[3:] if c.source == "doctest"] == ["(1, 2)"]
    # Then the defaults: the base set keeps factor and the keyword-only option at their defaults.
    assert calls(found[4:5]) == [([[1, 2, 3], 2], {"options": None}, "default")]


def test_call_sites_and_tests_are_labelled_and_non_literal_calls_skipped() -> None:
    source = "def area(width, height=1):\n    return width * height\n"
    project = {
        "app/main.py": "from geo import area\narea(3, 4)\narea(x, 2)\narea(*dims)\n",
        "app/other.py": "import geo\ngeo.area(5, height=6)\narea(1, 2, 3)\n",
        "tests/test_geo.py": "def test_it():\n    assert area(7) == 7\n",
        "tests/geo_test.py": "area(**kw)\narea(8, 9)\n",
        "broken.py": "def (:\n",
    }
    found = candidate_inputs(source, "area", project)
    assert calls(found[:4]) == [
        ([3, 4], {}, "call_site"),
        ([5], {"height": 6}, "call_site"),
        ([8, 9], {}, "test"),
        ([7], {}, "test"),
    ]
    assert all(c.source not in ("call_site", "test") for c in found[4:])


def test_percent_range_check_gives_boundary_values() -> None:
    source = (
        "def discount(price, percent):\n"
        "    if percent < 0 or percent > 100:\n"
        "        raise ValueError(percent)\n"
        "    return price * (100 - percent) // 100\n"
    )
    found = candidate_inputs(source, "discount", limit=20)
    # The base set already takes the first boundary; the rest follow as literal variations.
    assert values(found[0]) == (0, -1)
    literal = [values(c)[1] for c in found if c.source == "literal"]
    assert list(dict.fromkeys(literal)) == [0, 100, 101]
    # the second base gives the price a telling value: 1000 beside the first base's 0
    assert {values(c)[0] for c in found if c.source == "literal"} == {0, 1000}
    prices = {values(c)[0] for c in found if c.source == "name"}
    assert prices == {0, 1000}
    assert "50" in {c.args[1] for c in found if c.source == "name"}


def test_body_literals_membership_equality_and_keys() -> None:
    source = (
        "def handle(mode, record, level):\n"
        "    if mode in ('fast', 'slow') or mode == 'off':\n"
        "        return record['id'], record['name']\n"
        "    if 10 <= level:\n"
        "        return None\n"
    )
    found = candidate_inputs(source, "handle", limit=20)
    assert values(found[0]) == ("fast", {"id": 1, "name": 1}, 9)
    literal = [values(c) for c in found if c.source == "literal"]
    assert [a[0] for a in literal[:2]] == ["slow", "off"]
    # mirrored ``10 <= level`` gives 9 (the base) and 10
    assert ("fast", {"id": 1, "name": 1}, 10) in literal


def test_defaults_annotations_and_one_factor_at_a_time() -> None:
    source = (
        "from typing import Optional\n"
        "def fmt(width: int, label: Optional[str], verbose=False, sep=SEP, end='.',\n"
        "        *rest, **extra):\n"
        "    return label\n"
    )
    found = candidate_inputs(source, "fmt", limit=20)
    # Two bases (the first values; then telling ones, not zero or empty), each varied one
    # parameter at a time.
    assert calls(found) == [
        ([0, "", False], {"end": "."}, "default"),
        ([1, "abc", False], {"end": "."}, "default"),
        ([0, "", True], {"end": "."}, "default"),
        ([1, "abc", True], {"end": "."}, "default"),
        ([0, "abc", False], {"end": "."}, "annotation"),
        ([1, "", False], {"end": "."}, "annotation"),
        ([3, "", False], {"end": "."}, "annotation"),
        ([3, "abc", False], {"end": "."}, "annotation"),
        ([0, None, False], {"end": "."}, "annotation"),
        ([1, None, False], {"end": "."}, "annotation"),
        # **extra gets two keywords no parameter has; *rest nothing: ``sep=SEP`` is left at
        # its default, so no positional argument can follow it.
        ([0, "", False], {"end": ".", "a": 1, "b": 2}, "name"),
        ([1, "abc", False], {"end": ".", "a": 1, "b": 2}, "name"),
    ]


def test_name_heuristics_for_untyped_code() -> None:
    source = "def pick(items, count, is_strict, path, other):\n    pass\n"
    found = candidate_inputs(source, "pick", limit=30)
    assert values(found[0]) == ([1, 2, 3], 0, True, "example.txt", 1)
    assert found[0].source == "default"
    varied = {(values(c)[1], values(c)[2], values(c)[4]) for c in found if c.source == "name"}
    assert {(1, True, 1), (3, True, 1), (0, False, 1), (0, True, "a")} <= varied
    assert ([], 0, True, "example.txt", 1) in [values(c) for c in found]


def test_methods_drop_self_and_find_obj_method_call_sites() -> None:
    source = (
        "class Cart:\n"
        "    def add(self, qty: int = 1, *, note=''):\n"
        "        '''>>> Cart().add(2)'''\n"
        "    @staticmethod\n"
        "    def make(n):\n"
        "        pass\n"
    )
    project = {"shop.py": "cart.add(5, note='x')\nCart.add(cart, 6)\nself.add(y)\n"}
    found = candidate_inputs(source, "Cart.add", project)
    assert calls(found[:3]) == [
        ([2], {}, "doctest"),
        ([5], {"note": "x"}, "call_site"),
        ([1], {"note": ""}, "default"),
    ]
    assert values(candidate_inputs(source, "Cart.make")[0]) == (0,)


def test_called_parameters_get_callables_of_the_arity_they_are_called_with() -> None:
    source = "def apply(func, x, combine):\n    return combine(func(x), x)\n"
    assert callable_params(source, "apply") == ["func", "combine"]
    found = candidate_inputs(source, "apply", limit=30)
    assert found[0].args == ("lambda x: x * 2", "1", "operator.add")
    assert {c.args[0] for c in found} == {"lambda x: x * 2", "str", "bool"}
    assert {c.args[2] for c in found} == {"operator.add", "lambda a, b: (a, b)"}
    # A call site passing a name a test cannot import (print) is skipped; None is a literal.
    sites = {"use.py": "apply(print, 1, max)\napply(None, 2, min)\n"}
    assert candidate_inputs(source, "apply", sites)[0].case.text == "None, 2, min"


def test_callable_with_default_is_left_out() -> None:
    source = "def order(values, key=None):\n    return key(1) if key else sorted(values)\n"
    assert callable_params(source, "order") == ["key"]
    found = candidate_inputs(source, "order")
    assert found and all(len(c.args) == 1 and not c.kwargs for c in found)


def test_dedupe_limit_and_json() -> None:
    source = '''
def f(n, flag=True):
    """>>> f(0, True)
    >>> f(0, True)
    """
    if n == 0:
        return 1
'''
    found = candidate_inputs(source, "f", {"a.py": "f(0, True)\nf(0, flag=True)\n"})
    keys = [c.to_json()["text"] for c in found]
    assert len(keys) == len(set(keys))
    assert calls(found[:2]) == [([0, True], {}, "doctest"), ([0], {"flag": True}, "call_site")]
    assert len(candidate_inputs(source, "f", limit=3)) == 3
    for candidate in found:
        assert json.loads(json.dumps(candidate.to_json()))["source"] == candidate.source


def test_unknown_qualname_raises() -> None:
    source = "class A:\n    def m(self):\n        pass\n\ndef g():\n    pass\n"
    for name in ("missing", "A.other", "A", "g.inner"):
        with pytest.raises(ValueError, match="not"):
            candidate_inputs(source, name)


CONSTANTS = """
RATES = {"standard": 0.2, "reduced": 0.05, "zero": 0}
KINDS = ("a", "b")


def vat(amount, band):
    if band not in RATES:
        raise ValueError(band)
    return amount * RATES[band]


def kind(value, other):
    return KINDS.index(value) if value in KINDS else RATES.get(other, -1)
"""


def test_a_parameter_looked_up_in_a_module_constant_takes_its_keys_and_items() -> None:
    """``band not in RATES``, ``RATES[band]``, ``value in KINDS`` and ``RATES.get(other)``
    offer the constant's keys or items: the branches behind a module-level table."""
    vat_bands = {args[1] for args, _, _ in calls(candidate_inputs(CONSTANTS, "vat", limit=30))}
    assert {"standard", "reduced", "zero"} <= vat_bands
    found = calls(candidate_inputs(CONSTANTS, "kind", limit=40))
    assert {"a", "b"} <= {args[0] for args, _, _ in found}
    assert "reduced" in {args[1] for args, _, _ in found}


SENTINEL = '''
no_default = "__no__default__"


def pluck(ind, seqs, default=no_default):
    """Pick.

    >>> list(pluck(0, [[1, 2], [3, 4]]))
    [1, 3]
    """
    if default == no_default:
        return [seq[ind] for seq in seqs]
    return [seq[ind] if len(seq) > ind else default for seq in seqs]
'''


def test_a_sentinel_default_is_varied_on_the_calls_people_wrote() -> None:
    """``default == no_default`` compares with a sentinel: None leaves it, tried first on
    the doctest's own call (whose values have the right shape), not only on guessed ones."""
    found = calls(candidate_inputs(SENTINEL, "pluck", limit=12))
    assert found[0] == ([0, [[1, 2], [3, 4]]], {}, "doctest")
    assert found[1] == ([0, [[1, 2], [3, 4]], None], {}, "literal")


def test_names_ending_like_sequences_get_lists() -> None:
    source = "def join(leftseq, right_items):\n    return leftseq + right_items\n"
    found = calls(candidate_inputs(source, "join"))
    assert found[0] == ([[1, 2, 3], [1, 2, 3]], {}, "default")


DATACLASSES = """
from dataclasses import dataclass, field
from typing import ClassVar


@dataclass
class Item:
    sku: str
    price_cents: int
    quantity: int = 0
    kind: ClassVar[str] = "item"
    cache: dict = field(default_factory=dict, init=False)

    def total(self):
        return self.price_cents * self.quantity


class Shelf:
    def put(self, item: Item, count=1):
        return [item] * count
"""


def test_a_class_without_init_is_built_from_its_fields() -> None:
    """A dataclass's ``__init__`` is its annotated fields (ClassVar and init=False left out);
    the most telling guess fills the defaulted ``quantity`` too, and ``sku: str`` gets a
    SKU as people write one, not ``'abc'``."""
    found = candidate_inputs(DATACLASSES, "Item.__init__", limit=4)
    assert found[0].args == ("''", "0", "0")
    assert max(found, key=lambda c: c.telling).args == ("'WID-0042'", "1", "3")


def test_a_parameter_annotated_with_a_class_of_the_module_gets_one_built() -> None:
    found = candidate_inputs(DATACLASSES, "Shelf.put", limit=4)
    assert found[0].args == ("Item('WID-0042', 1, 3)", "1")  # count at its default


def test_the_telling_base_gives_parameters_different_ints() -> None:
    """Equal arguments hide which one went where: the second base moves a repeated int on."""
    source = "def flip(func, a, b):\n    return func(b, a)\n"
    cases = [c.case.text for c in candidate_inputs(source, "flip", limit=4)]
    assert cases[:2] == ["operator.add, 1, 1", "operator.add, 1, 3"]


def test_star_functions_get_callables_that_tell_their_order() -> None:
    """compose(*funcs) and a star parameter whose items the body calls get two callables
    whose results differ in either order, and one."""
    named = "def compose(*funcs):\n    return funcs\n"
    called = (
        "def pipe(data, *steps):\n"
        "    for step in steps:\n"
        "        data = step(data)\n"
        "    return data\n"
    )
    for source, name in ((named, "compose"), (called, "pipe")):
        texts = {c.case.text for c in candidate_inputs(source, name, limit=30)}
        assert any("lambda x: x * 2, lambda x: x + 1" in text for text in texts), texts
        assert any(text.endswith("lambda x: x + 1") for text in texts), texts
