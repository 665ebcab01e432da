"""``remora train``: each step through the real entry point, and its coded errors."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from remora.model.base import Message, ModelRequest
from remora.training.dataset import TrainingExample, write_examples
from remora.training.traces import is_validation
from tests.cli_helpers import run_cli


def test_help_names_the_four_steps_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(["train", "--help"], capsys)
    assert result.code == 0
    order = [result.out.index(step) for step in ("generate", "finetune", "export", "evaluate")]
    assert order == sorted(order)


def test_an_agent_without_an_expert_is_train_012(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(["train", "generate", "--agent", "harness"], capsys)
    assert result.code == 1
    assert "TRAIN_012" in result.err and "docstring, test, sample_data" in result.err


def test_evaluate_without_examples_is_train_006(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    result = run_cli(["train", "evaluate", "--data", str(tmp_path)], capsys)
    assert result.code == 1
    assert "TRAIN_006" in result.err


def test_evaluate_with_no_model_to_score_is_train_004(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    result = run_cli(["train", "evaluate", "--no-base", "--data", str(tmp_path)], capsys)
    assert result.code == 1
    assert "TRAIN_004" in result.err and "--adapter" in result.err


def test_export_of_a_folder_that_is_no_adapter_is_train_004(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    result = run_cli(["train", "export", str(tmp_path), str(tmp_path / "a.gguf")], capsys)
    assert result.code == 1
    assert "TRAIN_004" in result.err
    assert not (tmp_path / "a.gguf").exists()


def _turn(index: int, tool: str) -> TrainingExample:
    request = ModelRequest(messages=[Message(role="user", content=f"Turn {index}.")])
    return TrainingExample(
        agent="docstring",
        source=f"pkg{index}/mod.py",
        episode=f"e{index}",
        turn=0,
        prompt=f"Turn {index}.",
        completion=tool,
        request=request.model_dump(mode="json"),
        call={"name": tool, "arguments": {}},
    )


def test_finetune_trains_only_the_decisions_asked_for(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from remora.cli.train import _examples

    turns = [_turn(0, "write_docstring"), _turn(1, "submit_result"), _turn(2, "write_docstring")]
    write_examples(tmp_path / "docstring" / "train.jsonl", turns)
    chosen = _examples(tmp_path, ["docstring"], "train", ["write_docstring"])
    assert [turn.episode for turn in chosen] == ["e0", "e2"]
    assert len(_examples(tmp_path, ["docstring"], "train")) == 3
    result = run_cli(
        [
            "train",
            "finetune",
            str(tmp_path / "adapter"),
            "--agent",
            "docstring",
            "--data",
            str(tmp_path),
            "--decision",
            "describe",
        ],
        capsys,
    )
    assert result.code == 1
    assert "TRAIN_016" in result.err and "describe" in result.err
    assert not (tmp_path / "adapter").exists()


@pytest.mark.model
def test_finetune_prepare_only_tokenizes_and_trains_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    turns = [_turn(0, "write_docstring"), _turn(1, "submit_result")]
    write_examples(tmp_path / "docstring" / "train.jsonl", turns)
    out = tmp_path / "adapter"
    command = ["train", "finetune", str(out), "--agent", "docstring", "--data", str(tmp_path)]
    result = run_cli([*command, "--prepare-only"], capsys)
    assert result.code == 0, result.err
    assert "tokenized 2 training and 0 validation sequences" in result.out
    assert (out / "tokens.json.gz").is_file()
    assert not (out / "training.json").exists() and not (out / "checkpoints").exists()
    result = run_cli([*command, "--device", "gpu"], capsys)
    assert result.code == 2 and "gpu" in result.err


@pytest.mark.model
def test_evaluate_scores_the_base_model_on_held_out_turns(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    request = ModelRequest(messages=[Message(role="user", content="Say hello.")], max_tokens=8)
    example = TrainingExample(
        agent="docstring",
        source="a.py",
        episode="e0",
        turn=0,
        prompt="p",
        completion="c",
        request=request.model_dump(mode="json"),
        call={"name": "read_signature", "arguments": {}},
    )
    write_examples(tmp_path / "docstring" / "validation.jsonl", [example])
    scores = tmp_path / "scores.json"
    result = run_cli(
        [
            "train",
            "evaluate",
            "--agent",
            "docstring",
            "--data",
            str(tmp_path),
            "--json",
            str(scores),
        ],
        capsys,
    )
    assert result.code == 0, result.err
    assert "docstring" in result.out and "base" in result.out
    [base] = json.loads(scores.read_text(encoding="utf-8"))["next_call"]["docstring"]
    # no tools offered, so the model answers in prose: no call, no match
    assert (base["examples"], base["exact"], base["failed"]) == (1, 0, 0)


@pytest.mark.model
def test_evaluate_runs_held_out_episodes_through_the_real_loop(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """generate, then evaluate --episodes with the embedded base model: the episode runs
    through the real loop and tools and is scored, whatever the base model does."""
    name = next(f"module{i}.py" for i in range(1000) if is_validation(f"module{i}.py"))
    shutil.copy(Path(sysconfig.get_paths()["stdlib"]) / "textwrap.py", tmp_path / name)
    corpus, data = ["--corpus", str(tmp_path / name)], tmp_path / "data"
    result = run_cli(
        ["train", "generate", "--agent", "docstring", "--limit", "1", "--data", str(data), *corpus],
        capsys,
    )
    assert result.code == 0, result.err
    scores = tmp_path / "scores.json"
    result = run_cli(
        [
            "train",
            "evaluate",
            "--agent",
            "docstring",
            "--episodes",
            "1",
            "--limit",
            "1",
            "--data",
            str(data),
            "--json",
            str(scores),
            *corpus,
        ],
        capsys,
    )
    assert result.code == 0, result.err
    assert "episode success" in result.out
    [base] = json.loads(scores.read_text(encoding="utf-8"))["episodes"]["docstring"]
    assert base["label"] == "base" and base["episodes"] == 1 and base["not_run"] == 0
    assert base["succeeded"] + sum(base["problems"].values()) == 1


def test_ctrl_c_lets_generate_write_the_examples_so_far(tmp_path: Path) -> None:
    """A real process: the first Ctrl-C stops planning, lets the episode in flight finish
    and writes every example journaled so far; the exit status says it was interrupted."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for module in ("statistics.py", "fractions.py", "textwrap.py"):
        shutil.copy(stdlib / module, corpus / module)
    data = tmp_path / "data"
    journal = data / "docstring" / "episodes.jsonl"
    command = [sys.executable, "-m", "remora", "train", "generate", "--agent", "docstring"]
    process = subprocess.Popen(
        [*command, "--corpus", str(corpus), "--data", str(data), "-j", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None:
        if journal.is_file() and journal.read_text(encoding="utf-8").count("\n") >= 2:
            break
        time.sleep(0.2)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=240)
    assert process.returncode == 130, stderr
    assert "interrupted during docstring" in stderr and "run the same command again" in stderr
    report = json.loads((data / "docstring" / "report.json").read_text(encoding="utf-8"))
    assert report["interrupted"] is True
    journaled = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    assert not any("crashed" in item["reason"] for item in journaled)  # none cut short
    assert len(journaled) < report["planned"] + 3  # it stopped planning soon after
    written = sum(
        len((data / "docstring" / name).read_text(encoding="utf-8").splitlines())
        for name in ("train.jsonl", "validation.jsonl")
    )
    assert written == report["examples"] > 0
    assert report["examples"] + report["duplicates"] == sum(
        len(item["examples"]) for item in journaled if item["status"] == "kept"
    )
