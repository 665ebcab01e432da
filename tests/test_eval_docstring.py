"""The docstring evaluation end to end on the synthetic package: real stripping, the real
baseline builder, the real docstring agent (scripted model), real pydoclint and ruff."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from remora.evaluation.functions import FunctionRef
from remora.evaluation.report import OperationReport, Score
from remora.model.base import ModelRequest, ToolCall
from remora.operations.docstring._format import name_summary
from remora.operations.docstring.evaluation import (
    BASE_MODEL,
    BASELINE,
    CANDIDATES,
    FIXED_STEPS,
    HOST_ONLY,
    REFERENCE,
    REMORA,
    Chosen,
    FunctionResult,
    Measurement,
    add_meaning,
    documented_params,
    evaluate,
    public_docstrings,
)
from tests.stores import write_tree
from tests.support.eval_context import RecordingProgress, eval_context, scripted_session
from tests.support.policy_docstring import SUMMARIES, docstring_policy, submit_only_policy

LIMIT = 3


def _score(report: OperationReport, tool: str) -> Score:
    return next(score for score in report.scores if score.tool == tool)


def _functions(report: OperationReport) -> list[dict[str, Any]]:
    functions: list[dict[str, Any]] = report.details["functions"]
    return functions


def adapted_policy(request: ModelRequest) -> ToolCall:
    """The authors' words when the request carries the agent's adapter; without it (the
    base model) every job is submitted with nothing written."""
    return docstring_policy(request) if request.adapter else submit_only_policy(request)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[OperationReport, RecordingProgress]:
    """One evaluation whose model writes the package's own summary lines."""
    ctx, progress = eval_context(
        tmp_path_factory.mktemp("written"), "docstring", adapted_policy, limit=LIMIT
    )
    return evaluate(ctx), progress


@pytest.fixture(scope="module")
def silent(tmp_path_factory: pytest.TempPathFactory) -> OperationReport:
    """One evaluation whose model submits every job without writing anything."""
    ctx, _ = eval_context(
        tmp_path_factory.mktemp("silent"), "docstring", submit_only_policy, limit=LIMIT
    )
    return evaluate(ctx)


def test_the_selection_is_seeded_public_functions(
    written: tuple[OperationReport, RecordingProgress],
) -> None:
    report, _ = written
    assert report.error is None
    assert report.operation == "docstring" and report.unit == "functions"
    assert len(report.selection) == LIMIT
    assert all(target.startswith("shapes/") and "::" in target for target in report.selection)
    names = [target.split("::")[1] for target in report.selection]
    assert all(not name.startswith("_") and name in SUMMARIES for name in names)
    assert report.details["candidates"] >= 12
    assert [item["target"] for item in _functions(report)] == report.selection
    assert [item["original"] for item in _functions(report)] == [SUMMARIES[n] for n in names]


def test_the_original_docstrings_are_the_near_clean_reference(
    written: tuple[OperationReport, RecordingProgress],
) -> None:
    report, _ = written
    original = _score(report, REFERENCE)
    assert original.kind == "reference" and original.error is None
    values = original.values
    assert values["coverage"] == 1.0
    assert values["public_coverage"] == 1.0
    assert values["ruff_d_clean"] == 1.0
    assert values["params_consistent"] == 1.0
    assert values["rouge_l"] == pytest.approx(1.0)
    assert values["bleu"] == pytest.approx(1.0)
    assert values["meaning"] == pytest.approx(1.0, abs=1e-3)
    # The authors' own summaries contradict nothing observed: the check has no false alarm.
    assert values["contradictions"] == 0
    assert values["imports"] == 1.0
    clean = values["pydoclint_clean"]
    assert isinstance(clean, float) and clean >= 2 / 3
    # A finding of the package's own docstrings is reported on its function.
    for item in _functions(report):
        found = item["results"][REFERENCE]["violations"]
        assert all(violation.startswith("DOC") for violation in found)
    assert clean == sum(
        not item["results"][REFERENCE]["violations"] for item in _functions(report)
    ) / len(report.selection)


