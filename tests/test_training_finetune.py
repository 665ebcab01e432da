"""LoRA fine-tuning: completion-only loss, checkpoints and resume, on a tiny Gemma 3.

The tiny model has Gemma 3's shape and the embedded GGUF's vocabulary, so the real
llama.cpp tokenizer feeds it; it trains in a fraction of a second per step.
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remora.errors import TrainingError
from remora.model.base import Message, ModelRequest, ToolCall, ToolSpec
from remora.model.functiongemma import render_completion, render_request
from remora.model.llama_cpp import LlamaCppBackend
from remora.training.dataset import TrainingExample
from remora.training.finetune import (
    TOKENS_FILE,
    FinetuneReport,
    FinetuneSettings,
    Tokenize,
    TrainingInterrupted,
    _require,
    _tokenized,
    completion_batch,
    completion_loss,
    finetune,
    native_bf16,
    pack_turns,
    prepare,
    training_device,
)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("peft")
safetensors_torch = pytest.importorskip("safetensors.torch")

VOCABULARY = 262144
"""The embedded GGUF's vocabulary (Gemma 3)."""


def tiny_model() -> Any:
    """A randomly initialised Gemma 3 text model, the same one for every call."""
    config = transformers.Gemma3TextConfig(
        vocab_size=VOCABULARY,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=2048,
        sliding_window=64,
    )
    torch.manual_seed(1234)
    return transformers.Gemma3ForCausalLM(config).float()


def example(index: int, name: str, *, linted: bool = False, **arguments: object) -> TrainingExample:
    """A lint turn; ``linted``: the second one, after run_linter's response."""
    tools = [
        ToolSpec(name="run_linter", description="Run ruff on the node."),
        ToolSpec(
            name="apply_fix",
            description="Apply ruff's fix for one problem.",
            parameters={
                "type": "object",
                "properties": {"code": {"type": "string"}, "line": {"type": "integer"}},
                "required": ["code", "line"],
            },
        ),
    ]
    request = ModelRequest(
        messages=[
            Message(role="system", content="You fix lint problems."),
            Message(role="user", content=f"def f{index}(x):\n    return x == None\n"),
        ],
        tools=tools,
    )
    if linted:
        request.messages += [
            Message(role="assistant", tool_calls=[ToolCall(id="1", name="run_linter")]),
            Message(role="tool", name="run_linter", tool_call_id="1", content='{"problems": 1}'),
        ]
    call = ToolCall(name=name, arguments=dict(arguments))
    return TrainingExample(
        agent="lint",
        source=f"f{index}.py",
        episode=f"e{index}",
        turn=0,
        prompt=render_request(request),
        completion=render_completion(call),
        request=request.model_dump(mode="json"),
        call={"name": name, "arguments": arguments},
    )


TRAIN = [
    example(0, "run_linter"),
    example(1, "apply_fix", code="E711", line=2),
    example(2, "apply_fix", code="F401", line=1),
    example(3, "apply_fix", linted=True, code="E711", line=2),
]
VALIDATION = [example(4, "apply_fix", code="E711", line=2)]


@pytest.fixture(scope="module")
def tokenize(embedded_llama: LlamaCppBackend) -> Tokenize:
    engine = embedded_llama.engine
    return engine.tokenize_prompt


def settings(**changes: Any) -> FinetuneSettings:
    values: dict[str, Any] = {"steps": 5, "threads": 1, "checkpoint_every": 1, "warmup": 0.2}
    return FinetuneSettings(**(values | changes))


def run(tokenize: Tokenize, out: Path, model: Any = None, **changes: Any) -> FinetuneReport:
    return finetune(
        TRAIN,
        VALIDATION,
        settings(**changes),
        out,
        model=tiny_model() if model is None else model,
        tokenize=tokenize,
        progress=False,
    )


def adapter(out: Path) -> dict[str, Any]:
    return dict(safetensors_torch.load_file(str(out / "adapter_model.safetensors")))


def assert_same_adapter(left: Path, right: Path) -> None:
    one, other = adapter(left), adapter(right)
    assert one.keys() == other.keys()
    for key, tensor in one.items():
        assert torch.allclose(tensor, other[key], atol=1e-6), key


# the loss -------------------------------------------------------------------------------


