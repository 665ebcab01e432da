"""The default backend: llama.cpp in-process through llama-cpp-python's C bindings.

Prompts are rendered by ``remora.model.functiongemma`` and run in completion mode, so
llama-cpp-python's chat formats (which silently fall back to llama-2 for a GGUF
without a template) are never involved. One loaded model serves every agent through
one or more lanes (a context and the scheduler thread that owns it): requests queue
on a lane's thread, so the event loop never blocks and calls never interleave inside
one context, while lanes decode side by side.

KV cache: each context holds several sequences in one unified cache. Each conversation
owns a sequence; when a turn's prompt text extends the text its sequence holds (the
previous prompt plus what the model generated), those tokens are reused as they are
and only the new text is tokenized and evaluated; otherwise the longest common token
prefix is kept. A new conversation starts by sharing the cells of the longest matching
prefix any other sequence holds (same system prompt and tools), so interleaved
conversations keep their caches. Least recently used sequences are evicted when the
cache fills. ``Usage.cached_prompt_tokens`` counts prompt tokens not evaluated.

Tool calls are constrained by a GBNF grammar (``remora.model.grammar``) when
``grammar`` is on. Checking every token of Gemma's 262k vocabulary against a grammar
costs several forward passes of the 270M model, so sampling first takes the best
token unconstrained and asks the grammar about that one token; only when it is
rejected are the 64 best tokens checked, and only when all of those are rejected the
whole vocabulary. Tokens are accepted only after the grammar allowed them, so the
output is always a prefix of a valid call. When a call is cut by ``max_tokens`` the
generation continues once with the same budget again before reporting ``length``.

Error codes (stable): MODEL_002 the GGUF cannot be loaded; MODEL_010 a LoRA adapter
file does not exist; MODEL_011 a LoRA adapter is not a valid adapter for this model;
MODEL_020 the prompt does not fit the context; MODEL_021 llama.cpp failed to
evaluate; MODEL_022 llama.cpp rejected the generated grammar; MODEL_023
llama-cpp-python is not installed; MODEL_024 the build crashes on this CPU with every load
profile (:mod:`remora.model.load_probe`, which runs before the first load).
"""

from __future__ import annotations

import asyncio
import codecs
import ctypes
import logging
import math
import os
import queue
import random
import statistics
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from remora.errors import ModelError
from remora.model.base import ModelRequest, ModelResponse, Usage
from remora.model.defaults import GGUF_MAGIC, check_gguf
from remora.model.forcing import GrammarCursor
from remora.model.functiongemma import (
    END_CALL,
    START_CALL,
    STOP_SEQUENCES,
    prompt_pieces,
    render_request,
)
from remora.model.grammar import CallGrammar, build_call_grammar
from remora.model.load_probe import (
    ExtraBuffers,
    LoadProfile,
    ProbeVerdict,
    cached_verdict,
    choose_profile,
)

TOP_CANDIDATES = 64
"""How many of the best tokens the grammar checks before falling back to all of them."""
_FORCE_CHARS = 96
"""The most text one jump-forward appends (it is evaluated in the next step's batch)."""


def _bindings() -> Any:
    """llama-cpp-python's ctypes layer (typed as Any: its stubs cover only part of it)."""
    try:
        import llama_cpp.llama_cpp as bindings
    except ImportError as exc:
        raise ModelError(
            "MODEL_023",
            f"llama-cpp-python is not installed ({exc})",
            "pip install llama-cpp-python, or use model.backend: openai",
        ) from None
    return bindings


_log = logging.getLogger(__name__)
_log_state: dict[str, Any] = {"callback": None, "verbose": False}


def _install_log_callback(lib: Any, verbose: bool) -> None:
    """Route llama.cpp's C logging to Python logging instead of stderr.

    llama.cpp warns on stderr about harmless details of the default GGUF; Remora sends
    its messages to the ``remora.model.llama_cpp`` logger at DEBUG (or prints them when
    ``verbose``). The callback is process-wide, as llama.cpp's logging is.
    """
    _log_state["verbose"] = _log_state["verbose"] or verbose
    if _log_state["callback"] is not None:
        return

    def forward(_level: int, text: bytes, _user_data: Any) -> None:
        message = text.decode("utf-8", "replace")
        if _log_state["verbose"]:
            print(message, end="", file=sys.stderr, flush=True)
        elif _log.isEnabledFor(logging.DEBUG):
            _log.debug("%s", message.rstrip("\n"))

    callback = lib.llama_log_callback(forward)
    _log_state["callback"] = callback
    lib.llama_log_set(callback, ctypes.c_void_p(0))


class VocabularyCounter:
    """A GGUF's tokenizer (its vocabulary alone, no weights), counting as the in-process
    backend counts: training fits nodes and trims histories where a real run would.
    MODEL_002 when the file's vocabulary cannot be read."""

    def __init__(self, path: Path) -> None:
        self.lib = _bindings()
        _install_log_callback(self.lib, False)
        params = self.lib.llama_model_default_params()
        params.vocab_only = True
        self.model = self.lib.llama_model_load_from_file(str(path).encode("utf-8"), params)
        if not self.model:
            raise ModelError(
                "MODEL_002", f"cannot read the vocabulary of {path}", "check model.path"
            )
        self.vocab = self.lib.llama_model_get_vocab(self.model)

    def __call__(self, text: str) -> int:
        data = text.encode("utf-8")
        capacity = len(data) + 8
        tokens = (self.lib.llama_token * capacity)()
        found = int(
            self.lib.llama_tokenize(self.vocab, data, len(data), tokens, capacity, False, True)
        )
        return -found if found < 0 else found  # negative: the count that did not fit


class _ThreadpoolParams(ctypes.Structure):
    """ggml's ``struct ggml_threadpool_params`` (ggml.h), which llama-cpp-python does not bind."""

    _fields_ = [
        ("cpumask", ctypes.c_bool * 512),
        ("n_threads", ctypes.c_int),
        ("prio", ctypes.c_int),
        ("poll", ctypes.c_uint32),
        ("strict_cpu", ctypes.c_bool),
        ("paused", ctypes.c_bool),
    ]


