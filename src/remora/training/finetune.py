"""LoRA fine-tuning of the runtime's model with transformers and peft, on the CPU or a GPU.

What the adapter is trained on is what it will run with:

- Base weights: transformers dequantizes the very GGUF the llama.cpp backend loads
  (the embedded Gemma 3 270M Q4_K_M unless ``base`` says otherwise), so the adapter
  learns to correct the quantized weights, not the original ones. Checked on a real
  lint turn: completion loss 0.801 here, 0.816 through llama.cpp.
- Tokens: the backend's own ``tokenize_prompt`` over the same GGUF (llama.cpp's
  tokenizer, ``special=True``, no added BOS: the prompt text starts with ``<bos>``).
  Prompt and completion are tokenized apart and concatenated, because at run time the
  prompt's tokens are evaluated and the model then generates the completion's.
  Tokenizing ``prompt + completion`` in one go is not the same: on a real lint turn the
  prompt's final ``>`` and the completion's first ``<`` become one ``><`` token, a
  sequence the model never sees while running. The backend tokenizes the earlier calls
  in a prompt apart too (``functiongemma.prompt_pieces``), so an episode's next prompt
  starts with the previous prompt and completion token for token, and its turns train
  as one sequence (``pack``). (In the embedded GGUF only ``<bos>``, ``<start_of_turn>``
  and ``<end_of_turn>`` are control tokens; FunctionGemma's function tags are plain
  text, 7 tokens each, and ``<escape>`` 3.)
- Loss on the completion tokens only. Logits are computed only at the positions that
  predict them (``logits_to_keep`` as an index tensor): Gemma's output layer has 262k
  rows, and projecting every prompt position doubled the step (float32, one thread, a
  330-token prompt and a 30-token call: 5.6-5.8 s against 2.6-2.8 s).

One sequence per forward pass (no padding), optionally several per optimizer step. The
base weights are bfloat16 when the CPU computes it natively (AVX512-BF16 or AMX: 1.45
against 3.2 s a step, completion loss equal to 3e-4), float32 otherwise (bfloat16
without them was reported 3.6x slower); the adapter and its optimizer are float32
either way. Half the usable CPUs by default (:func:`default_threads` says why). Where
torch sees a CUDA GPU (``device``), training runs there, in bfloat16.

The tokenized examples are kept in ``out_dir`` (``tokens.json.gz``, keyed by the base
model and the examples), so a resumed run does not tokenize again and a run can be
tokenized on one machine (:func:`prepare`) and trained on another that has torch but not
llama.cpp, such as a GPU server.

``out_dir`` becomes the PEFT adapter directory (``adapter_config.json``,
``adapter_model.safetensors``) with ``training.json`` (:class:`FinetuneReport`) and
``checkpoints/step-NNNNNNN`` (adapter, optimizer, scheduler, step, RNG states, each
written to a temporary directory and renamed). Running again with the same directory
resumes from the newest checkpoint, or returns at once when ``training.json`` records
the same run finished; a checkpoint made with other settings or examples is refused
(TRAIN_004) rather than mixed in. Example order depends only on the seed and the epoch,
so an interrupted run resumed gives the same adapter as an uninterrupted one. Ctrl-C
finishes the step, saves a checkpoint and raises :class:`TrainingInterrupted`; a
second Ctrl-C stops at once.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import math
import os
import random
import re
import shutil
import signal
import tempfile
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from remora.config import ModelConfig
from remora.errors import ModelError, TrainingError
from remora.model.defaults import EMBEDDED_FILENAME, EMBEDDED_SHA256, models_dir, resolve_model_path
from remora.model.llama_cpp import LlamaCppBackend, usable_cpus
from remora.training.dataset import TrainingExample

Tokenize = Callable[[str], list[int]]
"""Text to token ids, exactly as the runtime tokenizes a prompt."""

ATTENTION_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_MODULES = ("gate_proj", "up_proj", "down_proj")
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
REPORT_FILE = "training.json"
CHECKPOINTS = "checkpoints"
TOKENS_FILE = "tokens.json.gz"

_INSTALL = "pip install 'remora[train]'"
_CHECKPOINT = re.compile(r"step-(\d{7,})")
_FRESH = "use another output directory, or delete this one to start over"


class FinetuneSettings(BaseModel):
    """How to train. The fields that shape the result (all but the length of the run and
    the bookkeeping ones) go into the run's fingerprint, so a resume cannot mix them."""

    model_config = ConfigDict(extra="forbid")

    base: Path | None = Field(
        default=None, description="The GGUF to train against; None is the embedded model."
    )
    rank: int = Field(default=16, ge=1)
    alpha: int = Field(default=32, ge=1)
    mlp: bool = Field(default=False, description="Adapt gate/up/down_proj too, not just attention.")
    learning_rate: float = Field(default=2e-4, gt=0)
    warmup: float = Field(
        default=0.05,
        ge=0,
        lt=1,
        description="Share of the steps the learning rate rises over; it then falls to 0.",
    )
    weight_decay: float = Field(default=0.0, ge=0)
    max_grad_norm: float | None = Field(default=1.0, gt=0)
    epochs: float = Field(default=1.0, gt=0)
    steps: int | None = Field(default=None, ge=1, description="Optimizer steps; overrides epochs.")
    accumulation: int = Field(default=1, ge=1, description="Examples per optimizer step.")
    max_tokens: int = Field(
        default=4096,
        ge=2,
        description="Longer examples (prompt + completion) are skipped; packed sequences end here.",
    )
    pack: bool = Field(
        default=True,
        description="Train an episode's turns as one sequence where their prompts extend each "
        "other: the same losses, 3-5x fewer tokens.",
    )
    seed: int = 0
    threads: int | None = Field(default=None, ge=1, description="None: half the usable CPUs.")
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        default="auto", description="Of the loaded base weights; auto: bfloat16 if native."
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        default="auto", description="Where to train; auto: a CUDA GPU if torch sees one."
    )
    checkpoint_every: int = Field(default=50, ge=1)
    keep_checkpoints: int = Field(default=2, ge=1)
    validate_every: int | None = Field(default=None, ge=1)
    stop_after: int | None = Field(
        default=None, ge=1, description="Stop after this step with a checkpoint, to resume later."
    )
    minutes: float | None = Field(
        default=None,
        gt=0,
        description="Stop after the step during which this many minutes of this run have "
        "passed, with a checkpoint and the adapter as it stands, to resume later.",
    )

    @property
    def target_modules(self) -> list[str]:
        return list(ATTENTION_MODULES + (MLP_MODULES if self.mlp else ()))


