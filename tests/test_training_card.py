"""Model cards: the figures of a finished run and its scores, written next to the GGUF."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.evaluation.report import ADAPTER_ROW, BASE_MODEL_ROW, HOST_ONLY_ROW
from remora.training.card import model_card
from remora.training.evaluate import CallScore, EpisodeScore, Scores, write_scores
from remora.training.finetune import REPORT_FILE, FinetuneReport, FinetuneSettings
from remora.training.gate import GateReport, GateRun, decide
from tests.cli_helpers import run_cli


def report(tmp_path: Path) -> FinetuneReport:
    return FinetuneReport(
        adapter_dir=tmp_path,
        complete=True,
        step=320,
        steps=320,
        base_gguf="gemma-3-270m-q4_k_m.gguf",
        base_sha256="0" * 64,
        agents=["docstring", "lint"],
        examples=1200,
        sequences=330,
        skipped=4,
        validation_examples=180,
        validation_skipped=0,
        completion_tokens=45000,
        epochs=0.97,
        seconds=2700.0,
        seconds_per_step=8.4,
        load_seconds=30.0,
        threads=1,
        dtype="bfloat16",
        train_loss=0.1234,
        validation_loss=0.2345,
        losses=[0.5, 0.1234],
        seed=0,
        settings=FinetuneSettings(steps=320),
        fingerprint="f",
        validation_digest="d",
    )


def scores(label: str, exact: int, succeeded: int) -> Scores:
    """One evaluate run's scores, for one model."""
    return Scores(
        next_call={"lint": [CallScore(label=label, examples=40, exact=exact, named=38)]},
        episodes={
            "docstring": [EpisodeScore(label=label, episodes=10, succeeded=succeeded, problems={})]
        },
    )


def test_card_states_the_run_and_the_scores(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / REPORT_FILE).write_text(report(tmp_path).model_dump_json())
    gguf = tmp_path / "shared.gguf"
    gguf.write_bytes(b"\0" * 2_500_000)
    # two evaluate runs, as remora train evaluate --json writes them: the base, then --no-base
    write_scores(tmp_path / "base.json", scores("base", 20, 1))
    write_scores(tmp_path / "adapter.json", scores("adapter", 30, 7))
    result = run_cli(
        [
            "train",
            "card",
            str(tmp_path),
            str(gguf),
            "--scores",
            str(tmp_path / "base.json"),
            "--scores",
            str(tmp_path / "adapter.json"),
        ],
        capsys,
    )
    assert result.code == 0, result.err
    card = (tmp_path / "shared.md").read_text()
    assert card.startswith("# shared\n")
    for figure in (
        "docstring, lint agent(s)",
        "1200 model turns",
        "(330 sequences)",
        "2.5 MB",
        "320 steps (0.97 epochs)",
        "45 minutes of training on this CPU",
        "bfloat16 base weights, 1 thread(s).",
        "train 0.123",
        "validation 0.234",
        "| lint | 40 | 50% (95% name) | 75% (95% name) |",
        "| docstring | 10 | 1 (10%) | 7 (70%) |",
    ):
        assert figure in card


def test_card_of_a_run_on_a_gpu_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    on_gpu = report(tmp_path).model_copy(
        update={"device": "cuda", "seconds": 95.0, "seconds_per_step": 0.0412}
    )
    (tmp_path / REPORT_FILE).write_text(on_gpu.model_dump_json())
    gguf = tmp_path / "docstring.gguf"
    gguf.write_bytes(b"\0" * 1000)
    result = run_cli(["train", "card", str(tmp_path), str(gguf)], capsys)
    assert result.code == 0, result.err
    card = (tmp_path / "docstring.md").read_text()
    assert "bfloat16 base weights, on a CUDA GPU." in card
    assert "95 seconds of training on the GPU, wall clock (0.0412 s per step)" in card


def test_card_without_a_finished_run_or_with_bad_scores_is_a_coded_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    gguf = tmp_path / "shared.gguf"
    gguf.write_bytes(b"\0")
    result = run_cli(["train", "card", str(tmp_path), str(gguf)], capsys)
    assert result.code == 1 and "TRAIN_004" in result.err
    (tmp_path / REPORT_FILE).write_text(report(tmp_path).model_dump_json())
    (tmp_path / "scores.json").write_text('{"lint": 3}')
    result = run_cli(
        ["train", "card", str(tmp_path), str(gguf), "--scores", str(tmp_path / "scores.json")],
        capsys,
    )
    assert result.code == 1 and "TRAIN_001" in result.err
    assert not (tmp_path / "shared.md").exists()


def test_a_run_stopped_early_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    stopped = report(tmp_path).model_copy(update={"complete": False, "step": 108, "epochs": 0.33})
    (tmp_path / REPORT_FILE).write_text(stopped.model_dump_json())
    gguf = tmp_path / "lint.gguf"
    gguf.write_bytes(b"\0" * 1000)
    result = run_cli(["train", "card", str(tmp_path), str(gguf)], capsys)
    assert result.code == 0, result.err
    card = (tmp_path / "lint.md").read_text()
    assert "108 steps (0.33 epochs; stopped early, of 320 planned)" in card


def test_a_run_stopped_for_time_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    stopped = report(tmp_path).model_copy(
        update={"complete": False, "stopped_for_time": True, "step": 40, "epochs": 0.12}
    )
    (tmp_path / REPORT_FILE).write_text(stopped.model_dump_json())
    gguf = tmp_path / "docstring.gguf"
    gguf.write_bytes(b"\0" * 1000)
    result = run_cli(["train", "card", str(tmp_path), str(gguf)], capsys)
    assert result.code == 0, result.err
    card = (tmp_path / "docstring.md").read_text()
    assert "40 steps (0.12 epochs; stopped early, of 320 planned, when its minutes were spent)" in (
        card
    )


def test_card_gives_the_gate_table_and_verdict(tmp_path: Path) -> None:
    runs = [
        GateRun(
            package=package,
            seed=seed,
            rows={HOST_ONLY_ROW: 0.0, BASE_MODEL_ROW: 0.1, ADAPTER_ROW: 0.1 + 0.1 * seed},
        )
        for package in ("toolz==1.0.0", "inflection==0.5.1")
        for seed in (1, 2, 3)
    ]
    verdict = decide(runs, [1, 2, 3], "meaning")
    gate = GateReport(
        agent="docstring",
        operation="docstring",
        metric="meaning",
        adapter="docstring.gguf",
        limit=12,
        packages=["toolz==1.0.0", "inflection==0.5.1"],
        seeds=[1, 2, 3],
        runs=runs,
        **verdict.model_dump(),
    )
    card = model_card("docstring", report(tmp_path), 10, gate=gate)
    section = card.split("## Held-out gate", 1)[1]
    assert "| toolz==1.0.0 | 0.000 (0.000) | 0.100 (0.000) | 0.300 (0.200) |" in section
    # A gain of 0.2 against a spread of 0.2 across seeds is not more than the spread.
    assert "the adapter **does not ship**" in section and "not more than the spread" in section
