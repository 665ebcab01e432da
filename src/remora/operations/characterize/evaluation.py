"""The test and sample_data operations: Remora's characterization agents against Hypothesis,
on the same seeded functions of the package.

Selection. Candidates are the public top-level functions of the public modules
(:func:`~remora.evaluation.functions.public_functions`) that are plain ``def`` (not
``async``) and take at least one parameter (there is nothing to propose for one without),
each ``path::name`` once (a conditional re-definition is measured as its first). ``limit``
of them are picked with the seed (label ``functions``); both operations, and every row of
each, use that one selection.

test. Rows, each on its own scratch copy of the package:

* hypothesis write (baseline): ``hypothesis write MODULE.FUNCTION`` for each function
  (:mod:`._hypothesis`), the file run unedited from a directory of its own
  with ``--hypothesis-seed=0``;
* remora: the test agent on the chosen functions (``path::name`` selectors), every test file
  it offers accepted into the copy, with ``operations.test.options.model_inputs=true`` (not
  the default): the model, with the agent's adapter, proposes inputs for what the host's
  tests leave uncovered;
* remora (host only): the same with ``operations.test.options.model_inputs=false``,
  so only the argument lists the host finds (doctests, call sites, tests, defaults, ...),
  and no model turn;
* remora (base model): the model's proposals too, by the base model without any adapter
  (``model.use_adapters=false``): what the agent's adapter adds at the same decision points.
  An agent without an adapter would run the same as remora here, so unless the rows are
  named the row is left out and a note says why;
* remora (untested) and remora (host only, untested): the first two on a copy without the
  package's own tests (:func:`remove_own_tests`), as most code Remora is brought to has
  none: the host then finds argument lists only in the docstrings' examples, the other
  call sites and the defaults, and no behaviour is left out as already tested.

Every test file is measured the same way (:mod:`._testrun`): run twice here
(PYTHONHASHSEED 11 and 12; Remora's from the copy's root, as its user would), the first run
under coverage, judged on its one function's line and branch coverage. A file that does not
import, has a failing test in either run, or no passing test counts as 0%, and a function
without a file counts as 0%. Columns: functions whose file counts; tests (Remora: kept after
passing twice in its sandbox; Hypothesis: in its files); flaky tests Remora dropped (they did
not pass twice); the pass rate of every file's tests over both runs here; the mean over the
functions of line and branch coverage; files failing and files not importing; and the
tests whose every assert checks only a type (:func:`._testrun.type_only_tests`: Remora's
kept tests in its marked files, every test of ``hypothesis write``'s), which pin nothing,
with their share of the tests read in a note.

sample_data. Rows: st.builds (baseline): ``st.builds(function)`` (``st.from_type`` of each
annotated parameter) drawn 20 times and called, in a child process; remora (the model's
proposals too, ``operations.sample_data.options.model_inputs=true``), remora (host only,
``model_inputs=false``, the default) and remora (base model): the sample_data agent,
whose fixture file holds only the argument lists it called in its sandbox without an argument
error. Column: the share of the functions with at least one fixture that calls without an
argument error (TypeError, AttributeError): for Remora a successful job whose fixture file is
in the copy, for st.builds a drawn example that called so; and how many such fixtures.

An evaluation that names its rows (``EvalOptions.rows``, as the adapter gate does) runs
only those of Remora's rows, and one without baselines (``EvalOptions.baselines``) no
baseline row. For each Remora row: jobs per minute, mean turns and tool-call
validity of its run. Wall times are those of producing the files (``hypothesis write``, the
draws, Remora's run), not of the measurement runs here.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from remora.evaluation.context import EvalContext, OperationProgress
from remora.evaluation.functions import (
    FunctionRef,
    mean,
    parameter_names,
    public_functions,
)
from remora.evaluation.package import TEST_DIRS, Project
from remora.evaluation.report import (
    ADAPTER_ROW,
    BASE_MODEL_ROW,
    BASE_MODEL_SETTING,
    HOST_ONLY_ROW,
    Column,
    OperationReport,
    RemoraFigures,
    Score,
    Value,
)
from remora.evaluation.session import RemoraRun
from remora.operations.characterize._hypothesis import (
    from_type_fixtures,
    ghostwriter_coverage,
    missing_hypothesis,
)
from remora.operations.characterize._mutation import MutationReport
from remora.operations.characterize._testgen import MARKER
from remora.operations.characterize._testrun import (
    NOT_IMPORTABLE,
    TESTS_FAILED,
    FileRun,
    TypeOnly,
    mutation_of_file,
    run_test_file,
    type_only_tests,
)
from remora.orchestration import JobRecord
from remora.tools.capabilities.project import is_test_file

TEST = "test"
SAMPLE_DATA = "sample_data"
UNIT = "functions"
SELECTION_LABEL = "functions"
GHOSTWRITER = "hypothesis write"
BUILDS = "st.builds"
REMORA = ADAPTER_ROW
HOST_ONLY = HOST_ONLY_ROW
BASE_MODEL = BASE_MODEL_ROW
UNTESTED = "remora (untested)"
HOST_ONLY_UNTESTED = "remora (host only, untested)"
FILE_TIMEOUT_S = 300.0

TEST_COLUMNS = [
    Column(
        key="functions_tested",
        label="functions with passing tests",
        kind="count",
        help="functions whose test file imported and passed entirely in both runs here "
        "(only those files' coverage counts)",
    ),
    Column(
        key="tests",
        label="tests",
        kind="count",
        help="Remora: tests kept after passing twice in its sandbox; hypothesis write: tests "
        "in its files",
    ),
    Column(
        key="flaky_dropped",
        label="flaky dropped",
        kind="count",
        help="tests Remora wrote and dropped because they did not pass twice",
    ),
    Column(
        key="pass_rate",
        label="pass rate",
        kind="rate",
        help="passed / run of the files' tests over both runs here (PYTHONHASHSEED 11 and 12)",
    ),
    Column(
        key="line_coverage",
        label="line cov",
        kind="rate",
        help="mean over the functions of the share of the function's lines its test file "
        "alone runs (coverage.py); 0 without a counted file",
    ),
    Column(
        key="branch_coverage",
        label="branch cov",
        kind="rate",
        help="the same for the branches that start in the function",
    ),
    Column(
        key="mutation_score",
        label="mutation",
        kind="rate",
        help="mean over the functions of the share of the function's mutants (standard "
        "operators, at most 40 a function) its test file kills, run here as the file is; 0 "
        "without a counted file; functions without a mutant left out",
    ),
    Column(
        key="returning_tests",
        label="returning tests",
        kind="rate",
        help="share of the tests read whose call returns (the others expect it to raise, "
        "pytest.raises): tests of values that reach the function's work, not its first guard",
    ),
    Column(
        key="type_only",
        label="type-only tests",
        kind="count",
        help="tests whose every assert only checks a type (isinstance(x, T), type(x) is T, "
        "type(x).__name__ == 'T'): they pass for any value of the type, so they pin nothing",
    ),
    Column(
        key="failing_files",
        label="failing files",
        kind="count",
        help="test files with a test failing here, counted as 0%",
    ),
    Column(
        key="not_importable",
        label="files not importing",
        kind="count",
        help="test files pytest could not import, counted as 0%",
    ),
]
SAMPLE_DATA_COLUMNS = [
    Column(
        key="with_fixture",
        label="functions with a usable fixture",
        kind="rate",
        help="share of the functions with at least one fixture that calls without an argument "
        "error (TypeError, AttributeError)",
    ),
    Column(
        key="fixtures",
        label="usable fixtures",
        kind="count",
        help="Remora: fixtures written (each called in its sandbox); st.builds: drawn "
        "examples (20 a function) that called without an argument error",
    ),
    Column(
        key="returning",
        label="fixtures returning",
        kind="rate",
        help="share of the usable fixtures whose call returns rather than raises (Remora: "
        "from its fixture files)",
    ),
]


@dataclass(frozen=True)
class Variant:
    """One Remora row: its name, its settings, the directory of its scratch copy, and
    whether the package's own tests are removed from the copy first."""

    name: str
    sets: tuple[str, ...]
    directory: str
    untested: bool = False


