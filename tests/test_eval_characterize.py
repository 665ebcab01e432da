"""The test and sample_data evaluations end to end on the synthetic package: the real test and
sample_data agents (scripted model), real ``hypothesis write`` and ``st.builds`` baselines,
every test file really run twice here under coverage.

Seed 12 with limit 3 picks ``area`` (its ghostwritten test passes), ``scale`` (ghostwriter
leaves its parameters to ``st.nothing()``: the test fails) and ``at_most`` (its default
``math.inf`` is written as ``st.just(inf)``, a NameError: the file does not import).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from remora.evaluation.functions import FunctionRef
from remora.evaluation.package import Project, resolve_package
from remora.evaluation.report import EvalReport, OperationReport, Score, to_markdown
from remora.evaluation.session import RemoraRun, RemoraSession
from remora.operations.characterize._hypothesis import (
    HYPOTHESIS_MISSING,
    from_type_fixtures,
    ghostwriter_coverage,
)
from remora.operations.characterize._testrun import TESTS_FAILED, run_test_file
from remora.operations.characterize.evaluation import (
    BASE_MODEL,
    BUILDS,
    GHOSTWRITER,
    HOST_ONLY,
    HOST_ONLY_UNTESTED,
    REMORA,
    UNTESTED,
    characterizable,
    evaluate_sample_data,
    evaluate_test,
    variants,
)
from tests.stores import write_tree
from tests.support.eval_context import EVAL_PACKAGE, RecordingProgress, eval_context
from tests.support.policy_characterize import sample_data_policy
from tests.support.policy_characterize import test_policy as characterization_policy

SEED = 12
LIMIT = 3
SELECTION = [
    "shapes/geometry.py::area",
    "shapes/geometry.py::scale",
    "shapes/geometry.py::at_most",
]

Evaluated = tuple[OperationReport, RecordingProgress]


def _score(report: OperationReport, tool: str) -> Score:
    return next(score for score in report.scores if score.tool == tool)


def _detail(report: OperationReport, target: str, tool: str) -> dict[str, Any]:
    detail: dict[str, Any] = report.details["functions"][target][tool]
    return detail


def _project(source: Path, dest: Path) -> Project:
    return resolve_package(str(source), dest / "fetch").copy_to(dest / "project")


Copies = dict[str, list[str]]


@pytest.fixture(scope="module")
def tested_copies(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[OperationReport, RecordingProgress, Copies]:
    """The test evaluation, and the Python files of each Remora row's copy as Remora
    started on it, by the copy's directory name."""
    ctx, progress = eval_context(
        tmp_path_factory.mktemp("test"), "test", characterization_policy, limit=LIMIT, seed=SEED
    )
    copies: Copies = {}
    run = RemoraSession.run

    def recording(self: RemoraSession, project: Project, *args: Any, **kwargs: Any) -> RemoraRun:
        copies[project.root.name] = sorted(map(project.relative, project.root.rglob("*.py")))
        return run(self, project, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RemoraSession, "run", recording)
        return evaluate_test(ctx), progress, copies


@pytest.fixture(scope="module")
def tested(tested_copies: tuple[OperationReport, RecordingProgress, Copies]) -> Evaluated:
    report, progress, _ = tested_copies
    return report, progress


@pytest.fixture(scope="module")
def sampled(tmp_path_factory: pytest.TempPathFactory) -> Evaluated:
    ctx, progress = eval_context(
        tmp_path_factory.mktemp("sample"),
        "sample_data",
        sample_data_policy,
        limit=LIMIT,
        seed=SEED,
        rows=frozenset({REMORA, HOST_ONLY}),
    )
    return evaluate_sample_data(ctx), progress


def test_both_operations_measure_one_seeded_selection(
    tested: Evaluated, sampled: Evaluated
) -> None:
    for (report, progress), operation, runs in (
        (tested, "test", 4),  # every Remora row but the base model's (no test adapter)
        (sampled, "sample_data", 2),  # the rows it was given
    ):
        assert report.error is None and report.operation == operation
        assert report.unit == "functions" and report.selection == SELECTION
        assert list(report.details["functions"]) == SELECTION
        assert "3 of 13 candidate functions" in report.notes[0] and "seed 12" in report.notes[0]
        assert progress.advanced(operation) == 3 + 3 * runs  # 3 baseline functions, 3 jobs a run
        totals = [total for _, total, _, _ in progress.updates if total is not None]
        assert totals[-1] == 3 + 3 * runs


