import pytest

from inventory.pricing import apply_discount, price_with_tax


def test_price_with_tax_standard():
    assert price_with_tax(1000) == 1200


def test_price_with_tax_unknown_rate():
    with pytest.raises(ValueError):
        price_with_tax(1000, "luxury")


def test_apply_discount_half():
    assert apply_discount(999, 50) == 499
