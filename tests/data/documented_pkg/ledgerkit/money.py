"""Amounts in cents, as people write them."""


def parse_amount(text):
    """ Returns the amount in cents that ``text`` states

    >>> parse_amount("12.30")
    1230
    >>> parse_amount("-0.05")
    -5

    A missing cents part means whole units:

    >>> parse_amount("7")
    700
    """
    sign = -1 if text.startswith("-") else 1
    units, _, cents = text.lstrip("-").partition(".")
    return sign * (int(units) * 100 + int((cents or "0").ljust(2, "0")[:2]))


def format_amount(cents, currency="EUR"):
    """ Format cents for people to read

    >>> format_amount(1230)
    '12.30 EUR'
    >>> format_amount(-5, currency="USD")
    '-0.05 USD'
    """
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d} {currency}"


def is_refund(cents):
    return cents < 0
