"""Invoices: numbers, due dates, late fees and the CSV exports under invoices/."""

import csv
import re
from datetime import date, datetime, timedelta

INVOICE_DIR = "invoices"
PAYMENT_TERMS = {"net15": 15, "net30": 30, "net60": 60, "due_on_receipt": 0}
INVOICE_FILE = re.compile(r"^INV-(\d{5})_([a-z0-9-]+)\.csv$")
LATE_FEE_RATE = 0.015


def parse_due_date(text):
    """An ISO date ('2024-03-15') or a UK one ('15/03/2024') as a date."""
    text = text.strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return date.fromisoformat(text)
    return datetime.strptime(text, "%d/%m/%Y").date()


def due_date(issued, terms="net30"):
    """The ISO date an invoice issued on ``issued`` (ISO) is due, under its payment terms."""
    if terms not in PAYMENT_TERMS:
        raise ValueError(f"unknown payment terms {terms!r}")
    return (date.fromisoformat(issued) + timedelta(days=PAYMENT_TERMS[terms])).isoformat()


def days_overdue(due, paid_on):
    """Days between the due date and the payment date (both ISO strings), 0 if on time."""
    late = (parse_due_date(paid_on) - parse_due_date(due)).days
    return max(late, 0)


def late_fee(amount, days_late):
    """1.5% of the amount per started 30 days late, at least 5 once late."""
    if days_late <= 0:
        return 0
    periods = (days_late + 29) // 30
    return round(max(amount * LATE_FEE_RATE * periods, 5), 2)


def invoice_filename(number, customer_name):
    """'INV-00042_acme-ltd.csv' for invoice 42 of 'Acme Ltd.'."""
    slug = re.sub(r"[^a-z0-9]+", "-", customer_name.lower()).strip("-")
    return f"INV-{number:05d}_{slug}.csv"


def parse_invoice_filename(filename):
    """'INV-00042_acme-ltd.csv' -> (42, 'acme-ltd')."""
    match = INVOICE_FILE.match(filename)
    if match is None:
        raise ValueError(f"not an invoice file name: {filename!r}")
    return int(match.group(1)), match.group(2)


def read_invoice(path):
    """The lines of an exported invoice: dicts with sku, quantity and amount."""
    with open(path, newline="") as handle:
        return [
            {"sku": row["sku"], "quantity": int(row["quantity"]), "amount": float(row["amount"])}
            for row in csv.DictReader(handle)
        ]


def invoice_total(path):
    """The sum of an exported invoice's amounts."""
    return round(sum(line["amount"] for line in read_invoice(path)), 2)


def reminder_subject(number, days_late):
    if days_late > 30:
        return f"Final reminder: invoice {number} is {days_late} days overdue"
    if days_late > 0:
        return f"Reminder: invoice {number} is overdue"
    return f"Invoice {number}"
