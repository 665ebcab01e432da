"""One generated test file run here, as its user would run it, judged on one function.

Every tool's tests (Remora's kept tests, the file ``hypothesis write`` printed) are measured
the same way, so their figures compare: the file alone, run twice with pytest
(``PYTHONHASHSEED`` 11, then 12; the first run under ``coverage run --branch`` with an empty
coverage configuration, the project's own left out), its tests counted from pytest's junit
report, and the coverage cut down to the one function the file tests
(:mod:`remora.operations.characterize._coverage`: its body lines and the branches starting
there). The file's coverage counts only when it imported, no test failed in either run and
at least one passed; otherwise it counts as 0% and ``zero_reason`` says why, while the
``measured_*`` rates keep what the run did cover.

:func:`type_only_tests` reads a file's tests without running them: a test whose every
``assert`` only checks a type passes for any value of that type, so it pins nothing.
"""

from __future__ import annotations

import ast
import json
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from remora.evaluation.commands import CommandResult, run_command
from remora.evaluation.functions import FunctionRef
from remora.evaluation.package import Project
from remora.operations.characterize._coverage import file_entry, function_coverage, function_span
from remora.operations.characterize._mutation import (
    PLUGIN,
    MutationReport,
    measure_mutants,
    pytest_targets,
)

RERUN_SEEDS = ("11", "12")
MUTANT_TEST_TIMEOUT = 10.0
"""A test of a mutant is stopped after this long (property-based tests run many examples)."""
NOT_IMPORTABLE = "not importable"
TESTS_FAILED = "tests failed"
_PYTEST_OPTIONS = ("-q", "-p", "no:cacheprovider")
_PYTEST = ("-m", "pytest", *_PYTEST_OPTIONS)
_CANNOT_RUN = {3: "pytest internal error", 4: "pytest usage error"}


class FileRun(BaseModel):
    """A test file's two runs: test counts (``passed``/``failed``/``skipped`` over both
    runs, ``tests`` collected in the first), and the function's coverage from the first."""

    test_file: str
    tests: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    runs: int = 0
    importable: bool = True
    lines_total: int | None = None
    branches_total: int | None = None
    measured_line_rate: float | None = None
    measured_branch_rate: float | None = None
    line_rate: float = 0.0
    branch_rate: float = 0.0
    zero_reason: str | None = None
    error: str | None = None
    wall_s: float = 0.0

    @property
    def counted(self) -> bool:
        """Whether the file's coverage counts (it imported and every test passed)."""
        return self.zero_reason is None


@dataclass(frozen=True)
class _Counts:
    """One pytest run's junit counts; ``collection`` when a module failed to import."""

    tests: int
    failed: int
    skipped: int
    collection: bool

    @property
    def passed(self) -> int:
        return self.tests - self.failed - self.skipped


