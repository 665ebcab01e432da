"""The held-out gate: real evaluations of the synthetic package (scripted model), the
verdict rule, its table, the card and the command's errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.errors import TrainingError
from remora.evaluation import EvalReport
from remora.evaluation.report import ADAPTER_ROW, BASE_MODEL_ROW, HOST_ONLY_ROW
from remora.model.base import ModelRequest, ToolCall
from remora.operations import installed_operations
from remora.training.gate import (
    CURRENT_ROW,
    GATE_FILE,
    GateReport,
    GateRun,
    decide,
    gate_markdown,
    gate_operation,
    read_gate,
    run_gate,
)
from tests.cli_helpers import run_cli
from tests.support.eval_context import EVAL_PACKAGE, scripted_session
from tests.support.policy_docstring import docstring_policy, submit_only_policy

CANDIDATE = "candidate.gguf"


def _run(package: str, seed: int, host: float, base: float, adapter: float) -> GateRun:
    rows = {HOST_ONLY_ROW: host, BASE_MODEL_ROW: base, ADAPTER_ROW: adapter}
    return GateRun(package=package, seed=seed, rows=rows)


def test_an_adapter_ships_only_when_it_beats_the_base_by_more_than_the_spread() -> None:
    clear = [_run(p, s, 0.0, 0.30 + 0.01 * s, 0.50 + 0.02 * s) for p in "ab" for s in (1, 2, 3)]
    verdict = decide(clear, [1, 2, 3], "meaning")
    assert verdict.ships and verdict.gain == pytest.approx(0.22)
    assert verdict.spread == pytest.approx(0.04)  # the adapter's range, the larger one
    assert verdict.per_seed[ADAPTER_ROW] == pytest.approx([0.52, 0.54, 0.56])
    assert "more than the spread" in verdict.reason and "host only 0.000" in verdict.reason
    # A gain within the spread across seeds is no gain.
    noisy = [_run("a", 1, 0.0, 0.30, 0.45), _run("a", 2, 0.0, 0.30, 0.20)]
    verdict = decide(noisy, [1, 2], "meaning")
    assert not verdict.ships and "not more than the spread" in verdict.reason
    # A run that failed, or a row without the metric, decides nothing.
    broken = [*clear[:2], GateRun(package="c", seed=1, error="EVAL_002: no such package")]
    verdict = decide(broken, [1, 2, 3], "meaning")
    assert not verdict.ships and verdict.gain is None
    assert verdict.reason == "no verdict (c seed 1: EVAL_002: no such package)"


def test_a_candidate_must_also_beat_the_adapter_the_agent_ships() -> None:
    def run(seed: int, base: float, current: float, candidate: float) -> GateRun:
        rows = {HOST_ONLY_ROW: 0.0, BASE_MODEL_ROW: base, CURRENT_ROW: current}
        return GateRun(package="a", seed=seed, rows={**rows, ADAPTER_ROW: candidate})

    better = [run(s, 0.0, 0.40 + 0.01 * s, 0.50 + 0.01 * s) for s in (1, 2, 3)]
    verdict = decide(better, [1, 2, 3], "meaning")
    assert verdict.ships and verdict.gain_over_current == pytest.approx(0.10)
    assert verdict.spread_over_current == pytest.approx(0.02)
    # Far above the base model, but inside the spread of the adapter it would replace.
    level = [run(s, 0.0, 0.43 + 0.02 * s, 0.45 + 0.01 * s) for s in (1, 2, 3)]
    verdict = decide(level, [1, 2, 3], "meaning")
    assert verdict.gain is not None and verdict.gain > verdict.spread  # type: ignore[operator]
    assert not verdict.ships
    assert "against the current adapter's 0.470, +0.000, not more than the spread (0.040)" in (
        verdict.reason
    )
    assert "current adapter" in gate_markdown(
        GateReport(
            agent="docstring",
            operation="docstring",
            metric="meaning",
            adapter="x.gguf",
            limit=2,
            packages=["a"],
            seeds=[1, 2, 3],
            runs=level,
            **verdict.model_dump(),
        )
    )


def test_only_an_agent_whose_evaluation_has_a_gate_metric_can_be_gated() -> None:
    installed = list(installed_operations())
    assert gate_operation("docstring", installed).gate_metric == "meaning"
    assert gate_operation("test", installed).gate_metric == "mutation_score"
    assert gate_operation("sample_data", installed).gate_metric == "with_fixture"
    with pytest.raises(TrainingError) as info:
        gate_operation("lint", installed)
    assert info.value.code == "TRAIN_017" and "docstring" in info.value.hint


def _adapted(request: ModelRequest) -> ToolCall:
    """The authors' words with the candidate adapter, nothing without it."""
    if request.adapter and request.adapter.endswith(CANDIDATE):
        return docstring_policy(request)
    return submit_only_policy(request)


