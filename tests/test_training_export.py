"""PEFT LoRA adapter -> llama.cpp LoRA GGUF: contract, checks, and proof that llama.cpp
computes with the exported adapter what peft computes with the original.

The error cases run against a tiny base GGUF written here (reading the embedded model's
metadata costs gguf's reader 10-20 s); the round trip and the layout comparison use the
embedded Gemma 3 270M in llama.cpp and, for the layout, in transformers + peft.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.numpy import load_file, save_file
from safetensors.torch import save_file as save_torch_file
from transformers import AutoModelForCausalLM

from remora.config import ModelConfig
from remora.errors import TrainingError
from remora.model.base import Message, ModelRequest
from remora.model.defaults import resolve_model_path
from remora.model.llama_cpp import LlamaCppBackend, _Engine
from remora.training.export import (
    PROJECTIONS,
    base_model_info,
    export_adapter,
    verify_adapter,
)

Array = np.ndarray[Any, Any]

MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
PREFIX = "base_model.model.model.layers"


# helpers ------------------------------------------------------------------------------


def peft_key(layer: int, module: str, half: str) -> str:
    """The key peft's save_pretrained writes for a Gemma3ForCausalLM LoRA weight."""
    group = "self_attn" if module in MODULES[:4] else "mlp"
    return f"{PREFIX}.{layer}.{group}.{module}.lora_{half}.weight"


def random_lora(
    shapes: Mapping[str, tuple[int, int]],
    layers: range,
    *,
    rank: int = 4,
    scale: float = 0.5,
    seed: int = 0,
) -> dict[str, Array]:
    """PEFT-named rank-``rank`` weights for every projection of ``layers``: A ~ N(0, 1),
    B ~ N(0, scale / sqrt(in)), large enough to change what the model says."""
    rng = np.random.default_rng(seed)
    weights: dict[str, Array] = {}
    for layer in layers:
        for module, target in PROJECTIONS.items():
            out_size, in_size = shapes[f"blk.{layer}.{target}.weight"]
            name = module.split(".")[1]
            weights[peft_key(layer, name, "A")] = rng.normal(size=(rank, in_size)).astype(
                np.float32
            )
            weights[peft_key(layer, name, "B")] = (
                rng.normal(size=(out_size, rank)) * scale / np.sqrt(in_size)
            ).astype(np.float32)
    return weights


def write_adapter(directory: Path, weights: Mapping[str, Array], **config: Any) -> Path:
    """A PEFT adapter directory as save_pretrained leaves it."""
    directory.mkdir(parents=True, exist_ok=True)
    settings: dict[str, Any] = {
        "peft_type": "LORA",
        "r": 4,
        "lora_alpha": 8,
        "target_modules": MODULES,
        "use_rslora": False,
        "use_dora": False,
        "fan_in_fan_out": False,
        "bias": "none",
        "alpha_pattern": {},
        "rank_pattern": {},
    }
    settings.update(config)
    (directory / "adapter_config.json").write_text(json.dumps(settings), encoding="utf-8")
    save_file(dict(weights), str(directory / "adapter_model.safetensors"))
    return directory


def field_value(reader: gguf.GGUFReader, key: str) -> Any:
    field = reader.get_field(key)
    assert field is not None, key
    return field.contents()


# a tiny base model ----------------------------------------------------------------------

TINY_SHAPES = {  # (out, in), numpy order
    "attn_q": (16, 8),
    "attn_k": (4, 8),
    "attn_v": (4, 8),
    "attn_output": (8, 16),
    "ffn_gate": (12, 8),
    "ffn_up": (12, 8),
    "ffn_down": (8, 12),
}


