"""The lint evaluation: Remora's lint agent against ruff's own fixer, on injected mistakes.

Setup. ``limit`` of the package's modules (seeded; modules of at least
:data:`MIN_MODULE_LINES` lines, tests excluded) each get up to ``per_module`` injections
(:data:`PER_MODULE` by default, so that a file's fixes fit the lint agent's turns), each
from a different entry of a fixed catalogue (:data:`~._injections.CATALOGUE`), tried in
a seeded order, each at a seeded eligible site. An injection is a small,
semantics-preserving source rewrite that ruff flags with a code of the lint agent's
pinned rule set (``DEFAULT_RULES``, explicit codes). Sites are found with ``ast`` and the
edit is applied to the text; an injection is kept only when the module still parses,
still imports (``python -c "import <module>"``) and ruff reports the intended code on the
edited lines; otherwise it is dropped and counted. No two injections touch the same lines.
When the package's own test suite passed before injection and a module's injections break
it, that module is injected again one injection at a time, dropping those that make the
suite fail. A module that does not parse or import before injection gets none.

Measured. Diagnostics are ``ruff check --isolated --select <DEFAULT_RULES> --output-format
json`` on the chosen modules, compared as multisets of (file, code, message) with line
numbers ignored (also inside messages):

* injected = diagnostics of the injected package that the clean one does not have;
* host-fixable = injected diagnostics Remora's own ``lint_issues`` (default options) marks
  with a fix kind other than manual: what the agent could fix at best (in ``details``);
* fixed / fix rate = injected diagnostics no longer present after the tool;
* new = diagnostics after the tool that the injected package did not have;
* pre-existing fixed = diagnostics of the clean package that the tool removed too;
* noqa added = ``# noqa`` and ``ruff: noqa`` comments added (must be 0);
* parse = chosen modules that still parse; tests pass = the package's own suite still
  passes (not measured, "-", when it did not pass before injection).

Four copies of the injected package are given to: (a) ``ruff check --isolated --select
<rules> --fix``, (b) the same with ``--unsafe-fixes``, (c) Remora's lint agent on the
chosen modules with ``options.use_model=false`` (``remora (host only)``: every verified fix,
no model turn), (d) the same with ``options.use_model=true`` (``remora (model rewrites)``:
then the model rewrites the lines of the issues no tool may fix). Every change Remora
proposes is accepted. Besides the figures every operation reports (jobs per minute, mean
turns, tool-call validity, model share of the time), ``details`` has each job and, for
(d), the manual issues the model was asked about per code and how many of its rewrites
were kept (each verified like every fix and by the module's tests).
"""

from __future__ import annotations

import ast
import contextlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from remora.config import ToolsConfig
from remora.evaluation.commands import run_command
from remora.evaluation.context import EvalContext
from remora.evaluation.package import Project
from remora.evaluation.report import Column, OperationReport, RemoraFigures, Score, Value
from remora.operations.lint._injections import (
    SELECT,
    Diagnostic,
    ModuleInjection,
    RuffError,
    diagnostic_keys,
    inject_keeping_tests,
    ruff_diagnostics,
)
from remora.operations.lint.capabilities import lint_issues
from remora.operations.lint.rules import DEFAULT_RULES
from remora.orchestration import JobRecord
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.ruff import ruff_command
from remora.workspace import WorkspaceManager

OPERATION = "lint"
PER_MODULE = 8
MIN_MODULE_LINES = 40
RUFF_FIX_TIMEOUT_S = 600.0
NOQA = re.compile(r"#\s*noqa\b|ruff\s*:\s*noqa", re.IGNORECASE)
HOST_ONLY = "remora (host only)"
MODEL = "remora (model rewrites)"
VARIANTS = (
    (HOST_ONLY, "operations.lint.options.use_model=false", "remora-host-only"),
    (MODEL, "operations.lint.options.use_model=true", "remora-model"),
)
"""Remora's rows: the host alone and the host with the model's rewrites of the residue;
their names, settings and scratch folders."""