def test_the_base_model_row_runs_only_when_it_differs_from_remora_or_is_named(
    tmp_path: Path,
) -> None:
    """Without an adapter the base-model row would repeat remora's run; with one (here a
    candidate named in the config), or when the rows are named as the gate names them, it
    runs."""
    ctx, _ = eval_context(tmp_path, "test", characterization_policy, limit=1)
    sets = variants("test")[0].sets
    reason = ctx.base_model_repeats("test", sets)
    assert reason is not None and "test agent runs without an adapter" in reason
    adapter = tmp_path / "candidate.gguf"
    session = replace(ctx.session, assignments=(f"model.adapters.test={adapter}",))
    assert session.adapter(ctx.original, "test", sets) == adapter
    assert replace(ctx, session=session).base_model_repeats("test", sets) is None
    off = (*sets, "model.use_adapters=false")
    assert replace(ctx, session=session).base_model_repeats("test", off) is not None
    named = replace(ctx, rows=frozenset({REMORA, BASE_MODEL}))
    assert named.base_model_repeats("test", sets) is None
    assert ctx.session.adapter(ctx.original, "docstring") is not None  # it ships one


def test_an_evaluation_without_baselines_measures_only_the_rows_it_names(
    tmp_path: Path,
) -> None:
    """The gate's candidate evaluations: no ``hypothesis write`` row, one Remora row."""
    ctx, progress = eval_context(
        tmp_path,
        "test",
        characterization_policy,
        limit=1,
        seed=SEED,
        rows=frozenset({HOST_ONLY}),
        baselines=False,
    )
    report = evaluate_test(ctx)
    assert [score.tool for score in report.scores] == [HOST_ONLY]
    assert [item.variant for item in report.remora] == [HOST_ONLY]
    assert progress.advanced("test") == 1  # one job, no baseline function


def test_candidates_are_public_synchronous_functions_with_parameters(tmp_path: Path) -> None:
    source = write_tree(
        tmp_path / "src",
        {
            "pkg/__init__.py": "",
            "pkg/core.py": (
                "def used(x):\n    return x\n\n\n"
                "def constant():\n    return 1\n\n\n"
                "async def fetch(url):\n    return url\n\n\n"
                "def _private(x):\n    return x\n\n\n"
                "def star(*args, **kwargs):\n    return args\n"
            ),
            "pkg/_hidden.py": "def shown(x):\n    return x\n",
            "pkg/tests/test_core.py": "def test_used(x=1):\n    assert x\n",
        },
    )
    project = _project(source, tmp_path)
    assert [ref.target for ref in characterizable(project)] == [
        "pkg/core.py::used",
        "pkg/core.py::star",
    ]


def test_remora_keeps_tests_that_pass_here_and_cover_the_functions(tested: Evaluated) -> None:
    report, _ = tested
    remora = _score(report, REMORA)
    assert remora.kind == "remora" and remora.error is None
    values = remora.values
    assert values["functions_tested"] == 3
    assert isinstance(values["tests"], int) and values["tests"] >= 3  # those that add something
    assert values["flaky_dropped"] == 0 and values["pass_rate"] == 1.0
    # the project's own ``area(2, 3)`` is not repeated (issue 31), but the host varies it
    # one parameter at a time, so a call of its own takes the given-height branch too; the
    # file alone is measured here.
    assert values["line_coverage"] == 1.0
    assert values["branch_coverage"] == 1.0
    area = _detail(report, "shapes/geometry.py::area", REMORA)
    assert area["run"]["branch_rate"] == 1.0
    assert "area(2, 3)" not in Path(area["run"]["test_file"]).read_text(encoding="utf-8")
    assert values["failing_files"] == 0 and values["not_importable"] == 0
    scale = _detail(report, "shapes/geometry.py::scale", REMORA)
    assert scale["status"] == "success" and scale["test_file"] == "tests/test_geometry.py"
    assert scale["run"]["runs"] == 2 and scale["run"]["failed"] == 0
    assert scale["run"]["passed"] == 2 * len(scale["tests"])
    assert scale["run"]["line_rate"] == scale["agent_line_rate"] == 1.0
    assert scale["mutation"]["measured"] > 0 and scale["mutation"]["error"] is None
    assert values["mutation_score"] == pytest.approx(
        sum(_detail(report, t, REMORA)["mutation"]["score"] for t in report.selection) / 3
    )
    figures = {item.variant: item for item in report.remora}
    # without an adapter the base model is remora
    assert set(figures) == {REMORA, HOST_ONLY, UNTESTED, HOST_ONLY_UNTESTED}
    assert any(note.startswith(f"{BASE_MODEL} not run") for note in report.notes)
    assert figures[REMORA].jobs == 3 and figures[REMORA].statuses == {"success": 3}
    assert figures[REMORA].call_validity == 1.0
    assert figures[REMORA].mean_turns is not None and figures[REMORA].mean_turns <= 1
    assert figures[HOST_ONLY].mean_turns == 0