class FinetuneReport(BaseModel):
    """What a run did and the numbers a model card needs; ``training.json`` holds it."""

    adapter_dir: Path
    complete: bool = Field(description="False when stop_after or minutes ended the run early.")
    stopped_for_time: bool = Field(
        default=False, description="The run stopped early because its minutes were spent."
    )
    step: int
    steps: int
    resumed_from: int | None = None
    base_gguf: str | None
    base_sha256: str | None
    agents: list[str] = Field(default_factory=list, description="Whose examples it trained on.")
    examples: int = Field(description="Training examples (model turns) used.")
    decisions: dict[str, int] = Field(
        default_factory=dict,
        description="Training examples per decision: the tool each expected call names.",
    )
    sequences: int = Field(description="What a step trains on: a turn, or an episode's turns.")
    skipped: int = Field(description="Training examples over max_tokens (or empty), not used.")
    validation_examples: int
    validation_skipped: int
    completion_tokens: int = Field(description="Tokens the loss covers over one epoch.")
    epochs: float
    seconds: float = Field(description="Training time over every session of the run.")
    seconds_per_step: float | None
    load_seconds: float = Field(description="Loading the base in the last session.")
    threads: int
    dtype: str
    device: str = "cpu"
    train_loss: float | None = Field(description="Mean loss of the last tenth of the steps.")
    validation_loss: float | None
    losses: list[float] = Field(description="Loss of every step.")
    validations: list[tuple[int, float]] = Field(default_factory=list)
    seed: int
    settings: FinetuneSettings
    fingerprint: str
    validation_digest: str


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped training after a checkpoint: rerunning resumes from it."""

    def __init__(self, step: int, checkpoint: Path | None) -> None:
        super().__init__(f"training interrupted after step {step}")
        self.step = step
        self.checkpoint = checkpoint


@dataclass(frozen=True)
class CompletionBatch:
    """One sequence as the model is trained on it: the logits at ``positions`` of
    ``input_ids`` predict ``targets``, the completions' tokens, and nothing else.

    A packed sequence holds several turns of one episode; ``turns`` is how many of
    the targets belong to each, so every turn weighs the same in the loss.
    """

    input_ids: list[int]
    positions: list[int]
    targets: list[int]
    turns: tuple[int, ...]


def completion_batch(prompt: Sequence[int], completion: Sequence[int]) -> CompletionBatch:
    """Prompt tokens then completion tokens (the last one is only predicted, never fed)."""
    return pack_turns([(prompt, completion)])


def pack_turns(turns: Sequence[tuple[Sequence[int], Sequence[int]]]) -> CompletionBatch:
    """Turns of one episode as one sequence: each prompt must start with the previous
    prompt and completion, token for token, so the logits of every turn are those the
    turn would get alone (causal attention sees only what comes before)."""
    tokens: list[int] = []
    positions: list[int] = []
    targets: list[int] = []
    for prompt, completion in turns:
        if not prompt or not completion:
            raise ValueError("each turn needs prompt and completion tokens")
        if list(prompt[: len(tokens)]) != tokens:
            raise ValueError("a prompt does not start with the previous prompt and completion")
        start = len(prompt) - 1
        positions.extend(range(start, start + len(completion)))
        targets.extend(completion)
        tokens = [*prompt, *completion]
    return CompletionBatch(
        input_ids=tokens[:-1],
        positions=positions,
        targets=targets,
        turns=tuple(len(completion) for _, completion in turns),
    )


def completion_loss(model: Any, batch: CompletionBatch, *, full_logits: bool = False) -> Any:
    """Mean over the batch's turns of each turn's mean cross-entropy (a torch scalar).

    The logits are projected only at ``batch.positions``; ``full_logits`` projects every
    position and selects afterwards (the same value, slower; kept for comparison).
    """
    import torch

    device = next(model.parameters()).device
    ids = torch.tensor([batch.input_ids], dtype=torch.long, device=device)
    positions = torch.tensor(batch.positions, dtype=torch.long, device=device)
    if full_logits:
        logits = model(input_ids=ids, use_cache=False).logits[0, positions]
    else:
        logits = model(input_ids=ids, logits_to_keep=positions, use_cache=False).logits[0]
    targets = torch.tensor(batch.targets, dtype=torch.long, device=device)
    losses = torch.nn.functional.cross_entropy(logits.float(), targets, reduction="none")
    weights = torch.cat([torch.full((n,), 1.0 / n, device=device) for n in batch.turns])
    return (losses * weights).sum() / len(batch.turns)


def native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU computes bfloat16 natively (AVX512-BF16 or AMX)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    flags = set(re.findall(r"[\w.]+", " ".join(re.findall(r"^flags\s*:(.*)$", text, re.M))))
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def training_device(choice: Literal["auto", "cpu", "cuda"] = "auto") -> str:
    """``cuda`` where asked (or, for auto, where torch sees a GPU), else ``cpu``; TRAIN_019
    when CUDA is asked for and torch has none."""
    torch = _require("torch")
    available = bool(torch.cuda.is_available())
    if choice == "cuda" and not available:
        raise TrainingError(
            "TRAIN_019",
            "training on cuda was asked for, but torch sees no CUDA GPU",
            "train with --device cpu, or install a CUDA build of torch on a machine with a GPU",
        )
    return "cuda" if choice == "cuda" or (choice == "auto" and available) else "cpu"


def default_threads() -> int:
    """Half the usable CPUs (at least one), as for generation.

    torch's threads meet at a barrier after every operation too: on 2 cores shared with
    two other busy processes a bfloat16 step of the embedded model took 1.1-2.3 s on 1
    thread and 9.5-13 s on 2; with only one other process, 2 threads were 1.6-1.7x
    faster than 1. A long run should keep its pace whatever else the machine does; set
    ``threads`` on a machine left to the training alone.
    """
    return max(1, usable_cpus() // 2)


def base_gguf(settings: FinetuneSettings) -> Path:
    """The GGUF to train against (the embedded model assembled if needed); TRAIN_003."""
    try:
        return resolve_model_path(ModelConfig(path=settings.base))
    except ModelError as exc:
        raise TrainingError("TRAIN_003", exc.message, exc.hint) from None


@contextlib.contextmanager
def llama_tokenizer(gguf: Path) -> Iterator[Tokenize]:
    """llama.cpp's tokenizer over ``gguf``, the one the backend tokenizes prompts with."""
    try:
        backend = LlamaCppBackend(gguf, context_size=512, lanes=1)
    except ModelError as exc:
        raise TrainingError("TRAIN_003", exc.message, exc.hint) from None
    try:
        try:
            engine = backend.engine
        except ModelError as exc:
            raise TrainingError("TRAIN_003", exc.message, exc.hint) from None
        yield engine.tokenize_prompt
    finally:
        backend.close()