@dataclass(frozen=True)
class Fixer:
    """A baseline: ruff's own fixer with the same rules, and its scratch directory."""

    name: str
    directory: str
    extra: tuple[str, ...] = ()


RUFF_FIXERS = (
    Fixer("ruff --fix", "ruff-fix"),
    Fixer("ruff --fix --unsafe-fixes", "ruff-fix-unsafe", ("--unsafe-fixes",)),
)


def columns(modules: int) -> list[Column]:
    """The table's columns; ``modules`` chosen modules, for the parse column's help."""
    return [
        Column(
            key="injected",
            label="injected",
            kind="count",
            help="diagnostics of the injected modules that the clean ones do not have",
        ),
        Column(
            key="fixed",
            label="fixed",
            kind="count",
            help="injected diagnostics no longer reported after the tool",
        ),
        Column(key="fix_rate", label="fix rate", kind="rate", help="fixed / injected"),
        Column(
            key="new",
            label="new",
            kind="count",
            help="diagnostics after the tool that the injected modules did not have",
        ),
        Column(
            key="preexisting_fixed",
            label="pre-existing fixed",
            kind="count",
            help="diagnostics of the untouched package that the tool removed too",
        ),
        Column(
            key="noqa_added",
            label="noqa added",
            kind="count",
            help="`# noqa` / `ruff: noqa` comments added (must be 0)",
        ),
        Column(
            key="parses",
            label="parse",
            kind="count",
            help=f"chosen modules that still parse, of {modules}",
        ),
        Column(
            key="tests_pass",
            label="tests pass",
            kind="text",
            help="the package's own test suite still passes",
        ),
    ]


@dataclass
class Setup:
    """What every tool starts from: the injected copy and the diagnostics around it."""

    project: Project
    modules: list[str]
    clean: Counter[Diagnostic]
    injected: Counter[Diagnostic]
    injections: list[ModuleInjection]
    noqa: int
    per_module: int

    @property
    def wanted(self) -> Counter[Diagnostic]:
        """The injected diagnostics: what a tool should remove."""
        return self.injected - self.clean


@dataclass
class Measured:
    """A tool's outcome on its copy: the table's values and what ``details`` keeps."""

    values: dict[str, Value] = field(default_factory=dict)
    fixed_by_code: Counter[str] = field(default_factory=Counter)
    new_examples: list[str] = field(default_factory=list)
    tests: str = ""
    error: str | None = None


@dataclass
class HostIssues:
    """Remora's own classification of each module's diagnostics, or why there is none."""

    issues: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    error: str | None = None

    def fixable(self) -> Counter[Diagnostic]:
        """The diagnostics Remora may fix (any fix kind but manual), counted as keys."""
        return diagnostic_keys(
            [
                {"filename": relative, "code": issue["code"], "message": issue["message"]}
                for relative, found in self.issues.items()
                for issue in found
                if issue.get("fix") != "manual"
            ]
        )

    def fixable_per_module(self) -> dict[str, int]:
        return {
            relative: sum(issue.get("fix") != "manual" for issue in found)
            for relative, found in self.issues.items()
        }


@dataclass
class HostFixable:
    """Of the injected diagnostics, those Remora's classification says it may fix: the
    most its lint agent could fix (``error`` when the classification could not run)."""

    total: int = 0
    by_code: Counter[str] = field(default_factory=Counter)
    at_start: dict[str, int] = field(default_factory=dict)
    error: str | None = None