def test_the_name_baseline_is_clean_but_far_from_the_original(
    written: tuple[OperationReport, RecordingProgress],
) -> None:
    report, _ = written
    baseline = _score(report, BASELINE)
    assert baseline.kind == "baseline" and baseline.error is None
    assert baseline.wall_s is not None and baseline.wall_s > 0
    values = baseline.values
    assert values["coverage"] == 1.0
    assert values["params_consistent"] == 1.0
    assert values["pydoclint_clean"] == 1.0
    assert values["ruff_d_clean"] == 1.0
    assert values["described"] == 0.0
    filler = values["filler"]
    assert isinstance(filler, int) and filler >= LIMIT  # "The text.", "The result."
    for item in _functions(report):
        name = item["target"].split("::")[1]
        assert item["results"][BASELINE]["summary"] == name_summary(name)
        assert all(
            text.endswith((": The result.", ".")) for text in item["results"][BASELINE]["filler"]
        )
    rouge, bleu = values["rouge_l"], values["bleu"]
    assert isinstance(rouge, float) and 0 <= rouge < 0.6
    assert isinstance(bleu, float) and 0 <= bleu < 0.1
    # The name says less than the authors' line: closer by meaning than by words, not equal.
    meaning = values["meaning"]
    assert isinstance(meaning, float) and rouge < meaning < 0.9


def test_remora_writes_the_original_words_and_no_filler(
    written: tuple[OperationReport, RecordingProgress],
) -> None:
    """With a model that writes the authors' words, Remora's summaries are the originals;
    by default the model is asked for the summary only."""
    report, _ = written
    remora = _score(report, REMORA)
    assert remora.kind == "remora" and remora.error is None
    values = remora.values
    jobs = [(item.variant, item.statuses) for item in report.remora]
    assert values["coverage"] == 1.0, (jobs, report.details["functions"])
    assert values["public_coverage"] == 1.0
    assert values["imports"] == 1.0
    assert values["rouge_l"] == pytest.approx(1.0)
    assert values["bleu"] == pytest.approx(1.0)
    assert values["described"] == 0.0 and values["filler"] == 0
    baseline_rouge = _score(report, BASELINE).values["rouge_l"]
    assert isinstance(baseline_rouge, float) and baseline_rouge < 1.0
    for item in _functions(report):
        result = item["results"][REMORA]
        assert result["summary"] == item["original"]
        assert result["filler"] == []


def test_the_base_model_row_runs_without_the_adapter(
    written: tuple[OperationReport, RecordingProgress],
) -> None:
    """The base-model row asks the model at the same decision points with no adapter: the
    policy writes only when the request carries one, so this row writes nothing."""
    report, _ = written
    base = _score(report, BASE_MODEL)
    assert base.kind == "remora" and base.error is None
    assert base.values["coverage"] == 0.0
    assert base.values["rouge_l"] == 0.0
    for item in _functions(report):
        assert item["results"][BASE_MODEL]["summary"] is None
    assert _score(report, REMORA).values["coverage"] == 1.0


def test_host_only_writes_no_words_of_its_own(
    written: tuple[OperationReport, RecordingProgress],
) -> None:
    report, _ = written
    values = _score(report, HOST_ONLY).values
    # Without the model no summary is written: one made from the name says nothing.
    assert values["coverage"] == 0.0
    assert values["described"] == 0.0 and values["filler"] == 0
    host, _, _, _ = report.remora
    assert host.variant == HOST_ONLY and host.mean_turns == 0.0
    assert host.statuses == {"left": LIMIT}
    for item in _functions(report):
        assert item["results"][HOST_ONLY]["summary"] is None


def test_remora_figures_and_progress(written: tuple[OperationReport, RecordingProgress]) -> None:
    report, progress = written
    _, figures, _, sampled = report.remora
    assert figures.variant == REMORA and figures.candidates == 0
    # The scripted model is sure of its answers: each screened summary is given four times
    # (screened once); the default row asks once and screens nothing.
    assert sampled.variant == CANDIDATES
    assert sampled.candidates == sampled.candidates_passed == 4 * LIMIT
    assert figures.jobs == LIMIT
    assert sum(figures.statuses.values()) == LIMIT
    assert set(figures.statuses) <= {"success", "partial"}
    assert figures.mean_turns is not None and figures.mean_turns >= 1.0
    assert figures.call_validity == 1.0 and figures.invalid_calls == 0
    assert figures.jobs_per_min is not None and figures.jobs_per_min > 0
    totals = [total for op, total, _, _ in progress.updates if total is not None]
    assert totals[-1] == FIXED_STEPS + 4 * LIMIT
    assert progress.advanced("docstring") == FIXED_STEPS + 4 * LIMIT
    described = [text for _, _, _, text in progress.updates if text]
    finished = [
        t for t in described if t.startswith("remora: ") and t.endswith(("success", "partial"))
    ]
    assert len(finished) == LIMIT