def write_tiny_base(path: Path, architecture: str) -> Path:
    """A 2-layer GGUF with the projections' shapes and nothing else real."""
    writer = gguf.GGUFWriter(path, architecture)
    writer.add_block_count(2)
    writer.add_tensor("token_embd.weight", np.zeros((32, 8), np.float32))
    for layer in range(2):
        for target, shape in TINY_SHAPES.items():
            writer.add_tensor(f"blk.{layer}.{target}.weight", np.zeros(shape, np.float32))
        writer.add_tensor(f"blk.{layer}.attn_norm.weight", np.zeros(8, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_base(tmp_path_factory.mktemp("tiny") / "tiny.gguf", "gemma3")


@pytest.fixture()
def tiny_weights(tiny_base: Path) -> dict[str, Array]:
    return random_lora(base_model_info(tiny_base).shapes, range(2))


def export_error(adapter: Path, base: Path, out: Path) -> TrainingError:
    with pytest.raises(TrainingError) as info:
        export_adapter(adapter, base, out)
    assert info.value.hint, info.value.render()
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(out.name)]
    return info.value


# the tiny base: the contract and every refusal ------------------------------------------


def test_base_shapes_are_numpy_order(tiny_base: Path) -> None:
    """GGUF stores (in, out); the exporter compares in peft's (out, in)."""
    info = base_model_info(tiny_base)
    assert info.architecture == "gemma3"
    assert info.shapes["blk.1.attn_q.weight"] == (16, 8)
    assert info.shapes["blk.0.ffn_down.weight"] == (8, 12)
    assert "blk.0.attn_norm.weight" not in info.shapes


def test_export_writes_the_llama_cpp_contract(
    tiny_base: Path, tiny_weights: dict[str, Array], tmp_path: Path
) -> None:
    adapter = write_adapter(tmp_path / "adapter", tiny_weights, lora_alpha=16)
    out = tmp_path / "out" / "tiny.lora.gguf"
    report = export_adapter(adapter, tiny_base, out, name="tiny test")
    assert (report.tensors, report.layers, report.rank, report.alpha) == (28, 2, 4, 16.0)
    assert report.bytes == out.stat().st_size
    assert report.architecture == "gemma3"

    reader = gguf.GGUFReader(out)
    assert field_value(reader, "general.architecture") == "gemma3"
    assert field_value(reader, "general.type") == "adapter"
    assert field_value(reader, "adapter.type") == "lora"
    assert field_value(reader, "general.name") == "tiny test"
    alpha = reader.get_field("adapter.lora.alpha")
    assert alpha is not None and alpha.types == [gguf.GGUFValueType.FLOAT32]
    assert alpha.contents() == 16.0
    tensors = {tensor.name: tensor for tensor in reader.tensors}
    expected = {
        f"blk.{layer}.{target}.weight.lora_{half}"
        for layer in range(2)
        for target in TINY_SHAPES
        for half in "ab"
    }
    assert set(tensors) == expected
    q_a, q_b = tensors["blk.1.attn_q.weight.lora_a"], tensors["blk.1.attn_q.weight.lora_b"]
    assert q_a.tensor_type == gguf.GGMLQuantizationType.F32
    assert list(q_a.shape) == [8, 4]  # GGUF order: ne0 = in, ne1 = rank
    assert list(q_b.shape) == [4, 16]  # ne0 = rank, ne1 = out
    np.testing.assert_array_equal(
        np.asarray(q_a.data).reshape(4, 8), tiny_weights[peft_key(1, "q_proj", "A")]
    )
    np.testing.assert_array_equal(
        np.asarray(q_b.data).reshape(16, 4), tiny_weights[peft_key(1, "q_proj", "B")]
    )


def test_f16_and_bf16(tiny_base: Path, tiny_weights: dict[str, Array], tmp_path: Path) -> None:
    """f16 output halves the file; a bf16 adapter (numpy has no bfloat16) is read exactly."""
    adapter = write_adapter(tmp_path / "adapter", tiny_weights)
    half = export_adapter(adapter, tiny_base, tmp_path / "half.gguf", dtype="f16")
    tensor = gguf.GGUFReader(half.path).tensors[0]
    assert tensor.tensor_type == gguf.GGMLQuantizationType.F16

    bf16 = {key: torch.from_numpy(value).to(torch.bfloat16) for key, value in tiny_weights.items()}
    save_torch_file(bf16, str(adapter / "adapter_model.safetensors"))
    export_adapter(adapter, tiny_base, tmp_path / "bf16.gguf")
    tensors = {t.name: t for t in gguf.GGUFReader(tmp_path / "bf16.gguf").tensors}
    key = peft_key(0, "down_proj", "B")
    np.testing.assert_array_equal(
        np.asarray(tensors["blk.0.ffn_down.weight.lora_b"].data).reshape(8, 4),
        bf16[key].float().numpy(),
    )


def test_an_export_replaces_the_file_atomically(
    tiny_base: Path, tiny_weights: dict[str, Array], tmp_path: Path
) -> None:
    adapter = write_adapter(tmp_path / "adapter", tiny_weights)
    out = tmp_path / "a.gguf"
    out.write_bytes(b"old")
    export_adapter(adapter, tiny_base, out)
    assert out.read_bytes()[:4] == b"GGUF"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.gguf", "adapter"]


def test_a_partial_adapter_and_a_multimodal_prefix(
    tiny_base: Path, tiny_weights: dict[str, Array], tmp_path: Path
) -> None:
    """Only some projections, under Gemma3ForConditionalGeneration's key prefix."""
    weights = {
        key.replace("model.layers", "model.language_model.layers"): value
        for key, value in tiny_weights.items()
        if ".v_proj." in key
    }
    adapter = write_adapter(tmp_path / "adapter", weights)
    report = export_adapter(adapter, tiny_base, tmp_path / "v.gguf")
    names = {t.name for t in gguf.GGUFReader(report.path).tensors}
    assert names == {f"blk.{i}.attn_v.weight.lora_{h}" for i in range(2) for h in "ab"}


@pytest.mark.parametrize(
    "key",
    [
        "base_model.model.model.embed_tokens.lora_embedding_A",
        "base_model.model.lm_head.lora_A.weight",
        "base_model.model.model.layers.0.self_attn.q_proj.lora_B.bias",
        "base_model.model.model.layers.0.input_layernorm.weight",
        "base_model.model.vision_tower.encoder.layers.0.self_attn.q_proj.lora_A.weight",
    ],
)
def test_weights_llama_cpp_has_no_place_for(
    key: str, tiny_base: Path, tiny_weights: dict[str, Array], tmp_path: Path
) -> None:
    adapter = write_adapter(tmp_path / "adapter", {**tiny_weights, key: np.ones((4, 8), "f4")})
    error = export_error(adapter, tiny_base, tmp_path / "out.gguf")
    assert error.code == "TRAIN_005"
    assert key in error.message
    assert "target_modules" in (error.hint or "")


def test_shape_mismatches(tiny_base: Path, tiny_weights: dict[str, Array], tmp_path: Path) -> None:
    """Another model's sizes, a layer the base lacks, A and B of different ranks."""
    cases: dict[str, dict[str, Array]] = {
        "wrong out": {peft_key(0, "q_proj", "B"): np.ones((8, 4), "f4")},
        "wrong in": {peft_key(1, "down_proj", "A"): np.ones((4, 8), "f4")},
        "ranks": {peft_key(0, "up_proj", "A"): np.ones((2, 8), "f4")},
        "no such layer": {
            peft_key(2, "v_proj", "A"): np.ones((4, 8), "f4"),
            peft_key(2, "v_proj", "B"): np.ones((4, 4), "f4"),
        },
    }
    messages = {}
    for case, change in cases.items():
        adapter = write_adapter(tmp_path / case, {**tiny_weights, **change})
        error = export_error(adapter, tiny_base, tmp_path / "out.gguf")
        assert error.code == "TRAIN_005", case
        messages[case] = error.message
    assert (
        "blk.0.attn_q.weight maps 8 -> 8 features, the base model's 8 -> 16"
        in (messages["wrong out"])
    )
    assert "not (r, in) and (out, r)" in messages["ranks"]
    assert "does not have" in messages["no such layer"]


def test_duplicates_non_finite_values_and_f16_overflow(
    tiny_base: Path, tiny_weights: dict[str, Array], tmp_path: Path
) -> None:
    key = peft_key(0, "v_proj", "A")
    twice = {**tiny_weights, key.replace("model.layers", "model.language_model.layers"): np.ones(1)}
    error = export_error(write_adapter(tmp_path / "twice", twice), tiny_base, tmp_path / "o")
    assert "two lora_A weights for layer 0's self_attn.v_proj" in error.message

    diverged = dict(tiny_weights)
    diverged[key] = np.full((4, 8), np.nan, np.float32)
    error = export_error(write_adapter(tmp_path / "nan", diverged), tiny_base, tmp_path / "o")
    assert "NaN" in error.message

    huge = dict(tiny_weights)
    huge[key] = np.full((4, 8), 1e6, np.float32)
    adapter = write_adapter(tmp_path / "huge", huge)
    with pytest.raises(TrainingError) as info:
        export_adapter(adapter, tiny_base, tmp_path / "o", dtype="f16")
    assert info.value.code == "TRAIN_005"
    assert info.value.hint == "export as f32"
    export_adapter(adapter, tiny_base, tmp_path / "o")


def test_q_and_k_only_where_their_layout_is_known(
    tiny_weights: dict[str, Array], tmp_path: Path
) -> None:
    """A llama-architecture GGUF stores q/k rows permuted: q/k LoRA is refused, the rest is not."""
    llama = write_tiny_base(tmp_path / "llama.gguf", "llama")
    error = export_error(write_adapter(tmp_path / "all", tiny_weights), llama, tmp_path / "o")
    assert "blk.0.attn_k.weight" in error.message
    assert "q_proj and k_proj" in (error.hint or "")
    rest = {k: v for k, v in tiny_weights.items() if ".q_proj." not in k and ".k_proj." not in k}
    report = export_adapter(write_adapter(tmp_path / "rest", rest), llama, tmp_path / "o")
    assert report.architecture == "llama"
    assert report.tensors == 20


def test_a_missing_half(tiny_base: Path, tiny_weights: dict[str, Array], tmp_path: Path) -> None:
    del tiny_weights[peft_key(1, "k_proj", "B")]
    error = export_error(write_adapter(tmp_path / "a", tiny_weights), tiny_base, tmp_path / "o")
    assert error.code == "TRAIN_005"
    assert "no lora_B for blk.1.attn_k.weight" in error.message


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"use_rslora": True}, "rank-stabilized"),
        ({"use_dora": True}, "DoRA"),
        ({"peft_type": "IA3"}, "IA3 adapter"),
        ({"lora_alpha": 0}, "lora_alpha 0"),
        ({"lora_alpha": "8"}, "lora_alpha '8'"),
        ({"alpha_pattern": {"q_proj": 32}}, "alpha_pattern"),
        ({"fan_in_fan_out": True}, "fan_in_fan_out"),
        ({"alora_invocation_tokens": [1, 2]}, "alora_invocation_tokens"),
    ],
)
def test_configs_llama_cpp_cannot_express(
    config: dict[str, Any],
    words: str,
    tiny_base: Path,
    tiny_weights: dict[str, Array],
    tmp_path: Path,
) -> None:
    adapter = write_adapter(tmp_path / "adapter", tiny_weights, **config)
    error = export_error(adapter, tiny_base, tmp_path / "out.gguf")
    assert error.code == "TRAIN_005"
    assert words in error.message


