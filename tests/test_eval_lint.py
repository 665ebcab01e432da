"""The lint evaluation on the synthetic package: the injection catalogue, the whole
comparison with a scripted model driving the real lint agent, and a suite that fails."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from remora.evaluation.context import EvalContext
from remora.evaluation.package import Project, resolve_package
from remora.evaluation.report import OperationReport, operation_notes, operation_rows
from remora.operations.lint import evaluation as lint
from remora.operations.lint._injections import (
    CATALOGUE,
    SELECT,
    Injection,
    Source,
    inject_keeping_tests,
    inject_module,
)
from remora.operations.lint.residue import MODEL_CODES
from remora.operations.lint.rules import DEFAULT_RULES
from remora.tools.capabilities.ruff import ruff_command
from tests.support.eval_context import EVAL_PACKAGE, RecordingProgress, eval_context
from tests.support.policy_lint import lint_policy

# Constructs the catalogue rewrites that the synthetic package's own modules lack.
SAMPLES = '''"""Samples of the constructs the lint catalogue rewrites."""

import json
import os


class Box:
    """A value holder."""

    def __init__(self, value):
        self.value = value


def describe(value, other=None):
    if other is not None:
        return "pair"
    if value is not other:
        return "different"
    if isinstance(value, list):
        return "list"
    return "same"


def tally(words):
    seen = {word.lower() for word in words}
    lengths = {word: len(word) for word in words}
    vowels = {"a", "e"}
    return list(seen), lengths, vowels


def safe_load(text):
    def parse(raw):
        return json.loads(raw)

    try:
        return parse(text)
    except ValueError:
        return None


def cwd():
    return os.getcwd()
'''
MODULES = ("shapes/geometry.py", "shapes/text.py", "shapes/samples.py")
TINY = '''"""One small function."""


def double(value):
    return value * 2
'''
TINY_TEST = """from shapes.tiny import double


def test_double_takes_one_argument():
    assert double.__defaults__ is None
