"""Ledgers as plain lists of ``(account, amount)`` pairs."""

from ledgerkit.entries import balances, merge_ledgers, running_total
from ledgerkit.money import format_amount, parse_amount

__all__ = ["balances", "format_amount", "merge_ledgers", "parse_amount", "running_total"]
