"""The test agent's host side: observed behaviours into a pytest file, verified twice.

:func:`write_characterization_tests` renders the job's kept observations (see
:mod:`.inputs`) as a test file beside the project's tests. :func:`run_characterization_tests`
runs that file twice under coverage.py in the isolated runner; a test that fails in either
run is dropped (the file is rewritten without it), so what is kept passes, deterministically,
on the unmodified project. Coverage is of the function alone, from the generated tests alone.

Codes: TOOL_705 nothing observed yet or nothing worth a test, TOOL_706 no generated test
survived two runs, TOOL_707 a model-written test file is not a test module, TOOL_401 pytest
or coverage could not run.
"""

from __future__ import annotations

import ast
import hashlib
import json
import keyword
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

from remora import pyast
from remora.errors import ToolError
from remora.module_union import union_modules
from remora.operations.characterize._coverage import (
    FunctionCoverage,
    file_entry,
    function_coverage,
    function_span,
)
from remora.operations.characterize._mutation import (
    PLUGIN,
    MutationReport,
    measure_mutants,
    pytest_targets,
)
from remora.operations.characterize._testgen import (
    MARKER,
    Behaviour,
    ReturnedCall,
    render_tests,
    test_file_path,
)
from remora.operations.characterize.inputs import (
    Draft,
    Observation,
    Target,
    draft,
    left_out,
    load_target,
    nothing_as_data,
    observe_cases,
)
from remora.tools.capabilities.arguments import (
    MAX_CASE_CHARS,
    Case,
    CaseError,
    Scope,
    check_value,
    exception_name,
    parse_case,
)
from remora.tools.capabilities.candidates import EMPTY_VALUES
from remora.tools.capabilities.project import is_test_file, module_names, module_tests
from remora.tools.capabilities.pytest_runner import parse_junit
from remora.tools.capabilities.registry import CapabilityContext, capability
from remora.tools.capabilities.ruff import format_text
from remora.tools.capabilities.store_io import (
    read_text,
    scan_text,
    store_read,
    walk_files,
    write_text,
)
from remora.tools.isolation import project_sandbox
from remora.tools.process import import_roots