"""


def ruff_items(root: Path, files: list[str]) -> list[dict[str, object]]:
    """ruff's own JSON on ``files``, run here rather than through the evaluation's helper."""
    argv = [*ruff_command(), "check", "--isolated", "--no-cache", "--output-format", "json"]
    done = subprocess.run(
        [*argv, SELECT, *files], cwd=root, capture_output=True, text=True, check=False
    )
    assert done.returncode in (0, 1), done.stderr
    items: list[dict[str, object]] = json.loads(done.stdout)
    return items


def imports(root: Path, module: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": ""},
        capture_output=True,
        text=True,
        check=False,
    )


def seeded(*labels: str) -> random.Random:
    return random.Random(":".join(["0", *labels]))


def package_copy(tmp_path: Path, extra: dict[str, str]) -> Path:
    """The synthetic package copied to ``tmp_path`` with ``extra`` files (path -> text)."""
    root = tmp_path / "package"
    shutil.copytree(EVAL_PACKAGE, root, ignore=shutil.ignore_patterns(".ruff_cache"))
    for relative, text in extra.items():
        (root / relative).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def samples_package(tmp_path_factory: pytest.TempPathFactory) -> Project:
    base = tmp_path_factory.mktemp("catalogue")
    root = package_copy(base, {"shapes/samples.py": SAMPLES})
    return resolve_package(str(root), base / "fetch").copy_to(base / "clean")


# --- the catalogue ---------------------------------------------------------------------------


def test_the_catalogue_is_fixed_and_uses_only_the_lint_agents_rules() -> None:
    keys = [injection.key for injection in CATALOGUE]
    assert len(keys) == len(set(keys)) == 29
    assert {injection.code for injection in CATALOGUE} <= set(DEFAULT_RULES)
    assert all(injection.description for injection in CATALOGUE)


def test_the_samples_are_clean_and_import(samples_package: Project) -> None:
    assert ruff_items(samples_package.root, list(MODULES)) == []
    assert imports(samples_package.root, "shapes.samples").returncode == 0


@pytest.mark.parametrize("injection", CATALOGUE, ids=[entry.key for entry in CATALOGUE])
def test_each_injection_is_reported_by_ruff_and_keeps_the_module_importable(
    injection: Injection, samples_package: Project, tmp_path: Path
) -> None:
    project = samples_package.copy_to(tmp_path / "project")
    relative = next(
        (
            module
            for module in MODULES
            if injection.find(Source((project.root / module).read_text(encoding="utf-8")))
        ),
        None,
    )
    assert relative is not None, f"no module has a site for {injection.key}"
    before = Counter(item["code"] for item in ruff_items(project.root, [relative]))

    result = inject_module(project, relative, 1, seeded, catalogue=[injection])

    assert [(item.key, item.code) for item in result.applied] == [
        (injection.key, injection.code)
    ], result.dropped
    after = ruff_items(project.root, [relative])
    assert Counter(str(item["code"]) for item in after)[injection.code] > before[injection.code]
    done = imports(project.root, project.module_name(relative))
    assert done.returncode == 0, done.stderr
    assert (project.root / relative).read_text(encoding="utf-8") != (
        samples_package.root / relative
    ).read_text(encoding="utf-8")


def test_injections_are_seeded_and_never_share_lines(
    samples_package: Project, tmp_path: Path
) -> None:
    projects = [samples_package.copy_to(tmp_path / name) for name in ("one", "two")]
    first, second = (inject_module(project, "shapes/samples.py", 6, seeded) for project in projects)
    assert first == second
    assert len(first.applied) == 6
    assert imports(projects[0].root, "shapes.samples").returncode == 0
    found = ruff_items(projects[0].root, ["shapes/samples.py"])
    assert Counter(str(item["code"]) for item in found) == Counter(
        item.code for item in first.applied
    )
    assert len({item.line for item in first.applied}) == 6


def test_injections_that_break_the_tests_are_dropped(tmp_path: Path) -> None:
    source = package_copy(tmp_path, {"shapes/tiny.py": TINY, "tests/test_tiny.py": TINY_TEST})
    ctx, _ = eval_context(tmp_path, "lint", lint_policy, source=source)
    assert ctx.suite.status == "passed"
    project = ctx.scratch("injected")

    result = inject_keeping_tests(ctx, project, "shapes/tiny.py", 0)

    assert result.retried_with_tests
    assert result.dropped["mutable-default"].startswith("the package's tests fail")
    assert result.applied and "mutable-default" not in {item.key for item in result.applied}
    assert project.run_tests(60).status == "passed"


def test_a_module_that_does_not_import_gets_no_injection(
    samples_package: Project, tmp_path: Path
) -> None:
    project = samples_package.copy_to(tmp_path / "project")
    path = project.root / "shapes/samples.py"
    path.write_text(SAMPLES + "\nraise RuntimeError('no import')\n", encoding="utf-8")

    result = inject_module(project, "shapes/samples.py", 4, seeded)

    assert result.applied == []
    assert result.skipped.startswith("does not import before injection")


# --- the whole evaluation --------------------------------------------------------------------


@pytest.fixture(scope="module")
def evaluated(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[EvalContext, RecordingProgress, OperationReport]:
    ctx, progress = eval_context(tmp_path_factory.mktemp("eval"), "lint", lint_policy, limit=2)
    return ctx, progress, lint.evaluate(ctx)


def scores(report: OperationReport) -> dict[str, dict[str, object]]:
    return {score.tool: dict(score.values) for score in report.scores}


def test_two_seeded_modules_are_injected(
    evaluated: tuple[EvalContext, RecordingProgress, OperationReport],
) -> None:
    ctx, _, report = evaluated
    assert report.error is None
    assert (report.operation, report.unit) == ("lint", "modules")
    assert report.selection == ["shapes/geometry.py", "shapes/text.py"]
    injections = report.details["injections"]
    assert [item["path"] for item in injections] == report.selection
    assert all(len(item["applied"]) == lint.PER_MODULE for item in injections)
    kept = sum(len(item["applied"]) for item in injections)
    injected = {values["injected"] for values in scores(report).values()}
    assert injected == {kept}
    assert sum(entry["injected"] for entry in report.details["by_code"].values()) == kept
    assert report.details["preexisting_diagnostics"] == 0
    for relative in report.selection:  # the pristine package is never changed
        original = (ctx.original.root / relative).read_bytes()
        assert original == (EVAL_PACKAGE / relative).read_bytes()


def test_ruff_rows_match_what_ruff_reports_on_their_copies(
    evaluated: tuple[EvalContext, RecordingProgress, OperationReport],
) -> None:
    ctx, _, report = evaluated
    values = scores(report)
    for name, directory in (
        ("ruff --fix", "ruff-fix"),
        ("ruff --fix --unsafe-fixes", "ruff-fix-unsafe"),
    ):
        row = values[name]
        left = ruff_items(ctx.work / directory, report.selection)
        assert row["fixed"] == row["injected"] - len(left), (name, left)
        assert row["fix_rate"] == pytest.approx(row["fixed"] / row["injected"])
        assert row["new"] == 0
        by_code = report.details["by_code"]
        assert sum(entry["fixed"][name] for entry in by_code.values()) == row["fixed"]
    assert values["ruff --fix"]["fixed"] < values["ruff --fix --unsafe-fixes"]["fixed"]


def test_remora_host_only_fixes_what_the_host_can_fix_without_the_model(
    evaluated: tuple[EvalContext, RecordingProgress, OperationReport],
) -> None:
    ctx, _, report = evaluated
    row = scores(report)[lint.HOST_ONLY]
    left = ruff_items(ctx.work / "remora-host-only", report.selection)
    assert 0 < row["fixed"] == row["injected"] - len(left)
    assert row["fixed"] == report.details["host_fixable"]
    assert row["new"] == 0
    figures = report.remora[0]
    assert figures.variant == lint.HOST_ONLY and figures.error is None
    assert figures.jobs == 2 and figures.statuses == {"success": 2}
    assert figures.mean_turns == 0 and figures.call_validity is None  # no model call
    assert figures.model_s == 0 and figures.model_share == 0.0
    assert figures.jobs_per_min is not None
    jobs = report.details["remora_jobs"][lint.HOST_ONLY]
    assert {job["file"] for job in jobs} == set(report.selection)
    assert all(job["details"]["host_only"] for job in jobs)


def test_the_model_row_adds_exactly_the_rewrites_it_kept(
    evaluated: tuple[EvalContext, RecordingProgress, OperationReport],
) -> None:
    ctx, _, report = evaluated
    values = scores(report)
    row = values[lint.MODEL]
    left = ruff_items(ctx.work / "remora-model", report.selection)
    assert row["fixed"] == row["injected"] - len(left)
    residue = report.details["model_residue"]
    assert row["fixed"] == values[lint.HOST_ONLY]["fixed"] + residue["kept"]
    assert row["new"] == 0
    assert residue["asked"] == sum(entry["asked"] for entry in residue["by_code"].values())
    assert set(residue["by_code"]) <= set(MODEL_CODES)
    notes = operation_notes(report)
    assert any(note.startswith(f"{lint.MODEL}: the model was asked") for note in notes)


def test_no_tool_adds_noqa_breaks_parsing_or_the_tests(
    evaluated: tuple[EvalContext, RecordingProgress, OperationReport],
) -> None:
    _, _, report = evaluated
    for tool, values in scores(report).items():
        assert values["noqa_added"] == 0, tool
        assert values["parses"] == 2, tool
        assert values["tests_pass"] is True, tool
    assert all(score.error is None for score in report.scores)
    _, rows = operation_rows(report)
    assert [row[0] for row in rows] == [
        "ruff --fix",
        "ruff --fix --unsafe-fixes",
        lint.HOST_ONLY,
        lint.MODEL,
    ]
    assert all(row[-2] == "yes" for row in rows)
    assert any("Remora may fix at best" in note for note in operation_notes(report))


def test_the_progress_bar_moves_to_its_end(
    evaluated: tuple[EvalContext, RecordingProgress, OperationReport],
) -> None:
    _, progress, _ = evaluated
    totals = [total for _, total, _, _ in progress.updates if total is not None]
    descriptions = [text for _, _, _, text in progress.updates if text]
    assert totals and progress.advanced("lint") == totals[-1]
    assert "injecting shapes/geometry.py" in descriptions
    assert "running ruff --fix" in descriptions
    assert any(text.startswith(f"{lint.HOST_ONLY}: shapes/") for text in descriptions)
    assert f"measuring {lint.MODEL}" in descriptions


# --- a package whose own tests do not pass ---------------------------------------------------


@pytest.mark.parametrize("suite", ["failed", "cannot_run"])
def test_a_suite_that_does_not_pass_leaves_the_tests_column_empty(
    suite: str, tmp_path: Path
) -> None:
    broken = {"tests/test_broken.py": "def test_broken():\n    assert False\n"}
    source = package_copy(tmp_path, broken if suite == "failed" else {})
    if suite == "cannot_run":
        shutil.rmtree(source / "tests")
    ctx, _ = eval_context(tmp_path, "lint", lint_policy, limit=1, source=source)
    assert ctx.suite.status == suite

    report = lint.evaluate(ctx, per_module=2)

    assert report.error is None
    values = scores(report)
    assert all(row["tests_pass"] is None for row in values.values())
    assert all(row["injected"] == 2 and row["parses"] == 1 for row in values.values())
    _, rows = operation_rows(report)
    assert all(row[-2] == "-" for row in rows)
    assert any("tests pass: not measured" in note for note in report.notes)
    assert not any(item["retried_with_tests"] for item in report.details["injections"])