def test_the_loss_covers_the_completion_tokens_and_nothing_else() -> None:
    batch = completion_batch([2, 10, 11], [20, 21])
    # The logits at position 2 (the prompt's last token) predict 20, at 3 (20) predict 21;
    # the completion's last token is only predicted, never fed.
    assert batch.input_ids == [2, 10, 11, 20]
    assert batch.positions == [2, 3]
    assert batch.targets == [20, 21]
    with pytest.raises(ValueError):
        completion_batch([], [20])

    model = tiny_model()
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([batch.input_ids])).logits[0]
        per_position = torch.nn.functional.cross_entropy(
            logits, torch.tensor([*batch.input_ids[1:], 21]), reduction="none"
        )
        # positions 0-1 would predict prompt tokens 10 and 11: not in the loss
        expected = per_position[2:].mean()
        assert float(completion_loss(model, batch)) == pytest.approx(float(expected), abs=1e-6)


def test_logits_at_the_completion_positions_give_the_full_logits_loss(
    tokenize: Tokenize,
) -> None:
    model = tiny_model()
    assert sum(p.numel() for p in model.parameters()) < 9_000_000  # embeddings, mostly
    batch = completion_batch(tokenize(TRAIN[1].prompt), tokenize(TRAIN[1].completion))
    assert len(batch.input_ids) > 150 and len(batch.targets) > 20
    with torch.no_grad():
        kept = float(completion_loss(model, batch))
        full = float(completion_loss(model, batch, full_logits=True))
    assert kept == pytest.approx(full, abs=1e-5)


def test_prompt_and_completion_are_tokenized_apart_as_the_runtime_sees_them(
    tokenize: Tokenize, embedded_llama: LlamaCppBackend
) -> None:
    # After a tool response the prompt ends in '<end_function_response>': its last '>' and
    # the completion's first '<' merge into one '><' token when tokenized together. At run
    # time the prompt is evaluated, then the model generates the call: the tokens apart.
    ex = TRAIN[3]
    prompt, completion = tokenize(ex.prompt), tokenize(ex.completion)
    assert ex.prompt.endswith("<end_function_response>") and prompt[0] == 2  # <bos>, not added
    assert embedded_llama.engine.tokenize(ex.prompt + ex.completion) != prompt + completion
    assert tokenize(ex.prompt + ex.completion) == prompt + completion  # the backend's pieces
    batches, skipped = _tokenized([ex], tokenize, 2048, pack=True)
    assert skipped == 0
    assert batches[0].input_ids + batches[0].targets[-1:] == prompt + completion
    assert batches[0].targets == completion
    assert tokenize("<start_of_turn>") == [105]  # a control token, as in the backend


def episode(index: int) -> list[TrainingExample]:
    """Two turns of one lint episode: run_linter, then apply_fix after its response."""
    first = example(index, "run_linter")
    second = example(index, "apply_fix", linted=True, code="E711", line=2)
    return [first, second.model_copy(update={"episode": first.episode, "turn": 1})]


def test_an_episode_trains_as_one_sequence_with_the_losses_of_its_turns_apart(
    tokenize: Tokenize,
) -> None:
    turns = episode(7)
    assert turns[1].prompt.startswith(turns[0].prompt + turns[0].completion)
    # the earlier call is tokenized apart inside the next prompt, as the backend caches it
    prefix = tokenize(turns[0].prompt) + tokenize(turns[0].completion)
    assert tokenize(turns[1].prompt)[: len(prefix)] == prefix

    apart, _ = _tokenized(turns, tokenize, 4096, pack=False)
    packed, skipped = _tokenized(list(reversed(turns)), tokenize, 4096, pack=True)
    assert len(apart) == 2 and len(packed) == 1 and skipped == 0
    (sequence,) = packed
    assert sequence.input_ids == apart[1].input_ids  # the first turn costs no tokens
    assert sequence.targets == apart[0].targets + apart[1].targets
    assert sequence.turns == (len(apart[0].targets), len(apart[1].targets))

    model = tiny_model()
    with torch.no_grad():
        each = [float(completion_loss(model, batch)) for batch in apart]
        together = float(completion_loss(model, sequence))
        full = float(completion_loss(model, sequence, full_logits=True))
    assert together == pytest.approx(sum(each) / 2, abs=1e-5)
    assert full == pytest.approx(together, abs=1e-5)


