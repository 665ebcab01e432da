"""Customers, as the shop imports them from its CSV export and the signup form."""

from shopdesk.contacts import normalize_email, normalize_phone

SEGMENTS = {"bronze": 0, "silver": 500, "gold": 2000}
DEFAULT_COUNTRY = "UK"


class Customer:
    def __init__(self, name, email, phone=None, country=DEFAULT_COUNTRY):
        self.name = name.strip()
        self.email = normalize_email(email)
        self.phone = normalize_phone(phone, country) if phone else None
        self.country = country
        self.orders_total = 0

    def display_name(self):
        """'Ada Lovelace <ada@example.com>'."""
        return f"{self.name} <{self.email}>"

    def record_order(self, amount):
        """Add a paid order's amount to the customer's lifetime total."""
        if amount <= 0:
            raise ValueError("an order amount is positive")
        self.orders_total += amount
        return self.orders_total

    def segment(self):
        return segment_for(self.orders_total)


def segment_for(lifetime_total):
    """The loyalty segment of a lifetime spend: bronze below 500, silver below 2000."""
    best = "bronze"
    for name, threshold in SEGMENTS.items():
        if lifetime_total >= threshold:
            best = name
    return best


def customer_from_row(row):
    """A Customer from one row of the CSV export (a dict of its columns)."""
    name = f"{row['first_name']} {row['last_name']}".strip()
    country = row.get("country") or DEFAULT_COUNTRY
    return Customer(name, row["email"], row.get("phone"), country)


def dedupe_customers(customers):
    """Customers with one entry per mailbox, the first one kept."""
    seen = set()
    unique = []
    for customer in customers:
        if customer.email in seen:
            continue
        seen.add(customer.email)
        unique.append(customer)
    return unique


def greeting(name, hour):
    """The greeting of the order confirmation email."""
    if hour < 12:
        part = "morning"
    elif hour < 18:
        part = "afternoon"
    else:
        part = "evening"
    first = name.split()[0] if name.strip() else "there"
    return f"Good {part}, {first}!"


def example_customer():
    return Customer("Ada Lovelace", "Ada.Lovelace@example.com", "020 7946 0958", "UK")
