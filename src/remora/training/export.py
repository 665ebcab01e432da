"""Export a PEFT LoRA adapter as a llama.cpp LoRA GGUF, checked against its base model.

peft saves an adapter as ``adapter_config.json`` plus ``adapter_model.safetensors``;
llama.cpp loads adapters as GGUF files whose metadata names the base architecture,
``general.type = adapter``, ``adapter.type = lora`` and ``adapter.lora.alpha``, and
whose tensors are ``blk.N.<proj>.weight.lora_a`` / ``.lora_b`` next to the base's
``blk.N.<proj>.weight``. PEFT's ``lora_A.weight`` is ``(r, in)`` and ``lora_B.weight``
``(out, r)`` in numpy order, which is what llama.cpp expects once the writer reverses
dimensions into GGUF order, so the data is written as it is: no transposition, and no
q/k permutation for architectures whose GGUF keeps Hugging Face's q/k row order
(:data:`QK_AS_IN_PEFT`, Gemma 3 among them; a q/k LoRA for any other is refused, since
llama-style GGUFs permute those rows for their rope). llama.cpp scales by ``alpha / r`` as
peft does, which is why rank-stabilized LoRA (``alpha / sqrt(r)``) and DoRA (a
magnitude vector llama.cpp has no place for) are refused rather than silently changed.

Every target is checked against the base GGUF before anything is written: each tensor
must exist there with the same in/out sizes, so an adapter trained for another model,
or a LoRA on a module llama.cpp cannot patch (``embed_tokens``, ``lm_head``,
``modules_to_save``), is a TRAIN_005 with a hint instead of a file llama.cpp rejects
later at run time. TRAIN_004 is an adapter directory that cannot be read at all.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import re
import struct
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from remora.errors import ModelError, TrainingError
from remora.model.defaults import check_gguf

CONFIG_FILE = "adapter_config.json"
WEIGHTS_FILE = "adapter_model.safetensors"

PROJECTIONS: dict[str, str] = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
"""PEFT module (relative to a decoder layer) -> llama.cpp tensor (``blk.N.<name>.weight``)."""

_KEY = re.compile(
    r"^(?:base_model\.model\.)?(?:model\.)?(?:language_model\.)?(?:model\.)?"
    r"layers\.(\d+)\.(self_attn\.[qkvo]_proj|mlp\.(?:gate|up|down)_proj)\.lora_([AB])\.weight$"
)
"""A LoRA weight of a text decoder layer, for a causal LM (``model.layers``) or the
language model of a multimodal one (``model.language_model.layers``), never a vision
tower's layers."""

QK_AS_IN_PEFT = frozenset({"gemma", "gemma2", "gemma3", "qwen2", "qwen3"})
"""Architectures whose GGUF keeps q/k rows in Hugging Face's order (rotate-half rope), so
q/k LoRA weights need no permutation; gemma3 is proven by the tests. Llama-style models
store q/k rows permuted for interleaved rope, so their q/k LoRA is refused here."""

_TARGETS_HINT = (
    "train the LoRA only on q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj and down_proj "
    "(target_modules), without modules_to_save or biases"
)

_VARIANT_OPTIONS = (
    "use_qalora",
    "use_bdlora",
    "alora_invocation_tokens",
    "layer_replication",
    "velora_config",
    "kasa_config",
    "monteclora_config",
    "arrow_config",
)
"""peft options that change what the adapter computes beyond ``W + alpha/r * B A``."""

_BF16 = "BF16"
_RAW_DTYPES: dict[str, str] = {"F64": "<f8", "F32": "<f4", "F16": "<f2", _BF16: "<u2"}


class ExportReport(BaseModel):
    """What an export wrote."""

    path: Path
    architecture: str
    tensors: int
    layers: int
    rank: int
    alpha: float
    bytes: int
    seconds: float


@dataclass(frozen=True)
class BaseModelInfo:
    """What the exporter needs from a base GGUF: its architecture and matrix shapes."""

    architecture: str
    shapes: Mapping[str, tuple[int, int]]
    """Tensor name -> ``(out, in)`` (numpy order, the reverse of GGUF's), 2-D tensors only."""


@dataclass(frozen=True)
class _Pair:
    layer: int
    target: str
    lora_a: np.ndarray[Any, Any]
    lora_b: np.ndarray[Any, Any]

    @property
    def tensor(self) -> str:
        return f"blk.{self.layer}.{self.target}.weight"