def load_base(
    gguf: Path, dtype: Literal["auto", "float32", "bfloat16"] = "auto", device: str = "cpu"
) -> Any:
    """The GGUF's weights dequantized into a transformers model on ``device``;
    TRAIN_002/TRAIN_003."""
    torch = _require("torch")
    transformers = _require("transformers")
    native = device == "cuda" or native_bf16()
    chosen = dtype if dtype != "auto" else ("bfloat16" if native else "float32")
    verbosity = transformers.logging.get_verbosity()
    # Asked for bfloat16 it warns about packed GGUF kernels, which Gemma 3 does not use:
    # its weights are dequantized into plain Linear layers either way.
    transformers.logging.set_verbosity_error()
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=getattr(torch, chosen)
        )
    except ImportError as exc:
        raise TrainingError(
            "TRAIN_002", f"loading a GGUF into transformers needs {exc.name or exc}", _INSTALL
        ) from None
    except Exception as exc:
        raise TrainingError(
            "TRAIN_003",
            f"transformers cannot load {gguf} for training: {_first_line(exc)}",
            "train against a Gemma 3 GGUF, e.g. the embedded model (leave base unset)",
        ) from None
    finally:
        transformers.logging.set_verbosity(verbosity)
    return model.to(device)


@dataclass(frozen=True)
class TokenizedExamples:
    """The training and validation sequences, and how many examples of each did not fit."""

    train: list[CompletionBatch]
    skipped: int
    validation: list[CompletionBatch]
    validation_skipped: int


def prepare(
    train: Sequence[TrainingExample],
    validation: Sequence[TrainingExample],
    settings: FinetuneSettings,
    out_dir: Path,
) -> TokenizedExamples:
    """Tokenize the examples with the base GGUF's tokenizer into ``out_dir`` without
    training: a later :func:`finetune` into the same directory, here or on a machine
    without llama.cpp, reads them instead of tokenizing; TRAIN_003/TRAIN_004/TRAIN_006."""
    if not train:
        raise TrainingError(
            "TRAIN_006", "there are no training examples", "run remora train generate first"
        )
    out_dir = _output_dir(out_dir)
    gguf = base_gguf(settings)
    digests = (_digest(train), _digest(validation))
    return _tokenized_examples(train, validation, settings, out_dir, gguf, _sha256(gguf), digests)


def _tokenized_examples(
    train: Sequence[TrainingExample],
    validation: Sequence[TrainingExample],
    settings: FinetuneSettings,
    out_dir: Path,
    gguf: Path,
    sha256: str,
    digests: tuple[str, str],
) -> TokenizedExamples:
    """The examples tokenized by llama.cpp over ``gguf``, or as kept in ``out_dir`` by an
    earlier run over the same base, examples (``digests``: train's and validation's) and
    length settings."""
    key = hashlib.sha256(
        json.dumps([sha256, *digests, settings.max_tokens, settings.pack]).encode()
    ).hexdigest()[:32]
    kept = _read_tokens(out_dir / TOKENS_FILE, key)
    if kept is not None:
        return kept
    with llama_tokenizer(gguf) as tokenize:
        tokenized = _tokenize_both(train, validation, tokenize, settings)
    _write_tokens(out_dir / TOKENS_FILE, key, tokenized)
    return tokenized


