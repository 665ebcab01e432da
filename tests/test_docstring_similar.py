"""Summaries of similar documented code: found by BM25, the project's first, never its own."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remora.operations.base import CorpusFile
from remora.operations.docstring import similar
from remora.operations.docstring.similar import (
    SummaryIndex,
    build_index,
    documented_in,
    shipped_index,
    similar_summaries,
    words_of,
)
from remora.operations.docstring.write import docstring_evidence, docstring_write
from tests.stores import capability_context, write_tree

ORDERS = '''"""Orders."""


def order_total(order, tax_rate=0.2):
    """Sum the prices of an order's lines, with tax."""
    return sum(line.price for line in order.lines) * (1 + tax_rate)


def order_lines(order):
    """List the lines of an order, cheapest first."""
    return sorted(order.lines, key=lambda line: line.price)


def _hidden(order):
    """A private helper nobody is shown."""
    return order


def shipping_cost(order, country):
    return 5 if country == "UK" else 12


class Customer:
    """A customer with a name and an email address."""

    def greeting(self):
        """Say hello to the customer by name."""
        return f"Hello {self.name}"
'''
INVOICES = """def invoice_total(invoice):
    return sum(line.price for line in invoice.lines)
"""


SIMILAR = {"options": {"similar_examples": True}}
"""The docstring operation's option that shows similar code's summaries (off by default)."""


@pytest.fixture
def no_shipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setattr(similar, "SHIPPED_INDEX", tmp_path / "absent.json.gz")
    shipped_index.cache_clear()
    yield
    shipped_index.cache_clear()


def test_words_of_identifiers() -> None:
    assert words_of("parse_due_date") == ["parse", "due", "date"]
    assert words_of("HTTPServerError") == ["http", "server", "error"]
    assert words_of("get_x") == []


def test_only_public_definitions_with_a_summary_to_learn_from_are_documented() -> None:
    found = documented_in(ORDERS, "shop/orders.py")
    assert [entry.qualname for entry in found] == [
        "order_total",
        "order_lines",
        "Customer",
        "Customer.greeting",
    ]
    assert found[0].signature == "order_total(order, tax_rate)"
    assert (
        found[0].shown()
        == "order_total(order, tax_rate): Sum the prices of an order's lines, with tax."
    )
    assert found[3].signature == "greeting()"
    assert documented_in("def broken(:\n", "x.py") == []


def test_bm25_ranks_by_shared_words_of_the_name_first() -> None:
    index = SummaryIndex(documented_in(ORDERS, "shop/orders.py"))
    node = ast.parse(INVOICES).body[0]
    assert isinstance(node, ast.FunctionDef)
    ranked = index.search(similar.definition_tokens(node), 2)
    assert ranked[0][1].qualname == "order_total"
    assert ranked[0][0] > ranked[1][0] > 0


def test_the_projects_similar_summaries_are_shown_with_the_evidence(
    tmp_path: Path, no_shipped: None
) -> None:
    root = write_tree(tmp_path / "proj", {"shop/orders.py": ORDERS, "shop/invoices.py": INVOICES})
    ctx = capability_context(root, system=SIMILAR)
    evidence = docstring_evidence(ctx, "shop/invoices.py", "invoice_total")
    assert evidence["similar"][0] == (
        "order_total(order, tax_rate): Sum the prices of an order's lines, with tax."
    )
    assert (
        "How maintainers summed up similar code:\n  order_total(order, tax_rate)"
        in (evidence["text"])
    )


def test_a_definition_is_never_shown_its_own_summary(tmp_path: Path, no_shipped: None) -> None:
    root = write_tree(tmp_path / "proj", {"shop/orders.py": ORDERS})
    ctx = capability_context(root, system=SIMILAR)
    node = ast.parse(ORDERS).body[1]
    assert isinstance(node, ast.FunctionDef)
    shown = similar_summaries(ctx, "shop/orders.py", node, "order_total")
    assert "order_total" not in [entry.qualname for entry in shown]
    assert shown and shown[0].qualname == "order_lines"


def test_the_shipped_index_fills_in_but_never_with_the_same_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = write_tree(
        tmp_path / "corpus",
        {
            "lib/money.py": ORDERS
            + INVOICES.replace(
                "def invoice_total(invoice):\n",
                'def invoice_total(invoice):\n    """Add up an invoice."""\n',
            )
        },
    )
    files = [
        CorpusFile("lib/money.py", corpus / "lib" / "money.py", corpus / "lib"),
    ]
    path = tmp_path / "index.json.gz"
    said = build_index(files, path)
    assert said.startswith("5 documented definitions from 1 files")
    monkeypatch.setattr(similar, "SHIPPED_INDEX", path)
    shipped_index.cache_clear()
    try:
        root = write_tree(tmp_path / "proj", {"app/invoices.py": INVOICES})
        ctx = capability_context(root, system=SIMILAR)
        node = ast.parse(INVOICES).body[0]
        assert isinstance(node, ast.FunctionDef)
        shown = similar_summaries(ctx, "app/invoices.py", node, "invoice_total")
        names = [entry.qualname for entry in shown]
        assert "invoice_total" not in names  # maybe this very function, vendored
        assert names[0] == "order_total"
    finally:
        shipped_index.cache_clear()


def test_a_summary_copied_from_similar_code_is_refused(tmp_path: Path, no_shipped: None) -> None:
    root = write_tree(tmp_path / "proj", {"shop/orders.py": ORDERS, "shop/invoices.py": INVOICES})
    ctx = capability_context(root, system=SIMILAR)
    docstring_evidence(ctx, "shop/invoices.py", "invoice_total")
    copied = docstring_write(
        ctx, "shop/invoices.py", "invoice_total", "Sum the prices of an order's lines, with tax."
    )
    assert copied["written"] is False
    assert copied["summary_problem"] == "copies_text"
    written = docstring_write(
        ctx, "shop/invoices.py", "invoice_total", "Add up the prices of the invoice's lines."
    )
    assert written["written"] is True


def test_without_the_option_no_similar_summary_is_shown(tmp_path: Path, no_shipped: None) -> None:
    root = write_tree(tmp_path / "proj", {"shop/orders.py": ORDERS, "shop/invoices.py": INVOICES})
    evidence = docstring_evidence(capability_context(root), "shop/invoices.py", "invoice_total")
    assert evidence["similar"] == []
    assert "similar code" not in evidence["text"]


def test_the_index_is_built_by_remora_train_index(tmp_path: Path) -> None:
    corpus = write_tree(tmp_path / "corpus", {"shop/orders.py": ORDERS})
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "remora",
            "train",
            "index",
            "--corpus",
            str(corpus / "shop"),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "docstring: 4 documented definitions from 1 files" in done.stdout
    assert (tmp_path / "out" / "docstring.json.gz").is_file()
    refused = subprocess.run(
        [sys.executable, "-m", "remora", "train", "index", "--corpus", str(tmp_path / "toolz")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode != 0
    assert "TRAIN_010" in refused.stdout + refused.stderr


def test_the_shipped_index_loads() -> None:
    shipped_index.cache_clear()
    index = shipped_index()
    assert len(index.entries) > 1000
    assert all(entry.summary for entry in index.entries[:50])
