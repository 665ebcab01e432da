"""Plain-text stock reports."""

from inventory.models import Warehouse
from inventory.pricing import format_cents


def stock_report(warehouse: Warehouse) -> str:
    lines = [f"Stock report for {warehouse.name}"]
    for sku in sorted(warehouse.items):
        item = warehouse.items[sku]
        lines.append(f"{sku:<10} {item.quantity:>5} {format_cents(item.total_value()):>10}")
    lines.append(f"{'total':<10} {'':>5} {format_cents(warehouse.total_value()):>10}")
    return "\n".join(lines)


def parse_line(line):
    sku, quantity, price = line.split(",")
    return sku.strip(), int(quantity), int(price)


class ReportWriter:
    def __init__(self, warehouse):
        self.warehouse = warehouse
        self.written = 0

    def write(self, path):
        text = stock_report(self.warehouse)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        self.written += 1
        return len(text)
