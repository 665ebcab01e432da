"""Candidate inputs, executed: the machinery the test and sample_data agents share.

For one function, argument sets come from the host
(:mod:`remora.tools.capabilities.candidates`: doctests, call sites, tests, defaults,
literals, annotations, names) and from the model's proposals
(:func:`propose_cases`). :func:`observe_cases` runs every set in the isolated runner, twice
with different hash seeds, and keeps what it saw: the returned value (consumed into data
with the shape of its consumption, the literal a test can compare with, the calls of a
returned callable, the attributes of an object without a literal), or the exception; what
the call changed in its receiver; stdout; the arcs (line to line) of the function that ran;
and whether both runs agree. Nondeterminism is detected, not assumed away: a case that draws
random numbers is rerun, and one whose result varies keeps only what held in every run.

A job's proposals and observations are its *draft*, kept in memory for the job's lifetime
(every tool call of a job runs in one process), keyed by the job's workspace.

Codes: TOOL_101 no such module, TOOL_106 the function is not in the module or cannot be
called, TOOL_702 the process running the cases kept dying, TOOL_705 no usable case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from remora import pyast
from remora.errors import ToolError
from remora.operations.characterize._coverage import function_span
from remora.operations.characterize._mutation import MutationReport
from remora.operations.characterize._returned_calls import returned_call_args
from remora.tools.capabilities.arguments import (
    Case,
    CaseError,
    Scope,
    module_scope,
    parse_case,
    public_names,
)
from remora.tools.capabilities.candidates import DATA_SUFFIXES, candidate_inputs
from remora.tools.capabilities.observe import CASE_TIMEOUT, observe_in, observe_request
from remora.tools.capabilities.registry import CapabilityContext, capability
from remora.tools.capabilities.signature import describe, method_kind, resolve
from remora.tools.capabilities.store_io import read_text, scan_text, walk_files
from remora.tools.isolation import Sandbox, project_sandbox

HOST_LIMIT = 12
MODEL_LIMIT = 8
TRAVEL_TO = 1942140600.0
"""The wall clock of every case's second run: 2031-07-18 11:30 UTC, another year, month, day
and weekday than any day a user runs Remora on for years, so a result that depends on the date
differs between the runs and is not pinned."""
MAX_CANDIDATE_TESTS = 24
_CALL_SITE_FILES = 200
MISUSE = ("TypeError", "AttributeError")
EXHAUSTED = ("MemoryError", "RecursionError", "SystemExit", "KeyboardInterrupt")

Verdict = Literal["kept", "misuse", "nondeterministic", "crashed", "timed_out", "setup_failed"]


class Observation(BaseModel):
    """One case, run: what happened, and whether it can characterize the function."""

    case: str
    receiver: str | None = None
    source: str
    verdict: Verdict
    stage: str = "call"
    reason: str = ""
    returned: dict[str, Any] | None = None
    raised: dict[str, Any] | None = None
    stdout: str = ""
    arcs: list[tuple[int, int]] = []
    wrote_files: bool = False
    state: list[dict[str, str]] = []
    """What the call changed in its receiver (``what``: ``attr:NAME``, ``len``, ``items`` or
    ``repr``; ``literal`` after the call), for a method."""
    varies: dict[str, Any] | None = None
    """For a result that varies from run to run (it draws random numbers): what held in
    every run (``raised``, or ``type``, ``len`` and ``sorted``); the test pins only that."""

    def call(self, callee: str) -> str:
        """The call a test makes: ``callee(case)``, on the receiver for instance methods."""
        owner = f"{self.receiver}." if self.receiver else ""
        return f"{owner}{callee}({self.case})"

    def behaviour(self) -> tuple[Any, ...]:
        """What tells two observations apart: outcome, type and the code path taken."""
        if self.raised is not None:
            outcome: tuple[Any, ...] = ("raised", self.raised.get("assert_type"))
        else:
            returned = self.returned or {}
            outcome = ("returned", returned.get("kind"), returned.get("type"))
        return (*outcome, bool(self.stdout), tuple(sorted(map(tuple, self.arcs))))


@dataclass
class Draft:
    """One job's proposals and observations for one function."""

    proposed: list[Case] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    model_inputs: bool = True
    test_path: str | None = None
    module_before: str | None = None
    """The test module's text before this job added its tests (None: the job created it)."""
    tests: dict[str, Observation] = field(default_factory=dict)
    verified: tuple[str, dict[str, Any]] | None = None
    fixture_report: dict[str, Any] | None = None
    host: tuple[str, list[tuple[Case, str, str | None]]] | None = None
    returned_args: tuple[str, list[str]] | None = None
    project: tuple[str, dict[str, str]] | None = None
    """The other project files that mention the function (its call sites), by the module
    source they were read for."""
    clock_unmoved: str = ""
    """Why the second runs could not move the wall clock, when they could not."""
    mutation: MutationReport | None = None
    """The last mutation run of the tests, for the model's evidence."""
    proposals: int = 0
    """How many times the model proposed argument lists."""
    proposed_by: list[int] = field(default_factory=list)
    """For each of ``proposed``, the proposal (counted from 1) that brought it."""
    reach: list[tuple[int, int]] = field(default_factory=list)
    """Each measure of what the tests reach (lines, branches and killed mutants, summed),
    with the number of proposals made before it: the host's own measure has 0."""

    def proposal_gains(self) -> list[int]:
        """What each proposal added to what the tests reach, as the host measured it after
        the proposal (0 for one never measured): the host's own measure is the start."""
        gains = [0] * self.proposals
        before = 0
        for proposals, reached in self.reach:
            if proposals:
                gains[proposals - 1] += reached - before
            before = reached
        return gains

    def proposal_cases(self) -> list[list[str]]:
        """For each proposal, its argument lists whose tests the host kept (each adds an
        arc or kills a mutant the other kept tests do not): what the proposal really
        brought, not the lists that failed or repeated what another showed."""
        brought: list[list[str]] = [[] for _ in range(self.proposals)]
        by_case = {case.text: by for case, by in zip(self.proposed, self.proposed_by, strict=True)}
        for observation in self.tests.values():
            by = by_case.get(observation.case) if observation.source == "model" else None
            if (
                by is not None
                and 0 < by <= self.proposals
                and observation.case not in brought[by - 1]
            ):
                brought[by - 1].append(observation.case)
        return brought

    def kept(self) -> list[Observation]:
        """The first kept observation of each distinct behaviour, most trusted source first."""
        seen: set[tuple[Any, ...]] = set()
        distinct: list[Observation] = []
        for observation in self.observations:
            key = observation.behaviour()
            if observation.verdict == "kept" and key not in seen:
                seen.add(key)
                distinct.append(observation)
        return distinct

    def candidates(self, limit: int = MAX_CANDIDATE_TESTS) -> list[Observation]:
        """Every kept observation of a distinct call, up to ``limit``: the first of each
        behaviour first, then the others in the order they ran; calls taken from the
        project's tests and its docstrings' examples (which doctest runs) are left out: a
        test of them would repeat one. A test is written for each; the mutants then decide
        which ones earn their place."""
        first = [o for o in self.kept() if o.source not in PROJECTS_OWN]
        calls = {(o.case, o.receiver) for o in first}
        others = []
        for observation in self.observations:
            key = (observation.case, observation.receiver)
            if (
                observation.verdict == "kept"
                and observation.source not in PROJECTS_OWN
                and key not in calls
            ):
                calls.add(key)
                others.append(observation)
        return (first + others)[:limit]