def _tokenize_both(
    train: Sequence[TrainingExample],
    validation: Sequence[TrainingExample],
    tokenize: Tokenize,
    settings: FinetuneSettings,
) -> TokenizedExamples:
    batches, skipped = _tokenized(train, tokenize, settings.max_tokens, settings.pack)
    held_out, held_out_skipped = _tokenized(
        validation, tokenize, settings.max_tokens, settings.pack
    )
    return TokenizedExamples(batches, skipped, held_out, held_out_skipped)


def _read_tokens(path: Path, key: str) -> TokenizedExamples | None:
    """The kept sequences when ``path`` holds them under ``key`` (else None: tokenize)."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            kept = json.load(handle)
        if kept["key"] != key:
            return None

        def batches(rows: list[list[list[int]]]) -> list[CompletionBatch]:
            return [
                CompletionBatch(
                    input_ids=[int(t) for t in ids],
                    positions=[int(p) for p in positions],
                    targets=[int(t) for t in targets],
                    turns=tuple(int(n) for n in turns),
                )
                for ids, positions, targets, turns in rows
            ]

        return TokenizedExamples(
            batches(kept["train"]),
            int(kept["skipped"]),
            batches(kept["validation"]),
            int(kept["validation_skipped"]),
        )
    except (OSError, EOFError, ValueError, KeyError, TypeError):
        return None


def _write_tokens(path: Path, key: str, tokenized: TokenizedExamples) -> None:
    def rows(batches: list[CompletionBatch]) -> list[list[list[int]]]:
        return [[b.input_ids, b.positions, b.targets, list(b.turns)] for b in batches]

    kept = {
        "key": key,
        "train": rows(tokenized.train),
        "skipped": tokenized.skipped,
        "validation": rows(tokenized.validation),
        "validation_skipped": tokenized.validation_skipped,
    }
    partial = path.with_name(path.name + ".partial")
    try:
        with gzip.open(partial, "wt", encoding="utf-8") as handle:
            json.dump(kept, handle, separators=(",", ":"))
        partial.replace(path)
    except OSError as exc:
        raise TrainingError("TRAIN_004", f"cannot write {path}: {exc}", "free disk space") from None


def finetune(
    train: Sequence[TrainingExample],
    validation: Sequence[TrainingExample],
    settings: FinetuneSettings,
    out_dir: Path,
    *,
    model: Any = None,
    tokenize: Tokenize | None = None,
    progress: bool = True,
) -> FinetuneReport:
    """Train a LoRA adapter on ``train`` into ``out_dir`` (resuming what is there).

    ``model`` is a transformers model to train instead of loading the GGUF (it gets the
    adapter layers, on the device it is on); ``tokenize`` replaces llama.cpp's tokenizer
    over the GGUF (and its examples are then not kept as ``tokens.json.gz``). Returns
    the report also written as ``training.json``; with ``stop_after`` before the end, the
    adapter as it stands and an incomplete report (``complete`` false), which the next run
    resumes past.
    """
    if not train:
        raise TrainingError(
            "TRAIN_006", "there are no training examples", "run remora train generate first"
        )
    out_dir = _output_dir(out_dir)
    gguf = None if model is not None and tokenize is not None else base_gguf(settings)
    sha256 = _sha256(gguf) if gguf is not None else None
    train_digest = _digest(train)
    fingerprint = _fingerprint(settings, sha256, train_digest)
    validation_digest = _digest(validation)
    finished = _finished_report(out_dir, settings, fingerprint, validation_digest)
    if finished is not None:
        return finished
    for module in ("torch", "transformers", "peft", "safetensors"):
        _require(module)  # before tokenizing and loading, not after

    # A given model trains where it is; otherwise where settings.device says (checked
    # before tokenizing, so TRAIN_019 comes at once).
    device = (
        training_device(settings.device)
        if model is None
        else str(next(model.parameters()).device.type)
    )
    display = _Display(progress, settings.checkpoint_every)
    if tokenize is None:
        assert gguf is not None and sha256 is not None
        digests = (train_digest, validation_digest)
        tokenized = _tokenized_examples(train, validation, settings, out_dir, gguf, sha256, digests)
    else:
        tokenized = _tokenize_both(train, validation, tokenize, settings)
    batches, skipped = tokenized.train, tokenized.skipped
    held_out, held_out_skipped = tokenized.validation, tokenized.validation_skipped
    if not batches:
        raise TrainingError(
            "TRAIN_006",
            f"all {len(train)} training examples are longer than {settings.max_tokens} tokens",
            "raise max_tokens",
        )
    total = settings.steps or max(
        1, math.ceil(settings.epochs * len(batches) / settings.accumulation)
    )
    checkpoint = _latest_checkpoint(out_dir, fingerprint, total)
    started = time.monotonic()
    if model is None:
        assert gguf is not None
        display.note(
            f"loading {gguf.name} for training on {device} (dequantizing it takes a while)"
        )
        model = load_base(gguf, settings.dtype, device)
    load_seconds = time.monotonic() - started
    run = _Run(
        model=model,
        settings=settings,
        batches=batches,
        held_out=held_out,
        total=total,
        out_dir=out_dir,
        base_name=gguf.name if gguf is not None else None,
        fingerprint=fingerprint,
    )
    resumed_from = run.restore(checkpoint) if checkpoint is not None else None
    if resumed_from is not None:
        display.note(f"resuming at step {resumed_from} of {total} from {checkpoint}")
    report = FinetuneReport(
        adapter_dir=out_dir,
        complete=False,
        step=run.step,
        steps=total,
        resumed_from=resumed_from,
        base_gguf=gguf.name if gguf is not None else None,
        base_sha256=sha256,
        agents=sorted({example.agent for example in train}),
        examples=sum(len(batch.turns) for batch in batches),
        decisions=dict(Counter(str(example.call.get("name")) for example in train).most_common()),
        sequences=len(batches),
        skipped=skipped,
        validation_examples=sum(len(batch.turns) for batch in held_out),
        validation_skipped=held_out_skipped,
        completion_tokens=sum(len(batch.targets) for batch in batches),
        epochs=0.0,
        seconds=0.0,
        seconds_per_step=None,
        load_seconds=round(load_seconds, 2),
        threads=run.threads,
        dtype=run.dtype,
        device=device,
        train_loss=None,
        validation_loss=None,
        losses=[],
        seed=settings.seed,
        settings=settings,
        fingerprint=fingerprint,
        validation_digest=validation_digest,
    )
    with display, run.threads_set():
        return run.train(report, display)


# the run ------------------------------------------------------------------------------


class _Run:
    """The model with its adapter, the optimizer and the bookkeeping of one run."""

    def __init__(
        self,
        *,
        model: Any,
        settings: FinetuneSettings,
        batches: list[CompletionBatch],
        held_out: list[CompletionBatch],
        total: int,
        out_dir: Path,
        base_name: str | None,
        fingerprint: str,
    ) -> None:
        torch = _require("torch")
        peft = _require("peft")
        self.torch = torch
        self.settings = settings
        self.batches = batches
        self.held_out = held_out
        self.total = total
        self.out_dir = out_dir
        self.fingerprint = fingerprint
        self.threads = settings.threads or default_threads()
        vocabulary = model.get_input_embeddings().weight.shape[0]
        largest = max(max(batch.input_ids + batch.targets) for batch in batches + held_out)
        if largest >= vocabulary:
            raise TrainingError(
                "TRAIN_003",
                f"token id {largest} is outside the model's vocabulary of {vocabulary}",
                "tokenize with the GGUF the model was loaded from",
            )
        self.dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
        _seed(settings.seed)
        config = peft.LoraConfig(
            r=settings.rank,
            lora_alpha=settings.alpha,
            lora_dropout=0.0,
            bias="none",
            target_modules=settings.target_modules,
            task_type="CAUSAL_LM",
        )
        try:
            with warnings.catch_warnings():  # peft asks transformers a deprecated question
                warnings.simplefilter("ignore", FutureWarning)
                self.model = peft.get_peft_model(model, config)
        except (ValueError, TypeError) as exc:
            raise TrainingError(
                "TRAIN_003",
                f"cannot add LoRA layers to the model: {_first_line(exc)}",
                "train a Gemma 3 model (q_proj, k_proj, v_proj, o_proj, ...)",
            ) from None
        if base_name is not None:
            self.model.peft_config["default"].base_model_name_or_path = base_name
        self.model.train()
        self.parameters = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            self.parameters, lr=settings.learning_rate, weight_decay=settings.weight_decay
        )
        warmup = int(settings.warmup * total)

        def factor(update: int) -> float:
            if update < warmup:
                return (update + 1) / (warmup + 1)
            return max(0.0, (total - update) / (total - warmup))

        self.factor = factor
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, factor)
        self.step = 0
        self.seconds = 0.0
        self.step_seconds = 0.0
        self.losses: list[float] = []
        self.validations: list[tuple[int, float]] = []
        self._order: tuple[int, Any] | None = None

    # one step -------------------------------------------------------------------------

    def example(self, index: int) -> CompletionBatch:
        """The ``index``-th example of the run: epoch by epoch, each in a seeded order."""
        epoch, position = divmod(index, len(self.batches))
        if self._order is None or self._order[0] != epoch:
            rng = np.random.default_rng([self.settings.seed, epoch])
            self._order = (epoch, rng.permutation(len(self.batches)))
        return self.batches[int(self._order[1][position])]

    def train_step(self) -> float:
        """One optimizer step over ``accumulation`` examples; their mean loss."""
        accumulation = self.settings.accumulation
        first = self.step * accumulation
        total = 0.0
        for index in range(first, first + accumulation):
            loss = completion_loss(self.model, self.example(index))
            (loss / accumulation).backward()
            total += float(loss.detach())
        if self.settings.max_grad_norm is not None:
            self.torch.nn.utils.clip_grad_norm_(self.parameters, self.settings.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        mean = total / accumulation
        self.losses.append(mean)
        return mean

    def validate(self, stop: threading.Event) -> float | None:
        """Mean completion loss over the held-out examples (None if none, or on Ctrl-C)."""
        if not self.held_out:
            return None
        self.model.eval()
        total = 0.0
        try:
            with self.torch.no_grad():
                for batch in self.held_out:
                    if stop.is_set():
                        return None
                    total += float(completion_loss(self.model, batch))
        finally:
            self.model.train()
        loss = total / len(self.held_out)
        self.validations.append((self.step, loss))
        return loss

    @contextlib.contextmanager
    def threads_set(self) -> Iterator[None]:
        previous = self.torch.get_num_threads()
        self.torch.set_num_threads(self.threads)
        try:
            yield
        finally:
            self.torch.set_num_threads(previous)

    # the loop -------------------------------------------------------------------------

    def train(self, report: FinetuneReport, display: _Display) -> FinetuneReport:
        """Steps from the restored one to the end (or ``stop_after``), then the adapter."""
        settings = self.settings
        end = min(self.total, settings.stop_after or self.total)
        if self.step < end:
            (self.out_dir / REPORT_FILE).unlink(missing_ok=True)
        display.start(self.total, self.step, self.losses[-1] if self.losses else None)
        deadline = time.monotonic() + settings.minutes * 60 if settings.minutes else None
        out_of_time = False
        with _deferred_interrupt() as stop:
            while self.step < end:
                began = time.monotonic()
                loss = self.train_step()
                spent = time.monotonic() - began
                self.step_seconds += spent
                self.seconds += spent
                display.advance(loss)
                every = settings.validate_every
                if every and self.step % every == 0 and self.step < self.total:
                    display.phase("validating")
                    began = time.monotonic()
                    self.validate(stop)
                    self.seconds += time.monotonic() - began
                    display.phase("training")
                out_of_time = deadline is not None and time.monotonic() >= deadline
                if out_of_time:
                    end = self.step
                if stop.is_set() or self.step % settings.checkpoint_every == 0 or self.step == end:
                    self.save_checkpoint()
                if stop.is_set():
                    raise TrainingInterrupted(self.step, self.checkpoint_dir(self.step))
            if self.step < self.total:
                stopped = self.report(report, complete=False, validation=None)
                stopped.stopped_for_time = out_of_time
                self.write_adapter(stopped)
                return stopped
            display.phase("validating")
            began = time.monotonic()
            validation = self.validate(stop)
            self.seconds += time.monotonic() - began
            if stop.is_set():  # the last step's checkpoint is saved already
                raise TrainingInterrupted(self.step, self.checkpoint_dir(self.step))
        final = self.report(report, complete=True, validation=validation)
        self.write_adapter(final)
        display.phase("done")
        return final

    def report(
        self, report: FinetuneReport, *, complete: bool, validation: float | None
    ) -> FinetuneReport:
        tail = self.losses[-max(1, min(100, len(self.losses) // 10)) :]
        return report.model_copy(
            update={
                "complete": complete,
                "step": self.step,
                "epochs": round(self.step * self.settings.accumulation / len(self.batches), 4),
                "seconds": round(self.seconds, 2),
                "seconds_per_step": (
                    round(self.step_seconds / self.step, 3) if self.step_seconds else None
                ),
                "train_loss": sum(tail) / len(tail) if tail else None,
                "validation_loss": validation,
                "losses": list(self.losses),
                "validations": list(self.validations),
            }
        )

    # files ----------------------------------------------------------------------------

    def checkpoint_dir(self, step: int) -> Path:
        return self.out_dir / CHECKPOINTS / f"step-{step:07d}"

    def save_checkpoint(self) -> None:
        """Adapter, optimizer, scheduler and RNG states of this step, renamed into place."""
        root = self.out_dir / CHECKPOINTS
        final = self.checkpoint_dir(self.step)
        try:
            root.mkdir(exist_ok=True)
            partial = root / f".{final.name}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            try:
                self._save_adapter(partial)
                self.torch.save(
                    {
                        "optimizer": self.optimizer.state_dict(),
                        "scheduler": self.scheduler.state_dict(),
                        "torch_rng": self.torch.get_rng_state(),
                    },
                    partial / "trainer.pt",
                )
                (partial / "state.json").write_text(
                    json.dumps(self.state(), indent=1), encoding="utf-8"
                )
                if final.exists():
                    shutil.rmtree(final)
                os.replace(partial, final)
            except BaseException:
                shutil.rmtree(partial, ignore_errors=True)
                raise
            for old in _checkpoints(self.out_dir)[self.settings.keep_checkpoints :]:
                shutil.rmtree(old[1], ignore_errors=True)
        except OSError as exc:
            raise TrainingError(
                "TRAIN_004", f"cannot write checkpoint {final}: {exc}", "free disk space"
            ) from None

    def state(self) -> dict[str, Any]:
        python_state = random.getstate()
        numpy_state = np.random.get_state(legacy=True)
        assert isinstance(numpy_state, tuple)
        return {
            "step": self.step,
            "fingerprint": self.fingerprint,
            "seconds": self.seconds,
            "step_seconds": self.step_seconds,
            "losses": self.losses,
            "validations": self.validations,
            "python_rng": [python_state[0], list(python_state[1]), python_state[2]],
            "numpy_rng": [
                numpy_state[0],
                numpy_state[1].tolist(),
                *(
                    float(value) if isinstance(value, float) else int(value)
                    for value in numpy_state[2:]
                ),
            ],
        }

    def restore(self, checkpoint: Path) -> int:
        """Continue from ``checkpoint`` (already checked to belong to this run)."""
        peft = _require("peft")
        safetensors_torch = _require("safetensors.torch")
        unusable = f"checkpoint {checkpoint} is unusable"
        hint = f"delete {checkpoint} to resume from the one before it, or {_FRESH}"
        try:
            state = json.loads((checkpoint / "state.json").read_text(encoding="utf-8"))
            weights = safetensors_torch.load_file(str(checkpoint / "adapter_model.safetensors"))
            trainer = self.torch.load(
                checkpoint / "trainer.pt", weights_only=True, map_location="cpu"
            )
            result = peft.set_peft_model_state_dict(self.model, weights)
            missing = [key for key in result.missing_keys if "lora_" in key]
            if missing or result.unexpected_keys:
                raise ValueError(
                    f"adapter keys differ, e.g. {(missing or result.unexpected_keys)[0]}"
                )
            self.optimizer.load_state_dict(trainer["optimizer"])
            self.scheduler.load_state_dict(trainer["scheduler"])
            for group, base in zip(
                self.optimizer.param_groups, self.scheduler.base_lrs, strict=True
            ):
                group["lr"] = base * self.factor(self.scheduler.last_epoch)
            self.step = int(state["step"])
            self.seconds = float(state["seconds"])
            self.step_seconds = float(state["step_seconds"])
            self.losses = [float(loss) for loss in state["losses"]]
            self.validations = [(int(step), float(loss)) for step, loss in state["validations"]]
            python_rng = state["python_rng"]
            random.setstate((python_rng[0], tuple(python_rng[1]), python_rng[2]))
            numpy_rng = state["numpy_rng"]
            np.random.set_state(
                (numpy_rng[0], np.array(numpy_rng[1], dtype=np.uint32), *numpy_rng[2:])
            )
            self.torch.set_rng_state(trainer["torch_rng"])
        except TrainingError:
            raise
        except Exception as exc:
            raise TrainingError("TRAIN_004", f"{unusable}: {_first_line(exc)}", hint) from None
        return self.step

    def _save_adapter(self, directory: Path) -> None:
        """The PEFT adapter files (peft's standard tensor names), without its model card."""
        # No embedding layers are trained, and "auto" would ask the Hugging Face Hub.
        self.model.save_pretrained(str(directory), save_embedding_layers=False)
        (directory / "README.md").unlink(missing_ok=True)

    def write_adapter(self, report: FinetuneReport) -> None:
        """The final adapter files into ``out_dir``, then ``training.json`` last."""
        try:
            partial = self.out_dir / ".adapter.partial"
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            try:
                self._save_adapter(partial)
                for name in ADAPTER_FILES:
                    os.replace(partial / name, self.out_dir / name)
            finally:
                shutil.rmtree(partial, ignore_errors=True)
            _write_atomic(self.out_dir / REPORT_FILE, report.model_dump_json(indent=2))
        except OSError as exc:
            raise TrainingError(
                "TRAIN_004", f"cannot write the adapter to {self.out_dir}: {exc}", "free disk space"
            ) from None


# helpers --------------------------------------------------------------------------------


class _Display:
    """Notes on stderr, and a rich progress bar with the loss and an ETA while training
    (a line every ``every`` steps when stderr is not a terminal, as in a log); or nothing.
    The bar starts after loading, whose own progress bar (transformers') it would garble."""

    def __init__(self, enabled: bool, every: int = 50) -> None:
        self.progress: Any = None
        self.task: Any = None
        self.console: Any = None
        self.every = every
        self.total = 0
        self.done = 0
        self.recent: list[float] = []
        self.since = time.monotonic()
        if enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.console = Console(stderr=True)
            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("loss {task.fields[loss]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
                speed_estimate_period=300,
            )

    def __enter__(self) -> _Display:
        if self.progress is not None:
            self.progress.start()
            self.task = self.progress.add_task("training", total=None, loss="-")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def note(self, text: str) -> None:
        if self.console is not None:
            self.console.print(text, markup=False, highlight=False)

    def phase(self, text: str) -> None:
        if self.progress is not None:
            self.progress.update(self.task, description=text)

    def start(self, total: int, done: int, loss: float | None) -> None:
        self.total, self.done, self.since = total, done, time.monotonic()
        if self.progress is not None:
            self.progress.reset(
                self.task,
                total=total,
                completed=done,
                description="training",
                loss="-" if loss is None else f"{loss:.4f}",
            )

    def advance(self, loss: float) -> None:
        if self.progress is None:
            return
        self.progress.update(self.task, advance=1, loss=f"{loss:.4f}")
        self.done += 1
        self.recent.append(loss)
        if self.console.is_terminal or len(self.recent) < self.every:
            return
        per_step = (time.monotonic() - self.since) / len(self.recent)
        left = (self.total - self.done) * per_step / 60
        self.note(
            f"step {self.done}/{self.total}: loss {sum(self.recent) / len(self.recent):.4f} "
            f"(mean of {len(self.recent)}), {per_step:.1f} s/step, about {left:.0f} min left"
        )
        self.recent.clear()
        self.since = time.monotonic()


@contextlib.contextmanager
def _deferred_interrupt() -> Iterator[threading.Event]:
    """Ctrl-C sets the event (the loop checkpoints and stops); a second one interrupts."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def _require(module: str) -> Any:
    """An optional training dependency; TRAIN_002 names the missing one."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise TrainingError(
            "TRAIN_002", f"fine-tuning needs {exc.name or module}, which is not installed", _INSTALL
        ) from None