def _threadpool(lib: Any, threads: int, poll: int) -> Any:
    """A ggml CPU threadpool whose idle threads poll at level ``poll`` (0 sleeps at once,
    llama.cpp's default is 50); None when the library lacks the symbols."""
    raw = getattr(lib, "_lib", None)
    if raw is None or not hasattr(raw, "ggml_threadpool_new"):
        return None
    raw.ggml_threadpool_params_default.restype = _ThreadpoolParams
    raw.ggml_threadpool_params_default.argtypes = [ctypes.c_int]
    raw.ggml_threadpool_new.restype = ctypes.c_void_p
    raw.ggml_threadpool_new.argtypes = [ctypes.POINTER(_ThreadpoolParams)]
    raw.ggml_threadpool_free.argtypes = [ctypes.c_void_p]
    raw.llama_attach_threadpool.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    params = raw.ggml_threadpool_params_default(threads)
    params.poll = poll
    pool = raw.ggml_threadpool_new(ctypes.byref(params))
    return pool or None


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_threads() -> int:
    """Half the usable CPUs (at least one); see :func:`thread_choice` for why."""
    return max(1, usable_cpus() // 2)


def thread_choice(configured: int | None) -> tuple[int, str]:
    """The threads llama.cpp decodes with, and why (``remora doctor`` shows both).

    llama.cpp's threads meet at a barrier after every operation of a forward pass, so one
    thread that shares its core with another busy process stalls all of them: on a 2-core
    machine with one core kept busy, 2 threads generated 4.5 tokens/s and 1 thread 34-75
    (``benchmarks/bench_serving.py`` measures it; the idle threads' wait policy, ggml's
    ``poll`` level, made no difference). Half the CPUs leaves the other half for the
    tools, the tests they run and the user's own work.
    """
    if configured:
        return configured, "set by model.threads"
    cpus = usable_cpus()
    return default_threads(), (
        f"half of the {cpus} usable CPUs, so generation keeps its pace when other "
        "processes are busy (set model.threads to change it)"
    )


def lane_choice(configured: int | None, threads: int) -> tuple[int, str]:
    """How many contexts decode side by side, and why (``remora doctor`` shows both).

    Concurrent jobs on one context share each forward pass, but a forward pass of the
    270M model on one thread is compute-bound, so batching alone gained nothing; a second
    single-thread context on the idle core does. One lane per ``threads`` usable CPUs, at
    most four (each lane holds its own KV cache); a lane opens only when a request needs it.
    """
    if configured:
        return configured, "set by model.lanes"
    cpus = usable_cpus()
    lanes = max(1, min(4, cpus // threads))
    return lanes, (
        f"one per {threads} thread(s) of the {cpus} usable CPUs, so concurrent jobs decode "
        "side by side (set model.lanes to change it)"
    )


@dataclass
class Generation:
    """What one generation produced, with the numbers usage and benchmarks need."""

    text: str
    finish_reason: str
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    extended: bool = False
    grammar_fallbacks: int = 0
    forced_tokens: int = 0
    """Completion tokens the grammar forced (appended by jump-forward, not sampled)."""
    evaluated_tokens: int = 0
    """Completion tokens already in the KV cache; the rest are evaluated with the next
    prompt of the conversation, which reuses the prompt and these."""


@dataclass
class _Slot:
    """One KV-cache sequence: the tokens whose keys and values it holds, and their text.

    ``data`` is the exact text of ``tokens`` (``ends[i]`` is where token ``i`` ends), so
    a prompt that extends it can reuse these very tokens, including the ones the model
    generated, instead of a re-tokenization that may split the seam differently.
    """

    seq: int
    tokens: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    data: bytearray = field(default_factory=bytearray)
    adapter: str | None = None
    owner: str | None = None
    used: int = 0

    def truncate(self, count: int) -> None:
        del self.tokens[count:]
        del self.ends[count:]
        del self.data[self.ends[-1] if self.ends else 0 :]

    def extend(self, tokens: Sequence[int], pieces: Sequence[bytes]) -> None:
        for token, piece in zip(tokens, pieces, strict=True):
            self.tokens.append(token)
            self.data += piece
            self.ends.append(len(self.data))


@dataclass
class _Adapter:
    key: str
    handle: Any


@dataclass
class _Job:
    prompt: str
    conversation: str | None
    adapter: Path | None
    grammar: CallGrammar | None
    call_required: bool
    max_tokens: int
    temperature: float
    jump_forward: bool = True
    cancel: threading.Event = field(default_factory=threading.Event)
    future: Future[Generation] = field(default_factory=Future)

    @property
    def adapter_key(self) -> str | None:
        """The adapter as the engine keys it (jobs sharing it can share forward passes)."""
        return str(self.adapter.resolve()) if self.adapter is not None else None


class _Run:
    """One generation in flight on its KV sequence, advanced one sampled token at a time.

    ``pending`` holds the tokens chosen but not yet evaluated: the last sampled token and
    any text the grammar forced after it (jump-forward). The engine evaluates every run's
    pending tokens in one batch, then calls :meth:`Engine._advance` with each run's logits.
    """

    def __init__(
        self,
        job: _Job,
        slot: _Slot,
        grammar: _Grammar | None,
        n_prompt: int,
        reuse: int,
        room: int,
    ) -> None:
        self.job = job
        self.slot = slot
        self.grammar = grammar
        self.cursor = (
            GrammarCursor(job.grammar) if job.grammar is not None and job.jump_forward else None
        )
        self.n_prompt = n_prompt
        self.reuse = reuse
        self.room = room
        self.budget = min(job.max_tokens, room)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.text = ""
        self.produced = 0
        self.forced = 0
        self.fallbacks = 0
        self.extended = False
        self.finish: str | None = None
        self.pending: list[int] = []

    @property
    def done(self) -> bool:
        return self.finish is not None

    def add_text(self, piece: bytes) -> None:
        text = self.decoder.decode(piece)
        self.text += text
        if self.cursor is not None:
            self.cursor.feed(text)

    def result(self) -> Generation:
        self.text += self.decoder.decode(b"", final=True)
        return Generation(
            text=self.text,
            finish_reason=self.finish or "length",
            prompt_tokens=self.n_prompt,
            cached_tokens=self.reuse,
            completion_tokens=self.produced,
            extended=self.extended,
            grammar_fallbacks=self.fallbacks,
            forced_tokens=self.forced,
            evaluated_tokens=len(self.slot.tokens) - self.n_prompt,
        )

    def release(self) -> None:
        if self.grammar is not None:
            self.grammar.free()
            self.grammar = None


class _CacheFull(Exception):
    """The KV cache has no room for this step and nothing idle could be evicted."""


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class _TokenData:
    """A reusable ``llama_token_data_array`` with a numpy view of its entries."""

    def __init__(self, lib: Any, size: int) -> None:
        self.buffer = (lib.llama_token_data * size)()
        self.view: Any = np.ctypeslib.as_array(self.buffer)
        self.array = lib.llama_token_data_array(self.buffer, size, -1, False)
        self.ref = ctypes.byref(self.array)

    def load(self, logits: Any, ids: Any = None) -> None:
        """Fill the entries with ``logits``; ``ids`` None keeps the ids already there."""
        count = len(logits)
        if ids is not None:
            self.view["id"][:count] = ids
        self.view["logit"][:count] = logits
        self.view["p"][:count] = 0.0
        self.array.size = count
        self.array.selected = -1
        self.array.sorted = False


class _Grammar:
    """A llama.cpp grammar sampler, asked about single tokens before whole vocabularies."""

    def __init__(self, engine: _Engine, grammar: CallGrammar) -> None:
        lib = engine.lib
        self.lib = lib
        self.single = _TokenData(lib, 1)
        self.handle = lib.llama_sampler_init_grammar(
            engine.vocab, grammar.gbnf.encode("utf-8"), grammar.root.encode("utf-8")
        )
        if not self.handle:
            raise ModelError(
                "MODEL_022",
                "llama.cpp rejected the tool-call grammar",
                "this is a bug in Remora; set model.grammar: false to run unconstrained",
            )

    def allows(self, token: int) -> bool:
        single = self.single
        single.buffer[0].id = token
        single.buffer[0].logit = 0.0
        single.buffer[0].p = 0.0
        single.array.size = 1
        single.array.selected = -1
        self.lib.llama_sampler_apply(self.handle, single.ref)
        return math.isfinite(single.buffer[0].logit)

    def filter(self, data: _TokenData) -> Any:
        """Apply the grammar to ``data``; returns the mask of allowed entries."""
        self.lib.llama_sampler_apply(self.handle, data.ref)
        return np.isfinite(data.view["logit"][: data.array.size])

    def accept(self, token: int) -> None:
        self.lib.llama_sampler_accept(self.handle, token)

    def free(self) -> None:
        if self.handle:
            self.lib.llama_sampler_free(self.handle)
            self.handle = None


class _Weights:
    """The loaded model file, shared read-only by every lane's context."""

    def __init__(self, path: Path, *, verbose: bool, extra_buffers: bool = True) -> None:
        lib = _bindings()
        self.lib = lib
        _install_log_callback(lib, verbose)
        lib.llama_backend_init()
        model_params = lib.llama_model_default_params()
        model_params.n_gpu_layers = 0
        model_params.use_extra_bufts = extra_buffers
        model = lib.llama_model_load_from_file(str(path).encode("utf-8"), model_params)
        if not model:
            raise ModelError(
                "MODEL_002",
                f"llama.cpp could not load {path}",
                "the file is corrupt or not a model llama.cpp supports; download it again",
            )
        self.path = path
        self.model = model
        self.vocab = lib.llama_model_get_vocab(model)
        self.trained_context = int(lib.llama_model_n_ctx_train(model))

    def close(self) -> None:
        if self.model is not None:
            self.lib.llama_model_free(self.model)
            self.model = None


class _StepChoice:
    """Whether a step decodes its runs together, in one ``llama_decode``, or one by one.

    Together shares each forward pass, but the output layer may cost far more for
    several rows than for one: Gemma 3's 262k-token output layer on one thread took
    44 ms for two sequences' tokens and 12 ms for one, so on this kind of CPU one
    decode per run is faster. So it is measured, not assumed: steps with several runs
    alternate between the two ways for ``2 * trials`` steps, then take the way with the
    lower median time per run until the next ``recheck`` steps, when the trial repeats
    (the machine's load changes).
    """

    def __init__(self, *, trials: int = 4, recheck: int = 256) -> None:
        self.trials = trials
        self.recheck = recheck
        self.count = 0
        self.seconds: dict[bool, list[float]] = {True: [], False: []}
        self.decided = True

    def together(self) -> bool:
        phase = self.count % self.recheck
        if phase < 2 * self.trials:
            return phase % 2 == 0
        return self.decided

    def record(self, together: bool, seconds_per_run: float) -> None:
        phase = self.count % self.recheck
        self.count += 1
        if phase >= 2 * self.trials:
            return
        self.seconds[together].append(seconds_per_run)
        if phase == 2 * self.trials - 1:
            self.decided = statistics.median(self.seconds[True]) <= statistics.median(
                self.seconds[False]
            )
            self.seconds = {True: [], False: []}


class _Engine:
    """One llama.cpp context over shared weights, with its KV sequences; every method
    runs on the thread of the lane that owns it."""

    def __init__(
        self,
        weights: _Weights,
        *,
        context_size: int,
        cache_tokens: int,
        sequences: int,
        threads: int,
        batch_size: int,
        seed: int,
        poll: int | None = None,
    ) -> None:
        lib = weights.lib
        self.lib = lib
        model = weights.model
        self.model = model
        self.vocab = weights.vocab
        self.n_vocab = int(lib.llama_vocab_n_tokens(self.vocab))
        self.context_size = min(context_size, weights.trained_context or context_size)
        params = lib.llama_context_default_params()
        params.n_ctx = max(self.context_size, cache_tokens)
        params.n_batch = batch_size
        params.n_ubatch = batch_size
        params.n_threads = threads
        params.n_threads_batch = threads
        params.n_seq_max = sequences
        params.kv_unified = True
        params.swa_full = True
        params.no_perf = True
        ctx = lib.llama_init_from_model(model, params)
        if not ctx:
            raise ModelError(
                "MODEL_002",
                f"llama.cpp could not create a context for {weights.path}",
                "lower model.context_size or model.lanes, or free memory",
            )
        self.ctx = ctx
        self.threadpool = _threadpool(lib, threads, poll) if poll is not None else None
        if self.threadpool is not None:
            lib._lib.llama_attach_threadpool(ctx, self.threadpool, self.threadpool)
        self.memory = lib.llama_get_memory(ctx)
        self.batch_size = batch_size
        self.batch = lib.llama_batch_init(batch_size, 0, 1)
        self.slots = [_Slot(seq) for seq in range(sequences)]
        self.clock = 0
        self.adapters: dict[str, _Adapter] = {}
        self.active_adapter: str | None = None
        self.top = _TokenData(lib, TOP_CANDIDATES)
        self.full: _TokenData | None = None
        self.eos = int(lib.llama_vocab_eos(self.vocab))
        self.rng = random.Random(seed)
        self.decodes = 0
        """``llama_decode`` calls so far (batching shows as fewer of them)."""
        self.steps = _StepChoice()
        self.closed = False

    # tokens ---------------------------------------------------------------------------

    def tokenize(self, text: str, *, add_bos: bool = False, special: bool = True) -> list[int]:
        """Token ids; with ``special`` the control tags in the text become control tokens."""
        return self._tokenize_bytes(text.encode("utf-8"), add_bos=add_bos, special=special)

    def tokenize_prompt(self, text: str) -> list[int]:
        """A prompt's tokens: each of its ``prompt_pieces`` tokenized apart, control tags
        as control tokens (training tokenizes its examples with this very method)."""
        return [token for piece in prompt_pieces(text) for token in self.tokenize(piece)]

    def _tokenize_bytes(self, data: bytes, *, add_bos: bool, special: bool) -> list[int]:
        capacity = len(data) + 8
        tokens = (self.lib.llama_token * capacity)()
        count = self.lib.llama_tokenize(
            self.vocab, data, len(data), tokens, capacity, add_bos, special
        )
        if count < 0:
            capacity = -count
            tokens = (self.lib.llama_token * capacity)()
            count = self.lib.llama_tokenize(
                self.vocab, data, len(data), tokens, capacity, add_bos, special
            )
        return list(tokens[:count])

    def admits(self, grammar: CallGrammar, text: str) -> bool:
        """Whether llama.cpp's grammar engine accepts ``text`` as a complete output."""
        checker = _Grammar(self, grammar)
        try:
            for token in self.tokenize(text, special=False):
                if not checker.allows(token):
                    return False
                checker.accept(token)
            return checker.allows(self.eos)
        finally:
            checker.free()

    def piece(self, token: int) -> bytes:
        """The text of one token, control tags included, as UTF-8 bytes."""
        buffer = ctypes.create_string_buffer(64)
        count = self.lib.llama_token_to_piece(self.vocab, token, buffer, len(buffer), 0, True)
        if count < 0:
            buffer = ctypes.create_string_buffer(-count)
            count = self.lib.llama_token_to_piece(self.vocab, token, buffer, len(buffer), 0, True)
        return bytes(buffer.raw[:count])

    # adapters -------------------------------------------------------------------------

    def load_adapter(self, path: Path) -> _Adapter:
        """The adapter at ``path``, loaded once per version of the file: a re-exported
        adapter has a new key, so neither it nor a cache built with the old one is reused."""
        resolved = path.resolve()
        if not resolved.is_file():
            raise ModelError(
                "MODEL_010",
                f"LoRA adapter {path} does not exist",
                "fix the agent's model.adapter path or set model.use_adapters: false",
            )
        stat = resolved.stat()
        key = f"{resolved}@{stat.st_mtime_ns}:{stat.st_size}"
        if key in self.adapters:
            return self.adapters[key]
        verify_adapter_file(path)
        handle = self.lib.llama_adapter_lora_init(self.model, str(resolved).encode("utf-8"))
        if not handle:
            raise ModelError(
                "MODEL_011",
                f"llama.cpp could not load LoRA adapter {path}",
                "the adapter is corrupt or was trained for another base model; re-export it",
            )
        kind = self._adapter_meta(handle, "adapter.type")
        if kind not in ("", "lora"):
            raise ModelError(
                "MODEL_011",
                f"{path} is a {kind!r} adapter, not a LoRA adapter",
                "export the adapter as a LoRA GGUF",
            )
        adapter = _Adapter(key, handle)
        self.adapters[key] = adapter
        return adapter

    def _adapter_meta(self, handle: Any, key: str) -> str:
        buffer = ctypes.create_string_buffer(256)
        count = self.lib.llama_adapter_meta_val_str(handle, key.encode(), buffer, len(buffer))
        return buffer.value.decode("utf-8", "replace") if count >= 0 else ""

    def use_adapter(self, adapter: _Adapter | None) -> None:
        key = adapter.key if adapter else None
        if key == self.active_adapter:
            return
        if adapter is None:
            status = self.lib.llama_set_adapters_lora(self.ctx, None, 0, None)
        else:
            handles = (self.lib.llama_adapter_lora_p_ctypes * 1)(adapter.handle)
            scales = (ctypes.c_float * 1)(1.0)
            status = self.lib.llama_set_adapters_lora(self.ctx, handles, 1, scales)
        if status != 0:
            raise ModelError(
                "MODEL_011",
                f"llama.cpp could not apply LoRA adapter {key}",
                "the adapter does not match the loaded model; re-export it for this base model",
            )
        self.active_adapter = key

    # KV sequences ---------------------------------------------------------------------

    def _clear(self, slot: _Slot) -> None:
        self.lib.llama_memory_seq_rm(self.memory, slot.seq, -1, -1)
        slot.truncate(0)
        slot.owner = None
        slot.adapter = None

    def _owned(self, conversation: str | None, adapter: str | None) -> _Slot | None:
        if not conversation:
            return None
        slot = next((s for s in self.slots if s.owner == conversation), None)
        return slot if slot is not None and slot.adapter == adapter else None

    def _prompt_tokens(
        self, prompt: str, conversation: str | None, adapter: str | None
    ) -> list[int]:
        """The prompt's tokens, extending the conversation's cached tokens when its text does."""
        data = prompt.encode("utf-8")
        slot = self._owned(conversation, adapter)
        if slot is not None and slot.tokens and data.startswith(slot.data):
            rest = data[len(slot.data) :]
            if not rest or rest[0] & 0xC0 != 0x80:
                return slot.tokens + self.tokenize_prompt(rest.decode("utf-8"))
        return self.tokenize_prompt(prompt)

    def _acquire(
        self,
        conversation: str | None,
        adapter: str | None,
        prompt: list[int],
        busy: frozenset[int] = frozenset(),
    ) -> tuple[_Slot, int]:
        """The sequence for this conversation, holding the longest reusable prefix.

        Sequences in ``busy`` belong to generations in flight: they are never taken or
        cleared, though a new sequence may copy a prefix they hold.
        """
        self.clock += 1
        free = [s for s in self.slots if s.seq not in busy]
        slot = next((s for s in free if conversation and s.owner == conversation), None)
        if slot is not None and slot.adapter != adapter:
            self._clear(slot)
            slot.owner = conversation
        if slot is None:
            slot = min(free, key=lambda s: (bool(s.tokens), s.used))
            self._clear(slot)
            slot.owner = conversation
        slot.adapter = adapter
        slot.used = self.clock
        reuse = _common_prefix(slot.tokens, prompt)
        donor, shared = None, reuse
        for other in self.slots:
            if other is slot or other.adapter != adapter or not other.tokens:
                continue
            length = _common_prefix(other.tokens, prompt)
            if length > shared:
                donor, shared = other, length
        if donor is not None:
            self.lib.llama_memory_seq_rm(self.memory, slot.seq, -1, -1)
            self.lib.llama_memory_seq_cp(self.memory, donor.seq, slot.seq, 0, shared)
            slot.tokens = donor.tokens[:shared]
            slot.ends = donor.ends[:shared]
            slot.data = bytearray(donor.data[: slot.ends[-1]])
            reuse = shared
        if reuse >= len(prompt):
            reuse = len(prompt) - 1
        if reuse < len(slot.tokens):
            if not self.lib.llama_memory_seq_rm(self.memory, slot.seq, reuse, -1):
                self.lib.llama_memory_seq_rm(self.memory, slot.seq, -1, -1)
                reuse = 0
            slot.truncate(reuse)
        return slot, reuse

    def clear_cache(self) -> None:
        """Forget every cached sequence."""
        for slot in self.slots:
            self._clear(slot)

    def _evict_one(self, busy: frozenset[int]) -> bool:
        candidates = [s for s in self.slots if s.seq not in busy and s.tokens]
        if not candidates:
            return False
        self._clear(min(candidates, key=lambda s: s.used))
        return True

    def _decode(self, slot: _Slot, tokens: Sequence[int], busy: frozenset[int]) -> None:
        """Evaluate ``tokens`` after the slot's tokens; logits only for the last one."""
        start = 0
        while start < len(tokens):
            chunk = tokens[start : start + self.batch_size]
            self._evaluate([(slot, chunk)], busy)
            start += len(chunk)

    def _evaluate(self, work: Sequence[tuple[_Slot, Sequence[int]]], busy: frozenset[int]) -> None:
        """One ``llama_decode`` of several sequences' tokens, with logits for each one's last.

        When the cache is full an idle sequence is evicted and the batch retried;
        ``_CacheFull`` when none is left. The logits of the i-th entry's last token are
        at :meth:`_logits` ``(index)`` where index counts the tokens before it.
        """
        lib, batch = self.lib, self.batch
        while True:
            n = 0
            for slot, tokens in work:
                base = len(slot.tokens)
                for i, token in enumerate(tokens):
                    batch.token[n] = token
                    batch.pos[n] = base + i
                    batch.n_seq_id[n] = 1
                    batch.seq_id[n][0] = slot.seq
                    batch.logits[n] = i == len(tokens) - 1
                    n += 1
            batch.n_tokens = n
            self.decodes += 1
            status = lib.llama_decode(self.ctx, batch)
            if status == 1:
                if self._evict_one(busy):
                    continue
                raise _CacheFull
            if status != 0:
                raise ModelError(
                    "MODEL_021",
                    f"llama.cpp failed to evaluate the prompt (status {status})",
                    "raise model.context_size, or run fewer agents at once",
                )
            for slot, tokens in work:
                slot.extend(tokens, [self.piece(token) for token in tokens])
            return

    # sampling -------------------------------------------------------------------------

    def _logits(self, index: int = -1) -> Any:
        pointer = self.lib.llama_get_logits_ith(self.ctx, index)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))

    def _full(self) -> _TokenData:
        if self.full is None:
            self.full = _TokenData(self.lib, self.n_vocab)
            self.full.view["id"][:] = np.arange(self.n_vocab, dtype=np.int32)
        return self.full

    def _pick(self, logits: Any, allowed: Any, temperature: float) -> int:
        """Index among ``logits`` (restricted to ``allowed``): greedy or tempered."""
        if temperature <= 0.0:
            return int(np.argmax(np.where(allowed, logits, -np.inf)))
        scores = np.where(allowed, logits / temperature, -np.inf)
        scores = scores - scores.max()
        weights = np.exp(scores)
        weights /= weights.sum()
        return int(self.rng.choices(range(len(weights)), weights=weights.tolist())[0])

    def _sample(
        self, logits: Any, grammar: _Grammar | None, temperature: float
    ) -> tuple[int, bool]:
        """The next token and whether the grammar forced a fallback."""
        if temperature <= 0.0:
            token = int(np.argmax(logits))
        else:
            top = np.argpartition(logits, -TOP_CANDIDATES)[-TOP_CANDIDATES:]
            token = int(top[self._pick(logits[top], np.ones(len(top), bool), temperature)])
        if grammar is None or grammar.allows(token):
            return token, False
        top = np.argpartition(logits, -TOP_CANDIDATES)[-TOP_CANDIDATES:]
        top = top[np.argsort(-logits[top])]
        data = self.top
        data.load(logits[top], top.astype(np.int32))
        allowed = grammar.filter(data)
        if allowed.any():
            return int(top[self._pick(logits[top], allowed, temperature)]), True
        full = self._full()
        full.load(logits)
        allowed = grammar.filter(full)
        if not allowed.any():
            raise ModelError(
                "MODEL_022",
                "the tool-call grammar allows no token",
                "this is a bug in Remora; set model.grammar: false to run unconstrained",
            )
        return self._pick(logits, allowed, temperature), True

    # generation -----------------------------------------------------------------------

    def generate(self, job: _Job) -> Generation:
        """One generation on its own, start to finish (benchmarks, tests, scripts)."""
        run = self.begin(job)
        try:
            while not run.done:
                self.step([run])
            return run.result()
        finally:
            run.release()

    def begin(self, job: _Job, busy: frozenset[int] = frozenset()) -> _Run:
        """Start ``job`` on a sequence outside ``busy``: evaluate its prompt (with any text
        the grammar forces before the first sampled token) and sample that token."""
        adapter = self.load_adapter(job.adapter) if job.adapter is not None else None
        key = adapter.key if adapter else None
        prompt = self._prompt_tokens(job.prompt, job.conversation, key)
        if len(prompt) + 1 > self.context_size:
            raise ModelError(
                "MODEL_020",
                f"the prompt has {len(prompt)} tokens; the context holds {self.context_size}",
                "raise model.context_size; the runner keeps prompts within model.context_size "
                "minus model.max_tokens, but never trims the system prompt or node context",
            )
        self.use_adapter(adapter)
        slot, reuse = self._acquire(job.conversation, key, prompt, busy)
        grammar = _Grammar(self, job.grammar) if job.grammar is not None else None
        run = _Run(job, slot, grammar, len(prompt), reuse, self.context_size - len(prompt))
        try:
            forced = self._force(run)
            self._decode(slot, prompt[reuse:] + forced, busy | {slot.seq})
            self._advance(run, self._logits())
        except BaseException:
            run.release()
            raise
        return run

    def step(self, runs: Sequence[_Run]) -> None:
        """Evaluate every run's pending tokens, in one batch or one decode each as
        :class:`_StepChoice` finds faster, then advance each run."""
        live = [run for run in runs if not run.done]
        if not live:
            return
        busy = frozenset(run.slot.seq for run in runs)
        together = len(live) == 1 or self.steps.together()
        started = time.perf_counter()
        if together:
            self._evaluate([(run.slot, run.pending) for run in live], busy)
        index = -1
        for run in live:
            if together:
                index += len(run.pending)
            else:
                self._evaluate([(run.slot, run.pending)], busy)
            run.pending = []
            self._advance(run, self._logits(index))
        if len(live) > 1:
            self.steps.record(together, (time.perf_counter() - started) / len(live))

    def _advance(self, run: _Run, logits: Any) -> None:
        """Sample ``run``'s next token from ``logits`` and decide whether it is done."""
        job, grammar = run.job, run.grammar
        if run.produced >= run.budget:
            if (
                run.extended
                or run.budget >= run.room
                or not self._inside_call(run.text, grammar, job)
            ):
                run.finish = "length"
                return
            run.extended = True
            run.budget = min(run.budget + job.max_tokens, run.room)
        if job.cancel.is_set():
            run.finish = "cancelled"
            return
        token, fallback = self._sample(logits, grammar, job.temperature)
        run.fallbacks += fallback
        run.produced += 1
        if self.lib.llama_vocab_is_eog(self.vocab, token):
            run.finish = "stop"
            return
        if grammar is not None:
            grammar.accept(token)
        run.add_text(self.piece(token))
        if self._finished(run):
            return
        run.pending = [token, *self._force(run)]
        self._finished(run)

    def _finished(self, run: _Run) -> bool:
        """Whether the text so far ends the run (a stop sequence, or a complete call)."""
        grammar = run.grammar
        stop = self._stop_index(run.text, grammar, run.job.call_required)
        if stop is not None:
            run.text = run.text[:stop]
            run.finish = "stop"
        elif grammar is not None and run.text.endswith(END_CALL) and grammar.allows(self.eos):
            run.finish = "stop"
        return run.done

    def _force(self, run: _Run) -> list[int]:
        """Tokens of the text the grammar forces next, accepted and added to the output."""
        if run.cursor is None or run.grammar is None:
            return []
        text = run.cursor.forced(min(_FORCE_CHARS, run.budget - run.produced))
        if not text:
            return []
        tokens = self.tokenize(text, special=True)
        for count, token in enumerate(tokens):
            if not run.grammar.allows(token):
                run.cursor = None  # the cursor and llama.cpp disagree: stop forcing
                tokens = tokens[:count]
                break
            run.grammar.accept(token)
            run.add_text(self.piece(token))
        run.produced += len(tokens)
        run.forced += len(tokens)
        return tokens

    @staticmethod
    def _inside_call(text: str, grammar: _Grammar | None, job: _Job) -> bool:
        """Whether the output stopped in the middle of a tool call."""
        if grammar is not None and job.call_required:
            return True
        start = text.rfind(START_CALL)
        return start >= 0 and END_CALL not in text[start:]

    @staticmethod
    def _stop_index(text: str, grammar: _Grammar | None, call_required: bool) -> int | None:
        """Where a stop sequence starts, if one ended the output (never inside a call)."""
        if grammar is not None and (call_required or START_CALL in text):
            return None
        for stop in STOP_SEQUENCES:
            index = text.find(stop, max(0, len(text) - 64 - len(stop)))
            if index >= 0:
                return index
        return None

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        lib = self.lib
        for adapter in self.adapters.values():
            lib.llama_adapter_lora_free(adapter.handle)
        self.adapters.clear()
        lib.llama_batch_free(self.batch)
        lib.llama_free(self.ctx)
        if self.threadpool is not None:
            lib._lib.ggml_threadpool_free(self.threadpool)


def verify_adapter_file(path: Path) -> None:
    """Reject files that are not GGUF before handing them to llama.cpp."""
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelError(
            "MODEL_010", f"cannot read LoRA adapter {path}: {exc}", "check its permissions"
        ) from None
    if magic != GGUF_MAGIC:
        raise ModelError(
            "MODEL_011",
            f"LoRA adapter {path} is not a GGUF file",
            "convert the adapter with llama.cpp's convert_lora_to_gguf.py",
        )


class LlamaCppBackend:
    """A ``ModelClient`` over one in-process llama.cpp model shared by every agent.

    The weights are loaded once and decoded by one or more *lanes*: a llama.cpp context
    with its own KV cache, threads and scheduler thread. Lanes run side by side, so on a
    2-core machine two single-thread lanes use both cores without the per-operation
    barrier that makes one 2-thread context stall when another process is busy.

    Within a lane, concurrent requests that use the same adapter (or none) are decoded
    together: each step evaluates one token (plus any forced text) of every generation
    in flight in a single ``llama_decode``, so concurrent jobs share forward passes;
    every generation gets one token per step, and a new request joins at the next step
    once a sequence is free. Requests for another adapter wait until the generations in
    flight finish (first come, first served: a request at the head of the queue is
    never overtaken by later ones). When the KV cache fills up with every sequence in
    use, the longest generation is set back and restarted later.

    A conversation stays on the lane that holds its KV cache (:class:`_Router`).
    """

    def __init__(
        self,
        model_path: Path,
        *,
        context_size: int = 8192,
        threads: int | None = None,
        lanes: int | None = None,
        batch_size: int = 512,
        grammar: bool = True,
        jump_forward: bool = True,
        use_adapters: bool = True,
        sequences: int = 4,
        cache_tokens: int | None = None,
        seed: int = 0,
        verbose: bool = False,
        poll: int | None = None,
        extra_buffers: ExtraBuffers = "auto",
        load_profile: LoadProfile | None = None,
    ) -> None:
        check_gguf(model_path)
        self.model_path = model_path
        self.extra_buffers = extra_buffers
        self.load_profile = load_profile
        """How the weights are loaded; chosen by the load probe on first load unless given."""
        self.load_verdict: ProbeVerdict | None = None
        self.grammar = grammar
        self.jump_forward = jump_forward
        self.use_adapters = use_adapters
        self.verbose = verbose
        chosen_threads = thread_choice(threads)[0]
        lane_count = lane_choice(lanes, chosen_threads)[0]
        self._settings: dict[str, Any] = {
            "context_size": context_size,
            "cache_tokens": max(context_size, (cache_tokens or 2 * context_size) // lane_count),
            "sequences": max(1, sequences),
            "threads": chosen_threads,
            "batch_size": batch_size,
            "seed": seed,
            "poll": poll,
        }
        self._weights: _Weights | None = None
        self._load_lock = threading.Lock()
        self._lanes = [_Lane(self, index) for index in range(lane_count)]
        self._router = _Router(lane_count, memory=2 * lane_count * max(1, sequences))
        self._closed = False

    def _open_engine(self) -> _Engine:
        """A new context over the shared weights (loading them on first use)."""
        with self._load_lock:
            self._check_open()
            if self._weights is None:
                self._weights = _Weights(
                    self.model_path,
                    verbose=self.verbose,
                    extra_buffers=self.choose_load_profile().extra_buffers,
                )
            return _Engine(self._weights, **self._settings)

    def choose_load_profile(self) -> LoadProfile:
        """How the weights will load: given, or the load probe's verdict (a child process
        the first time on this machine, build and model; MODEL_024 when every profile
        crashes). The CLI calls it before the first job to show the probe as progress."""
        if self.load_profile is None:
            self.load_profile, self.load_verdict = choose_profile(
                self.model_path,
                self.extra_buffers,
                threads=self.threads,
                batch_size=int(self._settings["batch_size"]),
            )
        return self.load_profile

    def load_profile_known(self) -> bool:
        """Whether :meth:`choose_load_profile` is answered without running a child."""
        if self.load_profile is not None or self.extra_buffers != "auto":
            return True
        return (
            cached_verdict(
                self.model_path, threads=self.threads, batch_size=int(self._settings["batch_size"])
            )
            is not None
        )

    def system_info(self) -> str:
        """llama.cpp's build and CPU features line (``AVX2 = 1 | ... | REPACK = 1``)."""
        return str(_bindings().llama_print_system_info().decode("utf-8", "replace")).strip()

    def _check_open(self) -> None:
        if self._closed:
            raise ModelError("MODEL_021", "the llama.cpp backend is closed", "create a new backend")

    @property
    def engine(self) -> _Engine:
        """The first lane's context, opened on first use (about a second for the default)."""
        return self._lanes[0].engine

    @property
    def engines(self) -> list[_Engine]:
        """The contexts opened so far, one per lane that has served a request."""
        return [lane.opened for lane in self._lanes if lane.opened is not None]

    @property
    def threads(self) -> int:
        """The CPU threads each lane decodes with."""
        return int(self._settings["threads"])

    @property
    def lanes(self) -> int:
        """How many contexts may decode side by side."""
        return len(self._lanes)

    def load(self) -> None:
        """Load the model now instead of on the first request."""
        _ = self.engine

    @property
    def context_size(self) -> int:
        return int(self._settings["context_size"])

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes in a prompt (special tags count as the model sees them)."""
        return len(self.engine.tokenize_prompt(text))

    def admits(self, grammar: CallGrammar, text: str) -> bool:
        """Whether llama.cpp's grammar engine accepts ``text`` as a whole output (tests, tools)."""
        return self.engine.admits(grammar, text)

    def render(self, request: ModelRequest) -> str:
        """The exact prompt text a request is completed from."""
        return render_request(request)

    def grammar_for(self, request: ModelRequest) -> tuple[CallGrammar | None, bool]:
        """The call grammar for this turn and whether a call is required."""
        specs = request.allowed_specs()
        required = request.tool_choice != "auto" and bool(specs)
        if not self.grammar or not specs:
            return None, required
        return build_call_grammar(specs, request.choices, optional_call=not required), required

    def job(self, request: ModelRequest) -> _Job:
        grammar, required = self.grammar_for(request)
        adapter = (
            Path(request.adapter).expanduser() if request.adapter and self.use_adapters else None
        )
        return _Job(
            prompt=self.render(request),
            conversation=request.conversation_id,
            adapter=adapter,
            grammar=grammar,
            call_required=required,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            jump_forward=self.jump_forward,
        )

    def generate(self, request: ModelRequest) -> Generation:
        """Blocking generation on the calling thread and the first lane's context
        (benchmarks, scripts); not concurrent with :meth:`complete`."""
        return self.engine.generate(self.job(request))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The answer; with ``request.samples`` above 1, the sampled answers too
        (``alternatives``), decoded on the conversation's lane in the same batches: the
        samples start from a copy of the prompt's cache, so the prompt is evaluated once."""
        job = self.job(request)
        samples = [
            replace(
                job,
                conversation=None,
                temperature=request.sample_temperature,
                cancel=threading.Event(),
                future=Future(),
            )
            for _ in range(request.samples - 1)
        ]
        jobs = [job, *samples]
        started = time.perf_counter()
        self._submit(*jobs)
        try:
            results = await asyncio.shield(
                asyncio.gather(*(asyncio.wrap_future(each.future) for each in jobs))
            )
        except asyncio.CancelledError:
            for each in jobs:
                each.cancel.set()
            raise
        latency = time.perf_counter() - started
        responses = [_response(result, latency) for result in results]
        return responses[0].model_copy(update={"alternatives": responses[1:]})

    def clear_cache(self) -> None:
        """Drop every conversation's KV cache (once the generations in flight finish)."""
        tasks = []
        for lane in self._lanes:
            if lane.opened is not None and not self._closed:
                task = _Task(lane.opened.clear_cache)
                lane.put(task)
                tasks.append(task)
        for task in tasks:
            task.future.result()

    def _submit(self, job: _Job, *samples: _Job) -> None:
        """Queue ``job`` on its conversation's lane, and ``samples`` of it on the same lane."""
        with self._load_lock:
            self._check_open()
            loads = [lane.load for lane in self._lanes]
            lane = self._lanes[self._router.route(job.conversation, loads)]
            lane.load += 1 + len(samples)
        for each in (job, *samples):
            each.future.add_done_callback(lambda _: lane.finished())
            lane.put(each)

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.close)

    def close(self) -> None:
        """Finish queued requests, then free the contexts and the model."""
        with self._load_lock:
            self._closed = True
        for lane in self._lanes:
            lane.stop()
        with self._load_lock:
            if self._weights is not None:
                self._weights.close()
                self._weights = None


class _Router:
    """Which lane serves a request.

    A conversation returns to the lane that holds its KV cache, unless that lane has at
    least two more requests in flight than the least loaded one (moving costs one prompt
    evaluation, sharing a lane costs a share of every step). A new conversation goes to
    the least loaded lane, ties to the lane that is home to the fewest recent
    conversations, so concurrent conversations spread even when they start while
    another is between turns. Only the ``memory`` most recent conversations are kept.
    """

    def __init__(self, lanes: int, *, memory: int) -> None:
        self.lanes = lanes
        self.memory = memory
        self.home: OrderedDict[str, int] = OrderedDict()

    def route(self, conversation: str | None, loads: Sequence[int]) -> int:
        homes = [0] * self.lanes
        for lane in self.home.values():
            homes[lane] += 1
        least = min(range(self.lanes), key=lambda i: (loads[i], homes[i], i))
        home = self.home.get(conversation) if conversation else None
        lane = home if home is not None and loads[home] < loads[least] + 2 else least
        if conversation:
            self.home[conversation] = lane
            self.home.move_to_end(conversation)
            while len(self.home) > self.memory:
                self.home.popitem(last=False)
        return lane


class _Lane:
    """One context and the scheduler thread that owns it, opened on first use."""

    def __init__(self, backend: LlamaCppBackend, index: int) -> None:
        self.backend = backend
        self.index = index
        self.opened: _Engine | None = None
        self.load = 0
        """Requests routed here and not finished (read and written under the backend's lock)."""
        self._inbox: queue.SimpleQueue[_Job | _Task | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._open_lock = threading.Lock()

    @property
    def engine(self) -> _Engine:
        with self._open_lock:
            if self.opened is None:
                self.opened = self.backend._open_engine()
            return self.opened

    def finished(self) -> None:
        with self.backend._load_lock:
            self.load -= 1

    def put(self, item: _Job | _Task) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name=f"remora-llama-{self.index}", daemon=True
                )
                self._thread.start()
        self._inbox.put(item)

    def stop(self) -> None:
        """Finish this lane's queued requests, then free its context."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            self._inbox.put(None)
            thread.join()
        with self._open_lock:
            if self.opened is not None:
                self.opened.close()
                self.opened = None

    def _serve(self) -> None:
        """The scheduler thread: admit waiting jobs, step the generations in flight."""
        waiting: deque[_Job] = deque()
        tasks: deque[_Task] = deque()
        active: list[_Run] = []
        group: str | None = None
        stopping = False
        while not (stopping and not waiting and not active and not tasks):
            block = not (waiting or active or tasks) and not stopping
            for item in _drain(self._inbox, block):
                if item is None:
                    stopping = True
                elif isinstance(item, _Task):
                    tasks.append(item)
                else:
                    waiting.append(item)
            if not active:
                while tasks:
                    tasks.popleft().run()
            for job in [job for job in waiting if job.cancel.is_set()]:
                waiting.remove(job)
                job.future.cancel()
            if not (waiting or active):
                continue
            try:
                engine = self.engine
            except ModelError as exc:
                for job in waiting:
                    job.future.set_exception(exc)
                waiting.clear()
                continue
            if not active and waiting:
                group = waiting[0].adapter_key
            while waiting and len(active) < len(engine.slots) and waiting[0].adapter_key == group:
                job = waiting.popleft()
                try:
                    run = engine.begin(job, frozenset(r.slot.seq for r in active))
                except _CacheFull:
                    waiting.appendleft(job)
                    if not active:
                        job = waiting.popleft()
                        job.future.set_exception(_cache_error())
                    break
                except BaseException as exc:
                    job.future.set_exception(exc)
                    continue
                active.append(run)
            try:
                engine.step(active)
            except _CacheFull:
                longest = max(active, key=lambda r: len(r.slot.tokens))
                active.remove(longest)
                longest.release()
                engine._clear(longest.slot)
                if active:
                    waiting.appendleft(longest.job)
                else:
                    longest.job.future.set_exception(_cache_error())
                continue
            except BaseException as exc:
                for run in active:
                    run.release()
                    run.job.future.set_exception(exc)
                active = []
                continue
            for run in [run for run in active if run.done]:
                active.remove(run)
                run.release()
                run.job.future.set_result(run.result())


@dataclass
class _Task:
    """Work that must run on the scheduler thread between generations (clearing the cache)."""

    call: Callable[[], None]
    future: Future[None] = field(default_factory=Future)

    def run(self) -> None:
        try:
            self.call()
        except BaseException as exc:
            self.future.set_exception(exc)
        else:
            self.future.set_result(None)


def _drain(inbox: queue.SimpleQueue[_Job | _Task | None], block: bool) -> list[_Job | _Task | None]:
    """Everything queued now; with ``block``, wait for at least one item first."""
    items = [inbox.get()] if block else []
    while True:
        try:
            items.append(inbox.get_nowait())
        except queue.Empty:
            return items


def _response(result: Generation, latency: float) -> ModelResponse:
    return ModelResponse(
        content=result.text,
        raw_text=result.text,
        finish_reason=result.finish_reason,
        usage=Usage(
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            cached_prompt_tokens=result.cached_tokens,
        ),
        latency_s=latency,
    )


def _cache_error() -> ModelError:
    return ModelError(
        "MODEL_021",
        "the KV cache cannot hold this generation",
        "raise model.context_size, or run fewer agents at once",
    )