def variants(operation: str) -> tuple[Variant, ...]:
    """Remora with the model's proposals, with the host's argument lists only (the model is
    not asked: the host does every step), and with the base model's proposals; each
    whatever the default. The test operation also runs the first two without the
    package's tests: the code users mostly bring, whose behaviours no test covers yet."""
    with_model = f"operations.{operation}.options.model_inputs=true"
    host_only = f"operations.{operation}.options.model_inputs=false"
    rows = (
        Variant(REMORA, (with_model,), f"{operation}-remora"),
        Variant(HOST_ONLY, (host_only,), f"{operation}-remora-host-inputs"),
        Variant(BASE_MODEL, (with_model, BASE_MODEL_SETTING), f"{operation}-base-model"),
    )
    if operation != TEST:
        return rows
    return (
        *rows,
        Variant(UNTESTED, (with_model,), f"{operation}-remora-untested", untested=True),
        Variant(
            HOST_ONLY_UNTESTED,
            (host_only,),
            f"{operation}-remora-host-inputs-untested",
            untested=True,
        ),
    )


def remove_own_tests(project: Project) -> list[str]:
    """Remove the package's own tests from a scratch copy; what was removed, relative
    and sorted. Tests are what Remora's test detection takes for them: test modules
    (:func:`~remora.tools.capabilities.project.is_test_file`) and ``conftest.py``
    anywhere, and whole test directories, their data included: ``tests/`` or ``test/``
    with such a file below, ``testing/`` with one in it (a ``testing/`` package whose only
    tests are in a subdirectory is library code). Everything else stays: the docstrings'
    examples and the other call sites are the evidence left."""
    removed: list[str] = []
    for path in sorted(project.root.rglob("*"), key=lambda item: len(item.parts)):
        if not path.exists() and not path.is_symlink():
            continue  # under a directory removed already
        relative = project.relative(path)
        if path.is_dir() and not path.is_symlink():
            if _is_test_directory(path):
                shutil.rmtree(path)
                removed.append(relative + "/")
        elif _is_test_module(path):
            path.unlink()
            removed.append(relative)
    return sorted(removed)