PROJECTS_OWN = frozenset({"test", "doctest"})
"""Sources of calls the project already checks: its tests and its docstrings' examples."""


def left_out(observation: Observation, reason: str) -> dict[str, str]:
    """A note for the tool result: an observed case that was not written, and why."""
    return {"case": observation.case[:80], "reason": reason}


def nothing_as_data(what: str, notes: list[dict[str, str]]) -> ToolError:
    """TOOL_705 when every observed case was left out: ``what`` names what cannot be
    written; the first reasons go with it, so the model can propose other cases."""
    reasons = "; ".join(f"{n['case']}: {n['reason']}" for n in notes[:3])
    return ToolError(
        "TOOL_705",
        f"{what} can be written as data: {reasons}",
        "propose argument lists made of literals, builtins and the module's classes",
    )


def draft(ctx: CapabilityContext, path: str, qualname: str) -> Draft:
    """The job's draft for ``qualname`` in ``path`` (created empty on first use); kept in
    the job's state, so it lives exactly as long as the job."""
    drafts: dict[tuple[str, str], Draft] = ctx.state.setdefault(__name__, {})
    return drafts.setdefault((path, qualname), Draft())


@dataclass(frozen=True)
class Target:
    """The function under study, read from the workspace."""

    path: str
    qualname: str
    source: str
    signature: dict[str, Any]
    needs_receiver: bool
    public: frozenset[str]

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def owner(self) -> str:
        return self.qualname.rsplit(".", 1)[0]

    @property
    def allowed(self) -> Scope:
        """What a case may name, resolved from the source (see
        :class:`remora.tools.capabilities.arguments.Scope`)."""
        return module_scope(self.source)