def evaluate(ctx: EvalContext, *, per_module: int = PER_MODULE) -> OperationReport:
    """Inject, then compare ``ruff --fix``, ``ruff --fix --unsafe-fixes`` and Remora."""
    modules = choose_modules(ctx)
    report = OperationReport(
        operation=OPERATION,
        unit="modules",
        selection=modules,
        columns=columns(len(modules)),
        scores=[],
    )
    if not modules:
        report.error = f"no module of at least {MIN_MODULE_LINES} lines outside the tests"
        return report
    fixed_steps = len(modules) + 1 + len(RUFF_FIXERS) + len(VARIANTS)
    ctx.progress.expect(fixed_steps + len(modules) * len(VARIANTS))
    try:
        setup = prepare(ctx, modules, per_module)
    except RuffError as exc:
        report.error = f"ruff cannot lint the package: {exc}"
        return report
    host = classify(ctx, setup)

    measured: dict[str, Measured] = {}
    for fixer in RUFF_FIXERS:
        score, measured[fixer.name] = ruff_fixer(ctx, setup, fixer)
        report.scores.append(score)
    jobs: dict[str, list[dict[str, Any]]] = {}
    others = fixed_steps + len(modules) * (len(VARIANTS) - 1)  # the other rows' jobs too
    for name, setting, folder in VARIANTS:
        score, measured[name], figures, jobs[name] = remora(
            ctx, setup, others, host, name, setting, folder
        )
        report.scores.append(score)
        report.remora.append(figures)

    report.notes = notes(ctx, setup, host, jobs[MODEL])
    report.details = details(setup, host, measured, jobs)
    return report


def choose_modules(ctx: EvalContext) -> list[str]:
    """``ctx.limit`` seeded modules of at least :data:`MIN_MODULE_LINES` lines."""
    candidates = []
    for relative in ctx.original.modules():
        try:
            text = (ctx.original.root / relative).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if len(text.splitlines()) >= MIN_MODULE_LINES:
            candidates.append(relative)
    return ctx.pick(candidates, "modules")


def prepare(ctx: EvalContext, modules: list[str], per_module: int) -> Setup:
    """The injected copy and the diagnostics before and after; RuffError when ruff fails."""
    clean = diagnostic_keys(ruff_diagnostics(ctx.original, modules))
    project = ctx.scratch("injected")
    injections = []
    for relative in modules:
        ctx.progress.doing(f"injecting {relative}")
        injections.append(inject_keeping_tests(ctx, project, relative, per_module))
        ctx.progress.done()
    injected = diagnostic_keys(ruff_diagnostics(project, modules))
    noqa = noqa_count(project, modules)
    return Setup(project, modules, clean, injected, injections, noqa, per_module)


def classify(ctx: EvalContext, setup: Setup) -> HostFixable:
    """Remora's classification of the injected diagnostics: what it could fix at best."""
    ctx.progress.doing("classifying the injected issues as Remora does")
    clean = host_issues(ctx.original, setup.modules, ctx.work / "host-state-clean")
    injected = host_issues(setup.project, setup.modules, ctx.work / "host-state-injected")
    fixable = (injected.fixable() - clean.fixable()) & setup.wanted
    ctx.progress.done()
    return HostFixable(
        total=sum(fixable.values()),
        by_code=_by_code(fixable),
        at_start=injected.fixable_per_module(),
        error=clean.error or injected.error,
    )


def host_issues(project: Project, files: Sequence[str], state: Path) -> HostIssues:
    """``lint_issues`` (default options) on each file, in a throwaway overlay workspace whose
    state lives outside the project, so the project itself is only read. A failure is a
    missing detail, never the end of the evaluation."""
    try:
        manager = WorkspaceManager(project.root, state_dir=state)
        with manager.create("eval", "lint-host") as store:
            ctx = CapabilityContext(store=store, config=ToolsConfig(), system={"options": {}})
            return HostIssues({path: list(lint_issues(ctx, path)["issues"]) for path in files})
    except Exception as exc:
        return HostIssues(error=f"{type(exc).__name__}: {exc}")


def ruff_fixer(ctx: EvalContext, setup: Setup, fixer: Fixer) -> tuple[Score, Measured]:
    """``ruff check --fix`` (and the fixer's extra flags) on a fresh copy of the injected
    package; a ruff that fails is the score's error."""
    name = fixer.name
    ctx.progress.doing(f"running {name}")
    copy = ctx.scratch(fixer.directory, setup.project)
    argv = [*ruff_command(), "check", "--isolated", "--no-cache", SELECT, "--fix", *fixer.extra]
    result = run_command([*argv, *setup.modules], copy.root, RUFF_FIX_TIMEOUT_S)
    error = None if result.returncode in (0, 1) and not result.timed_out else result.tail()
    ctx.progress.doing(f"measuring {name}")
    outcome = measure(ctx, setup, copy)
    ctx.progress.done()
    score = Score(
        tool=name,
        kind="baseline",
        values=outcome.values,
        wall_s=result.wall_s,
        error=error or outcome.error,
    )
    return score, outcome