def test_turns_that_do_not_extend_each_other_or_do_not_fit_are_not_packed(
    tokenize: Tokenize,
) -> None:
    turns = episode(8)
    other = example(9, "run_linter").model_copy(update={"episode": turns[0].episode, "turn": 2})
    packed, _ = _tokenized([*turns, other], tokenize, 4096, pack=True)
    assert [len(batch.turns) for batch in packed] == [2, 1]
    both = len(tokenize(turns[1].prompt)) + len(tokenize(turns[1].completion))
    packed, skipped = _tokenized(turns, tokenize, both - 1, pack=True)
    assert [len(batch.turns) for batch in packed] == [1] and skipped == 1
    with pytest.raises(ValueError):
        pack_turns([([1, 2], [3]), ([1, 9, 3], [4])])


# a run --------------------------------------------------------------------------------


def test_five_steps_write_a_peft_adapter_and_the_report(tokenize: Tokenize, tmp_path: Path) -> None:
    started = time.monotonic()
    report = run(tokenize, tmp_path / "out", checkpoint_every=2, validate_every=2)
    out = tmp_path / "out"
    assert time.monotonic() - started < 30
    assert report.complete and report.step == report.steps == 5
    assert report.examples == 4 and report.skipped == 0 and report.validation_examples == 1
    assert report.decisions == {"apply_fix": 3, "run_linter": 1}
    assert len(report.losses) == 5 and all(math.isfinite(loss) for loss in report.losses)
    assert report.validation_loss is not None and math.isfinite(report.validation_loss)
    assert report.train_loss == pytest.approx(report.losses[-1])
    assert report.epochs == 1.25 and report.threads == 1 and report.dtype == "float32"
    assert report.resumed_from is None and report.seed == 0
    assert [step for step, _ in report.validations] == [2, 4, 5]
    assert report.validations[-1][1] == report.validation_loss

    weights = adapter(out)
    prefix = "base_model.model.model.layers"
    expected = {
        f"{prefix}.{layer}.self_attn.{module}.lora_{side}.weight"
        for layer in (0, 1)
        for module in ("q_proj", "k_proj", "v_proj", "o_proj")
        for side in ("A", "B")
    }
    assert set(weights) == expected
    assert weights[f"{prefix}.0.self_attn.q_proj.lora_A.weight"].shape == (16, 32)
    assert weights[f"{prefix}.0.self_attn.q_proj.lora_B.weight"].dtype == torch.float32
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["r"] == 16 and config["lora_alpha"] == 32
    assert sorted(config["target_modules"]) == ["k_proj", "o_proj", "q_proj", "v_proj"]
    assert not (out / "README.md").exists()

    stored = FinetuneReport.model_validate_json((out / "training.json").read_text())
    assert stored == report
    # steps 4 and 5 are kept (checkpoint_every=2 plus the last step; keep_checkpoints=2)
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [
        "step-0000004",
        "step-0000005",
    ]


def test_mlp_adds_the_feed_forward_projections(tokenize: Tokenize, tmp_path: Path) -> None:
    run(tokenize, tmp_path / "out", steps=1, mlp=True, rank=4, alpha=8)
    names = {key.split(".")[6] for key in adapter(tmp_path / "out")}
    assert names == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


def test_epochs_and_accumulation_decide_the_steps(tokenize: Tokenize, tmp_path: Path) -> None:
    report = run(tokenize, tmp_path / "out", steps=None, epochs=1.5, accumulation=2)
    assert report.steps == report.step == 3 and report.epochs == 1.5
    assert report.completion_tokens == sum(len(tokenize(e.completion)) for e in TRAIN)


def test_an_interrupted_run_resumed_equals_an_uninterrupted_one(
    tokenize: Tokenize, tmp_path: Path
) -> None:
    whole = run(tokenize, tmp_path / "whole")

    first = run(tokenize, tmp_path / "parts", stop_after=3)
    assert not first.complete and first.step == 3
    # a stopped run leaves an adapter that can be exported, and says it stopped
    stopped = FinetuneReport.model_validate_json((tmp_path / "parts" / "training.json").read_text())
    assert stopped == first and (tmp_path / "parts" / "adapter_model.safetensors").is_file()
    resumed = run(tokenize, tmp_path / "parts")
    assert resumed.resumed_from == 3 and resumed.complete
    assert resumed.losses == pytest.approx(whole.losses, abs=1e-6)
    assert resumed.validation_loss == pytest.approx(whole.validation_loss, abs=1e-6)
    assert_same_adapter(tmp_path / "whole", tmp_path / "parts")

    # a finished run in the same directory returns at once, without touching the model
    again = run(tokenize, tmp_path / "parts", model="not a model")
    assert again == resumed