def test_what_is_not_an_adapter_directory(
    tiny_base: Path, tiny_weights: dict[str, Array], tmp_path: Path
) -> None:
    out = tmp_path / "out.gguf"
    assert export_error(tmp_path / "missing", tiny_base, out).code == "TRAIN_004"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no adapter_config.json" in export_error(empty, tiny_base, out).message

    legacy = write_adapter(tmp_path / "legacy", tiny_weights)
    (legacy / "adapter_model.safetensors").rename(legacy / "adapter_model.bin")
    error = export_error(legacy, tiny_base, out)
    assert error.code == "TRAIN_004"
    assert "safe_serialization=True" in (error.hint or "")

    broken = write_adapter(tmp_path / "broken", tiny_weights)
    (broken / "adapter_config.json").write_text("{not json", encoding="utf-8")
    assert export_error(broken, tiny_base, out).code == "TRAIN_004"
    (broken / "adapter_config.json").write_text("[]", encoding="utf-8")
    assert export_error(broken, tiny_base, out).code == "TRAIN_004"

    truncated = write_adapter(tmp_path / "truncated", tiny_weights)
    weights = truncated / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    assert export_error(truncated, tiny_base, out).code == "TRAIN_004"

    nothing = write_adapter(tmp_path / "nothing", {})
    assert export_error(nothing, tiny_base, out).code == "TRAIN_005"


