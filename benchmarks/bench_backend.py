"""The llama.cpp backend on the embedded default, measured side by side in one run.

(a) overhead: N greedy tokens from raw llama-cpp-python (``Llama.create_completion`` on
    the same prompt tokens) against the same tokens through ``LlamaCppBackend.complete``
    (rendering, scheduler thread, sampling loop); both start from an empty cache.
(b) KV reuse: a 6-turn tool-calling episode, prompt tokens evaluated / prompt tokens
    sent, alone and as two interleaved conversations.
(c) grammar: time per generated token unconstrained, with llama-cpp-python's grammar
    (every token of the 262k vocabulary checked each step), and with Remora's grammar
    (best token checked first, then the top 64, then everything).

The machine is shared and absolute times drift, so rounds are interleaved and the
figures that matter are the ratios of medians.

    python benchmarks/bench_backend.py [--tokens 64] [--rounds 3] [--threads N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llama_cpp import Llama
from llama_cpp.llama_grammar import LlamaGrammar

from remora.config import ModelConfig
from remora.model.base import Message, ModelRequest, ToolCall, ToolSpec
from remora.model.defaults import resolve_model_path
from remora.model.grammar import build_call_grammar
from remora.model.llama_cpp import LlamaCppBackend, default_threads
from remora.runner.parsing import parse_functiongemma_calls

SYSTEM = (
    "You are a model that can do function calling with the following functions\n"
    "<task_description>Fix the lint problems of one Python file.</task_description>"
)
TOOLS = [
    ToolSpec(
        name="read_file",
        description="Read the file being fixed.",
        parameters={"type": "object", "properties": {}, "required": []},
    ),
    ToolSpec(
        name="run_linter",
        description="Run the linter and list the problems with their codes and lines.",
        parameters={"type": "object", "properties": {}, "required": []},
    ),
    ToolSpec(
        name="apply_fix",
        description="Apply the automatic fix for one lint code.",
        parameters={
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "Lint code such as F401"},
                "line": {"type": "integer", "minimum": 1},
            },
            "required": ["code"],
        },
    ),
    ToolSpec(
        name="submit_result",
        description="Finish and report what changed.",
        parameters={
            "type": "object",
            "properties": {"summary": {"type": "string"}},
            "required": ["summary"],
        },
    ),
]
WRITER = ToolSpec(
    name="write_docstring",
    description="Write the docstring of the function.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)
RESULT = {
    "outcome": "success",
    "summary": "2 problems: F401 unused import os (line 1), E501 line too long (line 14)",
    "result": {"problems": [{"code": "F401", "line": 1}, {"code": "E501", "line": 14}]},
    "choices": {"code": ["F401", "E501"]},
}


def reset(raw: Llama) -> None:
    """Empty llama-cpp-python's cache so the prompt is evaluated in full."""
    raw_reset: Any = raw.reset
    raw_reset()


def complete_raw(
    raw: Llama, prompt: list[int], tokens: int, grammar: LlamaGrammar | None = None
) -> dict[str, Any]:
    """Greedy completion with llama-cpp-python's own API (no stop strings)."""
    result: Any = raw.create_completion(
        prompt, max_tokens=tokens, temperature=0.0, repeat_penalty=1.0, grammar=grammar, stop=[]
    )
    return dict(result)


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = action()
    return time.perf_counter() - started, value


def overhead(raw: Llama, backend: LlamaCppBackend, tokens: int, rounds: int) -> dict[str, Any]:
    """(a) The same greedy tokens, raw llama-cpp-python vs Remora's backend."""
    messages = [Message(role="user", content="Tell me a long story about a lighthouse keeper.")]
    request = ModelRequest(messages=messages, max_tokens=tokens, conversation_id="story")
    prompt = backend.engine.tokenize(backend.render(request))
    raw_times, remora_times = [], []
    raw_text = remora_text = ""
    for _ in range(rounds):
        reset(raw)
        elapsed, result = timed(lambda: complete_raw(raw, prompt, tokens))
        raw_times.append(elapsed)
        raw_text = result["choices"][0]["text"]
        backend.clear_cache()
        elapsed, response = timed(lambda: asyncio.run(backend.complete(request)))
        remora_times.append(elapsed)
        remora_text = response.raw_text
    same = min(len(raw_text), len(remora_text))
    return {
        "prompt_tokens": len(prompt),
        "tokens": tokens,
        "raw_s": statistics.median(raw_times),
        "remora_s": statistics.median(remora_times),
        "overhead": statistics.median(remora_times) / statistics.median(raw_times) - 1,
        "same_text": raw_text[:same] == remora_text[:same] and same > 0,
    }


