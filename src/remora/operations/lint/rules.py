"""The lint agent's pinned rule set: explicit ruff codes, never ruff's moving default selection.

Prefixes such as ``B`` grow whenever ruff adds a rule, so a new ruff release would change
what Remora reports; explicit codes do not. ``operations.lint.options.select`` replaces the
set (codes or prefixes, as the user chooses).
"""

from __future__ import annotations

DEFAULT_RULES: tuple[str, ...] = (
    # pyflakes: unused and undefined names, literal comparisons
    "F401",
    "F403",
    "F541",
    "F632",
    "F811",
    "F821",
    "F841",
    # pycodestyle: statements and comparisons
    "E401",
    "E701",
    "E702",
    "E703",
    "E711",
    "E712",
    "E713",
    "E714",
    "E721",
    "E722",
    "E731",
    "E741",
    "W605",
    # bugbear: likely bugs
    "B006",
    "B007",
    "B009",
    "B010",
    "B011",
    "B904",
    # simplifications ruff can rewrite
    "SIM118",
    "C401",
    "C402",
    "C403",
    "C404",
    "C405",
    "C408",
    "C416",
    "PIE790",
    "PIE810",
    "RUF010",
)
