"""Prices, discounts and VAT."""

from decimal import ROUND_HALF_UP, Decimal

CURRENCY_SYMBOLS = {"GBP": "£", "EUR": "€", "USD": "$"}
VAT_RATES = {"UK": Decimal("0.20"), "FR": Decimal("0.20"), "DE": Decimal("0.19"), "US": Decimal("0")}
EXCHANGE_RATES = {"GBP": Decimal("1"), "EUR": Decimal("1.17"), "USD": Decimal("1.27")}
CENT = Decimal("0.01")


def to_money(amount):
    """The amount as a Decimal rounded to the cent ('12.345' -> Decimal('12.35'))."""
    return Decimal(str(amount)).quantize(CENT, rounding=ROUND_HALF_UP)


def format_price(amount, currency="GBP"):
    """'£1,234.50': the currency's symbol, thousands separated."""
    symbol = CURRENCY_SYMBOLS.get(currency)
    if symbol is None:
        raise ValueError(f"unsupported currency {currency!r}")
    value = to_money(amount)
    sign = "-" if value < 0 else ""
    return f"{sign}{symbol}{abs(value):,.2f}"


def parse_price(text):
    """'£1,234.50' -> (Decimal('1234.50'), 'GBP'); '12.5 EUR' works too."""
    text = text.strip()
    for code, symbol in CURRENCY_SYMBOLS.items():
        if text.startswith(symbol):
            return to_money(text[len(symbol) :].replace(",", "")), code
        if text.upper().endswith(code):
            return to_money(text[: -len(code)].strip().replace(",", "")), code
    raise ValueError(f"no currency in {text!r}")


def apply_discount(price, percent):
    """The price after a percentage discount; discounts above 50% need a manager."""
    if not 0 <= percent <= 50:
        raise ValueError("discount must be between 0 and 50 percent")
    return to_money(Decimal(str(price)) * (100 - Decimal(str(percent))) / 100)


def price_with_vat(net, country):
    """The gross price of a net price sold to a customer in ``country``."""
    rate = VAT_RATES.get(country, VAT_RATES["UK"])
    return to_money(Decimal(str(net)) * (1 + rate))


def convert(amount, from_currency, to_currency):
    """An amount in another currency, through GBP."""
    if from_currency == to_currency:
        return to_money(amount)
    pounds = Decimal(str(amount)) / EXCHANGE_RATES[from_currency]
    return to_money(pounds * EXCHANGE_RATES[to_currency])


def bulk_price(unit_price, quantity):
    """Unit price times quantity, 5% off from 10 units and 10% off from 50."""
    if quantity < 1:
        raise ValueError("quantity must be at least 1")
    total = Decimal(str(unit_price)) * quantity
    if quantity >= 50:
        total *= Decimal("0.90")
    elif quantity >= 10:
        total *= Decimal("0.95")
    return to_money(total)