def run_test_file(
    project: Project,
    test_file: Path,
    function: FunctionRef,
    scratch: Path,
    *,
    cwd: Path,
    timeout: float,
    pytest_args: Sequence[str] = (),
    tests: Sequence[str] = (),
) -> FileRun:
    """Run ``test_file`` (its ``tests`` only, when named) twice in ``cwd`` on ``project`` and
    measure ``function``'s coverage; junit reports and coverage data go to ``scratch``.
    Never raises."""
    started = time.perf_counter()
    run = FileRun(test_file=str(test_file))
    source = (project.root / function.path).resolve()
    try:
        span = function_span(source.read_text(encoding="utf-8"), function.name)
    except (OSError, ValueError) as exc:
        return _finish(run, started, "function not found", str(exc))
    scratch.mkdir(parents=True, exist_ok=True)
    rcfile, data = scratch / "coveragerc", scratch / ".coverage"
    rcfile.write_text("[run]\n", encoding="utf-8")
    coverage = [sys.executable, "-m", "coverage"]
    settings = [f"--rcfile={rcfile}", f"--data-file={data}"]
    deadline = started + timeout
    for index, seed in enumerate(RERUN_SEEDS):
        junit = scratch / f"junit-{seed}.xml"
        covered = [*coverage, "run", "--branch", *settings, f"--include={source}"]
        argv = [*(covered if index == 0 else [sys.executable]), *_PYTEST, *pytest_args]
        env = {
            "PYTHONHASHSEED": seed,
            "HYPOTHESIS_STORAGE_DIRECTORY": str(scratch / ".hypothesis"),
            "COLUMNS": "250",
        }
        result = project.run(
            [*argv, f"--junitxml={junit}", *pytest_targets(test_file, tests)],
            _left(deadline),
            cwd=cwd,
            within=[scratch, test_file.parent],
            env=env,
        )
        counts = _junit_counts(junit)
        run.runs += 1
        if result.timed_out:
            return _finish(run, started, "timed out", result.tail(1))
        if counts.collection or result.returncode == 2:
            run.importable = False
            return _finish(run, started, NOT_IMPORTABLE, _pytest_error(result))
        if result.returncode in _CANNOT_RUN:
            return _finish(run, started, _CANNOT_RUN[result.returncode], result.tail(1))
        if index == 0:
            run.tests = counts.tests
        run.passed += counts.passed
        run.failed += counts.failed
        run.skipped += counts.skipped
        if counts.failed and run.error is None:
            run.error = _pytest_error(result)
    report = scratch / "coverage.json"
    converted = run_command([*coverage, "json", *settings, "-o", str(report)], cwd, _left(deadline))
    try:
        coverage_json = json.loads(report.read_text(encoding="utf-8")) if converted.ok else None
    except (OSError, ValueError):
        coverage_json = None
    if coverage_json is not None:
        measured = function_coverage(file_entry(coverage_json, function.path), span)
        run.lines_total, run.branches_total = measured.lines_total, measured.branches_total
        run.measured_line_rate, run.measured_branch_rate = measured.line_rate, measured.branch_rate
    if run.failed:
        return _finish(run, started, TESTS_FAILED, run.error)
    if not run.passed:
        return _finish(run, started, "no test passed", None)
    if coverage_json is None:
        return _finish(run, started, "coverage not measured", converted.tail(1))
    run.line_rate = run.measured_line_rate or 0.0
    run.branch_rate = run.measured_branch_rate or 0.0
    return _finish(run, started, None, None)


def _finish(run: FileRun, started: float, reason: str | None, error: str | None) -> FileRun:
    run.zero_reason = reason
    run.error = error
    run.wall_s = round(time.perf_counter() - started, 2)
    return run


def _left(deadline: float) -> float:
    return max(1.0, deadline - time.perf_counter())


def _junit_counts(path: Path) -> _Counts:
    """Test counts of a pytest junit report (none when it is missing or unreadable)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return _Counts(0, 0, 0, collection=False)
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    attrs = suite.attrib if suite is not None else {}
    collection = any(e.get("message") == "collection failure" for e in root.iter("error"))
    return _Counts(
        tests=int(attrs.get("tests", 0)),
        failed=int(attrs.get("failures", 0)) + int(attrs.get("errors", 0)),
        skipped=int(attrs.get("skipped", 0)),
        collection=collection,
    )


def _pytest_error(result: CommandResult) -> str:
    """The first FAILED/ERROR line of pytest's short summary, else the output's last line."""
    lines = [line.strip() for line in f"{result.stdout}\n{result.stderr}".splitlines()]
    found = next((line for line in lines if line.startswith(("FAILED ", "ERROR "))), None)
    return (found or result.tail(1))[:300]


_BOOT = (
    "import sys; sys.path.append(sys.argv.pop(1)); import pytest; raise SystemExit(pytest.main())"
)
"""Runs pytest with the mutation plugin's directory importable (its path is argv[1])."""