def _is_test_directory(path: Path) -> bool:
    if path.name not in TEST_DIRS:
        return False
    inside = path.iterdir() if path.name == "testing" else path.rglob("*.py")
    return any(_is_test_module(item) for item in inside)


def _is_test_module(path: Path) -> bool:
    name = path.name
    return path.suffix == ".py" and (name == "conftest.py" or is_test_file(name))


@dataclass
class FunctionTests:
    """One function's tests from one tool, as the test columns count them."""

    tests: int
    dropped: int | None
    run: FileRun | None
    zero_reason: str | None
    mutation: MutationReport | None = None
    assertions: TypeOnly = field(default_factory=TypeOnly)

    @property
    def mutation_rate(self) -> float | None:
        """The file's mutation score; 0 when the file does not count, None without mutants."""
        if self.mutation is None or self.run is None or not self.run.counted:
            return 0.0
        return self.mutation.score

    @property
    def line_rate(self) -> float:
        return self.run.line_rate if self.run else 0.0

    @property
    def branch_rate(self) -> float:
        return self.run.branch_rate if self.run else 0.0


@dataclass
class Steps:
    """The operation's progress: a step per baseline function and per Remora job, a run's
    jobs estimated as the function count until it plans them and until it ends."""

    progress: OperationProgress
    total: int

    def correct(self, estimate: int, actual: int) -> None:
        if actual != estimate:
            self.total += actual - estimate
            self.progress.expect(self.total)


def characterizable(project: Project) -> list[FunctionRef]:
    """The candidates (see the module's docstring), in file order."""
    found: dict[FunctionRef, None] = {}
    for ref, node in public_functions(project):
        if isinstance(node, ast.FunctionDef) and parameter_names(node):
            found.setdefault(ref)
    return list(found)


