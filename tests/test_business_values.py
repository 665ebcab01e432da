"""Values a person would write: the host's candidates for business-shaped parameters.

Business code takes emails, phone numbers, ISO date strings, country codes, SKUs and records
read by key; the host reads what follows from the state (the regex the body matches, the
format ``strptime`` parses, the module's constants, the docstring's quoted inputs, the
parameter's name) instead of passing ``'a'`` and ``1``. The last tests run the test and
sample_data operations on ``tests/data/shopdesk`` (no model) and read what they wrote.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from remora.operations.characterize.steps import constants_text
from remora.tools.capabilities.candidates import candidate_inputs, regex_example
from tests.support.agent_run import run_operation

SHOPDESK = Path(__file__).parent / "data" / "shopdesk"


def texts(source: str, qualname: str, limit: int = 12) -> list[str]:
    return [c.case.text for c in candidate_inputs(source, qualname, limit=limit)]


def first_args(source: str, qualname: str) -> list[Any]:
    return [
        ast.literal_eval(c.args[0]) for c in candidate_inputs(source, qualname, limit=12) if c.args
    ]


CONTACTS = (SHOPDESK / "shopdesk" / "contacts.py").read_text(encoding="utf-8")


def test_a_phone_number_and_the_country_codes_of_the_module() -> None:
    """``normalize_phone('a', 'UK') == '+44'`` was what the host pinned: the phone is now a
    number as people write it, the country each key of ``COUNTRY_CODES``."""
    cases = texts(CONTACTS, "normalize_phone")
    assert cases[0] == "'+44 20 7946 0958', 'UK'"
    assert all(not case.startswith("'a'") and not case.startswith("1,") for case in cases)
    assert {"'+44 20 7946 0958', 'FR'", "'020 7946 0958', 'UK'"} <= set(cases)


def test_an_email_gets_addresses_not_a_key_dict() -> None:
    """``'@' not in email`` tests a substring: no ``{'@': 1}``; the telling base is an
    address, then one with a gmail alias and spaces, then one without an at sign."""
    assert texts(CONTACTS, "normalize_email") == [
        "None",
        "'ada@example.com'",
        "' Grace.Hopper+news@Gmail.com '",
        "'no-at-sign.example.com'",
    ]


def test_typed_string_parameters_named_like_business_fields() -> None:
    source = "def greet(email: str, postcode: str, count: int = 1):\n    return email\n"
    cases = texts(source, "greet", limit=20)
    assert "'ada@example.com', 'SW1A 1AA', 1" in cases
    assert not any("'abc'" in case for case in cases)


def test_a_regex_the_body_matches_gives_a_string_it_matches() -> None:
    source = (
        "import re\n"
        "SKU = re.compile(r'^([A-Z]{3})-(\\d{4})$')\n"
        "CODE = re.compile(r'^[a-z]{2}\\d{3}[A-F]$')\n"
        "def parse_sku(sku):\n"
        "    match = SKU.match(sku.strip().upper())\n"
        "    return match.groups()\n"
        "def parse_code(text):\n"
        "    clean = text.replace(' ', '')\n"
        "    return CODE.fullmatch(clean) is not None\n"
    )
    # a SKU as people write one matches: it is taken before a made-up one
    assert first_args(source, "parse_sku")[0] == "WID-0042"
    made = [a for a in first_args(source, "parse_code") if isinstance(a, str)]
    assert any(re.fullmatch(r"[a-z]{2}\d{3}[A-F]", a) for a in made), made


@pytest.mark.parametrize(
    "pattern",
    [
        r"^[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}$",
        r"^INV-(\d{5})_([a-z0-9-]+)\.csv$",
        r"(foo|bar)+baz\w*",
        r"[^@\s]+@[^@\s]+\.[a-z]{2,}",
        r"\d{4}-\d{2}-\d{2}",
    ],
)
def test_regex_examples_match_their_pattern(pattern: str) -> None:
    example = regex_example(pattern)
    assert example is not None
    assert re.fullmatch(pattern, example)


def test_regex_example_declines_what_it_cannot_write() -> None:
    assert regex_example(r"(a)\1") is None
    assert regex_example(r"[") is None


def test_date_strings_in_the_format_the_body_parses() -> None:
    source = (SHOPDESK / "shopdesk" / "invoices.py").read_text(encoding="utf-8")
    assert first_args(source, "parse_due_date")[:2] == ["2024-03-15", "15/03/2024"]
    due = texts(source, "due_date")
    assert due[0] == "'2024-03-15', 'net30'"
    # two dates named as dates, apart, so that the difference is not always 0
    assert "'2024-03-15', '2024-04-30'" in texts(source, "days_overdue")


def test_a_record_read_by_key_has_values_named_by_its_keys() -> None:
    source = (SHOPDESK / "shopdesk" / "customers.py").read_text(encoding="utf-8")
    row = first_args(source, "customer_from_row")[0]
    assert row == {
        "email": "ada@example.com",
        "first_name": "Ada",
        "last_name": "Lovelace",
        "country": "GB",
        "phone": "+44 20 7946 0958",
    }


def test_a_record_of_unknown_keys_keeps_its_numbers() -> None:
    source = "def total(row):\n    return row['a'] + row['b']\n"
    assert first_args(source, "total")[0] == {"a": 1, "b": 1}


def test_a_plural_named_after_a_class_of_the_module_holds_its_instances() -> None:
    """An Order built with ints as its lines was what the host passed."""
    source = (SHOPDESK / "shopdesk" / "orders.py").read_text(encoding="utf-8")
    receiver = candidate_inputs(source, "Order.__init__", limit=4)
    telling = max(receiver, key=lambda c: c.telling)
    assert telling.args[2] == "[OrderLine('WID-0042', 1, 0.5)]"
    assert telling.args[1] == "'ada@example.com'"
    # tuples unpacked by name take values of those names
    lines = first_args(source, "lines_total")[0]
    assert lines[0][:2] == ("WID-0042", 3)


def test_the_docstring_quotes_what_a_one_parameter_function_takes() -> None:
    source = (
        "def normalize_postcode(postcode):\n"
        "    \"\"\"'sw1a1aa' -> 'SW1A 1AA'; ' ec1a 1bb ' works too.\"\"\"\n"
        "    return postcode.upper()\n"
    )
    found = first_args(source, "normalize_postcode")
    assert "sw1a1aa" in found and " ec1a 1bb " in found
    assert "SW1A 1AA" in found  # the name's own value, not the docstring's result
    assert found.index("sw1a1aa") < found.index("SW1A 1AA")


def test_module_examples_and_same_named_parameters() -> None:
    source = (
        '"""IBANs.\n\n>>> validate(\'BE31435411161155\')\n\'BE31435411161155\'\n"""\n'
        "def validate(number):\n    return number\n"
        "def is_valid(number):\n    return bool(number)\n"
    )
    assert candidate_inputs(source, "validate", limit=2)[0].case.text == "'BE31435411161155'"
    assert candidate_inputs(source, "validate", limit=2)[0].source == "doctest"
    assert "'BE31435411161155'" in texts(source, "is_valid")


