"""Serving the embedded model: concurrency, busy machines and constrained-call speed, in one run.

(a) concurrency: harness jobs per minute (the bundled ``harness`` agent through the real
    scheduler, tools and workspaces) at concurrency 1, 2 and 4 on one backend; concurrent
    jobs share forward passes, so 4 should give at least twice the jobs of 1.
(b) busy machine: generated tokens/s with the default thread choice (half the CPUs) and
    with every CPU, idle and while one competing process keeps a core busy.
(c) call speed: ms per generated token of a tool call with free sampling (no grammar),
    with the call grammar, and with the grammar plus jump-forward (forced text appended
    and evaluated in one batch); the goal is constrained calls faster than free text.
(d) servers: the harness agent's correct-call rate (name and arguments as its expectation
    says), success, valid calls and latency in-process (jump-forward on, as configured by
    default, and off) and through a local ``python -m llama_cpp.server`` on the same GGUF,
    in completions mode with the call grammar and in chat mode; the goal is the server in
    completions mode equal to in-process.

The machine is shared and noisy: compare the figures within one run.

    python benchmarks/bench_serving.py [--requests 8] [--tokens 48] [--rounds 3] [--only-d]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from remora.config import ModelConfig, RemoraConfig
from remora.discovery import discover
from remora.harness import run_harness
from remora.model.base import Message, ModelClient, ModelRequest, ToolSpec
from remora.model.defaults import resolve_model_path
from remora.model.llama_cpp import LlamaCppBackend, thread_choice, usable_cpus
from remora.model.openai_http import OpenAIBackend
from remora.operations import load_agents

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.llama_server import llama_server  # noqa: E402

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


def run_harness_agent(
    model: ModelClient, label: str, requests: int, concurrency: int
) -> tuple[Any, float]:
    """The harness agent's report over the sample project through ``model`` (closed after),
    and the wall time of the run."""
    config = RemoraConfig()
    agents = load_agents(config.agents.dirs)
    nodes = discover([str(SAMPLE)], config.discovery, root=SAMPLE.parent.parent).nodes

    async def run() -> Any:
        try:
            return await run_harness(
                agent=agents["harness"],
                nodes=nodes,
                root=SAMPLE.parent.parent,
                model=model,
                config=config,
                backend=label,
                requests=requests,
                concurrency=concurrency,
            )
        finally:
            await model.aclose()

    started = time.perf_counter()
    report = asyncio.run(run())
    return report, time.perf_counter() - started


def harness_rate(
    path: Path, concurrency: int, requests: int, lanes: int | None = None
) -> dict[str, Any]:
    """(a) jobs per minute of the harness agent at ``concurrency`` (default lanes)."""
    backend = LlamaCppBackend(path, context_size=RemoraConfig().model.context_size, lanes=lanes)
    backend.load()
    report, wall = run_harness_agent(backend, "llama_cpp", requests, concurrency)
    return {
        "concurrency": concurrency,
        "lanes": backend.lanes,
        "jobs_per_min": 60 * len(report.episodes) / wall,
        "correct": report.variants[0].success_rate,
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


SERVED_AS = "remora-bench"


def harness_quality(model: ModelClient, label: str, requests: int) -> dict[str, Any]:
    """(d) the harness agent's rates through ``model`` (one episode at a time)."""
    report, wall = run_harness_agent(model, label, requests, concurrency=1)
    stats = report.variants[0]
    correct = stats.correct_call_rate
    return {
        "backend": label,
        "correct_call_rate": correct if correct is not None else stats.success_rate,
        "success": stats.success_rate,
        "valid": stats.valid_call_rate,
        "call": stats.tool_call_rate,
        "p50_s": stats.latency_p50_s,
        "submitted": stats.submitted_rate,
        "wall_s": wall,
    }


def server_vs_in_process(path: Path, requests: int) -> list[dict[str, Any]]:
    """(d) the same harness episodes in-process and through a local llama.cpp server."""
    config = RemoraConfig()
    threads, _ = thread_choice(None)
    context = config.model.context_size
    rows = [
        harness_quality(LlamaCppBackend(path, context_size=context), "in-process", requests),
        harness_quality(
            LlamaCppBackend(path, context_size=context, jump_forward=False),
            "in-process, no jump-forward",
            requests,
        ),
    ]
    with llama_server(path, SERVED_AS, context=context, threads=threads, ready_within=120) as url:
        for mode in ("completions", "chat"):
            backend = OpenAIBackend(
                base_url=url,
                model_id=SERVED_AS,
                mode=mode,
                server_grammar="llama_cpp",
                timeout=config.model.request_timeout,
            )
            rows.append(harness_quality(backend, f"server, {backend.label}", requests))
    return rows


def print_serving(rows: list[dict[str, Any]]) -> None:
    base = rows[0]["correct_call_rate"]
    for row in rows:
        ratio = f"{row['correct_call_rate'] / base:.2f}x in-process" if base else "n/a"
        print(
            f"(d) {row['backend']}: correct calls {row['correct_call_rate']:.0%} ({ratio}), "
            f"success {row['success']:.0%}, submitted {row['submitted']:.0%}, "
            f"responses with a call {row['call']:.0%}, valid calls {row['valid']:.0%}, "
            f"p50 {row['p50_s']:.1f} s per model call, {row['wall_s']:.0f} s"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only-a", action="store_true", help="run only (a), concurrency")
    parser.add_argument("--only-d", action="store_true", help="run only (d), the servers")
    args = parser.parse_args()
    path = resolve_model_path(ModelConfig())
    chosen, _ = thread_choice(None)
    print(f"model {path.name}; {usable_cpus()} usable CPUs; default threads {chosen}")
    if args.only_d:
        print_serving(server_vs_in_process(path, args.requests))
        return 0

    rates = [harness_rate(path, c, args.requests) for c in (1, 2, 4)]
    one_lane = harness_rate(path, 4, args.requests, lanes=1)
    for rate in [*rates, one_lane]:
        print(
            f"(a) concurrency {rate['concurrency']}, {rate['lanes']} lane(s): "
            f"{rate['jobs_per_min']:.1f} jobs/min "
            f"({rate['correct']:.0%} correct episodes, {rate['wall_s']:.1f}s)"
        )
    print(
        f"(a) concurrency 4 / 1: {rates[2]['jobs_per_min'] / rates[0]['jobs_per_min']:.2f}x "
        f"({one_lane['jobs_per_min'] / rates[0]['jobs_per_min']:.2f}x on one lane)"
    )
    if args.only_a:
        return 0

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

    print_serving(server_vs_in_process(path, args.requests))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