def test_host_inputs_alone_cover_less_than_with_the_models_proposals(tested: Evaluated) -> None:
    report, _ = tested
    remora, host_only = _score(report, REMORA).values, _score(report, HOST_ONLY).values
    assert host_only["pass_rate"] == 1.0 and host_only["functions_tested"] == 3
    assert isinstance(host_only["tests"], int) and isinstance(remora["tests"], int)
    assert 0 < host_only["tests"] < remora["tests"]
    assert isinstance(host_only["branch_coverage"], float)
    assert 0 < host_only["branch_coverage"] < 1.0
    scale = _detail(report, "shapes/geometry.py::scale", HOST_ONLY)
    assert "'yd'" not in Path(scale["run"]["test_file"]).read_text(encoding="utf-8")


def test_hypothesis_files_that_fail_or_do_not_import_count_as_zero(tested: Evaluated) -> None:
    report, _ = tested
    baseline = _score(report, GHOSTWRITER)
    assert baseline.kind == "baseline" and baseline.error is None
    values = baseline.values
    assert values["functions_tested"] == 1 and values["flaky_dropped"] is None
    assert values["failing_files"] == 1 and values["not_importable"] == 1
    assert values["tests"] == 2 and values["pass_rate"] == 0.5  # area passes twice, scale fails
    assert values["line_coverage"] == pytest.approx(1 / 3)
    assert values["branch_coverage"] == pytest.approx(0.5 / 3)

    area = _detail(report, "shapes/geometry.py::area", GHOSTWRITER)
    # only area's file counts; the failing and the unimportable ones score 0
    assert area["mutation"]["measured"] > 0
    assert values["mutation_score"] == pytest.approx(area["mutation"]["score"] / 3)
    assert area["zero_reason"] is None and (area["line_rate"], area["branch_rate"]) == (1.0, 0.5)
    scale = _detail(report, "shapes/geometry.py::scale", GHOSTWRITER)
    assert scale["zero_reason"] == TESTS_FAILED and "Unsatisfiable" in scale["error"]
    at_most = _detail(report, "shapes/geometry.py::at_most", GHOSTWRITER)
    assert at_most["written"] and not at_most["run"]["importable"]
    assert at_most["zero_reason"] == "not importable" and at_most["line_rate"] == 0.0
    assert "NameError: name 'inf' is not defined" in at_most["error"]
    assert any("at_most counted as 0% (not importable" in note for note in report.notes)
    written = Path(at_most["run"]["test_file"]).read_text(encoding="utf-8")
    assert "st.just(inf)" in written


def test_remora_fixtures_call_without_argument_errors_where_st_builds_cannot(
    sampled: Evaluated,
) -> None:
    report, _ = sampled
    builds = _score(report, BUILDS)
    assert builds.kind == "baseline" and builds.error is None
    assert builds.values == {"with_fixture": 0.0, "fixtures": 0, "returning": None}
    area = _detail(report, "shapes/geometry.py::area", BUILDS)
    assert area["unfilled"] == ["width"] and area["raised"] == {"TypeError": area["draws"]}

    remora, host_only = _score(report, REMORA), _score(report, HOST_ONLY)
    assert remora.values["with_fixture"] == host_only.values["with_fixture"] == 1.0
    assert isinstance(remora.values["fixtures"], int)
    assert isinstance(host_only.values["fixtures"], int)
    assert 0 < host_only.values["fixtures"] < remora.values["fixtures"]
    scale = _detail(report, "shapes/geometry.py::scale", REMORA)
    assert scale["fixture_file"] == "fixtures/shapes/geometry/scale.json" and scale["raising"] == 1
    assert [(item.variant, item.jobs) for item in report.remora] == [(REMORA, 3), (HOST_ONLY, 3)]


def test_st_builds_draws_usable_arguments_from_annotations(tmp_path: Path) -> None:
    source = write_tree(
        tmp_path / "src",
        {
            "typed/__init__.py": (
                "def label(name: str, count: int) -> str:\n    return f'{name}: {count}'\n\n\n"
                "def head(items):\n    return items[0]\n"
            )
        },
    )
    project = _project(source, tmp_path)
    typed = from_type_fixtures(project, FunctionRef("typed/__init__.py", "label"), tmp_path / "a")
    assert typed.ok and typed.error is None and typed.unfilled == []
    assert typed.draws > 1 and typed.calls_ok == typed.returned == typed.draws
    untyped = from_type_fixtures(project, FunctionRef("typed/__init__.py", "head"), tmp_path / "b")
    assert not untyped.ok and untyped.unfilled == ["items"]