def test_toolz_like_code_keeps_its_values() -> None:
    """Names that say nothing of business keep the generic values."""
    source = "def take(n, seq):\n    return list(seq)[:n]\n"
    assert texts(source, "take", limit=3) == ["0, [1, 2, 3]", "1, [1, 2, 3]", "3, [1, 2, 3]"]


def test_the_model_sees_the_module_constants_the_function_reads() -> None:
    text = constants_text(CONTACTS, "normalize_phone")
    assert text.startswith("Module constants it reads:")
    assert 'COUNTRY_CODES = {"UK": "+44"' in text
    assert "FREE_MAIL_DOMAINS" not in text
    assert constants_text(CONTACTS, "initials") == ""


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    shutil.copytree(SHOPDESK, root)
    return root


def test_host_tests_of_normalize_phone_use_phone_numbers(shop: Path) -> None:
    outcome = run_operation(
        shop,
        "test",
        "shopdesk/contacts.py",
        [],
        qualname="normalize_phone",
        options={"model_inputs": False},
    )
    assert outcome.result.status == "success", outcome.result
    text = outcome.changed[outcome.result.details["test_file"]]
    assert 'normalize_phone("020 7946 0958", "UK") == "+442079460958"' in text
    assert 'normalize_phone("a"' not in text


def test_host_fixtures_of_parse_due_date_return_dates(shop: Path) -> None:
    outcome = run_operation(
        shop,
        "sample_data",
        "shopdesk/invoices.py",
        [],
        qualname="parse_due_date",
        options={"model_inputs": False},
    )
    assert outcome.result.status == "success", outcome.result
    data = json.loads(outcome.changed[outcome.result.details["fixture_file"]])
    by_args = {json.dumps(f["args"]): f for f in data["fixtures"]}
    # both return (a date, which a fixture file cannot hold as data: its result is omitted)
    assert "raises" not in by_args['["2024-03-15"]']
    assert "raises" not in by_args['["15/03/2024"]']
    assert by_args['["a"]']["raises"]["type"] == "ValueError"


def test_two_parameters_compared_with_each_other_are_not_sentinels() -> None:
    """``from_currency == to_currency`` passed None to both: the currencies stay codes."""
    source = (SHOPDESK / "shopdesk" / "pricing.py").read_text(encoding="utf-8")
    cases = texts(source, "convert")
    assert cases[:2] == ["0, 'GBP', 'GBP'", "1000, 'GBP', 'GBP'"]
    assert not any("None" in case for case in cases)


def test_a_path_parameter_gets_a_data_file_of_the_project(shop: Path) -> None:
    """``invoice_total('example.txt')`` pinned a FileNotFoundError; the project has an
    invoice export of the extension the module names (``.csv``)."""
    outcome = run_operation(
        shop,
        "test",
        "shopdesk/invoices.py",
        [],
        qualname="invoice_total",
        options={"model_inputs": False},
    )
    assert outcome.result.status == "success", outcome.result
    text = outcome.changed[outcome.result.details["test_file"]]
    assert 'invoice_total("invoices/INV-00042_acme-ltd.csv") == 223.9' in text


def test_a_number_named_parameter_takes_no_quoted_result() -> None:
    """``format_price(amount)``'s docstring quotes what it returns ('£1,234.50'), which
    raised an ArithmeticError as an amount; ``to_money``'s quotes a numeral it takes."""
    source = (SHOPDESK / "shopdesk" / "pricing.py").read_text(encoding="utf-8")
    assert not any("£" in case for case in texts(source, "format_price"))
    assert "'12.345'" in texts(source, "to_money")


def test_a_functions_examples_do_not_feed_its_neighbours() -> None:
    """Values another function's own examples pass (``seq='Hello'``) and the words of a
    doctest's output stay with that function: toolz-like code keeps its candidates."""
    source = (
        "def first(seq):\n"
        "    '''>>> first('ABC')\n    'A'\n    '''\n"
        "    return next(iter(seq))\n"
        "def unique(seq, key=None):\n"
        "    '''Unique items.\n\n    >>> tuple(unique(['cat', 'mouse']))\n    ('cat', 'mouse')\n"
        "    '''\n"
        "    return seq\n"
    )
    cases = texts(source, "unique")
    assert cases[0] == "['cat', 'mouse']"  # its own example
    assert "'ABC'" not in cases and "'cat'" not in cases and "'mouse'" not in cases
