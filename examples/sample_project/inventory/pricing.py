"""Prices, discounts and tax."""

import math
import os

TAX_RATES = {"standard": 0.2, "reduced": 0.05, "zero": 0.0}


def price_with_tax(price_cents: int, rate: str = "standard") -> int:
    """Return the price including tax, rounded to the nearest cent."""
    if rate not in TAX_RATES:
        raise ValueError(f"unknown tax rate {rate!r}")
    return round(price_cents * (1 + TAX_RATES[rate]))


def apply_discount(price_cents, percent):
    if percent < 0 or percent > 100:
        raise ValueError("percent must be between 0 and 100")
    return math.floor(price_cents * (100 - percent) / 100)


def bulk_price(unit_cents: int, quantity: int) -> int:
    # 5% off from 10 units, 10% off from 100 units
    if quantity >= 100:
        percent = 10
    elif quantity >= 10:
        percent = 5
    else:
        percent = 0
    return apply_discount(unit_cents * quantity, percent)


def format_cents(cents):
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d}"