def test_importing_the_exporter_needs_no_torch() -> None:
    code = (
        "import sys, remora.training.export; "
        "assert not {'torch', 'transformers', 'peft'} & set(sys.modules), sys.modules.keys()"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# the embedded model in llama.cpp --------------------------------------------------------


@pytest.fixture(scope="module")
def embedded() -> Path:
    return resolve_model_path(ModelConfig())


@pytest.fixture(scope="module")
def single_lane(embedded: Path) -> Iterator[LlamaCppBackend]:
    """One sequence, so every prompt is evaluated in full and outputs compare exactly."""
    backend = LlamaCppBackend(embedded, context_size=512, lanes=1, sequences=1)
    yield backend
    backend.close()


@pytest.mark.model
def test_round_trip_on_the_embedded_model(
    embedded: Path, single_lane: LlamaCppBackend, tmp_path: Path
) -> None:
    """A random rank-4 adapter on every projection of all 18 layers loads in llama.cpp and
    changes what the model says; the same adapter with B = 0 changes nothing."""
    info = base_model_info(embedded)
    assert info.architecture == "gemma3"
    assert info.shapes["blk.0.attn_q.weight"] == (1024, 640)  # 4 heads x 256 <- hidden 640
    assert info.shapes["blk.0.attn_k.weight"] == (256, 640)
    assert info.shapes["blk.17.ffn_down.weight"] == (640, 2048)
    weights = random_lora(info.shapes, range(18), scale=0.5)
    zero = {k: np.zeros_like(v) if ".lora_B." in k else v for k, v in weights.items()}
    strong = export_adapter(write_adapter(tmp_path / "strong", weights), embedded, tmp_path / "s")
    silent = export_adapter(write_adapter(tmp_path / "zero", zero), embedded, tmp_path / "z")
    half = export_adapter(tmp_path / "strong", embedded, tmp_path / "h", dtype="f16")
    assert (strong.tensors, strong.layers, strong.rank) == (252, 18, 4)
    assert half.bytes < 0.6 * strong.bytes

    reader = gguf.GGUFReader(strong.path)
    assert field_value(reader, "general.architecture") == "gemma3"
    assert field_value(reader, "general.type") == "adapter"
    assert field_value(reader, "adapter.type") == "lora"
    assert field_value(reader, "adapter.lora.alpha") == 8.0
    shapes = {t.name: list(t.shape) for t in reader.tensors}
    assert shapes["blk.5.attn_output.weight.lora_a"] == [1024, 4]
    assert shapes["blk.5.attn_output.weight.lora_b"] == [4, 640]

    def say(adapter: Path | None) -> str:
        request = ModelRequest(
            messages=[Message(role="user", content="Name three colors of the rainbow.")],
            max_tokens=12,
            adapter=str(adapter) if adapter else None,
        )
        return single_lane.generate(request).text

    base = say(None)
    assert say(silent.path) == base
    assert say(strong.path) != base
    assert say(half.path) != base
    verify_adapter(strong.path, embedded)


@pytest.mark.model
def test_verify_turns_llama_cpp_refusals_into_train_005(embedded: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + bytes(60))
    for path in (junk, embedded):
        with pytest.raises(TrainingError) as info:
            verify_adapter(path, embedded)
        assert info.value.code == "TRAIN_005"
        assert info.value.hint
    assert "general.type" in info.value.message  # llama.cpp's own reason, from its log


# torch vs llama.cpp: the layout ---------------------------------------------------------


def llama_next_logits(engine: _Engine, ids: list[int], adapter: Path | None) -> Array:
    """llama.cpp's logits after ``ids``, evaluated from scratch with ``adapter`` applied
    (the engine keeps loaded adapters by path: a new file needs a new path)."""
    loaded = engine.load_adapter(adapter) if adapter else None
    engine.use_adapter(loaded)
    engine.clear_cache()
    slot, _ = engine._acquire(None, loaded.key if loaded else None, ids)
    engine._decode(slot, ids, frozenset({slot.seq}))
    return np.array(engine._logits(), dtype=np.float64)


def rows_permuted(b: Array, heads: int) -> Array:
    """lora_B with each head's rows reordered the way llama-style rope permutes q/k."""
    out, rank = b.shape
    return np.ascontiguousarray(
        b.reshape(heads, 2, out // heads // 2, rank).swapaxes(1, 2).reshape(out, rank)
    )


@pytest.mark.model
@pytest.mark.slow
def test_llama_cpp_applies_the_adapter_as_peft_does(
    embedded: Path, single_lane: LlamaCppBackend, tmp_path: Path
) -> None:
    """The change a peft LoRA makes to the next-token logits, in torch and in llama.cpp
    with the exported GGUF, correlates over the 262k-token vocabulary: for the whole
    adapter and for each projection on its own (a wrong name, transposition or q/k
    permutation of one projection would hide in the whole). The comparison is shown to
    have teeth: q_proj exported with llama-style permuted rows does not correlate.

    Slow: transformers spends ~30 s dequantizing the GGUF; the rest takes ~15 s.
    """
    engine = single_lane.engine
    ids = engine.tokenize(
        "The capital of France is Paris, and the capital of Germany is", add_bos=True
    )
    model = AutoModelForCausalLM.from_pretrained(
        str(embedded.parent), gguf_file=embedded.name, dtype=torch.float32
    )
    tokens = torch.tensor([ids])
    with torch.no_grad():
        torch_base = model(tokens).logits[0, -1].double().numpy()
    llama_base = llama_next_logits(engine, ids, None)
    assert np.corrcoef(torch_base, llama_base)[0, 1] > 0.99  # the same base model

    config = LoraConfig(r=4, lora_alpha=8, target_modules=MODULES, init_lora_weights=False)
    peft_model = get_peft_model(model, config)
    assert isinstance(peft_model, PeftModel)
    generator = torch.Generator().manual_seed(0)
    trained: dict[str, tuple[str, torch.Tensor, torch.Tensor]] = {}
    with torch.no_grad():
        for name, module in peft_model.named_modules():
            if name.endswith(tuple(MODULES)) and hasattr(module, "lora_A"):
                lora_a, lora_b = module.lora_A["default"].weight, module.lora_B["default"].weight
                lora_a.copy_(torch.randn(lora_a.shape, generator=generator))
                # each delta W entry ~ 0.4 std(W): a clear change, below saturation
                size = 0.4 * float(module.base_layer.weight.std()) / (2 * 2)
                lora_b.copy_(torch.randn(lora_b.shape, generator=generator) * size)
                trained[name] = (name.rsplit(".", 1)[1], lora_b, lora_b.clone())
    saved = tmp_path / "peft"
    peft_model.save_pretrained(str(saved))
    weights = load_file(str(saved / "adapter_model.safetensors"))

    def torch_logits(only: str | None) -> Array:
        with torch.no_grad():
            for kind, lora_b, value in trained.values():
                lora_b.copy_(value if only in (None, kind) else torch.zeros_like(value))
            return np.asarray(peft_model(tokens).logits[0, -1], dtype=np.float64)

    def llama_logits(only: str | None, change: Any = None) -> Array:
        label = f"{only or 'all'}{'.changed' if change is not None else ''}"
        adapter = saved if only is None else tmp_path / label
        if only is not None:
            subset = {k: v for k, v in weights.items() if f".{only}." in k}
            if change is not None:
                subset = {k: change(v) if ".lora_B." in k else v for k, v in subset.items()}
            write_adapter(adapter, subset)
            shutil.copy(saved / "adapter_config.json", adapter)
        out = export_adapter(adapter, embedded, tmp_path / f"{label}.gguf").path
        return llama_next_logits(engine, ids, out)

    def correlation(only: str | None, change: Any = None) -> float:
        torch_delta = torch_logits(only) - torch_base
        llama_delta = llama_logits(only, change) - llama_base
        return float(np.corrcoef(torch_delta, llama_delta)[0, 1])

    found = {module: correlation(module) for module in MODULES}
    found["all"] = correlation(None)
    print("delta correlation torch vs llama.cpp:", {k: round(v, 4) for k, v in found.items()})
    assert min(found.values()) > 0.9, found
    permuted = correlation("q_proj", lambda b: rows_permuted(b, heads=4))
    print("q_proj with permuted rows:", round(permuted, 4))
    assert permuted < 0.5, permuted