def test_the_gate_evaluates_every_seed_and_ships_an_adapter_that_helps(tmp_path: Path) -> None:
    candidate = tmp_path / CANDIDATE
    candidate.write_bytes(b"not read by the scripted model")
    calls: list[tuple[str, int]] = []
    asked: list[ModelRequest] = []
    operation = gate_operation("docstring", list(installed_operations()))

    def policy(request: ModelRequest) -> ToolCall:
        asked.append(request)
        return _adapted(request)

    def gate() -> object:
        return run_gate(
            "docstring",
            candidate,
            operation=operation,
            session=lambda extra: scripted_session(policy, *extra),
            out=tmp_path / "gate",
            packages=[str(EVAL_PACKAGE)],
            seeds=[1, 2],
            limit=2,
            on_run=lambda package, seed: calls.append((package, seed)),
            candidate_settings=["runner.temperature=0.3"],
        )

    report = gate()
    assert [seed for _, seed in calls] == [1, 2]
    assert [run.error for run in report.runs] == [None, None]  # type: ignore[attr-defined]
    stored = read_gate(tmp_path / "gate" / GATE_FILE)
    assert stored == report
    assert stored.ships, stored.reason
    for run in stored.runs:
        assert run.rows[HOST_ONLY_ROW] == 0.0 and run.rows[BASE_MODEL_ROW] == 0.0
        assert run.rows[ADAPTER_ROW] == pytest.approx(1.0, abs=1e-3)
        assert run.rows[CURRENT_ROW] == 0.0  # the shipped adapter, scripted to say nothing
    table = gate_markdown(stored)
    assert (
        f"| {EVAL_PACKAGE} | 0.000 (0.000) | 0.000 (0.000) | 0.000 (0.000) | 1.000 (0.000) |"
        in table
    )
    assert "the adapter **ships**" in table and "against the current adapter's 0.000" in table
    # Every evaluation decodes one job at a time, so a rerun gives the same figures.
    assert all(request.samples == 1 for request in asked)
    # The candidate's own settings reach its row alone.
    temperatures = {
        bool(request.adapter and request.adapter.endswith(CANDIDATE)): request.temperature
        for request in asked
    }
    assert temperatures == {True: 0.3, False: 0.0}
    # Run again: the finished evaluations are reused, the model is not asked again.
    before = len(asked)
    again = gate()
    assert again == stored and len(calls) == 4 and len(asked) == before
    # Another candidate (other content, same path): only its own row is evaluated; the
    # host-only and base-model rows of the first one are reused.
    folders = sorted(path.name for path in (tmp_path / "gate").iterdir() if path.is_dir())
    assert len(folders) == 4 and sum("-base-" in name for name in folders) == 2
    for name in folders:
        evaluated = EvalReport.model_validate_json(
            (tmp_path / "gate" / name / "report.json").read_text()
        )
        tools = {score.tool for score in evaluated.reports[0].scores}
        fixed = {HOST_ONLY_ROW, BASE_MODEL_ROW, ADAPTER_ROW}  # ADAPTER_ROW: the current one
        measured = fixed if "-base-" in name else {ADAPTER_ROW}
        assert tools & {HOST_ONLY_ROW, BASE_MODEL_ROW, ADAPTER_ROW} == measured
    candidate.write_bytes(b"a retrained adapter")
    third = gate()
    new_asks = asked[before:]
    assert new_asks and all(
        request.adapter and request.adapter.endswith(CANDIDATE) for request in new_asks
    )
    assert [run.rows for run in third.runs] == [run.rows for run in stored.runs]
    assert len(list((tmp_path / "gate").glob("*-base-*"))) == 2
    assert len([path for path in (tmp_path / "gate").iterdir() if path.is_dir()]) == 6


def test_the_gate_command_refuses_a_missing_adapter(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "none.gguf"
    result = run_cli(
        ["train", "gate", str(missing), "--agent", "docstring", "--out", str(tmp_path / "g")],
        capsys,
    )
    assert result.code == 1 and "TRAIN_005" in result.err
    result = run_cli(
        ["train", "gate", str(missing), "--agent", "lint", "--out", str(tmp_path / "g")], capsys
    )
    assert result.code == 1 and "TRAIN_017" in result.err
