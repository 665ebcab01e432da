"""What a lint rule means and what the lint operation does with it (``remora explain F401``).

The answer comes from the data the lint operation works from, not from a second text:
ruff's own description of the rule (``ruff rule CODE``, the pinned ruff), whether the rule
is in the pinned rule set (:data:`~.rules.DEFAULT_RULES`), how a diagnostic of it can be
fixed (ruff's fix, Remora's rewrite of :mod:`._rewrites` with the reasons that rewrite
refuses a site, read from its source), and whether the model is asked about the issues no
tool may fix (:data:`~.residue.MODEL_CODES`, :data:`~.residue.LEFT_TO_THE_PERSON`).
"""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import textwrap
from dataclasses import dataclass, field
from typing import Literal

from remora.error_codes import source_template
from remora.operations.lint._rewrites import _RULES, REWRITE_CODES
from remora.operations.lint.residue import LEFT_TO_THE_PERSON, MODEL_CODES
from remora.operations.lint.rules import DEFAULT_RULES
from remora.tools.capabilities.ruff import ruff_command

Handling = Literal["host", "host_or_person", "person", "not_selected"]
RUFF_TIMEOUT = 30.0


@dataclass(frozen=True)
class RuleExplanation:
    """One lint rule: ruff's description and the lint operation's handling of it."""

    code: str
    name: str
    linter: str
    summary: str
    explanation: str
    """ruff's documentation of the rule (Markdown: what it does, why, an example)."""
    ruff_fix: str
    """ruff's word on its fix: "Fix is always available.", "... sometimes ...", "... not ..."."""
    url: str
    in_rule_set: bool
    handling: Handling
    steps: list[str] = field(default_factory=list)
    """What the lint operation does with a diagnostic of the rule, in order."""
    refusals: list[str] = field(default_factory=list)
    """Why Remora's rewrite of the rule refuses a site (its source's reasons)."""
    to_do: str = ""
    """What the person does with an issue Remora leaves."""


def ruff_rule(code: str) -> dict[str, object] | None:
    """``ruff rule CODE --output-format json``, or None when ruff knows no such rule."""
    try:
        done = subprocess.run(
            [*ruff_command(), "rule", code, "--output-format", "json"],
            capture_output=True,
            text=True,
            timeout=RUFF_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    try:
        found = json.loads(done.stdout)
    except json.JSONDecodeError:
        return None
    return found if isinstance(found, dict) else None


def explain_rule(code: str) -> RuleExplanation | None:
    """The explanation of lint rule ``code`` (upper case), None when ruff does not know it."""
    rule = ruff_rule(code)
    if rule is None:
        return None
    name = str(rule.get("name") or code)
    ruff_fix = str(rule.get("fix") or "")
    availability = str(rule.get("fix_availability") or "None")
    in_rule_set = code in DEFAULT_RULES
    steps: list[str] = []
    refusals: list[str] = []
    if not in_rule_set:
        steps.append(
            f"{code} is not in Remora's pinned rule set, so the lint operation does not report "
            "it; operations.lint.options.select replaces the set (codes or prefixes)."
        )
    if code in REWRITE_CODES:
        steps.append(
            "The host applies Remora's own rewrite where its safety analysis accepts the site "
            "(ruff's unsafe fix is never used for this rule); the rewrite is verified (the "
            "file parses, the issue is gone, no new issue) and the module's tests run."
        )
        refusals = _refusals(code)
    elif availability in ("Always", "Sometimes"):
        when = "always has a fix" if availability == "Always" else "has a fix for some sites"
        steps.append(
            f"ruff {when}: the host applies a safe fix, and an unsafe one while "
            "operations.lint.options.unsafe_fixes is on (the default), each verified (the "
            "file parses, the issue is gone, no new issue) before the module's tests run."
        )
    else:
        steps.append("No tool has a fix for it: no automatic change is made.")
    if code == "F401":
        steps.append(
            "An import a docstring example (>>>) uses is kept: removing it would break the "
            "doctest, and ruff does not read examples."
        )
    if code in MODEL_CODES:
        steps.append(
            "A site no tool may fix is shown to the model only with "
            "operations.lint.options.use_model: true (off by default: the embedded model's "
            "rewrites were refused by the checks); its rewrite is kept only when it changes "
            "nothing but what the rule asks and the tests still pass. Otherwise it is left "
            "for you."
        )
    elif code in LEFT_TO_THE_PERSON:
        steps.append(
            "A site no tool may fix is never asked of the model (its fix reaches beyond the "
            "lines it is shown: a rename, a moved default or an import): it is left for you."
        )
    else:
        steps.append("A site no tool may fix is left for you.")
    if not in_rule_set:
        handling: Handling = "not_selected"
    elif availability == "Always" and code not in REWRITE_CODES and code != "F401":
        handling = "host"
    elif availability == "None" and code not in REWRITE_CODES:
        handling = "person"
    else:
        handling = "host_or_person"
    return RuleExplanation(
        code=code,
        name=name,
        linter=str(rule.get("linter") or ""),
        summary=str(rule.get("summary") or ""),
        explanation=str(rule.get("explanation") or "").strip(),
        ruff_fix=ruff_fix,
        url=f"https://docs.astral.sh/ruff/rules/{name}/",
        in_rule_set=in_rule_set,
        handling=handling,
        steps=steps,
        refusals=refusals,
        to_do=_TO_DO[handling],
    )


_BY_HAND = (
    "change the code as ruff's description shows (its example and 'Use instead'), then run "
    "'remora analyze FILE --ops lint' again; Remora never writes a suppression comment "
    "(# noqa) for you."
)
_TO_DO: dict[Handling, str] = {
    "host": "Nothing by hand: review the fix Remora proposes ('remora review') and accept it.",
    "host_or_person": "Review the fix Remora proposes where it made one ('remora review'); "
    "where it left the issue for you, " + _BY_HAND,
    "person": "It is yours to fix: " + _BY_HAND,
    "not_selected": "Add the code to operations.lint.options.select to have Remora report and "
    "fix it, or run 'ruff check --select CODE' yourself.",
}


def _refusals(code: str) -> list[str]:
    """The reasons Remora's rewrite of ``code`` refuses a site: each ``RewriteRefused``
    message in the rule's function, as its source writes it."""
    function = _RULES.get(code)
    if function is None:
        return []
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "RewriteRefused"
            and node.args
        ):
            said = source_template(node.args[0])
            if said and not said.startswith("{"):
                found.append(said)
    return list(dict.fromkeys(found))