def _seed(seed: int) -> None:
    torch = _require("torch")
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)


def _tokenized(
    examples: Sequence[TrainingExample], tokenize: Tokenize, max_tokens: int, pack: bool
) -> tuple[list[CompletionBatch], int]:
    """The examples that fit ``max_tokens`` as sequences, and how many did not fit.

    With ``pack``, consecutive turns of an episode whose prompts extend each other token
    for token share one sequence, up to ``max_tokens``; the losses are the same as
    apart, for a fraction of the tokens.
    """
    batches: list[CompletionBatch] = []
    skipped = 0
    chain: list[tuple[list[int], list[int]]] = []
    episode: tuple[str, str] | None = None

    def flush() -> None:
        if chain:
            batches.append(pack_turns(chain))
            chain.clear()

    ordered = sorted(examples, key=lambda e: (e.agent, e.episode, e.turn)) if pack else examples
    for example in ordered:
        prompt, completion = tokenize(example.prompt), tokenize(example.completion)
        if not prompt or not completion or len(prompt) + len(completion) > max_tokens:
            skipped += 1
            continue
        if pack and chain and episode == (example.agent, example.episode):
            previous = [*chain[-1][0], *chain[-1][1]]
            if prompt[: len(previous)] == previous:
                chain.append((prompt, completion))
                continue
        flush()
        episode = (example.agent, example.episode)
        chain.append((prompt, completion))
        if not pack:
            flush()
    flush()
    return batches, skipped


