from ledgerkit import balances, format_amount, merge_ledgers, parse_amount, running_total


def test_balances_sum_each_account():
    assert balances([("a", 1), ("b", 2), ("a", 3)]) == {"a": 4, "b": 2}


def test_running_total_from_a_start():
    assert list(running_total([1, 2], start=10)) == [11, 13]


def test_merge_keeps_order():
    assert merge_ledgers([("a", 1)], [], [("b", 2)]) == [("a", 1), ("b", 2)]


def test_amounts_round_trip():
    for text in ("0.01", "12.30", "-4.50"):
        assert format_amount(parse_amount(text)).split()[0] == text