def remora(
    ctx: EvalContext,
    setup: Setup,
    fixed_steps: int,
    host: HostFixable,
    name: str,
    setting: str,
    folder: str,
) -> tuple[Score, Measured, RemoraFigures, list[dict[str, Any]]]:
    """Remora's lint agent (``setting`` applied) on the chosen modules of a fresh copy,
    every change accepted: the row ``name``, besides ``fixed_steps`` other progress steps."""
    ctx.progress.doing(f"{name}: planning")
    copy = ctx.scratch(folder, setup.project)

    def planned(jobs: int) -> None:
        ctx.progress.expect(fixed_steps + jobs)
        ctx.progress.doing(f"{name}: {jobs} lint job(s)")

    def finished(job: JobRecord) -> None:
        ctx.progress.doing(f"{name}: {job.file_path} {job.status}")
        ctx.progress.done()

    run = ctx.session.run(
        copy, setup.modules, [OPERATION], sets=[setting], on_planned=planned, on_job=finished
    )
    ctx.progress.doing(f"measuring {name}")
    outcome = measure(ctx, setup, copy) if run.jobs else Measured()
    ctx.progress.done()
    score = Score(
        tool=name,
        kind="remora",
        values=outcome.values,
        wall_s=run.wall_s,
        error=run.error or outcome.error,
    )
    jobs = [job_detail(job, host.at_start) for job in run.of(OPERATION)]
    return score, outcome, run.figures(name, OPERATION), jobs


def measure(ctx: EvalContext, setup: Setup, project: Project) -> Measured:
    """The table's values for the package as a tool left it."""
    injected = sum(setup.wanted.values())
    outcome = Measured()
    outcome.values = {
        "injected": injected,
        "noqa_added": max(0, noqa_count(project, setup.modules) - setup.noqa),
        "parses": parse_count(project, setup.modules),
        "tests_pass": None,
    }
    if ctx.suite.status == "passed":
        suite = project.run_tests(ctx.test_timeout)
        outcome.values["tests_pass"] = suite.status == "passed"
        outcome.tests = suite.describe()
    try:
        after = diagnostic_keys(ruff_diagnostics(project, setup.modules))
    except RuffError as exc:
        outcome.error = str(exc)
        return outcome
    remaining = (after - setup.clean) & setup.wanted
    fixed = injected - sum(remaining.values())
    new = after - setup.injected
    outcome.values |= {
        "fixed": fixed,
        "fix_rate": fixed / injected if injected else None,
        "new": sum(new.values()),
        "preexisting_fixed": sum((setup.clean - after).values()),
    }
    outcome.fixed_by_code = _by_code(setup.wanted) - _by_code(remaining)
    outcome.new_examples = [f"{file}: {code} {message}" for file, code, message in list(new)[:5]]
    return outcome


def noqa_count(project: Project, files: Sequence[str]) -> int:
    """Suppression comments in ``files``: ``# noqa`` and ``ruff: noqa``."""
    total = 0
    for relative in files:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            total += len(NOQA.findall((project.root / relative).read_text(encoding="utf-8")))
    return total