def load_target(ctx: CapabilityContext, path: str, qualname: str) -> Target:
    """The function ``qualname`` of ``path``, or TOOL_106 when it cannot be studied."""
    relative, source = read_text(ctx, path)
    if not relative.endswith(".py"):
        raise ToolError("TOOL_101", f"'{relative}' is not a Python module", "pass a .py file")
    try:
        tree = pyast.parse(source)
        located = resolve(tree, qualname)
    except (SyntaxError, ToolError) as exc:
        raise ToolError(
            "TOOL_106",
            f"'{qualname}' cannot be found in {relative}: {exc}",
            "check the qualified name",
        ) from None
    found = ".".join([*(parent.name for parent in located.parents), located.node.name])
    if found != qualname:
        raise ToolError(
            "TOOL_106",
            f"'{qualname}' is not defined at the top level of {relative}; it is '{found}'",
            "pass the full qualified name",
        )
    signature = describe(source, located)
    # a module-level ``def methodkey(self, *args)`` is a function of the module, whatever
    # its first parameter is named
    kind = method_kind(located) if located.parents else None
    if signature["kind"] == "class" or kind == "property":
        raise ToolError(
            "TOOL_106",
            f"'{qualname}' is a {kind or 'class'}, not a function",
            "study a function or a method",
        )
    if len(qualname.split(".")) > 1 and kind is None:
        raise ToolError(
            "TOOL_106",
            f"'{qualname}' is local to a function and cannot be called",
            "study a module-level function or a method",
        )
    return Target(
        relative,
        qualname,
        source,
        signature,
        needs_receiver=kind == "instance",
        public=public_names(source),
    )


def host_cases(ctx: CapabilityContext, target: Target) -> list[tuple[Case, str, str | None]]:
    """(case, source, receiver) from the host's candidates; receivers for instance methods.

    Kept in the job's draft while the module's source is unchanged: finding call sites
    reads every project file that mentions the function, once per job, not once per tool.
    The argument lists in ``options.withhold_cases`` are left out: training material
    withholds some of the host's own lists so that they become the model's answers.
    """
    job = draft(ctx, target.path, target.qualname)
    if job.host is not None and job.host[0] == target.source:
        return list(job.host[1])
    project = _project_sources(ctx, target)
    withheld = set((ctx.system.get("options") or {}).get("withhold_cases") or ())
    files = _data_files(ctx)
    found = [
        candidate
        for candidate in candidate_inputs(
            target.source, target.qualname, project, HOST_LIMIT, files=files
        )
        if candidate.case.text not in withheld
    ]
    receivers = receivers_for(target, project) if target.needs_receiver else [None]
    cases = [(c.case, c.source, receivers[0]) for c in found]
    if found:
        cases += [(found[0].case, "receiver", other) for other in receivers[1:]]
    job.host = (target.source, cases)
    return list(cases)


_DATA_FILES = 50


def _data_files(ctx: CapabilityContext) -> list[str]:
    """Up to 50 of the project's data files (CSV, JSON, text...), outside Remora's own
    ``fixtures/``: a path parameter is given one the project has (an invoice export), not a
    name no file has."""
    found = [
        path
        for path in walk_files(ctx, "", DATA_SUFFIXES)
        if not path.startswith(("fixtures/", "tests/")) and "/fixtures/" not in path
    ]
    return found[:_DATA_FILES]


def _returned_args(ctx: CapabilityContext, target: Target) -> list[str]:
    """What a callable the function returns is called with (see :mod:`._returned_calls`),
    found once per job while the module's source is unchanged."""
    job = draft(ctx, target.path, target.qualname)
    if job.returned_args is None or job.returned_args[0] != target.source:
        project = _project_sources(ctx, target)
        found = returned_call_args(target.source, target.qualname, project, target.allowed)
        job.returned_args = (target.source, found)
    return list(job.returned_args[1])


