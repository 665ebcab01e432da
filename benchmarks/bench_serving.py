"""Serving the embedded model: concurrency, busy machines and constrained-call speed, in one run.

(a) concurrency: harness jobs per minute (the bundled ``harness`` agent through the real
    scheduler, tools and workspaces) at concurrency 1, 2 and 4 on one backend; concurrent
    jobs share forward passes, so 4 should give at least twice the jobs of 1.
(b) busy machine: generated tokens/s with the default thread choice (half the CPUs) and
    with every CPU, idle and while one competing process keeps a core busy.
(c) call speed: ms per generated token of a tool call with free sampling (no grammar),
    with the call grammar, and with the grammar plus jump-forward (forced text appended
    and evaluated in one batch); the goal is constrained calls faster than free text.

The machine is shared and noisy: compare the figures within one run.

    python benchmarks/bench_serving.py [--requests 8] [--tokens 48] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from remora.config import ModelConfig, RemoraConfig
from remora.definitions import load_agents
from remora.discovery import discover
from remora.harness import run_harness
from remora.model.base import Message, ModelRequest, ToolSpec
from remora.model.defaults import resolve_model_path
from remora.model.llama_cpp import LlamaCppBackend, thread_choice, usable_cpus

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "examples" / "sample_project" / "inventory" / "pricing.py"

SYSTEM = (
    "You are a model that can do function calling with the following functions\n"
    "<task_description>Document one Python function.</task_description>"
)
WRITER = ToolSpec(
    name="write_docstring",
    description="Write the function's docstring.",
    parameters={
        "type": "object",
        "properties": {
            "summary": {"type": "string", "description": "One-line summary."},
            "returns": {"type": "string", "description": "What it returns."},
        },
        "required": ["returns", "summary"],
    },
)


def _spin() -> None:
    while True:
        pass


@contextmanager
def busy_core() -> Iterator[None]:
    """One competing process keeping a core busy."""
    process = multiprocessing.Process(target=_spin, daemon=True)
    process.start()
    try:
        time.sleep(0.5)
        yield
    finally:
        process.terminate()
        process.join()


def harness_rate(path: Path, concurrency: int, requests: int) -> dict[str, Any]:
    """(a) jobs per minute of the harness agent at ``concurrency``."""
    config = RemoraConfig()
    agents = load_agents(config.agents.dirs)
    nodes = discover([str(SAMPLE)], config.discovery, root=SAMPLE.parent.parent).nodes
    backend = LlamaCppBackend(path, context_size=config.model.context_size)
    backend.load()

    async def run() -> Any:
        try:
            return await run_harness(
                agent=agents["harness"],
                nodes=nodes,
                root=SAMPLE.parent.parent,
                model=backend,
                config=config,
                backend="llama_cpp",
                requests=requests,
                concurrency=concurrency,
            )
        finally:
            await backend.aclose()

    started = time.perf_counter()
    report = asyncio.run(run())
    wall = time.perf_counter() - started
    stats = report.variants[0]
    return {
        "concurrency": concurrency,
        "jobs_per_min": 60 * len(report.episodes) / wall,
        "correct": stats.success_rate,
        "wall_s": wall,
    }


def prose_request(tokens: int) -> ModelRequest:
    return ModelRequest(
        messages=[Message(role="user", content="Write a long story about a river and a town.")],
        max_tokens=tokens,
    )


def tokens_per_s(path: Path, threads: int, tokens: int, rounds: int) -> float:
    """(b) best generated tokens/s of a plain completion."""
    backend = LlamaCppBackend(path, context_size=1024, threads=threads, sequences=1)
    try:
        backend.generate(prose_request(8))
        rates = []
        for _ in range(rounds):
            backend.engine.clear_cache()
            started = time.perf_counter()
            generation = backend.generate(prose_request(tokens))
            rates.append(generation.completion_tokens / (time.perf_counter() - started))
        return max(rates)
    finally:
        backend.close()


def call_speed(path: Path, tokens: int, rounds: int) -> dict[str, float]:
    """(c) ms per generated token: free, grammar, grammar with jump-forward."""
    messages = [
        Message(role="system", content=SYSTEM),
        Message(role="user", content="Document: def total(prices): return sum(prices)"),
    ]
    call = ModelRequest(messages=messages, tools=[WRITER], max_tokens=tokens)
    free = call.model_copy(update={"tools": []})
    backends = {
        "free": (LlamaCppBackend(path, context_size=2048, sequences=1), free),
        "grammar": (
            LlamaCppBackend(path, context_size=2048, sequences=1, jump_forward=False),
            call,
        ),
        "jump_forward": (LlamaCppBackend(path, context_size=2048, sequences=1), call),
    }
    timings: dict[str, list[float]] = {name: [] for name in backends}
    produced: dict[str, int] = {}
    try:
        for _ in range(rounds):
            for name, (backend, request) in backends.items():
                backend.clear_cache()
                backend.generate(request.model_copy(update={"max_tokens": 1}))  # prompt cached
                started = time.perf_counter()
                generation = backend.generate(request)
                elapsed = time.perf_counter() - started
                timings[name].append(1000 * elapsed / max(1, generation.completion_tokens))
                produced[name] = generation.completion_tokens
    finally:
        for backend, _ in backends.values():
            backend.close()
    result = {f"{name}_ms_per_token": statistics.median(values) for name, values in timings.items()}
    result |= {f"{name}_tokens": float(count) for name, count in produced.items()}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    path = resolve_model_path(ModelConfig())
    chosen, _ = thread_choice(None)
    print(f"model {path.name}; {usable_cpus()} usable CPUs; default threads {chosen}")

    rates = [harness_rate(path, c, args.requests) for c in (1, 2, 4)]
    for rate in rates:
        print(
            f"(a) concurrency {rate['concurrency']}: {rate['jobs_per_min']:.1f} jobs/min "
            f"({rate['correct']:.0%} correct episodes, {rate['wall_s']:.1f}s)"
        )
    print(f"(a) concurrency 4 / 1: {rates[2]['jobs_per_min'] / rates[0]['jobs_per_min']:.2f}x")

    every = usable_cpus()
    idle = {t: tokens_per_s(path, t, args.tokens, args.rounds) for t in sorted({chosen, every})}
    with busy_core():
        busy = {t: tokens_per_s(path, t, args.tokens, args.rounds) for t in sorted({chosen, every})}
    for threads in idle:
        print(
            f"(b) {threads} thread(s): idle {idle[threads]:.1f} tok/s, one core busy "
            f"{busy[threads]:.1f} tok/s, slowdown {idle[threads] / busy[threads]:.2f}x"
        )

    speed = call_speed(path, args.tokens, args.rounds)
    print(
        f"(c) ms per call token: free {speed['free_ms_per_token']:.1f}, grammar "
        f"{speed['grammar_ms_per_token']:.1f} "
        f"({speed['grammar_ms_per_token'] / speed['free_ms_per_token']:.2f}x), grammar + "
        f"jump-forward {speed['jump_forward_ms_per_token']:.1f} "
        f"({speed['jump_forward_ms_per_token'] / speed['free_ms_per_token']:.2f}x); tokens "
        f"{speed['free_tokens']:.0f} / {speed['grammar_tokens']:.0f} / "
        f"{speed['jump_forward_tokens']:.0f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
