"""Entries: ``(account, amount)`` pairs, amounts in cents."""


def balances(entries):
    """ Sum the amounts of each account

    >>> balances([("cash", 500), ("bank", 1200), ("cash", -200)])
    {'cash': 300, 'bank': 1200}

    Accounts appear in the order they are first seen.  An empty ledger has no
    balances:

    >>> balances([])
    {}

    See Also:
        running_total
    """
    totals = {}
    for account, amount in entries:
        totals[account] = totals.get(account, 0) + amount
    return totals


def running_total(amounts, start=0):
    """ Yields the total after each amount

    >>> list(running_total([100, -30, 45]))
    [100, 70, 115]

    The running total starts from ``start``::

        running_total(amounts, start=1000)

    .. note::
       Amounts are never rounded: they are whole cents already.
    """
    total = start
    for amount in amounts:
        total += amount
        yield total


def merge_ledgers(*ledgers):
    """ Merge ledgers into one, keeping their order

    Entries of later ledgers follow those of earlier ones:

    - nothing is sorted,
    - nothing is summed.

    >>> merge_ledgers([("cash", 1)], [("bank", 2)])
    [('cash', 1), ('bank', 2)]
    """
    merged = []
    for ledger in ledgers:
        merged.extend(ledger)
    return merged


def largest(entries):
    if not entries:
        raise ValueError("entries must not be empty")
    return max(entries, key=lambda entry: entry[1])