def receivers_for(target: Target, project: dict[str, str]) -> list[str]:
    """Up to three ways to build the instance an instance method needs."""
    try:
        inits = candidate_inputs(target.source, f"{target.owner}.__init__", project, 6)
    except ValueError:
        return [f"{target.owner}()"]
    # as the project builds one first, then the guesses that say most (Item('abc', 1), not
    # Item('', 0): an empty instance leaves most of a method's branches)
    people = [c for c in inits if c.source in ("doctest", "call_site", "test")]
    guesses = sorted((c for c in inits if c not in people), key=lambda c: -c.telling)
    built = [f"{target.owner}({c.case.text})" for c in [*people, *guesses][:3]]
    return built or [f"{target.owner}()"]


def _project_sources(ctx: CapabilityContext, target: Target) -> dict[str, str]:
    """:func:`_call_site_sources`, read once per job while the module's source is unchanged:
    the host's candidates and the arguments of returned callables both come from them."""
    job = draft(ctx, target.path, target.qualname)
    if job.project is None or job.project[0] != target.source:
        job.project = (target.source, _call_site_sources(ctx, target))
    return job.project[1]


def _call_site_sources(ctx: CapabilityContext, target: Target) -> dict[str, str]:
    """Other project files that mention the function's name (where its call sites are), or
    for an instance method its class's (where instances are built)."""
    names = [target.name, target.owner] if target.needs_receiver else [target.name]
    found: dict[str, str] = {}
    for path in walk_files(ctx, "", (".py",)):
        if path == target.path:
            continue
        text = scan_text(ctx, path)
        if text is None:
            continue
        if any(name in text for name in names):
            found[path] = text
            if len(found) >= _CALL_SITE_FILES:
                break
    return found