def parse_count(project: Project, files: Sequence[str]) -> int:
    """How many of ``files`` still parse."""
    count = 0
    for relative in files:
        try:
            ast.parse((project.root / relative).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        count += 1
    return count


def job_detail(job: JobRecord, fixable_at_start: dict[str, int]) -> dict[str, Any]:
    """One Remora job as ``details`` keeps it."""
    return {
        "file": job.file_path,
        "status": job.status,
        "turns": job.telemetry.turns,
        "fixable_at_start": fixable_at_start.get(job.file_path or ""),
        "summary": job.summary,
        "details": job.details,
        "error": job.error,
    }


def model_residue(jobs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The manual issues the model was asked about and its rewrites kept, in all and per
    code, with what was refused."""
    asked: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    refused: list[str] = []
    for job in jobs:
        found = job["details"] or {}
        for item in found.get("model_rewrites", []):
            kept[item["code"]] += 1
        for item in found.get("model_refused", []):
            refused.append(f"{job['file']} {item['code']} line {item['line']}: {item['problem']}")
        asked.update(found.get("model_asked", {}))
    return {
        "asked": sum(asked.values()),
        "kept": sum(kept.values()),
        "by_code": {code: {"asked": asked[code], "kept": kept[code]} for code in sorted(asked)},
        "refused_examples": refused[:10],
    }


def notes(
    ctx: EvalContext, setup: Setup, host: HostFixable, model_jobs: list[dict[str, Any]]
) -> list[str]:
    """What a reader of the table needs: how it was measured, what was dropped or not run."""
    kept = sum(len(item.applied) for item in setup.injections)
    wanted = (
        "one of every catalogue entry that fits"
        if setup.per_module <= 0
        else (f"up to {setup.per_module} each")
    )
    found = [
        f"{kept} injection(s) kept in {len(setup.modules)} module(s) ({wanted}); "
        f"diagnostics from `ruff check --isolated` with the lint agent's "
        f"{len(DEFAULT_RULES)} pinned rules, compared without line numbers"
    ]
    reasons = Counter(
        why.split(":")[0]
        for item in setup.injections
        for why in item.dropped.values()
        if why != "no eligible site"
    )
    if reasons:
        dropped = ", ".join(f"{why} {n}" for why, n in reasons.most_common())
        found.append(f"injections dropped by the checks: {dropped} (per module in details)")
    skipped = [f"{item.path} ({item.skipped})" for item in setup.injections if item.skipped]
    if skipped:
        found.append("no injection in " + "; ".join(skipped))
    retried = [item.path for item in setup.injections if item.retried_with_tests]
    if retried:
        found.append("injected again one at a time with the tests: " + ", ".join(retried))
    if ctx.suite.status != "passed":
        found.append(
            f"tests pass: not measured, the package's own tests did not pass before "
            f"injection ({ctx.suite.describe()})"
        )
    if host.error:
        found.append(f"Remora's lint_issues could not classify the issues: {host.error}")
    else:
        found.append(
            f"Remora may fix at best {host.total} of the injected diagnostics "
            "(the others it classifies as manual)"
        )
    residue = model_residue(model_jobs)
    codes = ", ".join(
        f"{code} {counts['kept']}/{counts['asked']}" for code, counts in residue["by_code"].items()
    )
    found.append(
        f"{MODEL}: the model was asked to rewrite {residue['asked']} issue(s) no tool may fix "
        f"and {residue['kept']} rewrite(s) were kept" + (f" (kept/asked: {codes})" if codes else "")
    )
    return found


def details(
    setup: Setup,
    host: HostFixable,
    measured: dict[str, Measured],
    jobs: dict[str, list[dict[str, Any]]],
) -> dict[str, Any]:
    """The JSON report's detail: injections per module, counts per code, Remora's jobs."""
    wanted = _by_code(setup.wanted)
    codes = sorted(wanted)
    return {
        "rules": list(DEFAULT_RULES),
        "injections": [asdict(item) for item in setup.injections],
        "by_code": {
            code: {
                "injected": wanted[code],
                "host_fixable": host.by_code[code],
                "fixed": {
                    name: outcome.fixed_by_code[code]
                    for name, outcome in measured.items()
                    if "fixed" in outcome.values
                },
            }
            for code in codes
        },
        "host_fixable": host.total,
        "host_fixable_at_start": host.at_start,
        "host_error": host.error,
        "preexisting_diagnostics": sum(setup.clean.values()),
        "new_examples": {name: outcome.new_examples for name, outcome in measured.items()},
        "tests": {name: outcome.tests for name, outcome in measured.items() if outcome.tests},
        "remora_jobs": jobs,
        "model_residue": model_residue(jobs[MODEL]),
    }


def _by_code(diagnostics: Counter[Diagnostic]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for (_, code, _), count in diagnostics.items():
        counts[code] += count
    return counts