def _digest(examples: Sequence[TrainingExample]) -> str:
    digest = hashlib.sha256()
    for example in examples:
        digest.update(json.dumps([example.prompt, example.completion]).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _fingerprint(settings: FinetuneSettings, base: str | None, train_digest: str) -> str:
    """What decides the trained weights, besides the run's length (``train_digest``: the
    training examples' :func:`_digest`)."""
    shaping = settings.model_dump(
        mode="json",
        include={
            "rank",
            "alpha",
            "mlp",
            "learning_rate",
            "warmup",
            "weight_decay",
            "max_grad_norm",
            "accumulation",
            "max_tokens",
            "pack",
            "seed",
        },
    )
    text = json.dumps({"settings": shaping, "base": base, "train": train_digest}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _sha256(gguf: Path) -> str:
    """The GGUF's sha256 (the pinned one for the verified embedded model)."""
    if gguf.name == EMBEDDED_FILENAME and gguf.parent == models_dir():
        return EMBEDDED_SHA256
    try:
        with gguf.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        raise TrainingError("TRAIN_003", f"cannot read {gguf}: {exc}", "check the base") from None


def _output_dir(out_dir: Path) -> Path:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = Path(tempfile.mkstemp(dir=out_dir, prefix=".probe.")[1])
        probe.unlink()
    except OSError as exc:
        raise TrainingError(
            "TRAIN_004", f"cannot use {out_dir} as the output directory: {exc}", _FRESH
        ) from None
    for leftover in out_dir.glob(".adapter.*"):
        shutil.rmtree(leftover, ignore_errors=True)
    for leftover in (out_dir / CHECKPOINTS).glob(".step-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    return out_dir


def _finished_report(
    out_dir: Path, settings: FinetuneSettings, fingerprint: str, validation_digest: str
) -> FinetuneReport | None:
    """The report of this very run when it already finished in ``out_dir``."""
    try:
        report = FinetuneReport.model_validate_json(
            (out_dir / REPORT_FILE).read_text(encoding="utf-8")
        )
    except (OSError, ValueError):
        return None
    same = (
        report.complete
        and report.fingerprint == fingerprint
        and report.validation_digest == validation_digest
        and report.settings.steps == settings.steps
        and (settings.steps is not None or report.settings.epochs == settings.epochs)
        and all((out_dir / name).is_file() for name in ADAPTER_FILES)
    )
    return report if same else None


def _checkpoints(out_dir: Path) -> list[tuple[int, Path]]:
    """The checkpoint directories, newest first."""
    root = out_dir / CHECKPOINTS
    if not root.is_dir():
        return []
    found = [
        (int(match.group(1)), path)
        for path in root.iterdir()
        if (match := _CHECKPOINT.fullmatch(path.name)) and path.is_dir()
    ]
    return sorted(found, reverse=True)


def _latest_checkpoint(out_dir: Path, fingerprint: str, total: int) -> Path | None:
    """The newest checkpoint, checked to belong to this run; TRAIN_004 if it cannot."""
    try:
        found = _checkpoints(out_dir)
    except OSError as exc:
        raise TrainingError("TRAIN_004", f"cannot list checkpoints: {exc}", _FRESH) from None
    if not found:
        return None
    step, path = found[0]
    hint = f"delete {path} to resume from the one before it, or {_FRESH}"
    try:
        state = json.loads((path / "state.json").read_text(encoding="utf-8"))
        recorded = (int(state["step"]), str(state["fingerprint"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TrainingError(
            "TRAIN_004", f"checkpoint {path} is unusable: {_first_line(exc)}", hint
        ) from None
    if recorded[0] != step:
        raise TrainingError("TRAIN_004", f"checkpoint {path} records step {recorded[0]}", hint)
    if recorded[1] != fingerprint:
        raise TrainingError(
            "TRAIN_004",
            f"{out_dir} holds a run with other settings, examples or base model",
            _FRESH,
        )
    if step > total:
        raise TrainingError(
            "TRAIN_004",
            f"{out_dir} is already at step {step}, past the {total} steps asked for",
            f"ask for at least {step} steps, or {_FRESH}",
        )
    return path


def _write_atomic(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