def select_functions(ctx: EvalContext) -> tuple[list[FunctionRef], int]:
    """The seeded selection both operations measure, and how many candidates there were."""
    candidates = characterizable(ctx.original)
    return ctx.pick(candidates, SELECTION_LABEL), len(candidates)


def evaluate_test(ctx: EvalContext) -> OperationReport:
    """The test operation (see the module's docstring)."""
    return _evaluate(ctx, TEST, TEST_COLUMNS, _ghostwriter_row, _measure_tests)


def evaluate_sample_data(ctx: EvalContext) -> OperationReport:
    """The sample_data operation (see the module's docstring)."""
    return _evaluate(ctx, SAMPLE_DATA, SAMPLE_DATA_COLUMNS, _builds_row, _measure_fixtures)


Details = dict[str, dict[str, Any]]
BaselineRow = Callable[[EvalContext, list[FunctionRef], Details, list[str]], Score]
MeasureVariant = Callable[
    [EvalContext, Project, RemoraRun, Variant, list[FunctionRef], Details, list[str]],
    dict[str, Value],
]


def _evaluate(
    ctx: EvalContext,
    operation: str,
    columns: list[Column],
    baseline: BaselineRow,
    measure: MeasureVariant,
) -> OperationReport:
    """What both operations do: the selection, the baseline's row, then each Remora variant
    on its own copy, measured by ``measure``."""
    chosen, candidates = select_functions(ctx)
    if not chosen:
        return _nothing_to_measure(operation, columns)
    rows = variants(operation)
    repeats = ctx.base_model_repeats(operation, rows[0].sets)
    measured = [
        variant
        for variant in rows
        if ctx.measures(variant.name) and not (variant.name == BASE_MODEL and repeats)
    ]
    steps = Steps(ctx.progress, total=(int(ctx.baselines) + len(measured)) * len(chosen))
    ctx.progress.expect(steps.total)
    details: Details = {ref.target: {} for ref in chosen}
    notes = [_selection_note(ctx, chosen, candidates), *([repeats] if repeats else [])]
    scores = [baseline(ctx, chosen, details, notes)] if ctx.baselines else []
    figures: list[RemoraFigures] = []
    removed: dict[str, list[str]] = {}
    for variant in measured:
        project = ctx.scratch(variant.directory)
        if variant.untested:
            removed[variant.name] = remove_own_tests(project)
            notes.append(_removed_note(variant.name, removed[variant.name]))
        run = _run_remora(ctx, steps, project, chosen, operation, variant)
        values = measure(ctx, project, run, variant, chosen, details, notes)
        scores.append(_remora_score(variant, values if run.jobs else {}, run))
        figures.append(run.figures(variant.name, operation))
    return OperationReport(
        operation=operation,
        unit=UNIT,
        selection=[ref.target for ref in chosen],
        columns=columns,
        scores=scores,
        remora=figures,
        notes=notes,
        details={"functions": details, **({"removed_tests": removed} if removed else {})},
    )


def _removed_note(row: str, removed: list[str]) -> str:
    if not removed:
        return f"{row}: the package has no tests of its own to remove"
    shown = ", ".join(removed[:4]) + (f" and {len(removed) - 4} more" if len(removed) > 4 else "")
    return f"{row}: the package's own tests removed from its copy before Remora ran ({shown})"


def _measure_tests(
    ctx: EvalContext,
    project: Project,
    run: RemoraRun,
    variant: Variant,
    chosen: list[FunctionRef],
    details: Details,
    notes: list[str],
) -> dict[str, Value]:
    """Each function's generated test file run here; notes for those counted as 0%."""
    outcomes = []
    for ref in chosen:
        outcome, detail = _remora_tests(ctx, project, run.job(TEST, ref.path, ref.name), ref)
        details[ref.target][variant.name] = detail | {"zero_reason": outcome.zero_reason}
        outcomes.append(outcome)
    notes += _zeroed_notes(variant.name, chosen, outcomes)
    notes += _type_only_note(variant.name, outcomes)
    return _test_values(outcomes)