def test_a_run_out_of_minutes_stops_with_an_adapter_and_resumes(
    tokenize: Tokenize, tmp_path: Path
) -> None:
    """A time budget ends the run after the step that spent it: checkpoint, exportable
    adapter, a report that says it stopped for time; running again finishes it."""
    stopped = run(tokenize, tmp_path / "out", minutes=1e-6)
    assert stopped.step == 1 and not stopped.complete and stopped.stopped_for_time
    assert (tmp_path / "out" / "adapter_model.safetensors").is_file()
    written = FinetuneReport.model_validate_json((tmp_path / "out" / "training.json").read_text())
    assert written.stopped_for_time
    finished = run(tokenize, tmp_path / "out")
    assert finished.complete and not finished.stopped_for_time and finished.resumed_from == 1


def test_asking_for_more_steps_continues_a_finished_run(tokenize: Tokenize, tmp_path: Path) -> None:
    three = run(tokenize, tmp_path / "out", steps=3)
    five = run(tokenize, tmp_path / "out", steps=5)
    assert five.resumed_from == 3 and five.step == 5 and five.complete
    assert five.losses[:3] == three.losses
    assert (
        FinetuneReport.model_validate_json((tmp_path / "out" / "training.json").read_text()) == five
    )


def test_ctrl_c_saves_a_checkpoint_and_the_run_resumes_from_it(
    tokenize: Tokenize, tmp_path: Path
) -> None:
    model = tiny_model()
    calls = 0

    def interrupt(*args: object) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            signal.raise_signal(signal.SIGINT)

    hook = model.register_forward_hook(interrupt)
    with pytest.raises(TrainingInterrupted) as caught:
        run(tokenize, tmp_path / "out", model=model, checkpoint_every=10)
    hook.remove()
    assert caught.value.step == 2
    assert caught.value.checkpoint == tmp_path / "out" / "checkpoints" / "step-0000002"
    assert caught.value.checkpoint.is_dir()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    resumed = run(tokenize, tmp_path / "out")
    whole = run(tokenize, tmp_path / "whole")
    assert resumed.resumed_from == 2
    assert resumed.losses == pytest.approx(whole.losses, abs=1e-6)
    assert_same_adapter(tmp_path / "whole", tmp_path / "out")


def test_long_examples_are_skipped_and_counted(tokenize: Tokenize, tmp_path: Path) -> None:
    lengths = sorted(len(tokenize(e.prompt)) + len(tokenize(e.completion)) for e in TRAIN)
    report = run(tokenize, tmp_path / "out", steps=1, max_tokens=lengths[0])
    assert report.examples == 1 and report.skipped == 3
    assert report.validation_examples + report.validation_skipped == 1


# errors -------------------------------------------------------------------------------


def test_no_examples_is_train_006(tokenize: Tokenize, tmp_path: Path) -> None:
    with pytest.raises(TrainingError) as caught:
        finetune([], VALIDATION, settings(), tmp_path, model="unused", tokenize=tokenize)
    assert caught.value.code == "TRAIN_006"
    with pytest.raises(TrainingError) as caught:
        run(tokenize, tmp_path / "out", max_tokens=10)
    assert caught.value.code == "TRAIN_006" and "longer than 10 tokens" in caught.value.message