def base_model_info(base_gguf: Path) -> BaseModelInfo:
    """The architecture and 2-D tensor shapes of ``base_gguf`` (MODEL_001/002 if unusable).

    Reading a GGUF's metadata takes gguf's reader 10-20 s (it builds an object per entry
    of the 262k-token vocabulary), so the result is cached per file version.
    """
    check_gguf(base_gguf)
    stat = base_gguf.stat()
    return _base_model_info(base_gguf.resolve(), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _base_model_info(path: Path, _size: int, _mtime_ns: int) -> BaseModelInfo:
    import gguf

    try:
        reader = gguf.GGUFReader(path)
        field = reader.get_field(gguf.Keys.General.ARCHITECTURE)
        architecture = str(field.contents()) if field is not None else ""
        shapes = {
            tensor.name: (int(tensor.shape[1]), int(tensor.shape[0]))
            for tensor in reader.tensors
            if len(tensor.shape) == 2
        }
    except (OSError, ValueError, KeyError, IndexError) as exc:
        raise ModelError(
            "MODEL_002",
            f"cannot read the base model {path}: {exc}",
            "download the model again, or point model.path at a llama.cpp .gguf file",
        ) from None
    if not architecture:
        raise ModelError(
            "MODEL_002",
            f"{path} names no general.architecture",
            "point model.path at a llama.cpp model GGUF",
        )
    return BaseModelInfo(architecture=architecture, shapes=shapes)


def _export_error(message: str, hint: str) -> TrainingError:
    return TrainingError("TRAIN_005", message, hint)


def _read_config(adapter_dir: Path) -> dict[str, Any]:
    if not adapter_dir.is_dir():
        raise TrainingError(
            "TRAIN_004",
            f"adapter directory {adapter_dir} does not exist",
            "pass the directory remora train finetune (or peft's save_pretrained) wrote",
        )
    path = adapter_dir / CONFIG_FILE
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TrainingError(
            "TRAIN_004",
            f"{adapter_dir} is not a PEFT adapter: it has no {CONFIG_FILE}",
            "pass the directory remora train finetune (or peft's save_pretrained) wrote",
        ) from None
    except (OSError, ValueError) as exc:
        raise TrainingError(
            "TRAIN_004", f"cannot read {path}: {exc}", "save the adapter again"
        ) from None
    if not isinstance(config, dict):
        raise TrainingError("TRAIN_004", f"{path} is not a JSON object", "save the adapter again")
    return config


def _check_config(config: Mapping[str, Any], path: Path) -> float:
    """The adapter's ``lora_alpha``, once the config asks for nothing llama.cpp cannot do."""
    kind = config.get("peft_type", "LORA")
    if kind != "LORA":
        raise _export_error(
            f"{path} is a {kind} adapter; llama.cpp loads only LoRA adapters",
            "train a LoRA adapter (peft.LoraConfig)",
        )
    if config.get("use_rslora"):
        raise _export_error(
            f"{path} uses rank-stabilized LoRA (scale alpha/sqrt(r)); llama.cpp scales by alpha/r",
            "train with use_rslora=False",
        )
    if config.get("use_dora"):
        raise _export_error(
            f"{path} is a DoRA adapter; llama.cpp LoRA adapters have no magnitude vector",
            "train with use_dora=False",
        )
    variants = [option for option in _VARIANT_OPTIONS if config.get(option)]
    if variants:
        raise _export_error(
            f"{path} sets {', '.join(variants)}: a LoRA variant llama.cpp adapters cannot express",
            "train a plain LoRA (peft.LoraConfig with those options left unset)",
        )
    if config.get("fan_in_fan_out"):
        raise _export_error(
            f"{path} stores fan_in_fan_out weights (GPT-2 style Conv1D layers)",
            "train the LoRA on the model's nn.Linear projections with fan_in_fan_out=False",
        )
    alpha = config.get("lora_alpha")
    if (
        isinstance(alpha, bool)
        or not isinstance(alpha, int | float)
        or not math.isfinite(alpha)
        or alpha <= 0
    ):
        raise _export_error(
            f"{path} has lora_alpha {alpha!r}; llama.cpp needs a positive number",
            "train with a positive lora_alpha (e.g. twice the rank)",
        )
    patterns = config.get("alpha_pattern") or {}
    if any(value != alpha for value in dict(patterns).values()):
        raise _export_error(
            f"{path} sets alpha per module (alpha_pattern); a llama.cpp adapter has one alpha",
            "train with one lora_alpha for every module",
        )
    return float(alpha)


def _read_weights(adapter_dir: Path) -> dict[str, np.ndarray[Any, Any]]:
    path = adapter_dir / WEIGHTS_FILE
    if not path.is_file():
        legacy = (adapter_dir / "adapter_model.bin").is_file()
        raise TrainingError(
            "TRAIN_004",
            f"{adapter_dir} has no {WEIGHTS_FILE}",
            "save the adapter with save_pretrained(..., safe_serialization=True)"
            if legacy
            else "pass the directory remora train finetune (or peft's save_pretrained) wrote",
        )
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        return dict(load_file(path))
    except TypeError:
        return _read_raw_safetensors(path)  # numpy has no bfloat16
    except (OSError, SafetensorError) as exc:
        raise TrainingError(
            "TRAIN_004", f"cannot read {path}: {exc}", "save the adapter again"
        ) from None


def _read_raw_safetensors(path: Path) -> dict[str, np.ndarray[Any, Any]]:
    """A safetensors file as float32 arrays, bfloat16 included (peft saves bf16 adapters
    when the model was trained in bf16; safetensors' numpy loader cannot read them)."""
    try:
        data = path.read_bytes()
        (length,) = struct.unpack_from("<Q", data)
        header = json.loads(data[8 : 8 + length])
        start = 8 + length
        tensors: dict[str, np.ndarray[Any, Any]] = {}
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            dtype = _RAW_DTYPES.get(entry["dtype"])
            if dtype is None:
                raise ValueError(f"tensor {name} has dtype {entry['dtype']}")
            begin, end = entry["data_offsets"]
            array = np.frombuffer(data[start + begin : start + end], dtype=dtype)
            if entry["dtype"] == _BF16:
                array = (array.astype(np.uint32) << 16).view(np.float32)
            tensors[name] = array.reshape(entry["shape"])
    except (OSError, ValueError, KeyError, TypeError, struct.error) as exc:
        raise TrainingError(
            "TRAIN_004", f"cannot read {path}: {exc}", "save the adapter again"
        ) from None
    return tensors


def _pairs(
    weights: Mapping[str, np.ndarray[Any, Any]], base: BaseModelInfo, path: Path
) -> list[_Pair]:
    """The adapter's A/B pairs under llama.cpp's names, each checked against the base."""
    halves: dict[tuple[int, str], dict[str, np.ndarray[Any, Any]]] = {}
    unknown: list[str] = []
    for key, array in weights.items():
        match = _KEY.match(key)
        if match is None:
            unknown.append(key)
            continue
        layer, module, half = match.groups()
        found = halves.setdefault((int(layer), PROJECTIONS[module]), {})
        if half in found:
            raise _export_error(
                f"{path} has two lora_{half} weights for layer {layer}'s {module} (last {key})",
                "export an adapter saved by peft for one model",
            )
        found[half] = array
    if unknown:
        shown = ", ".join(sorted(unknown)[:3]) + (" ..." if len(unknown) > 3 else "")
        raise _export_error(
            f"{path} has {len(unknown)} weight(s) llama.cpp has no place for: {shown}",
            _TARGETS_HINT,
        )
    if not halves:
        raise _export_error(f"{path} holds no LoRA weights", _TARGETS_HINT)
    pairs: list[_Pair] = []
    for (layer, target), found in sorted(halves.items()):
        name = f"blk.{layer}.{target}.weight"
        if set(found) != {"A", "B"}:
            missing = "lora_B" if "A" in found else "lora_A"
            raise _export_error(
                f"{path} has no {missing} for {name}", "save the adapter again with peft"
            )
        if target in ("attn_q", "attn_k") and base.architecture not in QK_AS_IN_PEFT:
            raise _export_error(
                f"{path} adapts {name}: {base.architecture} models keep q/k rows in another "
                "order than Hugging Face's, which this exporter does not convert",
                "leave q_proj and k_proj out of target_modules, or export with llama.cpp's "
                "convert_lora_to_gguf.py",
            )
        pair = _Pair(layer, target, found["A"], found["B"])
        _check_shapes(pair, base, path)
        pairs.append(pair)
    return pairs


def _check_shapes(pair: _Pair, base: BaseModelInfo, path: Path) -> None:
    name = pair.tensor
    expected = base.shapes.get(name)
    if expected is None:
        raise _export_error(
            f"{path} adapts {name}, which the {base.architecture} base model does not have",
            "export against the base model the adapter was trained on",
        )
    a, b = pair.lora_a, pair.lora_b
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[1] or a.shape[0] < 1:
        raise _export_error(
            f"{path}: {name} has lora_A {a.shape} and lora_B {b.shape}, "
            "not (r, in) and (out, r) of one rank r",
            "save the adapter again with peft",
        )
    out_size, in_size = expected
    if (b.shape[0], a.shape[1]) != (out_size, in_size):
        raise _export_error(
            f"{path}: {name} maps {a.shape[1]} -> {b.shape[0]} features, "
            f"the base model's {in_size} -> {out_size}",
            "export against the base model the adapter was trained on",
        )
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise _export_error(
            f"{path}: {name} holds NaN or infinite values",
            "the training diverged; train again with a lower learning rate",
        )


def export_adapter(
    adapter_dir: Path,
    base_gguf: Path,
    out: Path,
    *,
    name: str | None = None,
    dtype: Literal["f32", "f16"] = "f32",
) -> ExportReport:
    """Write the PEFT adapter in ``adapter_dir`` as a llama.cpp LoRA GGUF at ``out``.

    The file is written next to ``out`` and renamed into place, so ``out`` is either
    the previous file or the complete new one. Nothing is written unless every tensor
    fits ``base_gguf``.
    """
    started = time.perf_counter()
    config = _read_config(adapter_dir)
    alpha = _check_config(config, adapter_dir / CONFIG_FILE)
    weights = _read_weights(adapter_dir)
    base = base_model_info(base_gguf)
    pairs = _pairs(weights, base, adapter_dir / WEIGHTS_FILE)
    numpy_type = np.float16 if dtype == "f16" else np.float32
    limit = float(np.finfo(numpy_type).max)
    too_large = [p.tensor for p in pairs if max(_peak(p.lora_a), _peak(p.lora_b)) > limit]
    if too_large:
        raise _export_error(
            f"{too_large[0]} holds values beyond {dtype}'s range ({limit:g})",
            "export as f32",
        )
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        _write(out, base.architecture, name or adapter_dir.resolve().name, alpha, pairs, numpy_type)
        size = out.stat().st_size
    except OSError as exc:
        raise _export_error(
            f"cannot write {out}: {exc.strerror or exc}",
            "choose a writable output path with free space",
        ) from None
    return ExportReport(
        path=out,
        architecture=base.architecture,
        tensors=2 * len(pairs),
        layers=len({pair.layer for pair in pairs}),
        rank=max(int(pair.lora_a.shape[0]) for pair in pairs),
        alpha=alpha,
        bytes=size,
        seconds=time.perf_counter() - started,
    )


def _peak(array: np.ndarray[Any, Any]) -> float:
    return float(np.abs(array).max()) if array.size else 0.0


def _write(
    out: Path,
    architecture: str,
    name: str,
    alpha: float,
    pairs: list[_Pair],
    numpy_type: type[np.floating[Any]],
) -> None:
    import gguf

    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=out.name + ".", suffix=".tmp")
    os.close(fd)
    try:
        writer = gguf.GGUFWriter(tmp, architecture)
        writer.add_type(gguf.GGUFType.ADAPTER)
        writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
        writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
        writer.add_name(name)
        for pair in pairs:
            writer.add_tensor(
                pair.tensor + ".lora_a", np.ascontiguousarray(pair.lora_a, numpy_type)
            )
            writer.add_tensor(
                pair.tensor + ".lora_b", np.ascontiguousarray(pair.lora_b, numpy_type)
            )
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def verify_adapter(adapter_gguf: Path, base_gguf: Path) -> None:
    """Prove llama.cpp accepts ``adapter_gguf`` for ``base_gguf``: load it, apply it and
    generate one token through the backend the agents use (TRAIN_005 if it cannot).

    llama.cpp says why it rejects an adapter only in its log, so the log is captured
    while the adapter loads and its last error is part of the message.
    """
    from remora.model.base import Message, ModelRequest
    from remora.model.llama_cpp import LlamaCppBackend

    check_gguf(base_gguf)
    request = ModelRequest(
        messages=[Message(role="user", content="Hello")], max_tokens=1, adapter=str(adapter_gguf)
    )
    with _captured_llama_log() as lines:
        try:
            backend = LlamaCppBackend(base_gguf, context_size=512, lanes=1, sequences=1)
            try:
                backend.generate(request)
            finally:
                backend.close()
        except ModelError as exc:
            reason = next((line for line in reversed(lines) if _LOG_ERROR.search(line)), "")
            raise _export_error(
                f"llama.cpp does not load the exported adapter {adapter_gguf}: {exc.message}"
                + (f" ({reason.strip()})" if reason else ""),
                "export it again from the adapter directory, against the base model it was "
                "trained on",
            ) from None


_LOG_ERROR = re.compile(r"error|fail|invalid|incorrect|mismatch|not ", re.IGNORECASE)


@contextlib.contextmanager
def _captured_llama_log() -> Iterator[list[str]]:
    """The lines llama.cpp logs meanwhile (the backend forwards them at DEBUG)."""
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger("remora.model.llama_cpp")
    handler = Collect(logging.DEBUG)
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