def _measure_fixtures(
    ctx: EvalContext,
    project: Project,
    run: RemoraRun,
    variant: Variant,
    chosen: list[FunctionRef],
    details: Details,
    notes: list[str],
) -> dict[str, Value]:
    """Each function's usable fixtures, from its job and the fixture file in the copy."""
    usable = []
    raising = []
    for ref in chosen:
        count, detail = _remora_fixtures(project, run.job(SAMPLE_DATA, ref.path, ref.name))
        details[ref.target][variant.name] = detail
        usable.append(count)
        raised = detail.get("raising")
        raising.append(raised if count and isinstance(raised, int) else 0)
    return _fixture_values(usable, raising)


def _ghostwriter_row(
    ctx: EvalContext,
    chosen: list[FunctionRef],
    details: dict[str, dict[str, Any]],
    notes: list[str],
) -> Score:
    """The ``hypothesis write`` row, a progress step a function, on a copy of its own."""
    baseline = ctx.scratch("test-hypothesis")
    timeout = min(FILE_TIMEOUT_S, ctx.test_timeout)
    outcomes: list[FunctionTests] = []
    write_s = 0.0
    for ref in chosen:
        ctx.progress.doing(f"{GHOSTWRITER}: {ref.target}")
        scratch = ctx.work / "hypothesis-write" / _label(ref)
        ghost = ghostwriter_coverage(baseline, ref, scratch, timeout)
        details[ref.target][GHOSTWRITER] = ghost.model_dump()
        write_s += ghost.write_s
        tests = ghost.run.tests if ghost.run else 0
        assertions = _assertions(Path(ghost.run.test_file) if ghost.run else None)
        details[ref.target][GHOSTWRITER]["type_only"] = list(assertions.type_only)
        mutation = None
        if ghost.run is not None and ghost.run.counted:
            mutation = mutation_of_file(
                baseline,
                Path(ghost.run.test_file),
                ref,
                scratch / "mutants",
                cwd=scratch,
                timeout=timeout,
                pytest_args=["--hypothesis-seed=0"],
            )
            details[ref.target][GHOSTWRITER]["mutation"] = _mutation_detail(mutation)
        outcomes.append(
            FunctionTests(tests, None, ghost.run, ghost.zero_reason, mutation, assertions)
        )
        ctx.progress.done()
    notes += _zeroed_notes(GHOSTWRITER, chosen, outcomes)
    notes += _type_only_note(GHOSTWRITER, outcomes)
    missing = missing_hypothesis(cli=True)
    values = {} if missing else _test_values(outcomes)
    return Score(tool=GHOSTWRITER, kind="baseline", values=values, wall_s=write_s, error=missing)


def _builds_row(
    ctx: EvalContext,
    chosen: list[FunctionRef],
    details: dict[str, dict[str, Any]],
    notes: list[str],
) -> Score:
    """The ``st.builds`` row, a progress step a function, on a copy of its own; a function
    that could not be drawn for is noted with why (it counts as having no fixture)."""
    baseline = ctx.scratch("sample-data-st-builds")
    usable: list[int] = []
    draw_s = 0.0
    for ref in chosen:
        ctx.progress.doing(f"{BUILDS}: {ref.target}")
        drawn = from_type_fixtures(baseline, ref, ctx.work / "st-builds" / _label(ref))
        details[ref.target][BUILDS] = drawn.model_dump() | {"ok": drawn.ok}
        usable.append(drawn.calls_ok)
        draw_s += drawn.wall_s
        if drawn.error and not missing_hypothesis():
            notes.append(f"{BUILDS}: {ref.target} has no fixture ({drawn.error})")
        ctx.progress.done()
    missing = missing_hypothesis()
    values = {} if missing else _fixture_values(usable)
    return Score(tool=BUILDS, kind="baseline", values=values, wall_s=draw_s, error=missing)