def test_an_unusable_checkpoint_or_output_directory_is_train_004(
    tokenize: Tokenize, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run(tokenize, out, steps=2)

    with pytest.raises(TrainingError) as caught:  # other settings, same directory
        run(tokenize, out, steps=2, seed=1)
    assert caught.value.code == "TRAIN_004" and "other settings" in caught.value.message

    with pytest.raises(TrainingError) as caught:  # asked for fewer steps than done
        run(tokenize, out, steps=1)
    assert caught.value.code == "TRAIN_004"

    (out / "checkpoints" / "step-0000002" / "adapter_model.safetensors").write_bytes(b"junk")
    with pytest.raises(TrainingError) as caught:
        run(tokenize, out, steps=3)
    assert caught.value.code == "TRAIN_004" and "step-0000002" in caught.value.message
    assert caught.value.hint is not None and "delete" in caught.value.hint

    (out / "checkpoints" / "step-0000002" / "state.json").write_text("{not json")
    with pytest.raises(TrainingError) as caught:
        run(tokenize, out, steps=3)
    assert caught.value.code == "TRAIN_004"

    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(TrainingError) as caught:
        run(tokenize, blocked)
    assert caught.value.code == "TRAIN_004"


def test_a_base_that_does_not_exist_is_train_003(tmp_path: Path) -> None:
    with pytest.raises(TrainingError) as caught:
        finetune(TRAIN, [], FinetuneSettings(base=tmp_path / "missing.gguf"), tmp_path / "out")
    assert caught.value.code == "TRAIN_003"


def test_a_missing_training_dependency_is_train_002() -> None:
    with pytest.raises(TrainingError) as caught:
        _require("remora_no_such_module")
    assert caught.value.code == "TRAIN_002"
    assert caught.value.hint == "pip install 'remora[train]'"


def test_bfloat16_only_where_the_cpu_computes_it(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f\n")
    assert not native_bf16(cpuinfo)
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16\n")
    assert native_bf16(cpuinfo)
    assert not native_bf16(tmp_path / "missing")


# tokens kept, devices ---------------------------------------------------------------------


def test_prepared_tokens_train_without_the_tokenizer(
    tokenize: Tokenize, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a GPU server without llama.cpp does: it trains on the tokens prepared here."""
    import remora.training.finetune as module

    opened: list[Path] = []

    @contextlib.contextmanager
    def counting(gguf: Path) -> Iterator[Tokenize]:
        opened.append(gguf)
        yield tokenize

    monkeypatch.setattr(module, "llama_tokenizer", counting)
    out = tmp_path / "out"
    tokenized = prepare(TRAIN, VALIDATION, settings(), out)
    assert len(opened) == 1 and opened[0].name == "gemma-3-270m-q4_k_m.gguf"
    assert (out / TOKENS_FILE).is_file() and not (out / "training.json").exists()
    assert len(tokenized.train) == 4 and len(tokenized.validation) == 1
    assert tokenized.train[0].targets == tokenize(TRAIN[0].completion)

    @contextlib.contextmanager
    def missing(gguf: Path) -> Iterator[Tokenize]:
        raise AssertionError("the kept tokens should have been used")
        yield tokenize

    monkeypatch.setattr(module, "llama_tokenizer", missing)
    report = finetune(TRAIN, VALIDATION, settings(steps=2), out, model=tiny_model(), progress=False)
    assert report.complete and report.examples == 4 and report.device == "cpu"
    assert report.base_gguf == "gemma-3-270m-q4_k_m.gguf"
    reference = run(tokenize, tmp_path / "reference", steps=2)
    assert report.losses == pytest.approx(reference.losses)

    # other examples are tokenized again, and kept in place of the old ones
    monkeypatch.setattr(module, "llama_tokenizer", counting)
    again = prepare(TRAIN[:2], VALIDATION, settings(), out)
    assert len(again.train) == 2 and len(opened) == 2
    (out / TOKENS_FILE).write_bytes(b"not gzip")
    assert len(prepare(TRAIN[:2], VALIDATION, settings(), out).train) == 2
    assert len(opened) == 3


def test_cuda_where_asked_for_needs_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert training_device("auto") == "cpu" and training_device("cpu") == "cpu"
    with pytest.raises(TrainingError) as caught:
        training_device("cuda")
    assert caught.value.code == "TRAIN_019" and "--device cpu" in (caught.value.hint or "")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert training_device("auto") == "cuda" and training_device("cpu") == "cpu"


def test_the_module_imports_without_torch() -> None:
    code = "import sys, remora.training.finetune; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# the embedded model -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.model
def test_steps_on_the_embedded_model(tmp_path: Path) -> None:
    report = finetune(
        TRAIN,
        VALIDATION,
        FinetuneSettings(steps=3, checkpoint_every=3),
        tmp_path / "out",
        progress=False,
    )
    print(
        f"\nembedded: load {report.load_seconds:.1f} s, {report.seconds_per_step:.2f} s/step "
        f"({report.dtype}, {report.threads} threads), losses {report.losses}"
    )
    assert report.complete and report.base_gguf == "gemma-3-270m-q4_k_m.gguf"
    assert report.base_sha256 is not None and all(math.isfinite(x) for x in report.losses)
    assert len(adapter(tmp_path / "out")) == 18 * 4 * 2