def episode(backend: LlamaCppBackend, conversations: int, turns: int) -> dict[str, Any]:
    """(b) Turns of a tool-calling episode; conversations interleave turn by turn."""
    backend.clear_cache()
    histories = [
        [
            Message(role="system", content=SYSTEM),
            Message(role="user", content=f"Fix the lint problems in inventory/module_{n}.py."),
        ]
        for n in range(conversations)
    ]
    sent = evaluated = 0
    latencies: list[float] = []
    for turn in range(turns):
        for n, messages in enumerate(histories):
            request = ModelRequest(
                messages=messages,
                tools=TOOLS,
                conversation_id=f"conv-{n}",
                max_tokens=48,
                choices={"code": ["F401", "E501"]} if turn else {},
            )
            response = asyncio.run(backend.complete(request))
            latencies.append(response.latency_s)
            sent += response.usage.prompt_tokens
            evaluated += response.usage.prompt_tokens - response.usage.cached_prompt_tokens
            call = ToolCall(id=f"call_{turn}", name="run_linter")
            parsed = parse_functiongemma_calls(response.raw_text)
            if parsed:
                call = parsed[0].model_copy(update={"id": f"call_{turn}"})
            messages.append(Message(role="assistant", tool_calls=[call]))
            payload = json.dumps({"name": call.name, "response": RESULT})
            messages.append(
                Message(role="tool", name=call.name, tool_call_id=call.id, content=payload)
            )
    return {
        "conversations": conversations,
        "turns": turns,
        "prompt_tokens_sent": sent,
        "prompt_tokens_evaluated": evaluated,
        "ratio": evaluated / sent,
        "median_turn_s": statistics.median(latencies),
    }


def grammar_speed(raw: Llama, backend: LlamaCppBackend, tokens: int, rounds: int) -> dict[str, Any]:
    """(c) Seconds per generated token: free, naive grammar, Remora's grammar."""
    messages = [
        Message(role="system", content=SYSTEM),
        Message(
            role="user", content="Write a detailed docstring for a function that parses dates."
        ),
    ]
    request = ModelRequest(
        messages=messages, tools=[WRITER], max_tokens=tokens, conversation_id="doc"
    )
    free_request = request.model_copy(update={"tools": [], "conversation_id": "free"})
    prompt = backend.engine.tokenize(backend.render(request))
    grammar = build_call_grammar([WRITER])
    naive = LlamaGrammar.from_string(grammar.gbnf, verbose=False)
    results: dict[str, list[float]] = {"free": [], "naive": [], "remora": []}
    fallbacks = 0
    for _ in range(rounds):
        backend.clear_cache()
        started = time.perf_counter()
        free = backend.generate(free_request)
        results["free"].append((time.perf_counter() - started) / free.completion_tokens)
        reset(raw)
        started = time.perf_counter()
        out = complete_raw(raw, prompt, tokens, naive)
        produced = out["usage"]["completion_tokens"]
        results["naive"].append((time.perf_counter() - started) / produced)
        backend.clear_cache()
        started = time.perf_counter()
        constrained = backend.generate(request)
        results["remora"].append((time.perf_counter() - started) / constrained.completion_tokens)
        fallbacks = constrained.grammar_fallbacks
    free_s = statistics.median(results["free"])
    return {
        "free_ms_per_token": 1000 * free_s,
        "naive_ms_per_token": 1000 * statistics.median(results["naive"]),
        "remora_ms_per_token": 1000 * statistics.median(results["remora"]),
        "naive_vs_free": statistics.median(results["naive"]) / free_s,
        "remora_vs_free": statistics.median(results["remora"]) / free_s,
        "remora_grammar_fallbacks": fallbacks,
        "remora_tokens": constrained.completion_tokens,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--model", type=Path, default=None, help="GGUF; default: embedded")
    args = parser.parse_args()
    path = args.model or resolve_model_path(ModelConfig())
    raw = Llama(
        model_path=str(path),
        n_ctx=4096,
        n_batch=512,
        n_threads=args.threads,
        n_threads_batch=args.threads,
        verbose=False,
    )
    backend = LlamaCppBackend(path, context_size=4096, threads=args.threads)
    backend.load()
    try:
        a = overhead(raw, backend, args.tokens, args.rounds)
        b1 = episode(backend, conversations=1, turns=6)
        b2 = episode(backend, conversations=2, turns=6)
        c = grammar_speed(raw, backend, args.tokens, args.rounds)
    finally:
        backend.close()
        raw.close()
    print(f"model {path.name}, {args.threads} threads, {args.rounds} rounds")
    print(
        f"(a) {a['tokens']} tokens after a {a['prompt_tokens']}-token prompt: raw "
        f"{a['raw_s']:.3f}s, Remora {a['remora_s']:.3f}s, overhead {a['overhead']:+.1%} "
        f"(same text: {a['same_text']})"
    )
    for b in (b1, b2):
        print(
            f"(b) {b['conversations']} conversation(s) x {b['turns']} turns: evaluated/sent "
            f"{b['prompt_tokens_evaluated']}/{b['prompt_tokens_sent']} = {b['ratio']:.3f} "
            f"(median turn {b['median_turn_s']:.2f}s)"
        )
    print(
        f"(c) ms/token: free {c['free_ms_per_token']:.1f}, naive grammar "
        f"{c['naive_ms_per_token']:.1f} ({c['naive_vs_free']:.2f}x), Remora grammar "
        f"{c['remora_ms_per_token']:.1f} ({c['remora_vs_free']:.2f}x; "
        f"{c['remora_grammar_fallbacks']} of {c['remora_tokens']} tokens needed a fallback)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