def _run_remora(
    ctx: EvalContext,
    steps: Steps,
    project: Project,
    chosen: list[FunctionRef],
    operation: str,
    variant: Variant,
) -> RemoraRun:
    """One Remora row's run on the chosen functions, a progress step a finished job."""
    estimate = len(chosen)
    ctx.progress.doing(f"{variant.name}: {operation} jobs")

    def planned(count: int) -> None:
        nonlocal estimate
        steps.correct(estimate, count)
        estimate = count

    def finished(record: JobRecord) -> None:
        ctx.progress.doing(f"{variant.name}: {record.qualname or record.file_path} {record.status}")
        ctx.progress.done()

    run = ctx.session.run(
        project,
        [ref.target for ref in chosen],
        [operation],
        sets=variant.sets,
        on_planned=planned,
        on_job=finished,
    )
    steps.correct(estimate, len(run.of(operation)))  # a run may stop early, or never plan
    return run


def _remora_tests(
    ctx: EvalContext, project: Project, record: JobRecord | None, ref: FunctionRef
) -> tuple[FunctionTests, dict[str, Any]]:
    """One function's outcome from Remora's test job: its accepted test file, run here."""
    detail = _job_detail(record)
    if record is None or record.status not in ("success", "partial"):
        return FunctionTests(0, 0, None, f"no test file (job {detail['status']})"), detail
    kept = list(record.details.get("tests") or [])
    dropped = list(record.details.get("dropped") or [])
    test_file = record.details.get("test_file")
    detail |= {
        "test_file": test_file,
        "tests": kept,
        "dropped": dropped,
        "agent_line_rate": record.details.get("line_rate"),
        "agent_branch_rate": record.details.get("branch_rate"),
    }
    if not isinstance(test_file, str) or not (project.root / test_file).is_file():
        return FunctionTests(len(kept), len(dropped), None, "no test file in the copy"), detail
    assertions = _assertions(project.root / test_file, kept, marked=True)
    detail["type_only"] = list(assertions.type_only)
    ctx.progress.doing(f"running {test_file}")
    scratch = ctx.work / "runs" / project.root.name / _label(ref)
    timeout = min(FILE_TIMEOUT_S, ctx.test_timeout)
    # the job's own tests: the module's test file also holds its other functions' tests
    run = run_test_file(
        project,
        project.root / test_file,
        ref,
        scratch,
        cwd=project.root,
        timeout=timeout,
        tests=kept,
    )
    detail["run"] = run.model_dump()
    mutation = None
    if run.counted:
        mutation = mutation_of_file(
            project,
            project.root / test_file,
            ref,
            scratch / "mutants",
            cwd=project.root,
            timeout=timeout,
            tests=kept,
        )
        detail["mutation"] = _mutation_detail(mutation)
    outcome = FunctionTests(len(kept), len(dropped), run, run.zero_reason, mutation, assertions)
    return outcome, detail


def _assertions(
    test_file: Path | None, tests: list[str] | None = None, *, marked: bool = False
) -> TypeOnly:
    """The file's ``tests`` (all, when None) and those checking only a type; none when it
    is unreadable, or not Remora's when ``marked``."""
    try:
        text = test_file.read_text(encoding="utf-8") if test_file is not None else ""
    except (OSError, UnicodeDecodeError):
        return TypeOnly()
    if not text or (marked and MARKER not in text) or tests == []:
        return TypeOnly()
    return type_only_tests(text, tests or ())


def _type_only_note(tool: str, outcomes: list[FunctionTests]) -> list[str]:
    """The share of the tests read that only check a type."""
    read = sum(len(outcome.assertions.tests) for outcome in outcomes)
    if not read:
        return []
    found = sum(len(outcome.assertions.type_only) for outcome in outcomes)
    return [f"{tool}: {found} of {read} tests ({found / read:.0%}) only check a type"]


def _mutation_detail(report: MutationReport) -> dict[str, Any]:
    """The score and what survived, for the report's details."""
    return {
        "score": report.score,
        "killed": report.killed,
        "measured": report.measured,
        "error": report.error,
        "survived": [f"line {m.line}: {m.change}" for m in report.survivors()],
    }