def mutation_of_file(
    project: Project,
    test_file: Path,
    function: FunctionRef,
    scratch: Path,
    *,
    cwd: Path,
    timeout: float,
    pytest_args: Sequence[str] = (),
    tests: Sequence[str] = (),
) -> MutationReport:
    """The mutation score of ``function`` under ``test_file`` (its ``tests`` only, when
    named), run as :func:`run_test_file` runs it (``cwd``, ``pytest_args``); reports in
    ``scratch``. Never raises."""
    source_path = project.root / function.path
    try:
        source = source_path.read_text(encoding="utf-8")
    except OSError as exc:
        return MutationReport(error=str(exc))
    scratch.mkdir(parents=True, exist_ok=True)
    deadline = time.perf_counter() + timeout

    def launch(request: Path, plugin: Path) -> str:
        argv = [sys.executable, "-c", _BOOT, str(plugin), *_PYTEST_OPTIONS, "-p", PLUGIN]
        result = project.run(
            [*argv, *pytest_args, *pytest_targets(test_file, tests)],
            _left(deadline),
            cwd=cwd,
            within=[scratch, test_file.parent],
            env={
                "REMORA_MUTANTS": str(request),
                "PYTHONHASHSEED": RERUN_SEEDS[0],
                "HYPOTHESIS_STORAGE_DIRECTORY": str(scratch / ".hypothesis"),
            },
            what=f"the mutants of {function.name}",
        )
        return result.tail(1)

    return measure_mutants(
        source,
        function.name,
        module_file=source_path.resolve(),
        workdir=scratch,
        launch=launch,
        test_timeout=MUTANT_TEST_TIMEOUT,
    )


@dataclass(frozen=True)
class TypeOnly:
    """A test file's tests (pytest ids), those whose every assert only checks a type, and
    those that expect the call to raise (``pytest.raises``)."""

    tests: tuple[str, ...] = ()
    type_only: tuple[str, ...] = ()
    raising: tuple[str, ...] = ()


def type_only_tests(source: str, names: Collection[str] = ()) -> TypeOnly:
    """The test functions of ``source`` (``names`` only, as pytest ids, when given) and
    those with at least one assert, every one of which checks only a type
    (``isinstance``, ``type(x) is T``, ``type(x).__name__ == 'T'``, ...). Unparsable
    source has no tests."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError):
        return TypeOnly()
    wanted = set(names)
    tests: list[str] = []
    type_only: list[str] = []
    raising: list[str] = []
    for test_id, function in _test_functions(module):
        if wanted and test_id not in wanted:
            continue
        tests.append(test_id)
        asserts = [node for node in ast.walk(function) if isinstance(node, ast.Assert)]
        if asserts and all(_checks_type_only(node.test) for node in asserts):
            type_only.append(test_id)
        if any(_expects_raise(node) for node in ast.walk(function)):
            raising.append(test_id)
    return TypeOnly(tuple(tests), tuple(type_only), tuple(raising))


def _expects_raise(node: ast.AST) -> bool:
    """``pytest.raises(...)`` (or a bare imported ``raises(...)``)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "raises") or (
        isinstance(func, ast.Name) and func.id == "raises"
    )


_Function = ast.FunctionDef | ast.AsyncFunctionDef


def _test_functions(module: ast.Module) -> list[tuple[str, _Function]]:
    """pytest's test functions: ``test*`` at the top, and in top-level ``Test*`` classes."""
    found: list[tuple[str, _Function]] = []
    for node in module.body:
        if isinstance(node, _Function) and node.name.startswith("test"):
            found.append((node.name, node))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            found += [
                (f"{node.name}::{item.name}", item)
                for item in node.body
                if isinstance(item, _Function) and item.name.startswith("test")
            ]
    return found


_TYPE_CALLS = frozenset({"isinstance", "issubclass"})
_TYPE_NAMES = frozenset({"__name__", "__qualname__", "__module__"})


def _checks_type_only(test: ast.expr) -> bool:
    """Whether an assert's condition only checks a type: ``isinstance``/``issubclass``,
    a comparison with ``type(x)`` or ``x.__class__`` (or its name) on one side, and
    ``not``/``and``/``or`` of those."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _checks_type_only(test.operand)
    if isinstance(test, ast.BoolOp):
        return all(_checks_type_only(value) for value in test.values)
    if isinstance(test, ast.Call):
        return isinstance(test.func, ast.Name) and test.func.id in _TYPE_CALLS
    if isinstance(test, ast.Compare):
        return any(_is_type_of(operand) for operand in [test.left, *test.comparators])
    return False


def _is_type_of(node: ast.expr) -> bool:
    """``type(x)``, ``x.__class__``, or their ``__name__``/``__qualname__``/``__module__``."""
    if isinstance(node, ast.Attribute) and node.attr in _TYPE_NAMES:
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr == "__class__"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and len(node.args) == 1
    )
