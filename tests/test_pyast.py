"""pyast.parse: the one way Remora builds syntax trees, safe from several threads at once."""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor

from remora import pyast

DEEP = "x = " + "(" * 60 + "1" + ")" * 60 + "\n" + "def f(a):\n    return [a for a in range(3)]\n"


def test_parse_matches_ast_parse() -> None:
    assert ast.dump(pyast.parse(DEEP)) == ast.dump(ast.parse(DEEP))
    assert isinstance(pyast.parse("1 + 2", mode="eval"), ast.Expression)


def test_many_threads_parse_at_once() -> None:
    sources = [DEEP * (index % 5 + 1) for index in range(400)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        trees = list(pool.map(pyast.parse, sources))
    assert all(len(tree.body) == 2 * (index % 5 + 1) for index, tree in enumerate(trees))