def test_a_remora_run_that_writes_nothing_scores_zero(silent: OperationReport) -> None:
    assert silent.error is None
    remora = _score(silent, REMORA)
    values = remora.values
    assert values["coverage"] == 0.0
    assert values["rouge_l"] == 0.0 and values["bleu"] == 0.0
    assert values["pydoclint_clean"] == 0.0 and values["ruff_d_clean"] == 0.0
    assert values["params_consistent"] == 0.0
    public = values["public_coverage"]
    assert isinstance(public, float) and 0 < public < 1
    assert values["imports"] == 1.0
    assert silent.remora[1].statuses == {"left": LIMIT}
    for item in _functions(silent):
        result = item["results"][REMORA]
        assert result["summary"] is None
        assert any(v.startswith("D103") for v in result["violations"])
    # The other rows do not depend on the model.
    assert _score(silent, BASELINE).values["coverage"] == 1.0


def test_when_remora_cannot_run_its_row_says_why(tmp_path: Path) -> None:
    ctx, progress = eval_context(tmp_path, "docstring", submit_only_policy, limit=1)
    # The job is planned, then the workspace manager refuses the state directory.
    ctx.session = scripted_session(submit_only_policy, "workspace.state_dir=.")
    report = evaluate(ctx)
    remora = _score(report, REMORA)
    assert remora.values == {} and remora.error
    assert [figures.jobs for figures in report.remora] == [0, 0, 0, 0]
    assert _score(report, BASELINE).values["coverage"] == 1.0
    totals = [total for _, total, _, _ in progress.updates if total is not None]
    assert totals[-1] == progress.advanced("docstring") == FIXED_STEPS


def test_a_module_that_needs_its_docstring_is_left_out(tmp_path: Path) -> None:
    source = write_tree(
        tmp_path / "pkg",
        {
            "loud/__init__.py": '"""Loud things."""\n',
            "loud/core.py": (
                '"""Core."""\n\n\ndef shout(text):\n    """Return the text in capitals."""\n'
                "    return text.upper()\n\n\nBANNER = shout.__doc__.upper()\n"
            ),
            "loud/other.py": (
                '"""Other."""\n\n\ndef whisper(text):\n    """Return the text in lowercase."""\n'
                "    return text.lower()\n"
            ),
        },
    )
    ctx, _ = eval_context(
        tmp_path / "run", "docstring", submit_only_policy, limit=3, source=source / "loud"
    )
    report = evaluate(ctx)
    assert report.selection == ["loud/other.py::whisper"]
    assert list(report.details["dropped"]) == ["loud/core.py::shout"]
    assert any("left out loud/core.py::shout" in note for note in report.notes)
    assert _score(report, REFERENCE).values["coverage"] == 1.0


def test_a_package_without_candidates_is_an_error_not_a_crash(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "pkg", {"bare/__init__.py": "def f(x):\n    return x\n"})
    ctx, _ = eval_context(tmp_path / "run", "docstring", submit_only_policy, source=source / "bare")
    report = evaluate(ctx)
    assert report.error and report.scores == [] and report.selection == []


def test_documented_params_reads_google_args_sections() -> None:
    doc = (
        "Do it.\n\nArgs:\n    a: The a.\n        More about a.\n    *rest (int): More.\n\n"
        "Returns:\n    x: no."
    )
    assert documented_params(doc) == ["a", "rest"]
    assert documented_params("Do it.") == []


def test_public_docstrings_counts_like_interrogate() -> None:
    tree = ast.parse(
        '"""Module."""\n'
        "def f():\n    def inner():\n        pass\n"
        'class C:\n    """C."""\n    def m(self):\n        """M."""\n    def __init__(self):\n'
        "        pass\n    def _p(self):\n        pass\n    class D:\n        pass\n"
        "class _Hidden:\n    def visible(self):\n        pass\n"
        "if True:\n    def g():\n        pass\n"
    )
    # Counted: the module, f, C, C.m, C.D, g; documented: the module, C, C.m.
    assert public_docstrings(tree) == (3, 6)


def test_a_contradicted_summary_scores_no_meaning() -> None:
    """Close words with the wrong kind of result are a wrong docstring, worse than none: its
    meaning counts 0, while the same words without the contradiction score."""
    chosen = [Chosen(FunctionRef("days.py", "overdue"), ("due",), "Count the days overdue.")]
    rows = []
    for contradicted in ("it says the result is a string", None):
        result = FunctionResult(
            has_docstring=True,
            summary="Return the days overdue as a string.",
            contradiction=contradicted,
        )
        rows.append(Measurement([result], 1, 1, 1, 1, True, True, []))
    assert add_meaning(chosen, rows) == ""
    wrong, right = (row.functions[0].meaning for row in rows)
    assert wrong == 0.0
    assert right > 0.5
    assert rows[0].values()["meaning"] == 0.0
