"""Model cards: the figures of a finished run and its scores, written next to the GGUF."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.training.evaluate import CallScore, EpisodeScore, Scores, write_scores
from remora.training.finetune import REPORT_FILE, FinetuneReport, FinetuneSettings
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
        "45 minutes of training",
        "train 0.123",
        "validation 0.234",
        "| lint | 40 | 50% (95% name) | 75% (95% name) |",
        "| docstring | 10 | 1 (10%) | 7 (70%) |",
    ):
        assert figure in card


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