RUNS = 2
_TEST_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(test\w*)\s*\(", re.MULTILINE)
_TOP_LEVEL = re.compile(r"^\S", re.MULTILINE)


@capability
def existing_tests(ctx: CapabilityContext, path: str, qualname: str) -> dict[str, Any]:
    """The project's test files for the module, and the tests in them that use the function."""
    target = load_target(ctx, path, qualname)
    files = []
    for test_file in module_tests(ctx, target.path):
        text = scan_text(ctx, test_file)
        if text is None or MARKER in text:
            continue
        names = [
            match.group(1)
            for match in _TEST_DEF.finditer(text)
            if target.name in _block(text, match.start(1))
        ]
        files.append({"path": test_file, "tests": names[:20], "count": len(names)})
    return {"files": files, "tests_using_function": sum(f["count"] for f in files)}


def _block(text: str, start: int) -> str:
    """The text of the test starting at ``start``, up to the next top-level statement."""
    line_end = text.find("\n", start)
    end = _TOP_LEVEL.search(text, line_end + 1) if line_end >= 0 else None
    return text[start : end.start()] if end else text[start:]


@capability
def write_characterization_tests(
    ctx: CapabilityContext, path: str, qualname: str
) -> dict[str, Any]:
    """Write one test per distinct observed behaviour; returns the file and the test names."""
    target = load_target(ctx, path, qualname)
    job = draft(ctx, target.path, qualname)
    if not job.observations:
        raise ToolError(
            "TOOL_705",
            f"nothing has been run for {qualname} yet",
            "run the inputs first (propose_inputs)",
        )
    kept = job.candidates()
    if not kept and job.kept():
        raise ToolError(
            "TOOL_705",
            "every behaviour observed comes from a call the project's tests or docstring "
            "examples already make",
            "propose other argument lists",
        )
    if not kept:
        problems = sorted({o.verdict for o in job.observations})
        raise ToolError(
            "TOOL_705",
            f"no input gave a behaviour worth a test ({', '.join(problems)})",
            "propose other argument lists whose types fit the parameters",
        )
    test_path = _module_of(ctx, target, job)
    text, tests, notes = _render(target, kept, _defined(job.module_before))
    if not tests:
        raise nothing_as_data("no observed behaviour", notes)
    _write_module(ctx, job, text)
    job.tests, job.verified = tests, None
    written: dict[str, Any] = {"path": test_path, "tests": list(tests), "behaviours": len(tests)}
    return {**written, "left_out": notes} if notes else written


def _test_path(ctx: CapabilityContext, target: Target) -> str:
    """The module's test module; a file of that name that Remora did not write is never
    touched (the tests go beside it, in ``..._remora.py``, ``..._remora_2.py``...)."""
    files = [f for f in walk_files(ctx, "", (".py",)) if is_test_file(f)]
    chosen = stem = test_file_path(files, target.path)[: -len(".py")]
    number = 1
    while ctx.store.exists(f"{chosen}.py") and MARKER not in (scan_text(ctx, f"{chosen}.py") or ""):
        chosen = f"{stem}_remora" + (f"_{number}" if number > 1 else "")
        number += 1
    return f"{chosen}.py"


def _module_of(ctx: CapabilityContext, target: Target, job: Draft) -> str:
    """The job's test module, chosen on its first write, and what it held then (the tests
    of the module's other functions, accepted earlier)."""
    if job.test_path is None:
        path = job.test_path = _test_path(ctx, target)
        job.module_before = read_text(ctx, path)[1] if ctx.store.exists(path) else None
    return job.test_path


def _defined(text: str | None) -> frozenset[str]:
    """The test functions a module defines (their names are taken)."""
    return frozenset(_TEST_DEF.findall(text or ""))


def _write_module(ctx: CapabilityContext, job: Draft, tests: str) -> None:
    """The test module as it was before the job, with ``tests`` (a module of the job's own
    tests) added to it; formatted and written."""
    path = job.test_path or ""
    text = tests
    if job.module_before is not None:
        merged = union_modules("", job.module_before, tests)
        if merged is None:
            raise ToolError(
                "TOOL_707",
                f"{path} cannot take more tests: it does not parse or defines them already",
                f"fix or remove {path}",
            )
        text = merged
    write_text(ctx, path, format_text(ctx, path, text))


def _restore_module(ctx: CapabilityContext, job: Draft) -> None:
    """The test module as it was before the job: removed when the job created it."""
    if job.test_path is None:
        return
    if job.module_before is None:
        ctx.store.delete(job.test_path)
    else:
        write_text(ctx, job.test_path, job.module_before)


def _render(
    target: Target, kept: list[Observation], taken: frozenset[str] = frozenset()
) -> tuple[str, dict[str, Observation], list[dict[str, str]]]:
    """The job's tests as a module, the observation behind each test, and a note (case and
    reason) for each case left out or whose expected value was not written. No test takes a
    name in ``taken``."""
    module = module_names(target.path)[0]
    names = target.public | {target.qualname.split(".")[0]}
    callee = target.name if target.needs_receiver else target.qualname
    scope = target.allowed
    behaviours: list[Behaviour] = []
    written: list[Observation] = []
    notes: list[dict[str, str]] = []
    for observation in kept:
        try:
            behaviour, note = _behaviour(observation, callee, scope)
        except CaseError as exc:
            notes.append(left_out(observation, f"left out: {exc}"))
            continue
        if note:
            notes.append(left_out(observation, note))
        behaviours.append(behaviour)
        written.append(observation)
    if not behaviours:
        return "", {}, notes
    rendered = render_tests(module, target.qualname, behaviours, frozenset(names), taken)
    return rendered.text, dict(zip(rendered.names, written, strict=True)), notes


def _behaviour(observation: Observation, callee: str, scope: Scope) -> tuple[Behaviour, str]:
    """What the test pins, re-emitted by the host from what it can prove is data: the case,
    the receiver, the expected values, the exception classes, the shapes and the receiver's
    state are re-checked, since the child that reported them ran project code (CaseError:
    the case cannot be written). The note says why the expected value was left out (the test
    then checks the type), if it was."""
    case = parse_case(observation.case, scope) if observation.case else Case(())
    used = case.names()
    owner = receiver = ""
    if observation.receiver:
        receiver = check_value(observation.receiver, scope, MAX_CASE_CHARS)
        used |= Case((receiver,)).names()
        owner = f"{receiver}."
    returned = observation.returned or {}
    raised = observation.raised or {}
    exception = exception_name(raised.get("assert_type"), scope) if observation.raised else None
    literal, note = returned.get("literal"), ""
    if literal is not None and exception is None:
        try:
            literal = check_value(str(literal), scope)
            used |= Case((literal,)).names()  # e.g. ``date``, imported with the callee
        except CaseError as exc:
            literal, note = None, f"the expected value was not written: {exc}"
    calls: list[ReturnedCall] = []
    if exception is None:
        for item in returned.get("calls", [])[:RETURNED_CALLS]:
            returned_call = _returned_call(item, scope)
            calls.append(returned_call)
            for each in (returned_call, *returned_call.calls):
                used |= parse_case(each.args, scope).names() if each.args else set()
                if each.literal:
                    used |= Case((each.literal,)).names()
    state = _readable(observation.state, scope)
    attributes: tuple[tuple[str, str], ...] = ()
    if literal is None and exception is None:
        attributes = _readable(returned.get("attributes") or [], scope)
    for _, value in (*state, *attributes):
        used |= Case((value,)).names()
    behaviour = Behaviour(
        call=f"{owner}{callee}({case.text})",
        names=frozenset(used),
        raised=exception,
        message=raised.get("message"),
        kind=returned.get("kind", "value"),
        literal=literal,
        type_name=returned.get("type", ""),
        truncated=bool(returned.get("items_truncated")),
        stdout=observation.stdout,
        wrote_files=observation.wrote_files,
        raised_while_iterating=observation.stage == "iterate",
        shape=check_shape(returned.get("shape", "v")),
        no_literal=str(returned.get("no_literal", "")),
        calls=tuple(calls),
        receiver=receiver,
        method=f"{callee}({case.text})",
        state=state,
        varies=_held(observation.varies, scope) if observation.varies is not None else None,
        attributes=attributes,
    )
    return behaviour, note


RETURNED_CALLS = 3
STATE_ENTRIES = 6
_SHAPE_DEPTH = 5


def check_shape(shape: Any, depth: int = 0) -> Any:
    """A shape the child reported, re-built from what the host accepts (CaseError if it is
    not one): it decides the code of the test's consuming expression."""
    if shape == "v":
        return "v"
    if not isinstance(shape, dict) or depth > _SHAPE_DEPTH:
        raise CaseError("the result's shape is not one the host writes")
    kind = shape.get("k")
    if kind == "tup":
        parts = shape.get("e")
        if not isinstance(parts, list) or not 1 <= len(parts) <= 4:
            raise CaseError("the result's shape is not one the host writes")
        return {"k": "tup", "e": [check_shape(part, depth + 1) for part in parts]}
    if kind in ("seq", "map", "dict"):
        return {"k": kind, "e": check_shape(shape.get("e"), depth + 1)}
    if kind == "it":
        bound = shape.get("n")
        if bound is not None and (type(bound) is not int or not 0 < bound <= 10_000):
            raise CaseError("the result's shape is not one the host writes")
        return {"k": "it", "n": bound, "e": check_shape(shape.get("e"), depth + 1)}
    raise CaseError("the result's shape is not one the host writes")


def _returned_call(item: Any, scope: Scope, depth: int = 0) -> ReturnedCall:
    """One call of a returned callable, re-checked as data (and the calls of what it
    returned, one level down)."""
    if not isinstance(item, dict):
        raise CaseError("a call of the returned callable is not data")
    args = parse_case(str(item.get("args", "")), scope).text if item.get("args") else ""
    if item.get("raised") is not None:
        return ReturnedCall(args, raised=exception_name(item.get("assert_type"), scope))
    literal = item.get("literal")
    return ReturnedCall(
        args,
        literal=check_value(str(literal), scope) if literal is not None else None,
        shape=check_shape(item.get("shape", "v")),
        type_name=str(item.get("type", "")),
        no_literal=str(item.get("no_literal", "")),
        calls=tuple(
            _returned_call(inner, scope, depth + 1)
            for inner in (item.get("calls") or [])[:RETURNED_CALLS]
            if depth == 0
        ),
    )


_STATE_WHAT = re.compile(r"attr:[A-Za-z][A-Za-z0-9_]{0,60}|len|items|repr")


def _readable(entries: list[dict[str, str]], scope: Scope) -> tuple[tuple[str, str], ...]:
    """The first :data:`STATE_ENTRIES` entries of an instance's state that the host can
    write; one it cannot (a keyword attribute, a value that is not data) is left out."""
    readable: list[tuple[str, str]] = []
    for entry in entries:
        if len(readable) >= STATE_ENTRIES:
            break
        try:
            readable.append(_state_entry(entry, scope))
        except CaseError:
            continue
    return tuple(readable)


def _state_entry(entry: dict[str, str], scope: Scope) -> tuple[str, str]:
    """One change of the receiver, re-checked: what is read (an attribute name, ``len``,
    ``items``, ``repr``) and its literal."""
    what = str(entry.get("what", ""))
    if not _STATE_WHAT.fullmatch(what) or keyword.iskeyword(what.removeprefix("attr:")):
        raise CaseError("the receiver's state is not one the host writes")
    return what, check_value(str(entry.get("literal", "")), scope)


def _held(varies: dict[str, Any], scope: Scope) -> dict[str, Any]:
    """What held in every run of a varying result, re-checked."""
    held: dict[str, Any] = {}
    if isinstance(varies.get("len"), int) and not isinstance(varies.get("len"), bool):
        held["len"] = varies["len"]
    if varies.get("sorted") is not None:
        held["sorted"] = check_value(str(varies["sorted"]), scope)
    if isinstance(varies.get("type"), str) and re.fullmatch(r"[\w.]{1,200}", varies["type"]):
        held["type"] = varies["type"]
    return held


@capability
def run_characterization_tests(ctx: CapabilityContext, path: str, qualname: str) -> dict[str, Any]:
    """Run the generated tests twice with coverage; drop any that fail in either run; run the
    survivors against the function's mutants and keep the tests :func:`select_tests` keeps.

    Returns the kept and dropped tests, the function's line and branch coverage from the
    kept tests alone, and their mutation score.
    """
    target = load_target(ctx, path, qualname)
    job = draft(ctx, target.path, qualname)
    if not job.test_path or not ctx.store.exists(job.test_path):
        raise ToolError("TOOL_705", "there is no generated test file yet", "call write_tests first")
    dropped: dict[str, str] = {}
    outcomes, coverage = _measure(ctx, target, job.test_path, job.tests)
    failing = {name: why for name, why in outcomes.items() if why}
    if failing:
        dropped.update(failing)
        survivors = [name for name in job.tests if name not in failing]
        outcomes = {}
        if survivors:
            _rewrite(ctx, target, job, survivors)
            outcomes, coverage = _measure(ctx, target, job.test_path, job.tests, runs=1)
        else:
            job.tests = {}
            dropped.update({name: why for name, why in outcomes.items() if why})
    mutation = None
    if job.tests and not any(outcomes.values()):
        mutation = run_mutants(ctx, target, job.test_path, job.tests)
        chosen = select_tests(job.tests, mutation)
        if chosen and len(chosen) < len(job.tests):
            renamed = _rewrite(ctx, target, job, chosen)
            mutation = _renamed(mutation, renamed)
            outcomes, coverage = _measure(ctx, target, job.test_path, job.tests, runs=1)
    job.mutation = mutation
    report = _report(job.test_path, outcomes, dropped, coverage, mutation)
    if not report["kept"]:
        _restore_module(ctx, job)
        job.tests, job.verified = {}, None
        raise ToolError(
            "TOOL_706",
            "no generated test passed twice",
            "propose other argument lists and write the tests again",
        )
    job.verified = (_digest(ctx, job.test_path), report)
    return report


def run_mutants(
    ctx: CapabilityContext, target: Target, test_path: str, tests: Collection[str]
) -> MutationReport:
    """The ``tests`` of the test module against each mutant of the function, in the sandbox."""
    with project_sandbox(ctx.store, ctx.config, harvest=False) as box:

        def launch(request: Path, plugin: Path) -> str:
            argv = box.module_argv(
                "pytest",
                "-p",
                PLUGIN,
                "-q",
                "-p",
                "no:cacheprovider",
                f"--rootdir={box.root}",
                *pytest_targets(box.root / test_path, tests),
            )
            try:
                result = box.run(
                    argv,
                    pythonpath=[*import_roots(box.root), plugin],
                    timeout=ctx.time_left(ctx.config.subprocess_timeout),
                    what=f"the mutants of {target.qualname}",
                    env={"REMORA_MUTANTS": str(request), "PYTHONHASHSEED": "1"},
                )
            except ToolError as exc:
                return exc.message
            return " | ".join((result.stderr or result.stdout).strip().splitlines()[-2:])

        return measure_mutants(
            target.source,
            target.qualname,
            module_file=box.root / target.path,
            workdir=box.exchange,
            launch=launch,
        )


def select_tests(tests: dict[str, Observation], mutation: MutationReport) -> list[str]:
    """The tests worth keeping, in their order: one for each behaviour observed (outcome and
    path taken), the one that kills most mutants and has the most telling values; then, one
    at a time, any other test that kills a mutant none kept kills yet.

    A behaviour whose test can only check the result's type (no literal of it was written)
    earns a test only by killing a mutant no other kept test kills, or when nothing else is
    kept: five ``type(memoize(...)).__name__ == "function"`` tests pin nothing five times."""
    kills = mutation.kills()
    order = {name: index for index, name in enumerate(tests)}
    groups: dict[tuple[Any, ...], list[str]] = {}
    for name, observation in tests.items():
        groups.setdefault(observation.behaviour(), []).append(name)

    def strength(name: str) -> tuple[int, int, int]:
        return (len(kills.get(name, set())), informative(tests[name]), -order[name])

    strongest = [max(names, key=strength) for names in groups.values()]
    chosen = [name for name in strongest if _pins_a_value(tests[name])]
    if not chosen and strongest:
        chosen = [max(strongest, key=strength)]
    killed = set().union(*(kills.get(name, set()) for name in chosen))
    remaining = [name for name in tests if name not in chosen]
    while remaining:
        best = max(remaining, key=lambda n: (len(kills.get(n, set()) - killed), strength(n)))
        if not kills.get(best, set()) - killed:
            break
        killed |= kills[best]
        chosen.append(best)
        remaining.remove(best)
    return sorted(chosen, key=order.__getitem__)


def _pins_a_value(observation: Observation) -> bool:
    """Whether its test checks more than a type: what it raised, a written result, what a
    call of the returned callable gave, what changed in the receiver, or what held in every
    run of a varying result."""
    returned = observation.returned or {}
    if observation.varies is not None:
        return any(key in observation.varies for key in ("raised", "len", "sorted"))
    return (
        observation.raised is not None
        or returned.get("literal") is not None
        or any(call.get("literal") is not None for call in returned.get("calls", []))
        or bool(observation.state)
        or bool(returned.get("attributes"))
    )


def informative(observation: Observation) -> int:
    """How much a test's values say: arguments that are not zero, empty or None, and a
    result that is not (``bulk_price(3, 99) == 282`` over ``bulk_price(0, 99) == 0``)."""
    try:
        call = ast.parse(f"f({observation.case})", mode="eval").body
    except SyntaxError:
        return 0
    assert isinstance(call, ast.Call)
    values = [*call.args, *(keyword.value for keyword in call.keywords)]
    score = sum(1 for value in values if ast.unparse(value) not in EMPTY_VALUES)
    literal = (observation.returned or {}).get("literal")
    if observation.raised is None and literal is not None and str(literal) not in EMPTY_VALUES:
        score += 2
    return score


def _rewrite(
    ctx: CapabilityContext, target: Target, job: Draft, chosen: list[str]
) -> dict[str, str]:
    """Write the file again, formatted, with the ``chosen`` tests only (at least one); their
    old names to their new."""
    taken = _defined(job.module_before)
    text, tests, _ = _render(target, [job.tests[name] for name in chosen], taken)
    _write_module(ctx, job, text)
    job.tests = tests
    return dict(zip(chosen, tests, strict=True))


def _renamed(mutation: MutationReport, renamed: dict[str, str]) -> MutationReport:
    """The mutation report with its tests' new names (tests left out no longer kill)."""
    mutants = [
        mutant.model_copy(
            update={"killed_by": [renamed[t] for t in mutant.killed_by if t in renamed]}
        )
        for mutant in mutation.mutants
    ]
    return mutation.model_copy(update={"mutants": mutants})


def verified_report(ctx: CapabilityContext, path: str, qualname: str) -> dict[str, Any] | None:
    """The last run's report when the test file is still exactly what was run, else None."""
    target = load_target(ctx, path, qualname)
    job: Draft = draft(ctx, target.path, qualname)
    if job.verified is None or not job.test_path or not ctx.store.exists(job.test_path):
        return None
    digest, report = job.verified
    return report if digest == _digest(ctx, job.test_path) else None


@capability
def characterization_result(ctx: CapabilityContext, path: str, qualname: str) -> dict[str, Any]:
    """For submit: the verified report (``ok``) or why there is none (``reason``).

    The steps not taken yet (run the inputs, write the tests, run them twice) are taken
    first, so nothing unverified is ever offered for review.
    """
    report = verified_report(ctx, path, qualname)
    if report is not None:
        return {"ok": True, **report}
    try:
        target = load_target(ctx, path, qualname)
        job = draft(ctx, target.path, qualname)
        if not job.test_path or not ctx.store.exists(job.test_path):
            if not job.observations:
                observe_cases(ctx, path, qualname, job.model_inputs)
            write_characterization_tests(ctx, path, qualname)
        return {"ok": True, **run_characterization_tests(ctx, path, qualname)}
    except ToolError as exc:
        return {"ok": False, "reason": exc.message, "code": exc.code}


@capability
def write_custom_tests(
    ctx: CapabilityContext, path: str, qualname: str, content: str
) -> dict[str, Any]:
    """Write a test file the model wrote itself; it is kept only if every test passes twice."""
    target = load_target(ctx, path, qualname)
    try:
        tree = pyast.parse(content)
    except SyntaxError as exc:
        raise ToolError(
            "TOOL_707",
            f"the test file is not valid Python: {exc.msg} (line {exc.lineno})",
            "write a complete pytest module",
        ) from None
    names = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
    ]
    if not names:
        raise ToolError("TOOL_707", "the file has no test function", "define test_... functions")
    job = draft(ctx, target.path, qualname)
    test_path = _module_of(ctx, target, job)
    current = store_read(ctx, test_path) if ctx.store.exists(test_path) else None
    _write_module(ctx, job, content if content.endswith("\n") else content + "\n")
    outcomes, coverage = _measure(ctx, target, test_path, names)
    failing = {name: why for name, why in outcomes.items() if why}
    if failing or not outcomes:
        if current is None:
            ctx.store.delete(test_path)
        else:
            ctx.store.write(test_path, current)
        shown = "; ".join(f"{name}: {why}" for name, why in list(failing.items())[:3])
        raise ToolError(
            "TOOL_706",
            f"the file was not kept: {shown or 'no test ran'}",
            "fix the failing tests and write the file again",
        )
    report = _report(test_path, outcomes, {}, coverage)
    job.tests = {}
    job.verified = (_digest(ctx, test_path), report)
    return report


