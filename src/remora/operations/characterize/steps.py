"""The host's side of the test and sample_data agents: the evidence put before the model, and
the verdicts the host gives on its own word.

The host runs the argument lists it finds itself (doctests, call sites, tests, defaults,
literals, names) before the model is asked anything: for ``test`` it writes the tests and runs
them twice with coverage, then shows the model the function's source with the lines and
branches its tests never reached; for ``sample_data`` it validates its fixtures and shows
the model which ones call and which fail. The model is asked only for argument lists the
host could not find, and only while they can still help (coverage incomplete and growing).

Codes: the TOOL_7xx codes of :mod:`.inputs` and :mod:`.characterization`.
"""

from __future__ import annotations

import ast
from typing import Any

from remora import pyast
from remora.operations.characterize._mutation import MutantOutcome
from remora.operations.characterize.characterization import (
    characterization_result,
    verified_report,
)
from remora.operations.characterize.fixtures import fixtures_result
from remora.operations.characterize.inputs import draft, load_target, observe_cases
from remora.tools.capabilities.pysource import find_definition
from remora.tools.capabilities.registry import CapabilityContext, capability

MAX_SHOWN_LINES = 60
"""At most this many source lines are shown; a longer function is shown around its gaps."""
MAX_SHOWN_MUTANTS = 8
"""At most this many surviving mutants are shown."""


@capability
def coverage_evidence(ctx: CapabilityContext, path: str, qualname: str) -> dict[str, Any]:
    """What the tests verified so far leave out, for the model: ``text`` is the function's
    numbered source with each line never run and each branch never taken marked, then the
    mutants no test kills, each line as it is and as mutated; ``complete`` when nothing is
    left; ``grew`` whether what the tests reach (lines, branches, killed mutants) grew since
    the last call in this job (true the first time)."""
    report = verified_report(ctx, path, qualname)
    target = load_target(ctx, path, qualname)
    if report is None:
        return {"complete": False, "grew": False, "text": "No generated test passes yet."}
    coverage = report["coverage"]
    missing = set(coverage.get("missing_lines", []))
    exits: dict[int, list[int]] = {}
    for start, end in coverage.get("missing_branches", []):
        exits.setdefault(int(start), []).append(int(end))
    job = draft(ctx, target.path, qualname)
    survivors = job.mutation.survivors() if job.mutation is not None else []
    reached = (
        coverage["lines_covered"] + coverage["branches_covered"] + (report["mutants_killed"] or 0)
    )
    grew = not job.reach or reached > job.reach[-1][1]
    job.reach.append((job.proposals, reached))
    complete = not missing and not exits and not survivors
    ran = (
        "The host's and your argument lists ran"
        if job.proposals
        else "The host's argument lists ran"
    )
    text = f"{ran}; {len(report['kept'])} test(s) pass twice: {_reached(report)}."
    if missing or exits:
        marked = _marked_source(target.source, qualname, missing, exits)
        text += " Lines never run and branches never taken are marked:\n" + marked
    if survivors:
        text += "\n" + surviving_mutants_text(target.source, survivors)
    named = constants_text(target.source, qualname)
    if named:
        text += "\n" + named
    return {"complete": complete, "grew": grew, "text": text}


MAX_CONSTANT_TEXT = 160
"""A module constant is shown up to this many characters."""


