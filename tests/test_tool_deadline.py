"""One wall-clock deadline per tool call, and the job's deadline applied to a call in flight.

Each case is an attack that overran its limit before: sleeps (which Monty does not count as
execution), host capabilities and their subprocesses, a tool still running at the job's
deadline; and results too big for the model.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from remora.config import ToolsConfig
from remora.events import CollectingEmitter
from remora.model.base import ToolSpec
from remora.runner import AgentRun, LoopSettings, LoopTool, run_agent, watching
from remora.runner.history import tool_message
from remora.testing import ScriptedModel, call
from remora.tools.capabilities import Capability, CapabilityContext
from remora.tools.process import run_command, scrubbed_env
from remora.tools.result import ToolResult
from remora.tools.runtime import ToolRuntime
from remora.tools.sandbox import Sandbox, SandboxRun
from remora.tools.script_tool import ScriptTool
from tests.stores import overlay_store
from tests.support.timed import run_timed


def slow_command(ctx: CapabilityContext, seconds: float) -> int:
    """Run a command that takes ``seconds``."""
    result = run_command(
        ["sleep", str(seconds)],
        cwd=Path.cwd(),
        env=scrubbed_env(Path("/tmp")),
        timeout=ctx.time_left(60.0),
        what="sleep",
    )
    return result.returncode


def pause(ctx: CapabilityContext) -> int:
    """Wait a fifth of a second on the host; a script loops on it."""
    time.sleep(0.2)
    return 1


REGISTRY = {func.__name__: Capability.of(func) for func in (slow_command, pause)}

SLEEPER = """
import time
for _ in range(20):
    time.sleep(2)
"done"
"""
SLOW_HOST = """
    from remora.pym import external

    @external
    def slow_command(seconds: float) -> int:
        '''Run a command that takes ``seconds``.'''
        ...

    slow_command(30)
"""
HOST_LOOP = """
    from remora.pym import external

    @external
    def pause() -> int:
        '''Wait a fifth of a second on the host; a script loops on it.'''
        ...

    total = 0
    for _ in range(1000):
        total = total + pause()
    total