@capability
def characterizable(
    ctx: CapabilityContext, path: str, qualname: str, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """For a precheck: ``skip`` and the ``reason`` when the function is not worth running.

    Private names and test code are skipped unless ``options`` set ``include_private`` or
    ``include_tests``; what cannot be called from its module is always skipped.
    """
    options = options or {}
    name = qualname.rsplit(".", 1)[-1]
    parts = path.split("/")
    in_tests = (
        parts[-1].startswith("test_")
        or parts[-1].endswith("_test.py")
        or parts[-1] == "conftest.py"
        or "tests" in parts[:-1]
    )
    reason = ""
    if name.startswith("_") and not options.get("include_private", False):
        reason = "private or special name (set options.include_private to include it)"
    elif in_tests and not options.get("include_tests", False):
        reason = "test code (set options.include_tests to include it)"
    else:
        try:
            load_target(ctx, path, qualname)
        except ToolError as exc:
            reason = exc.message
    return {"skip": bool(reason), "reason": reason}


@capability
def signature_inputs(ctx: CapabilityContext, path: str, qualname: str) -> dict[str, Any]:
    """The function's parameters and the argument lists the host can already try.

    ``cases`` are argument lists as Python source (``2, [1, 2, 3]``) with where each came
    from; ``needs_receiver`` says the function is an instance method, called on
    ``receivers[0]``.
    """
    target = load_target(ctx, path, qualname)
    cases = host_cases(ctx, target)
    return {
        "name": target.name,
        "params": target.signature["params"],
        "method_kind": target.signature["method_kind"],
        "is_generator": target.signature["is_generator"],
        "needs_receiver": target.needs_receiver,
        "receivers": list(dict.fromkeys(r for _, _, r in cases if r)),
        "cases": [{"case": case.text, "source": source} for case, source, _ in cases],
    }


@capability
def propose_cases(
    ctx: CapabilityContext, path: str, qualname: str, cases: list[str] | str
) -> dict[str, Any]:
    """Check the model's argument lists and add the usable ones to the job's draft.

    Returns ``accepted`` (normalized source) and ``rejected`` (each case with the reason).
    """
    target = load_target(ctx, path, qualname)
    items = [cases] if isinstance(cases, str) else list(cases)
    accepted: list[str] = []
    rejected: list[dict[str, str]] = []
    job = draft(ctx, target.path, qualname)
    job.proposals += 1
    for item in items[: MODEL_LIMIT * 2]:
        try:
            case = parse_case(str(item), target.allowed)
        except CaseError as exc:
            rejected.append({"case": str(item)[:80], "reason": str(exc)})
            continue
        if case not in job.proposed and len(job.proposed) < MODEL_LIMIT:
            job.proposed.append(case)
            job.proposed_by.append(job.proposals)
            accepted.append(case.text)
    return {"accepted": accepted, "rejected": rejected, "proposed": len(job.proposed)}


@capability
def observe_cases(
    ctx: CapabilityContext, path: str, qualname: str, model_inputs: bool = True
) -> dict[str, Any]:
    """Run the host's cases and (when ``model_inputs``) the proposed ones, twice each.

    Each observation has a verdict: ``kept``, ``misuse`` (TypeError or AttributeError: the
    arguments do not fit), ``nondeterministic`` (the two runs differ), ``timed_out``,
    ``crashed`` (the process died) or ``setup_failed`` (the receiver could not be built).
    ``behaviours`` counts the distinct kept behaviours.
    """
    target = load_target(ctx, path, qualname)
    job = draft(ctx, target.path, qualname)
    job.model_inputs = bool(model_inputs)
    planned = host_cases(ctx, target)
    receiver = next((r for _, _, r in planned if r), None)
    if job.model_inputs:
        known = {(case, r) for case, _, r in planned}
        planned += [(c, "model", receiver) for c in job.proposed if (c, receiver) not in known]
    if not planned:
        raise ToolError(
            "TOOL_705",
            f"there is no argument list to run for {qualname}",
            "propose argument lists first",
        )
    job.observations = run_cases(ctx, target, planned)
    verdicts: dict[str, int] = {}
    for observation in job.observations:
        verdicts[observation.verdict] = verdicts.get(observation.verdict, 0) + 1
    kept = job.kept()
    return {
        "observed": len(job.observations),
        "verdicts": verdicts,
        "behaviours": len(kept),
        "model_inputs": job.model_inputs,
        "kept": [
            {
                "call": o.call(target.name),
                "source": o.source,
                "outcome": _outcome_text(o),
            }
            for o in kept
        ],
        "problems": [
            {"call": o.call(target.name), "verdict": o.verdict, "reason": o.reason}
            for o in job.observations
            if o.verdict != "kept"
        ][:10],
    }


def _outcome_text(observation: Observation) -> str:
    if observation.raised is not None:
        return f"raises {observation.raised['type']}: {observation.raised['message'][:80]}"
    returned = observation.returned or {}
    shown = str(returned.get("repr", ""))
    shown = shown if len(shown) <= 80 else shown[:80] + "..."
    prefix = "yields " if returned.get("kind") == "iterator" else "returns "
    return prefix + shown


def run_cases(
    ctx: CapabilityContext, target: Target, planned: list[tuple[Case, str, str | None]]
) -> list[Observation]:
    """Run ``planned`` in the sandbox; compare a second run with another hash seed."""
    span = function_span(target.source, target.qualname)
    cases = [
        observe_request(index, case, receiver) for index, (case, _, receiver) in enumerate(planned)
    ]
    call_args = _returned_args(ctx, target)
    named = [f for f in _data_files(ctx) if any(f in case.text for case, _, _ in planned)]
    with project_sandbox(ctx.store, ctx.config, harvest=False) as box:
        for request, (case, _, _) in zip(cases, planned, strict=True):
            # a project file the case names is copied into the case's own directory, where
            # it is called, at the path the test names it by from the project's root
            request["copy"] = [[str(box.root / f), f] for f in named if f in case.text]
        lines = [span.first, span.last]
        first = _run_all(ctx, box, target, cases, lines, seed="1", call_args=call_args)
        again = [c for c in cases if "returned" in first.get(c["id"], {})]
        again += [c for c in cases if "raised" in first.get(c["id"], {})]
        second = _run_all(
            ctx, box, target, again, lines, seed="2", travel=TRAVEL_TO, call_args=call_args
        )
    root = str(ctx.store.root)
    return [
        _unsafe(case, source, receiver, root)
        or _judge(case, source, receiver, first.get(index), second.get(index))
        for index, (case, source, receiver) in enumerate(planned)
    ]


_GIT = re.compile(r"(?<![\w.])\.git(?!\w)")


def _unsafe(case: Case, source: str, receiver: str | None, root: str) -> Observation | None:
    """A case whose test the user's pytest must never run: its text names ``.git`` or the
    project's absolute path (``save('/repo/.git/config', ...)`` passed observation, whose
    writes the sandbox threw away, and then wrote the real file at the next ``pytest``)."""
    text = case.text + (receiver or "")
    if _GIT.search(text) or (len(root) > 1 and root in text):
        return Observation(
            case=case.text,
            receiver=receiver,
            source=source,
            verdict="misuse",
            reason="it names .git or the project's own path: its test could change the project",
        )
    return None


def _run_all(
    ctx: CapabilityContext,
    box: Sandbox,
    target: Target,
    cases: list[dict[str, Any]],
    span: list[int],
    seed: str,
    travel: float | None = None,
    call_args: list[str] | None = None,
) -> dict[int, dict[str, Any]]:
    """Records by case id (:func:`~remora.tools.capabilities.observe.observe_in`); a clock
    that could not be moved is noted on the job."""
    run = observe_in(
        ctx,
        box,
        target.path,
        target.qualname,
        cases,
        method=target.needs_receiver,
        span=(span[0], span[1]),
        seed=seed,
        travel=travel,
        call_args=call_args,
    )
    if run.clock_unmoved is not None:
        draft(ctx, target.path, target.qualname).clock_unmoved = run.clock_unmoved
    return run.records


def _judge(
    case: Case,
    source: str,
    receiver: str | None,
    first: dict[str, Any] | None,
    second: dict[str, Any] | None,
) -> Observation:
    """The verdict on one case from its two runs."""
    record = first or {"crashed": "the case was not run"}
    base: dict[str, Any] = {"case": case.text, "receiver": receiver, "source": source}
    if "crashed" in record:
        return Observation(**base, verdict="crashed", reason=str(record["crashed"])[:200])
    written = [*record.get("wrote_outside", []), *(second or {}).get("wrote_outside", [])]
    if written:
        reason = f"it wrote or deleted outside its own directory ({written[0]}): its test would too"
        return Observation(**base, verdict="misuse", reason=reason[:200])
    if record.get("timed_out"):
        return Observation(
            **base, verdict="timed_out", reason=f"ran longer than {CASE_TIMEOUT:g} s"
        )
    seen = {
        "returned": record.get("returned"),
        "raised": record.get("raised"),
        "stdout": record.get("stdout", ""),
        "arcs": [tuple(arc) for arc in record.get("arcs", [])],
        "wrote_files": record.get("wrote_files", False),
        "stage": record.get("stage", "call"),
        "state": list(record.get("state", [])),
    }
    raised = record.get("raised")
    if raised is not None and record.get("stage") == "receiver":
        reason = f"building {receiver} raised {raised['type']}: {raised['message'][:100]}"
        return Observation(**base, **seen, verdict="setup_failed", reason=reason)
    if raised is not None and record.get("stage") == "arguments":
        reason = f"evaluating the arguments raised {raised['type']}: {raised['message'][:100]}"
        return Observation(**base, **seen, verdict="setup_failed", reason=reason)
    if raised is not None and raised["type"] in EXHAUSTED:
        reason = f"{raised['type']}: the case exhausted a limit of the runner"
        return Observation(**base, **seen, verdict="crashed", reason=reason)
    if raised is not None and raised["type"] in MISUSE:
        reason = f"{raised['type']}: {raised['message'][:120]}"
        return Observation(**base, **seen, verdict="misuse", reason=reason)
    varies: list[dict[str, Any]] = [
        run["varies"] for run in (record, second or {}) if isinstance(run.get("varies"), dict)
    ]
    if varies:
        held = _invariant(varies[0])
        if len(varies) == 2 and held and held == _invariant(varies[1]):
            return Observation(**base, **seen, verdict="kept", varies=varies[0])
        return Observation(
            **base,
            **seen,
            verdict="nondeterministic",
            reason="its result varies from run to run (it draws random numbers) and nothing "
            "about it held in every run",
        )
    if _fingerprint(first) != _fingerprint(second):
        return Observation(
            **base,
            **seen,
            verdict="nondeterministic",
            reason="two runs gave different results (another hash seed and another date)",
        )
    return Observation(**base, **seen, verdict="kept")


def _fingerprint(record: dict[str, Any] | None) -> tuple[Any, ...] | None:
    if record is None or "crashed" in record or record.get("timed_out"):
        return None
    returned, raised = record.get("returned"), record.get("raised")
    outcome = returned["canonical"] if returned else raised["canonical"] if raised else None
    calls = [
        call.get("canonical") or call.get("raised") for call in (returned or {}).get("calls", [])
    ]
    state = [entry.get("canonical") for entry in record.get("state", [])]
    attributes = [entry.get("canonical") for entry in (returned or {}).get("attributes", [])]
    return (outcome, record.get("stdout"), calls, state, attributes)


def _invariant(varies: dict[str, Any]) -> tuple[Any, ...]:
    """What two processes' reruns must agree held in every run (not how many runs)."""
    return tuple(sorted((key, repr(value)) for key, value in varies.items() if key != "runs"))