def constants_text(source: str, qualname: str) -> str:
    """The module-level constants the function reads, as written (``COUNTRY_CODES = {'UK':
    '+44', ...}``): the codes, formats and tables its arguments are looked up in, for the
    model that proposes values of the kind the code expects. Empty when it reads none."""
    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError):
        return ""
    located = find_definition(tree, qualname)
    if located is None:
        return ""
    read = {
        node.id
        for node in ast.walk(located.node)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    shown = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target = node.target
        else:
            continue
        if isinstance(target, ast.Name) and target.id in read and target.id.isupper():
            text = " ".join((ast.get_source_segment(source, node) or "").split())
            if len(text) > MAX_CONSTANT_TEXT:
                text = text[: MAX_CONSTANT_TEXT - 3] + "..."
            shown.append(text)
    if not shown:
        return ""
    return "Module constants it reads:\n" + "\n".join(shown)


def _model_share(gains: list[int]) -> str:
    """What the model's proposals added beyond the host's own tests, in the verdict."""
    added = sum(gain for gain in gains if gain > 0)
    return (
        f"the model's {len(gains)} proposal(s) added {added} to what the tests reach "
        "(lines, branches and killed mutants)"
    )


def _reached(report: dict[str, Any]) -> str:
    """What the kept tests reach: the coverage summary, then the mutants they kill."""
    mutation = report.get("mutation_summary")
    return str(report["coverage_summary"]) + (f"; {mutation}" if mutation else "")


def surviving_mutants_text(source: str, survivors: list[MutantOutcome]) -> str:
    """The mutants no test kills, for the model: each line as it is, and the change that no
    test notices there; at most :data:`MAX_SHOWN_MUTANTS`."""
    lines = source.splitlines()
    shown = [
        "Mutants no test notices (each is the function with one change; a test whose result "
        "would differ under the change is wanted):"
    ]
    for mutant in survivors[:MAX_SHOWN_MUTANTS]:
        text = lines[mutant.line - 1].strip() if 0 < mutant.line <= len(lines) else ""
        shown.append(f"  line {mutant.line}: {text}    <- {mutant.change}")
    if len(survivors) > MAX_SHOWN_MUTANTS:
        shown.append(f"  ... and {len(survivors) - MAX_SHOWN_MUTANTS} more")
    return "\n".join(shown)


@capability
def inputs_evidence(ctx: CapabilityContext, path: str, qualname: str) -> dict[str, Any]:
    """The function's signature and what the host's own argument lists did when called, for
    the model that is asked for more: ``kept`` counts those that call without an argument
    error."""
    target = load_target(ctx, path, qualname)
    job = draft(ctx, target.path, qualname)
    observed = observe_cases(ctx, path, qualname, job.model_inputs)
    params = []
    for param in target.signature["params"]:
        text = param["name"]
        if param["default"] is not None:
            text += "=" + param["default"]
        params.append(text)
    lines = [f"Signature: {target.name}({', '.join(params)})"]
    named = constants_text(target.source, qualname)
    if named:
        lines.append(named)
    if target.needs_receiver:
        lines.append("It is called on an instance of its class.")
    kept = observed["verdicts"].get("kept", 0)
    lines.append(f"The host ran {observed['observed']} argument list(s); {kept} call(s) worked:")
    lines.extend(f"  {item['call']} {item['outcome']}" for item in observed["kept"][:6])
    for item in observed["problems"][:4]:
        lines.append(f"  {item['call']}: {item['verdict']} ({item['reason']})")
    return {"kept": kept, "text": "\n".join(lines)}


LEFT_CODES = frozenset({"TOOL_705", "TOOL_706"})
"""Why a job wrote nothing that is the person's to decide, not Remora's failure: no input
gave a behaviour worth a test or fixture, no generated test passed twice."""


def _not_done(report: dict[str, Any]) -> dict[str, Any]:
    """The verdict of a job that wrote nothing: ``left`` for the person when nothing
    observed was worth writing (:data:`LEFT_CODES`), else ``failed``."""
    status = "left" if report.get("code") in LEFT_CODES else "failed"
    return {"status": status, "summary": report["reason"], "details": {}}


@capability
def test_verdict(ctx: CapabilityContext, path: str, qualname: str) -> dict[str, Any]:
    """The test job's outcome on the host's word: the tests that pass twice and their
    coverage, taking the steps not taken yet first (``left`` when no test passes or none is
    worth writing, ``failed`` when a step broke;
    ``partial`` when they kill none of the function's mutants, since tests that notice no
    change to the code pin little, and a reviewer should know before accepting them)."""
    report = characterization_result(ctx, path, qualname)
    if not report["ok"]:
        return _not_done(report)
    coverage = report["coverage"]
    job = draft(ctx, load_target(ctx, path, qualname).path, qualname)
    unmoved = job.clock_unmoved
    gains = job.proposal_gains()
    measured = report.get("mutants_measured") or 0
    pin_little = measured > 0 and not report.get("mutants_killed")
    tests = f"{len(report['kept'])} characterization test(s) in {report['path']} pass twice"
    if pin_little:
        tests += f" but kill none of the function's {measured} mutants: they pin little; " + str(
            report["coverage_summary"]
        )
    else:
        tests += f"; {_reached(report)}"
    return {
        "status": "partial" if pin_little else "success",
        "summary": tests
        + (f" (not checked on another date: {unmoved})" if unmoved else "")
        + (f"; {_model_share(gains)}" if gains else ""),
        "details": {
            "proposal_gains": gains,
            "proposal_cases": job.proposal_cases(),
            "test_file": report["path"],
            "tests": report["kept"],
            "dropped": report["dropped"],
            "lines_covered": coverage["lines_covered"],
            "lines_total": coverage["lines_total"],
            "branches_covered": coverage["branches_covered"],
            "branches_total": coverage["branches_total"],
            "line_rate": report["line_rate"],
            "branch_rate": report["branch_rate"],
            "mutation_score": report.get("mutation_score"),
            "mutants_killed": report.get("mutants_killed"),
            "mutants_measured": report.get("mutants_measured"),
        },
    }


@capability
def fixture_verdict(
    ctx: CapabilityContext, path: str, qualname: str, format: str = "json"
) -> dict[str, Any]:
    """The sample_data job's outcome on the host's word: the fixture file written from the
    calls observed, validating and writing first when needed (``left`` when none is worth
    writing, ``failed`` when a step broke;
    ``partial`` when every fixture raises or returns an empty value, since such a set shows
    how the function fails or that it runs, not how it is used)."""
    report = fixtures_result(ctx, path, qualname, format)
    if not report["ok"]:
        return _not_done(report)
    total, raising, empty = report["fixtures"], report["raising"], report["empty"]
    uninformative = raising + empty == total
    summary = (
        _uninformative(qualname, report)
        if uninformative
        else f"{total} fixture(s) in {report['path']} ({raising} raise an expected exception)"
    )
    return {
        "status": "partial" if uninformative else "success",
        "summary": summary,
        "details": {
            "fixture_file": report["path"],
            "fixtures": total,
            "raising": raising,
            "raised_types": report["raised_types"],
            "empty": empty,
            "results_omitted": report["results_omitted"],
        },
    }


def _uninformative(qualname: str, report: dict[str, Any]) -> str:
    """The summary of a fixture set in which every fixture raises or returns an empty value."""
    total, raising = report["fixtures"], report["raising"]
    one = total == 1
    subject = (
        f"{'the one fixture' if one else f'all {total} fixtures'} of {qualname} in {report['path']}"
    )
    they = "it shows" if one else "they show"
    types = ", ".join(report["raised_types"])
    if raising == total:
        return (
            f"{subject} {'raises' if one else 'raise'} ({types}): {they} how it fails, not how "
            "it is used"
        )
    if raising == 0:
        return (
            f"{subject} {'returns' if one else 'return'} only empty values: {they} that it "
            "runs, not what it gives"
        )
    return (
        f"{subject} raise ({types}) or return only empty values: {they} how it fails, not "
        "what it gives"
    )


def _marked_source(
    source: str, qualname: str, missing: set[int], exits: dict[int, list[int]]
) -> str:
    """The function's lines, numbered, with ``# never run`` and ``# never goes to line N``
    (``# never leaves the function here``) marks."""
    located = find_definition(pyast.parse(source), qualname)
    lines = source.splitlines()
    if located is None:
        return ""
    node = located.node
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    last = getattr(node, "end_lineno", None) or node.lineno
    shown: list[str] = []
    gaps = sorted(missing | set(exits))
    for number in range(first, last + 1):
        if last - first >= MAX_SHOWN_LINES and not any(abs(number - gap) <= 3 for gap in gaps):
            if shown and shown[-1] != "   ...":
                shown.append("   ...")
            continue
        text = f"{number:>4} {lines[number - 1]}" if number <= len(lines) else f"{number:>4}"
        if number in missing:
            text += "  # never run"
        for end in exits.get(number, []):
            text += (
                "  # never leaves the function here" if end < 0 else f"  # never goes to line {end}"
            )
        shown.append(text)
    return "\n".join(shown)