"""


def script(directory: Path, source: str, name: str = "probe") -> ScriptTool:
    path = directory / f"{name}.pym"
    path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    return ScriptTool(name=name, pym=path)


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "mod.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    return root


def context(root: Path, config: ToolsConfig) -> CapabilityContext:
    return CapabilityContext(
        store=overlay_store(root), config=config, system={}, capabilities=REGISTRY
    )


def run_tool(
    tmp_path: Path, source: str, config: ToolsConfig, deadline: float | None = None
) -> tuple[ToolResult, float, Path]:
    root = project(tmp_path)
    tool = script(tmp_path, source)
    with ToolRuntime(config) as runtime:
        runtime.sandbox.start()

        def go() -> ToolResult:
            return asyncio.run(runtime.run(tool, {}, context(root, config), deadline=deadline))

        result, elapsed = run_timed(go, limit=20.0)
    return result, elapsed, root


def test_sleeps_in_the_sandbox_count_against_the_deadline() -> None:
    """Monty does not count sleeps as execution: 20 x 2 s ran under a 10 s limit before."""
    with Sandbox(ToolsConfig(timeout=10.0, workers=1)) as sandbox:

        def go() -> SandboxRun:
            return sandbox.run(
                SLEEPER,
                script_name="sleeper.py",
                inputs={},
                functions={},
                deadline=time.monotonic() + 1.5,
            )

        run, elapsed = run_timed(go, limit=20.0)
    assert run.failure is not None and run.failure.kind == "timeout"
    assert "out of time" in run.failure.message
    assert elapsed < 3.0


@pytest.mark.parametrize("source", [SLOW_HOST, HOST_LOOP], ids=["subprocess", "host-loop"])
def test_a_tool_call_ends_at_its_own_deadline(tmp_path: Path, source: str) -> None:
    config = ToolsConfig(timeout=10.0, call_timeout=1.5, workers=1)
    result, elapsed, root = run_tool(tmp_path, source, config)
    assert result.outcome == "error"
    assert "out of time" in (result.error or "") or "TOOL_201" in (result.error or "")
    assert elapsed < 5.0
    assert (root / "mod.py").read_text(encoding="utf-8") == "def f():\n    return 1\n"


def test_the_callers_deadline_cuts_the_call_shorter(tmp_path: Path) -> None:
    config = ToolsConfig(timeout=10.0, call_timeout=60.0, workers=1)
    result, elapsed, _ = run_tool(tmp_path, HOST_LOOP, config, deadline=time.monotonic() + 1.0)
    assert "out of time" in (result.error or "")
    assert elapsed < 4.0


def test_a_call_past_its_deadline_does_not_start(tmp_path: Path) -> None:
    config = ToolsConfig(workers=1)
    result, elapsed, _ = run_tool(tmp_path, SLOW_HOST, config, deadline=time.monotonic() - 1)
    assert "out of time" in (result.error or "")
    assert elapsed < 2.0


def test_time_left_is_the_smaller_of_the_limit_and_the_deadline(tmp_path: Path) -> None:
    ctx = context(project(tmp_path), ToolsConfig())
    assert ctx.time_left(7.0) == 7.0
    soon = CapabilityContext(
        store=ctx.store, config=ctx.config, system={}, deadline=time.monotonic() + 2.0
    )
    assert 1.0 < soon.time_left(60.0) <= 2.0
    assert soon.time_left(0.5) == 0.5
    gone = CapabilityContext(
        store=ctx.store, config=ctx.config, system={}, deadline=time.monotonic() - 0.1
    )
    with pytest.raises(Exception, match="TOOL_202"):
        gone.time_left(60.0)


LOOP_TOOLS = [
    LoopTool(
        spec=ToolSpec(
            name="probe",
            description="Probe the code.",
            parameters={"type": "object", "properties": {}},
        ),
        effect="read",
    ),
    LoopTool(
        spec=ToolSpec(
            name="submit_result",
            description="Finish.",
            parameters={"type": "object", "properties": {"summary": {"type": "string"}}},
        ),
        effect="terminal",
    ),
]
PROBE_THEN_SUBMIT = [[call("probe")], [call("submit_result", summary="done")]]


def run_loop(invoke: Any, settings: LoopSettings) -> tuple[Any, float, ScriptedModel]:
    model = ScriptedModel(PROBE_THEN_SUBMIT, repeat_last=True)

    def go() -> Any:
        return asyncio.run(
            run_agent(
                AgentRun(
                    system_prompt="You fix code.",
                    node_context="def f(): pass",
                    tools=LOOP_TOOLS,
                    settings=settings,
                    operation="lint",
                    node_id="n1",
                ),
                model=model,
                invoke=invoke,
                observers=watching(CollectingEmitter()),
            )
        )

    result, elapsed = run_timed(go, limit=20.0)
    return result, elapsed, model


def test_the_job_deadline_abandons_a_tool_that_ignores_it() -> None:
    async def stuck(
        name: str, arguments: dict[str, Any], *, deadline: float | None = None
    ) -> ToolResult:
        await asyncio.sleep(30)
        return ToolResult(outcome="success", summary="too late")

    result, elapsed, _ = run_loop(stuck, LoopSettings(job_timeout=1.0))
    assert result.status == "interrupted"
    assert (result.error or "").startswith("RUN_005")
    assert elapsed < 4.5  # the deadline plus the two-second grace


def test_a_real_tool_in_flight_gets_the_job_deadline(tmp_path: Path) -> None:
    config = ToolsConfig(timeout=10.0, call_timeout=120.0, workers=1)
    root = project(tmp_path)
    tool = script(tmp_path, HOST_LOOP)
    seen: list[ToolResult] = []
    with ToolRuntime(config) as runtime:
        runtime.sandbox.start()

        async def invoke(
            name: str, arguments: dict[str, Any], *, deadline: float | None = None
        ) -> ToolResult:
            result = await runtime.run(tool, arguments, context(root, config), deadline=deadline)
            seen.append(result)
            return result

        result, elapsed, _ = run_loop(invoke, LoopSettings(job_timeout=1.5))
    assert result.status == "interrupted"
    assert (result.error or "").startswith("RUN_005")
    assert "out of time" in (seen[0].error or "")
    assert elapsed < 3.5  # ended by the tool's own deadline, not the grace
    assert (root / "mod.py").read_text(encoding="utf-8") == "def f():\n    return 1\n"


def test_a_huge_result_reaches_the_model_cut_with_a_note() -> None:
    huge = ToolResult(
        outcome="success", summary="x" * 40_000_000, result=list(range(100_000)), error=None
    )
    started = time.monotonic()
    message = tool_message("probe", "c1", huge, 16_000)
    assert time.monotonic() - started < 5.0
    assert message.content is not None
    assert len(message.content) < 16_000 + 500
    response = json.loads(message.content)["response"]
    assert "ask for less" in response["cut"]
    assert response["summary"].endswith("more characters cut]")


def test_the_loop_shows_the_model_at_most_max_result_chars() -> None:
    async def big(
        name: str, arguments: dict[str, Any], *, deadline: float | None = None
    ) -> ToolResult:
        return ToolResult(outcome="success", summary="s" * 50_000, result="r" * 50_000)

    result, _, model = run_loop(big, LoopSettings(max_result_chars=2_000))
    assert result.status == "success"
    shown = model.requests[1].messages[-1]
    assert shown.role == "tool" and shown.content is not None
    assert len(shown.content) < 2_500
    assert "cut" in json.loads(shown.content)["response"]


def test_the_runtime_cuts_a_giant_summary_for_events_too(tmp_path: Path) -> None:
    config = ToolsConfig(workers=1, max_result_chars=1_000, max_memory_mb=64)
    source = """
        big = "y" * 2_000_000
        {"outcome": "success", "summary": big}
    """
    result, _, _ = run_tool(tmp_path, source, config)
    assert result.outcome == "success"
    assert len(result.summary) < 1_100
    assert result.summary.endswith("more characters cut]")
