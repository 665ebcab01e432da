"""Stock keeping for a small shop."""

from inventory.models import Item, Warehouse
from inventory.pricing import apply_discount, bulk_price, price_with_tax

__all__ = ["Item", "Warehouse", "apply_discount", "bulk_price", "price_with_tax"]