def test_a_test_depending_on_the_hash_seed_fails_one_of_the_two_runs(tmp_path: Path) -> None:
    project = _project(EVAL_PACKAGE, tmp_path)
    test_file = project.root / "tests" / "test_seeded.py"
    test_file.write_text(
        "import os\n\nfrom shapes.text import slug\n\n\n"
        "def test_stable():\n    assert slug('A b') == 'a-b'\n\n\n"
        "def test_seeded():\n    assert os.environ['PYTHONHASHSEED'] == '11'\n",
        encoding="utf-8",
    )
    run = run_test_file(
        project,
        test_file,
        FunctionRef("shapes/text.py", "slug"),
        tmp_path / "runs",
        cwd=project.root,
        timeout=120,
    )
    assert (run.runs, run.tests, run.passed, run.failed) == (2, 2, 3, 1)
    assert run.zero_reason == TESTS_FAILED and "test_seeded" in (run.error or "")
    assert run.measured_line_rate == 1.0 and run.line_rate == 0.0


def test_without_hypothesis_the_baselines_say_so_and_remora_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # what find_spec sees when it is absent
    ref = FunctionRef("shapes/geometry.py", "area")
    project = _project(EVAL_PACKAGE, tmp_path / "direct")
    ghost = ghostwriter_coverage(project, ref, tmp_path / "ghost", 60)
    assert ghost.error == HYPOTHESIS_MISSING and not ghost.written and ghost.line_rate == 0.0
    assert from_type_fixtures(project, ref, tmp_path / "draw").error == HYPOTHESIS_MISSING

    ctx, _ = eval_context(tmp_path / "eval", "sample_data", sample_data_policy, limit=1)
    report = evaluate_sample_data(ctx)
    builds = _score(report, BUILDS)
    assert builds.error == HYPOTHESIS_MISSING and builds.values == {}
    [target] = report.selection
    assert _detail(report, target, BUILDS)["error"] == HYPOTHESIS_MISSING
    assert _score(report, REMORA).values["with_fixture"] == 1.0


def test_the_untested_rows_run_remora_on_copies_without_the_packages_tests(
    tested_copies: tuple[OperationReport, RecordingProgress, Copies],
) -> None:
    report, _, copies = tested_copies
    for row in (REMORA, HOST_ONLY):
        assert "tests/test_shapes.py" in copies[_directory(row)]
    for row in (UNTESTED, HOST_ONLY_UNTESTED):
        files = copies[_directory(row)]
        assert "shapes/geometry.py" in files
        assert not [path for path in files if path.startswith("tests/") or "test_" in path]
    assert report.details["removed_tests"] == {UNTESTED: ["tests/"], HOST_ONLY_UNTESTED: ["tests/"]}
    assert f"{HOST_ONLY_UNTESTED}: the package's own tests removed from its copy" in (
        "\n".join(report.notes)
    )


def test_every_row_reports_coverage_mutants_and_type_only_tests(tested: Evaluated) -> None:
    report, _ = tested
    rows = [score.tool for score in report.scores]
    assert rows == [GHOSTWRITER, REMORA, HOST_ONLY, UNTESTED, HOST_ONLY_UNTESTED]
    for score in report.scores:
        values = score.values
        assert isinstance(values["branch_coverage"], float)
        assert isinstance(values["mutation_score"], float)
        assert isinstance(values["type_only"], int)
    for row in (REMORA, HOST_ONLY, UNTESTED, HOST_ONLY_UNTESTED):
        assert _score(report, row).values["functions_tested"] == 3
        assert any(
            note.startswith(f"{row}: ") and "only check a type" in note for note in report.notes
        )
        assert isinstance(_detail(report, "shapes/geometry.py::area", row)["type_only"], list)
    whole = EvalReport(
        remora_version="0",
        spec="shapes",
        package="shapes",
        command="remora eval shapes --ops test",
        seed=SEED,
        limit=LIMIT,
        operations=["test"],
        model="scripted",
        started="now",
        reports=[report],
    )
    markdown = to_markdown(whole)
    assert f"| {HOST_ONLY_UNTESTED} |" in markdown and "| type-only tests |" in markdown


def _directory(row: str) -> str:
    return next(variant.directory for variant in variants("test") if variant.name == row)
