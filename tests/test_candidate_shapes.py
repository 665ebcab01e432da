"""Candidates have the shape the function takes apart: lists of lists, pairs, records, star
parameters, and lists of numbers or words for plural names (issue 48)."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from remora.tools.capabilities.candidates import Candidate, candidate_inputs


def firsts(candidates: list[Candidate]) -> list[Any]:
    """The first argument of each candidate, evaluated back."""
    return [ast.literal_eval(c.args[0]) for c in candidates]


def texts(candidates: list[Candidate]) -> list[str]:
    return [c.case.text for c in candidates]


def test_a_plural_of_numbers_gets_lists_that_are_not_sorted_nor_all_equal() -> None:
    """``min(prices)`` raised on the ints 0 and 1000 that ``price`` gets: nothing was left
    worth a test."""
    source = "def cheapest(prices):\n    return min(prices)\n"
    found = candidate_inputs(source, "cheapest")
    assert [(c.case.text, c.source) for c in found] == [
        ("[3, 1, 2]", "default"),
        ("[19.99, 5.0, 12.5]", "name"),
        ("[]", "name"),
    ]
    for name in ("unit_prices", "scores", "ages", "counts", "weights", "amounts", "totals"):
        source = f"def f({name}):\n    return {name}\n"
        assert firsts(candidate_inputs(source, "f"))[0] == [3, 1, 2], name


def test_singular_names_keep_their_values() -> None:
    source = "def tax(price, total, count):\n    return price\n"
    assert texts(candidate_inputs(source, "tax", limit=2)) == ["0, 0, 0", "1000, 1002, 1"]


@pytest.mark.parametrize("name", ["names", "words", "tags", "lines", "emails", "user_names"])
def test_a_plural_of_words_gets_a_list_of_strings(name: str) -> None:
    source = f"def f({name}):\n    return ', '.join({name})\n"
    assert firsts(candidate_inputs(source, "f")) == [["b", "a", "c"], []]


def test_other_plurals_get_a_list_of_ints_and_one_of_small_strings() -> None:
    source = "def count_all(things):\n    return len(things)\n"
    assert firsts(candidate_inputs(source, "count_all")) == [[1, 2, 3], ["b", "a"], []]


NESTED = [[[1, 2, 3], [4, 5, 6]], [[1, 2], [3], []], []]


@pytest.mark.parametrize(
    "body",
    [
        "    out = []\n    for x in p:\n        for y in x:\n            out.append(y)\n",
        "    return [y for x in p for y in x]\n",
        "    return list(zip(*p))\n",
        "    return list(itertools.chain(*p))\n",
        "    return list(map(len, p))\n",
        "    return [row[0] for row in p]\n",
        "    return p[0][1]\n",
        "    for i, x in enumerate(p):\n        yield from x\n",
        "    return [sorted(x) for x in p]\n",
    ],
)
def test_a_parameter_whose_items_the_body_iterates_gets_lists_of_lists(body: str) -> None:
    source = f"import itertools\ndef f(p):\n{body}"
    assert firsts(candidate_inputs(source, "f")) == NESTED


@pytest.mark.parametrize("name", ["iterables", "seqs", "rows", "lists", "matrix", "groups"])
def test_a_plural_of_containers_gets_lists_of_lists(name: str) -> None:
    source = f"def f({name}):\n    return {name}\n"
    assert firsts(candidate_inputs(source, "f")) == NESTED


def test_items_unpacked_or_read_by_key_get_tuples_or_dicts() -> None:
    pairs = {
        "def f(pairs):\n    return pairs\n",
        "def f(p):\n    return dict(p)\n",
        "def f(p):\n    return {k: v for k, v in p}\n",
        "def f(p):\n    for i, (a, b) in enumerate(p):\n        pass\n",
        "def f(p):\n    for x in p:\n        a, b = x\n",
    }
    for source in pairs:
        assert firsts(candidate_inputs(source, "f")) == [[(1, "a"), (2, "b")], []], source
    source = "def f(p):\n    for a, b, c in p:\n        pass\n"
    assert firsts(candidate_inputs(source, "f"))[0] == [(1, 2, 3), (4, 5, 6)]
    source = "def ids(users):\n    return [u['id'] for u in users if u.get('active')]\n"
    assert firsts(candidate_inputs(source, "ids")) == [
        [{"id": 1, "active": 1}, {"id": 2, "active": 2}],
        [],
    ]


def test_words_iterated_stay_words() -> None:
    """A string is iterable and has a length: ``len(w)`` or ``for ch in w`` over words says
    nothing about lists."""
    source = "def f(words):\n    return [len(w) for w in words] + [c for w in words for c in w]\n"
    assert firsts(candidate_inputs(source, "f")) == [["b", "a", "c"], []]


def test_star_iterables_get_two_or_three_iterables() -> None:
    for source in (
        "def interleave(*seqs):\n    return list(zip(*seqs))\n",
        "def interleave(*p):\n    for it in p:\n        yield from it\n",
        "def interleave(*iterables):\n    return iterables\n",
    ):
        assert texts(candidate_inputs(source, "interleave")) == [
            "",
            "[1, 2, 3], [4, 5, 6]",
            "[1, 2], [3], []",
        ], source


def test_star_args_get_plain_values_and_star_kwargs_keywords() -> None:
    source = "def total(*args):\n    return sum(args)\n"
    # a name that says nothing of what it holds may hold functions (thread_first's *forms)
    assert texts(candidate_inputs(source, "total")) == [
        "",
        "1, 2, 3",
        "'b', 'a'",
        "lambda x: x * 2, lambda x: x + 1",
    ]
    source = "def total(*prices):\n    return sum(prices)\n"
    assert texts(candidate_inputs(source, "total")) == ["", "3, 1, 2", "19.99, 5.0, 12.5"]
    source = "def opts(**kwargs):\n    return sorted(kwargs)\n"
    assert texts(candidate_inputs(source, "opts")) == ["", "a=1, b=2"]
    # keys the body reads come first; made-up keys avoid the parameters' names
    source = "def style(a, **options):\n    return options.get('color'), a\n"
    found = texts(candidate_inputs(source, "style"))
    assert found[:2] == ["1", "1, color=1"]
    assert "1, b=1, c=2" in found


def test_star_args_follow_every_positional_parameter_or_none() -> None:
    """Extra positional arguments need every parameter before them filled: after one left
    at a default that is not a literal they cannot be passed."""
    source = "def log(level, msg, *args):\n    return msg % args\n"
    assert "1, 1, 1, 2, 3" in texts(candidate_inputs(source, "log", limit=30))
    source = "def log(msg, sep=SEP, *args):\n    return msg\n"
    assert all(len(c.args) == 1 for c in candidate_inputs(source, "log", limit=30))


def test_people_s_calls_of_a_star_function_are_varied_too() -> None:
    source = '''
def pick(key, *args, **kwargs):
    """>>> pick('y', 1, 2, flag=True)"""
    if key == 'x':
        return args
    return kwargs
'''
    found = [(c.case.text, c.source) for c in candidate_inputs(source, "pick", limit=30)]
    assert found[:2] == [("'y', 1, 2, flag=True", "doctest"), ("'x', 1, 2, flag=True", "literal")]
    # through the guessed tiers only with values of the shape people passed (numbers)
    assert ("'y', 1, 2, 3, flag=True", "name") in found
    assert ("'y', 'b', 'a', flag=True", "name") not in found


def test_a_doctest_is_varied_through_the_other_tiers_with_values_of_its_shape() -> None:
    source = '''
def scale(values, factor=2):
    """>>> scale([1, 2], 3)"""
    return [v * factor for v in values]
'''
    found = [(c.case.text, c.source) for c in candidate_inputs(source, "scale")]
    assert found[:2] == [("[1, 2], 3", "doctest"), ("[1, 2, 3], 2", "default")]
    assert ("[1, 2, 3], 3", "name") in found
    assert ("[], 3", "name") in found
    assert ("['b', 'a'], 3", "name") not in found  # strings where people passed numbers


def test_a_parameter_whose_attributes_the_body_reads_gets_a_class_that_has_them() -> None:
    source = (
        "class Point:\n"
        "    def __init__(self, x, y):\n"
        "        self.x, self.y = x, y\n\n"
        "class Label:\n"
        "    def __init__(self, text):\n"
        "        self.text = text\n\n"
        "def midpoint(start, end):\n"
        "    return Point((start.x + end.x) / 2, (start.y + end.y) / 2)\n"
    )
    first = candidate_inputs(source, "midpoint")[0]
    assert first.args[0].startswith("Point(") and first.args[1].startswith("Point(")
    assert not any("Label(" in c.case.text for c in candidate_inputs(source, "midpoint"))


def test_a_name_an_earlier_example_binds_to_data_is_read_as_that_data() -> None:
    source = (
        "def total(rows, column):\n"
        '    """Sum a column.\n\n'
        "    >>> table = [{'a': 1}, {'a': 2}]\n"
        "    >>> total(table, 'a')\n"
        "    3\n"
        "    >>> total(unknown, 'a')\n"
        '    """\n'
        "    return sum(row[column] for row in rows)\n"
    )
    found = candidate_inputs(source, "total")
    assert found[0].source == "doctest"
    assert found[0].case.text == "[{'a': 1}, {'a': 2}], 'a'"
    assert not any("unknown" in c.case.text for c in found)