def _remora_fixtures(project: Project, record: JobRecord | None) -> tuple[int, dict[str, Any]]:
    """Usable fixtures of Remora's sample_data job: its count when the file is in the copy."""
    detail = _job_detail(record)
    if record is None or record.status not in ("success", "partial"):
        return 0, detail
    fixture_file = record.details.get("fixture_file")
    count = record.details.get("fixtures")
    detail |= {
        "fixture_file": fixture_file,
        "fixtures": count,
        "raising": record.details.get("raising"),
    }
    present = isinstance(fixture_file, str) and (project.root / fixture_file).is_file()
    return (count if present and isinstance(count, int) else 0), detail


def _remora_score(variant: Variant, values: dict[str, Value], run: RemoraRun) -> Score:
    return Score(
        tool=variant.name, kind="remora", values=values, wall_s=run.wall_s, error=run.error
    )


def _job_detail(record: JobRecord | None) -> dict[str, Any]:
    if record is None:
        return {"status": "no job", "summary": ""}
    return {"status": record.status, "summary": record.summary, "turns": record.telemetry.turns}


def _test_values(outcomes: list[FunctionTests]) -> dict[str, Value]:
    runs = [outcome.run for outcome in outcomes if outcome.run is not None]
    passed = sum(run.passed for run in runs)
    ran = passed + sum(run.failed for run in runs)
    dropped = [outcome.dropped for outcome in outcomes if outcome.dropped is not None]
    return {
        "functions_tested": sum(1 for run in runs if run.counted),
        "tests": sum(outcome.tests for outcome in outcomes),
        "flaky_dropped": sum(dropped) if dropped else None,
        "pass_rate": passed / ran if ran else None,
        "line_coverage": mean(outcome.line_rate for outcome in outcomes),
        "branch_coverage": mean(outcome.branch_rate for outcome in outcomes),
        "mutation_score": mean(
            rate for outcome in outcomes if (rate := outcome.mutation_rate) is not None
        ),
        "type_only": sum(len(outcome.assertions.type_only) for outcome in outcomes),
        "returning_tests": _returning_share(outcomes),
        "failing_files": sum(1 for o in outcomes if o.zero_reason == TESTS_FAILED),
        "not_importable": sum(1 for o in outcomes if o.zero_reason == NOT_IMPORTABLE),
    }


def _returning_share(outcomes: list[FunctionTests]) -> float | None:
    """The share of the tests read that do not expect their call to raise."""
    read = sum(len(outcome.assertions.tests) for outcome in outcomes)
    raising = sum(len(outcome.assertions.raising) for outcome in outcomes)
    return (read - raising) / read if read else None


def _fixture_values(usable: list[int], raising: list[int] | None = None) -> dict[str, Value]:
    """``raising``: of each function's usable fixtures, how many raise (None: not known)."""
    written = sum(usable)
    returning = None
    if raising is not None and written:
        returning = (written - sum(raising)) / written
    return {
        "with_fixture": mean(1.0 if count else 0.0 for count in usable),
        "fixtures": written,
        "returning": returning,
    }


def _zeroed_notes(tool: str, chosen: list[FunctionRef], outcomes: list[FunctionTests]) -> list[str]:
    """A note for each test file that ran but counts as 0%, with the reason."""
    notes = []
    for ref, outcome in zip(chosen, outcomes, strict=True):
        if outcome.run is not None and not outcome.run.counted:
            error = f": {outcome.run.error}" if outcome.run.error else ""
            notes.append(f"{tool}: {ref.target} counted as 0% ({outcome.zero_reason}{error})")
    return notes


def _selection_note(ctx: EvalContext, chosen: list[FunctionRef], candidates: int) -> str:
    return (
        f"{len(chosen)} of {candidates} candidate functions (public, top-level, not async, "
        f"with parameters), seed {ctx.seed}"
    )


def _nothing_to_measure(operation: str, columns: list[Column]) -> OperationReport:
    return OperationReport(
        operation=operation,
        unit=UNIT,
        selection=[],
        columns=columns,
        scores=[],
        error="the package has no public top-level function with parameters",
    )


def _label(ref: FunctionRef) -> str:
    """A directory name for one function: ``pkg.mod.name``."""
    return f"{ref.path.removesuffix('.py').replace('/', '.')}.{ref.name}"
