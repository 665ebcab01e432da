"""What the load probe and its fallback cost, measured side by side in one run.

(a) the probe: one child process (load, one prompt, a few greedy tokens) as run once per
    machine, build and model, against the cached verdict every later start reads;
(b) the fallback: prompt and generation tokens/s of the embedded model loaded with
    llama.cpp's extra buffer types (repacked weights; AMX where built and advertised)
    against plain CPU buffers, both loaded in this process, rounds interleaved.

The machine is shared and absolute times drift; the figures that matter are the ratios of
medians.

    python benchmarks/bench_load_profiles.py [--rounds 5] [--tokens 64] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from remora.config import ModelConfig
from remora.model.base import Message, ModelRequest
from remora.model.defaults import resolve_model_path
from remora.model.llama_cpp import LlamaCppBackend, default_threads
from remora.model.load_probe import PLAIN_BUFFERS, WITH_EXTRA_BUFFERS, LoadProfile, probe

PROMPT = (
    "Here is a Python module that computes prices for an inventory system. "
    "Explain what each function does, one paragraph per function, in plain words.\n\n"
    + "\n".join(
        f"def price_{i}(quantity, unit_price, discount={i / 100:.2f}):\n"
        f"    total = quantity * unit_price\n"
        f"    if quantity > {10 * i}:\n"
        f"        total -= total * discount\n"
        f"    return round(total, 2)\n"
        for i in range(12)
    )
)


def probe_cost(path: Path, threads: int, rounds: int) -> dict[str, Any]:
    fresh: list[float] = []
    cached: list[float] = []
    with tempfile.TemporaryDirectory() as cache:
        env = {"XDG_CACHE_HOME": cache}
        for _ in range(rounds):
            started = time.perf_counter()
            verdict = probe(path, threads=threads, batch_size=512, environ=env, refresh=True)
            fresh.append(time.perf_counter() - started)
            started = time.perf_counter()
            again = probe(path, threads=threads, batch_size=512, environ=env)
            cached.append(time.perf_counter() - started)
            assert again.cached and verdict.profile == again.profile
    return {
        "profile": verdict.profile,
        "probe_ms": round(1000 * statistics.median(fresh)),
        "cached_ms": round(1000 * statistics.median(cached), 1),
    }


def measure(backend: LlamaCppBackend, tokens: int) -> tuple[float, float]:
    """Prompt tokens/s (from an empty cache) and generation tokens/s for one request."""
    backend.clear_cache()
    request = ModelRequest(
        messages=[Message(role="user", content=PROMPT)], max_tokens=tokens, temperature=0
    )
    engine = backend.engine
    job = backend.job(request)
    started = time.perf_counter()
    run = engine.begin(job)
    prompt_seconds = time.perf_counter() - started
    started = time.perf_counter()
    while not run.done:
        engine.step([run])
    generate_seconds = time.perf_counter() - started
    result = run.result()
    run.release()
    generated = max(1, result.completion_tokens - 1)
    return result.prompt_tokens / prompt_seconds, generated / max(generate_seconds, 1e-9)


def throughput(path: Path, threads: int, rounds: int, tokens: int) -> dict[str, Any]:
    profiles: dict[str, LoadProfile] = {"extra": WITH_EXTRA_BUFFERS, "plain": PLAIN_BUFFERS}
    backends = {
        name: LlamaCppBackend(
            path, context_size=2048, lanes=1, sequences=1, threads=threads, load_profile=profile
        )
        for name, profile in profiles.items()
    }
    prompt: dict[str, list[float]] = {name: [] for name in backends}
    generate: dict[str, list[float]] = {name: [] for name in backends}
    try:
        for backend in backends.values():
            measure(backend, 4)  # warm up: load, first allocations
        for index in range(rounds):
            order = list(backends) if index % 2 == 0 else list(reversed(backends))
            for name in order:
                p, g = measure(backends[name], tokens)
                prompt[name].append(p)
                generate[name].append(g)
    finally:
        for backend in backends.values():
            backend.close()
    medians = {
        name: {
            "prompt_tok_s": round(statistics.median(prompt[name]), 1),
            "generate_tok_s": round(statistics.median(generate[name]), 1),
        }
        for name in backends
    }
    return {
        **medians,
        "plain/extra prompt": round(
            medians["plain"]["prompt_tok_s"] / medians["extra"]["prompt_tok_s"], 2
        ),
        "plain/extra generate": round(
            medians["plain"]["generate_tok_s"] / medians["extra"]["generate_tok_s"], 2
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--model", type=Path, default=None, help="GGUF; default: embedded")
    args = parser.parse_args()
    path = args.model or resolve_model_path(ModelConfig())
    backend = LlamaCppBackend(path, context_size=512, lanes=1, load_profile=PLAIN_BUFFERS)
    system_info = backend.system_info()
    backend.close()
    report = {
        "threads": args.threads,
        "system_info": system_info,
        "probe": probe_cost(path, args.threads, max(1, args.rounds // 2)),
        "throughput": throughput(path, args.threads, args.rounds, args.tokens),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
