"""Items and the warehouse that holds them."""

from dataclasses import dataclass, field


@dataclass
class Item:
    """A product line: a SKU, a unit price in cents and a quantity on hand."""

    sku: str
    price_cents: int
    quantity: int = 0

    def total_value(self) -> int:
        """Value of the stock on hand, in cents."""
        return self.price_cents * self.quantity

    def is_low(self, threshold=5):
        return self.quantity < threshold


@dataclass
class Warehouse:
    name: str
    items: dict = field(default_factory=dict)

    def add(self, item: Item) -> None:
        if item.sku in self.items:
            self.items[item.sku].quantity += item.quantity
        else:
            self.items[item.sku] = item

    def remove(self, sku, quantity):
        item = self.items.get(sku)
        if item == None:
            raise KeyError(sku)
        if quantity > item.quantity:
            raise ValueError(f"only {item.quantity} of {sku} in stock")
        item.quantity -= quantity
        return item.quantity

    def low_stock(self, threshold=5):
        return sorted(sku for sku, item in self.items.items() if item.is_low(threshold))

    def total_value(self) -> int:
        return sum(item.total_value() for item in self.items.values())
