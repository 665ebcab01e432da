"""Agent-loop overhead per turn: Remora's loop vs a bare model-then-tool loop.

Both loops run the same 10-turn episode against a scripted model that answers at once
and a tool that returns at once, so every microsecond measured is loop machinery: the
bare loop only calls the model and the tool; Remora's loop adds parsing, validation,
guards, history rendering, telemetry and events (written as JSONL to a temp file, as
in a real run). Episodes are interleaved over several rounds and the medians compared,
because this machine is shared and absolute times drift. Two scenarios: calls returned
natively by the backend, and calls the runner must parse from FunctionGemma text.

    python benchmarks/bench_loop.py [--rounds 7] [--episodes 60]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from remora.events import JsonlEmitter
from remora.model.base import Message, ModelRequest, ToolCall, ToolSpec
from remora.model.functiongemma import render_call
from remora.runner import AgentRun, LoopSettings, LoopTool, run_agent, watching
from remora.testing import ScriptedModel, Step
from remora.tools.result import ToolResult

TURNS = 10
TARGET_MS = 1.0
SYSTEM = "You are a model that can do function calling with the following functions"
NODE = "Fix the lint issues in src/app.py:\n" + "import os\nx=1\n" * 20


def _spec(name: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=f"The {name} tool.",
        parameters={
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    )


TOOLS = [
    LoopTool(_spec("read_file", {"path": {"type": "string"}}, ["path"]), "read"),
    LoopTool(_spec("run_linter", {}, []), "read"),
    LoopTool(
        _spec(
            "apply_fix", {"code": {"type": "string"}, "line": {"type": "integer"}}, ["code", "line"]
        ),
        "write",
    ),
    LoopTool(
        _spec(
            "submit_result",
            {"status": {"type": "string"}, "summary": {"type": "string"}},
            ["status", "summary"],
        ),
        "terminal",
    ),
]
RESULT = ToolResult(
    outcome="success",
    summary="done",
    result={"issues": [{"code": "F401", "line": 1, "message": "unused import"}]},
)


def episode_calls() -> list[ToolCall]:
    """Nine productive calls that trip no guard, then submit_result on turn ten."""
    calls = []
    for turn in range(TURNS - 1):
        if turn % 2 == 0:
            calls.append(ToolCall(name="read_file", arguments={"path": f"src/m{turn}.py"}))
        else:
            calls.append(ToolCall(name="apply_fix", arguments={"code": "F401", "line": turn}))
    calls.append(ToolCall(name="submit_result", arguments={"status": "success", "summary": "ok"}))
    return calls


def script(native: bool) -> list[Step]:
    calls = episode_calls()
    return list(calls) if native else [render_call(call) for call in calls]


async def instant_tool(
    name: str, arguments: dict[str, Any], *, deadline: float | None = None
) -> ToolResult:
    return RESULT


async def bare_episode(native: bool) -> None:
    """The baseline: model call, take the first call, run the tool; nothing else."""
    model = ScriptedModel(script(native), usage=False)
    request = ModelRequest(
        messages=[Message(role="system", content=SYSTEM), Message(role="user", content=NODE)],
        tools=[tool.spec for tool in TOOLS],
    )
    for _ in range(TURNS):
        response = await model.complete(request)
        name = response.tool_calls[0].name if response.tool_calls else "read_file"
        await instant_tool(name, {})


async def remora_episode(native: bool, emitter: JsonlEmitter) -> None:
    model = ScriptedModel(script(native), usage=False)
    result = await run_agent(
        AgentRun(
            system_prompt=SYSTEM,
            node_context=NODE,
            tools=TOOLS,
            settings=LoopSettings(max_turns=TURNS),
            operation="lint",
            node_id="bench",
        ),
        model=model,
        invoke=instant_tool,
        observers=watching(emitter),
    )
    if result.status != "success" or result.telemetry.turns != TURNS:
        raise SystemExit(f"benchmark episode did not run as scripted: {result.error}")


async def measure(native: bool, episodes: int, emitter: JsonlEmitter) -> tuple[float, float]:
    """Seconds per episode for (bare, remora), interleaved within one round."""
    bare = remora = 0.0
    for _ in range(episodes):
        start = time.perf_counter()
        await bare_episode(native)
        bare += time.perf_counter() - start
        start = time.perf_counter()
        await remora_episode(native, emitter)
        remora += time.perf_counter() - start
    return bare / episodes, remora / episodes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--episodes", type=int, default=60)
    args = parser.parse_args()
    worst = 0.0
    with tempfile.TemporaryDirectory() as directory:
        emitter = JsonlEmitter(Path(directory) / "events.jsonl")
        print(f"{TURNS}-turn episode, {args.rounds} rounds x {args.episodes} episodes, medians")
        print(
            f"{'scenario':<22}{'bare/turn':>12}{'remora/turn':>14}{'overhead/turn':>16}{'ratio':>8}"
        )
        for native, label in ((True, "native tool_calls"), (False, "FunctionGemma text")):
            asyncio.run(measure(native, 5, emitter))
            bare_times: list[float] = []
            remora_times: list[float] = []
            for _ in range(args.rounds):
                bare, remora = asyncio.run(measure(native, args.episodes, emitter))
                bare_times.append(bare / TURNS)
                remora_times.append(remora / TURNS)
            bare_turn = statistics.median(bare_times)
            remora_turn = statistics.median(remora_times)
            overhead_ms = (remora_turn - bare_turn) * 1000
            worst = max(worst, overhead_ms)
            print(
                f"{label:<22}{bare_turn * 1e6:>10.1f}us{remora_turn * 1e6:>12.1f}us"
                f"{overhead_ms:>13.3f}ms{remora_turn / bare_turn:>7.1f}x"
            )
        emitter.close()
    verdict = "meets" if worst < TARGET_MS else "MISSES"
    print(f"worst overhead {worst:.3f} ms/turn {verdict} the {TARGET_MS:g} ms target")
    return 0 if worst < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
