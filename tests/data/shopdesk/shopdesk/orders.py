"""Orders and their lines."""

import re
from dataclasses import dataclass, field

from shopdesk.pricing import bulk_price, to_money

SKU_PATTERN = re.compile(r"^([A-Z]{3})-(\d{4})$")
STATUSES = ("draft", "placed", "paid", "shipped", "delivered", "cancelled")
TRANSITIONS = {
    "draft": ("placed", "cancelled"),
    "placed": ("paid", "cancelled"),
    "paid": ("shipped", "cancelled"),
    "shipped": ("delivered",),
}
FREE_SHIPPING_FROM = 50


@dataclass
class OrderLine:
    sku: str
    quantity: int
    unit_price: float

    def total(self):
        return bulk_price(self.unit_price, self.quantity)


@dataclass
class Order:
    number: str
    customer_email: str
    lines: list = field(default_factory=list)
    status: str = "draft"

    def add_line(self, sku, quantity, unit_price):
        """Add a line, or raise the quantity of the line with this SKU."""
        parse_sku(sku)
        for line in self.lines:
            if line.sku == sku:
                line.quantity += quantity
                return line
        line = OrderLine(sku, quantity, unit_price)
        self.lines.append(line)
        return line

    def total(self):
        return to_money(sum(line.total() for line in self.lines))

    def move_to(self, status):
        """Change the status, if the workflow allows it."""
        if not can_transition(self.status, status):
            raise ValueError(f"an order cannot go from {self.status} to {status}")
        self.status = status
        return status


def parse_sku(sku):
    """'ABC-0042' -> ('ABC', 42): the product family and its number."""
    match = SKU_PATTERN.match(sku.strip().upper())
    if match is None:
        raise ValueError(f"not a SKU: {sku!r}")
    return match.group(1), int(match.group(2))


def can_transition(current, new):
    """Whether an order may go from status ``current`` to ``new``."""
    if current not in STATUSES or new not in STATUSES:
        raise ValueError(f"unknown status: {current!r} or {new!r}")
    return new in TRANSITIONS.get(current, ())


def order_number(year, sequence):
    """'SO-2024-00042'."""
    if sequence <= 0:
        raise ValueError("sequence numbers start at 1")
    return f"SO-{year}-{sequence:05d}"


def shipping_due(order_total):
    """Shipping charged on an order: free from 50, else 4.95."""
    if order_total >= FREE_SHIPPING_FROM:
        return to_money(0)
    return to_money("4.95")


def lines_total(lines):
    """The total of order lines given as (sku, quantity, unit price) tuples."""
    total = 0
    for sku, quantity, unit_price in lines:
        parse_sku(sku)
        total += bulk_price(unit_price, quantity)
    return to_money(total)


def summarize_order(order):
    """One line for the order list in the back office."""
    count = sum(line.quantity for line in order.lines)
    return f"{order.number} ({order.status}): {count} item(s), {order.total()}"