def _report(
    test_path: str,
    outcomes: dict[str, str],
    dropped: dict[str, str],
    coverage: FunctionCoverage,
    mutation: MutationReport | None = None,
) -> dict[str, Any]:
    score = mutation.score if mutation is not None else None
    return {
        "mutation_score": round(score, 4) if score is not None else None,
        "mutants_killed": mutation.killed if mutation is not None else None,
        "mutants_measured": mutation.measured if mutation is not None else None,
        "mutation_summary": mutation.summary() if mutation is not None else "",
        "path": test_path,
        "kept": [name for name, why in outcomes.items() if not why],
        "dropped": [{"test": name, "reason": why} for name, why in dropped.items()],
        "coverage": coverage.model_dump(),
        "coverage_summary": coverage.summary(),
        "line_rate": round(coverage.line_rate, 4),
        "branch_rate": round(coverage.branch_rate, 4),
    }


def _digest(ctx: CapabilityContext, path: str) -> str:
    return hashlib.sha256(store_read(ctx, path)).hexdigest()


def _measure(
    ctx: CapabilityContext,
    target: Target,
    test_path: str,
    tests: Collection[str],
    runs: int = RUNS,
) -> tuple[dict[str, str], FunctionCoverage]:
    """Per-test failure reason ('' when it passed every run) and the first run's coverage,
    of the job's ``tests`` in the module."""
    reasons: dict[str, str] = {}
    coverage: FunctionCoverage | None = None
    with project_sandbox(ctx.store, ctx.config, harvest=False) as box:
        for run in range(runs):
            data, junit = box.exchange / f"coverage-{run}", box.exchange / f"junit-{run}.xml"
            pytest_args = ["-p", "no:cacheprovider", f"--junitxml={junit}", "-q"]
            pytest_args += ["-o", "junit_family=xunit1", f"--rootdir={box.root}"]
            measure = [
                "run",
                "--branch",
                f"--data-file={data}",
                f"--include={box.root / target.path}",
            ]
            result = box.run(
                box.module_argv(
                    "coverage",
                    *measure,
                    "-m",
                    "pytest",
                    *pytest_args,
                    *pytest_targets(box.root / test_path, tests),
                ),
                pythonpath=import_roots(box.root),
                timeout=ctx.time_left(ctx.config.subprocess_timeout),
                what="the generated tests",
                env={"PYTHONHASHSEED": str(run + 1)},
            )
            for name, why in _outcomes(junit, result.stderr or result.stdout).items():
                if why and not reasons.get(name):
                    reasons[name] = f"{why} (run {run + 1})"
                reasons.setdefault(name, "")
            if coverage is None:
                report_json = box.exchange / "coverage.json"
                box.run(
                    box.module_argv(
                        "coverage", "json", f"--data-file={data}", "-o", str(report_json)
                    ),
                    timeout=ctx.time_left(ctx.config.subprocess_timeout),
                    what="coverage json",
                )
                raw = json.loads(report_json.read_text()) if report_json.is_file() else {}
                span = function_span(target.source, target.qualname)
                coverage = function_coverage(file_entry(raw, target.path), span)
    assert coverage is not None
    return reasons, coverage


def _outcomes(junit: Path, output: str) -> dict[str, str]:
    """Each test's failure reason ('' when it passed), or TOOL_401 when pytest did not run."""
    if not junit.is_file():
        tail = " | ".join(output.strip().splitlines()[-3:])
        raise ToolError(
            "TOOL_401",
            f"pytest could not run the generated tests: {tail}",
            "the module may not import in a test; check the project's test setup",
        )
    tests, errors = parse_junit(junit.read_text(encoding="utf-8"))
    if errors:
        raise ToolError(
            "TOOL_401",
            f"the generated tests could not be collected: {errors[0]['message'][:200]}",
            "the module may not import in a test; check the project's test setup",
        )
    return {
        test["nodeid"].rsplit("::", 1)[-1]: ""
        if test["outcome"] == "passed"
        else f"{test['outcome']}: {test['message'] or ''}"[:200]
        for test in tests
    }
