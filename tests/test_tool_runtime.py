"""The tool runtime: arguments, system inputs, result contract, providers, events, escapes."""

from __future__ import annotations

import asyncio
import os
import textwrap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from remora.config import ToolsConfig
from remora.definitions import ToolDefinition
from remora.events import CollectingEmitter, SandboxPrintEvent
from remora.operations import installed_operations, load_agents
from remora.tools.capabilities import Capability, CapabilityContext
from remora.tools.result import ToolResult
from remora.tools.runtime import ToolRuntime, to_tool_result
from tests.stores import overlay_store

CONFIG = ToolsConfig(timeout=1.0, max_memory_mb=32, max_recursion_depth=60, workers=2)


def store_read(ctx: CapabilityContext, path: str) -> str:
    """Read a workspace file as text."""
    return ctx.store.read(path).decode("utf-8")


def store_write(ctx: CapabilityContext, path: str, content: str) -> dict[str, Any]:
    """Write a workspace file."""
    ctx.store.write(path, content.encode("utf-8"))
    return {"written": path}


def _registry(*funcs: Callable[..., Any]) -> dict[str, Capability]:
    return {func.__name__: Capability.of(func) for func in funcs}


REGISTRY = _registry(store_read, store_write)


@pytest.fixture(scope="module")
def emitter() -> CollectingEmitter:
    return CollectingEmitter()


@pytest.fixture(scope="module")
def runtime(emitter: CollectingEmitter) -> Iterator[ToolRuntime]:
    with ToolRuntime(CONFIG, emitter=emitter) as tools:
        yield tools


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    return root


def context(
    root: Path, registry: Mapping[str, Capability] = REGISTRY, **system: Any
) -> CapabilityContext:
    values: dict[str, Any] = {
        "node_text": "def f():\n    return 1\n",
        "file_path": "pkg/mod.py",
        "node_name": "f",
        "node_type": "function",
        "qualname": "f",
        "node_id": "0123456789abcdef",
        "workspace_id": "ws1",
        "operation": "test",
        "options": {"style": "google"},
        **system,
    }
    return CapabilityContext(
        store=overlay_store(root), config=CONFIG, system=values, capabilities=registry
    )


def tool(
    directory: Path,
    source: str,
    *,
    name: str = "probe",
    providers: dict[str, str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> ToolDefinition:
    path = directory / f"{name}.pym"
    path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    provider_paths = []
    for provider_name, provider_source in (providers or {}).items():
        provider_path = directory / f"{provider_name}.pym"
        provider_path.write_text(textwrap.dedent(provider_source).lstrip("\n"), encoding="utf-8")
        provider_paths.append(provider_path)
    return ToolDefinition(
        name=name,
        pym=path,
        effect="read",
        inputs_override=overrides or {},
        context_providers=provider_paths,
    )


def call(
    runtime: ToolRuntime, definition: ToolDefinition, args: dict[str, Any], ctx: CapabilityContext
) -> ToolResult:
    return asyncio.run(runtime.run(definition, args, ctx))


READER = """
    from remora.pym import Input, external

    path: str = Input("path")
    file_path: str = Input("file_path")

    @external
    def store_read(path: str) -> str:
        '''Read a workspace file as text.'''
        ...

    text = store_read(path)
    {"outcome": "success", "summary": f"read {len(text)} chars of {path}", "result": text}
"""


def test_capability_reads_through_the_workspace(
    runtime: ToolRuntime, tmp_path: Path, project: Path
) -> None:
    result = call(runtime, tool(tmp_path, READER), {"path": "pkg/mod.py"}, context(project))
    assert result.outcome == "success"
    assert result.result == "def f():\n    return 1\n"
    assert result.summary == "read 22 chars of pkg/mod.py"


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "pkg/../../outside.txt"])
def test_capability_path_escape_is_an_error_result(
    runtime: ToolRuntime, tmp_path: Path, project: Path, path: str
) -> None:
    result = call(runtime, tool(tmp_path, READER), {"path": path}, context(project))
    assert result.outcome == "error"
    assert result.error is not None
    assert "store_read failed: WS_001" in result.error
    assert "root:" not in (result.error + str(result.result))


def test_writes_stay_in_the_store(runtime: ToolRuntime, tmp_path: Path, project: Path) -> None:
    writer = tool(
        tmp_path,
        """
        from remora.pym import Input, external

        content: str = Input("content")

        @external
        def store_write(path: str, content: str) -> dict:
            ...

        store_write("pkg/new.py", content)
        """,
    )
    ctx = context(project)
    result = call(runtime, writer, {"content": "x = 1\n"}, ctx)
    assert result.outcome == "success"
    assert result.result == {"written": "pkg/new.py"}
    assert ctx.store.read("pkg/new.py") == b"x = 1\n"
    assert not (project / "pkg" / "new.py").exists()


def test_real_read_file_capability_refuses_escapes(tmp_path: Path, project: Path) -> None:
    script = """
        from remora.pym import Input, external

        path: str = Input("path")

        @external
        def read_file(path: str) -> str:
            ...

        read_file(path)
    """
    host = installed_operations().capabilities
    with ToolRuntime(CONFIG) as real:
        ok = call(real, tool(tmp_path, script), {"path": "pkg/mod.py"}, context(project, host))
        escape = call(
            real, tool(tmp_path, script), {"path": "../../etc/passwd"}, context(project, host)
        )
    assert ok.outcome == "success"
    assert "return 1" in str(ok.result)
    assert escape.outcome == "error"
    assert "read_file failed: WS_001" in (escape.error or "")


ECHO_TYPED = """
    from typing import Literal, Optional
    from remora.pym import Input

    text: str = Input("text")
    times: int = Input("times", default=1)
    mode: Literal["plain", "loud"] = Input("mode", default="plain")
    extra: Optional[list[str]] = Input("extra", default=None)

    out = text * times
    out.upper() if mode == "loud" else out
"""


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({}, "needs the argument 'text'"),
        ({"text": "a", "colour": "red"}, "has no argument 'colour'; it takes: text, times, mode"),
        ({"text": 3}, "argument 'text' must be a string, got integer"),
        ({"text": "a", "times": "2"}, "argument 'times' must be an integer, got string"),
        ({"text": "a", "mode": "quiet"}, "argument 'mode' must be one of"),
        ({"text": "a", "extra": ["x", 1]}, "argument 'extra'[1] must be a string"),
        ({"text": "a", "node_text": "sneaky"}, "has no argument 'node_text'"),
    ],
)
def test_bad_arguments_become_error_results(
    runtime: ToolRuntime, tmp_path: Path, project: Path, args: dict[str, Any], fragment: str
) -> None:
    result = call(runtime, tool(tmp_path, ECHO_TYPED), args, context(project))
    assert result.outcome == "error"
    assert fragment in (result.error or "")


def test_defaults_fill_optional_arguments(
    runtime: ToolRuntime, tmp_path: Path, project: Path
) -> None:
    definition = tool(tmp_path, ECHO_TYPED)
    assert call(runtime, definition, {"text": "ab"}, context(project)).result == "ab"
    loud = call(runtime, definition, {"text": "ab", "times": 2, "mode": "loud"}, context(project))
    assert loud.result == "ABAB"
    assert loud.summary == 'probe returned "ABAB"'


def test_override_enum_is_enforced(runtime: ToolRuntime, tmp_path: Path, project: Path) -> None:
    definition = tool(tmp_path, ECHO_TYPED, overrides={"mode": {"enum": ["plain"]}})
    result = call(runtime, definition, {"text": "a", "mode": "loud"}, context(project))
    assert result.outcome == "error"
    assert 'must be one of "plain"' in (result.error or "")


SYSTEM = """
    from remora.pym import Input

    node_name: str = Input("node_name")
    options: dict = Input("options")
    qualname: str = Input("qualname")

    f"{qualname}:{node_name}:{options['style']}"
"""


def test_system_inputs_are_injected(runtime: ToolRuntime, tmp_path: Path, project: Path) -> None:
    result = call(runtime, tool(tmp_path, SYSTEM), {}, context(project, qualname="A.f"))
    assert result.result == "A.f:f:google"


def test_missing_system_input_is_an_error(
    runtime: ToolRuntime, tmp_path: Path, project: Path
) -> None:
    ctx = CapabilityContext(store=overlay_store(project), config=CONFIG, system={"node_name": "f"})
    result = call(runtime, tool(tmp_path, SYSTEM), {}, ctx)
    assert result.outcome == "error"
    assert "system input 'options'" in (result.error or "")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("hi", ToolResult(outcome="success", summary='t returned "hi"', result="hi")),
        (None, ToolResult(outcome="success", summary="t returned null", result=None)),
        ((1, 2), ToolResult(outcome="success", summary="t returned [1, 2]", result=[1, 2])),
        ({"k": 1}, ToolResult(outcome="success", summary='t returned {"k": 1}', result={"k": 1})),
        (
            {"outcome": "partial", "summary": "half", "result": [1], "choices": {"code": ["E1"]}},
            ToolResult(outcome="partial", summary="half", result=[1], choices={"code": ["E1"]}),
        ),
        (
            {"outcome": "error", "summary": "nothing to fix"},
            ToolResult(outcome="error", summary="nothing to fix", error="nothing to fix"),
        ),
    ],
)
def test_values_become_tool_results(value: Any, expected: ToolResult) -> None:
    assert to_tool_result(value, "t") == expected


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"outcome": "great", "summary": "s"}, "breaks the tool-result contract (outcome"),
        ({"outcome": "success", "summary": "s", "extra": 1}, "(extra: Extra inputs"),
        ({"outcome": "success"}, "(summary: Field required)"),
        ({"outcome": "success", "summary": "  "}, "without a summary"),
        ({"outcome": "success", "summary": "s", "choices": {"a": 1}}, "(choices.a:"),
        ({1, 2}, "an object of type set"),
        (b"raw", "an object of type bytes"),
        ({1: "a"}, "non-string key 1"),
        ({"x": [float("nan")]}, "non-finite number nan"),
    ],
)
def test_contract_violations_become_errors(value: Any, fragment: str) -> None:
    result = to_tool_result(value, "t")
    assert result.outcome == "error"
    assert fragment in (result.error or "")


def test_script_returning_class_instance_is_an_error(
    runtime: ToolRuntime, tmp_path: Path, project: Path
) -> None:
    definition = tool(tmp_path, "class Box:\n    pass\nBox()\n")
    result = call(runtime, definition, {}, context(project))
    assert result.outcome == "error"
    assert "not JSON" in (result.error or "")


def test_sandbox_failures_become_error_results(
    runtime: ToolRuntime, tmp_path: Path, project: Path
) -> None:
    looping = call(runtime, tool(tmp_path, "while True:\n    pass\n1\n"), {}, context(project))
    assert looping.outcome == "error"
    assert looping.summary == "probe failed (timeout)"
    assert "time limit" in (looping.error or "")
    raising = call(runtime, tool(tmp_path, "x = {}\nx['nope']\n"), {}, context(project))
    assert raising.outcome == "error"
    assert "KeyError" in (raising.error or "")
    assert "line 2" in (raising.error or "")


def test_broken_script_is_reported_not_run(
    runtime: ToolRuntime, tmp_path: Path, project: Path
) -> None:
    result = call(runtime, tool(tmp_path, "import os\nos.getcwd()\n"), {}, context(project))
    assert result.outcome == "error"
    assert "PYM005" in (result.error or "")
    assert "use another tool" in (result.error or "")


def test_missing_script_is_an_error_result(runtime: ToolRuntime, project: Path) -> None:
    ghost = ToolDefinition(name="ghost", pym=project / "ghost.pym", effect="read")
    result = call(runtime, ghost, {}, context(project))
    assert result.outcome == "error"
    assert "AGENT_006" in (result.error or "")


def test_context_providers_are_prepended(
    runtime: ToolRuntime, tmp_path: Path, project: Path
) -> None:
    definition = tool(
        tmp_path,
        ECHO_TYPED,
        providers={
            "style": """
                from remora.pym import Input
                options: dict = Input("options")
                f"Style: {options['style']}"
            """,
            "about": """
                from remora.pym import Input
                text: str = Input("text")
                {"outcome": "success", "summary": f"Echoing {len(text)} chars", "result": 1}
            """,
            "counts": "[1, 2]\n",
            "broken": "1 / 0\n",
            "rejected": "import os\nos.getcwd()\n",
        },
    )
    result = call(runtime, definition, {"text": "ab"}, context(project))
    assert result.outcome == "success"
    assert result.result == "ab"
    lines = result.summary.splitlines()
    assert lines[:3] == ["Style: google", "Echoing 2 chars", "[1, 2]"]
    assert lines[3].startswith("[context broken unavailable: ")
    assert "ZeroDivisionError" in lines[3]
    assert lines[4].startswith("[context rejected unavailable: ")
    assert "PYM005" in lines[4]
    assert lines[5] == 'probe returned "ab"'


def test_prints_become_events(
    runtime: ToolRuntime, emitter: CollectingEmitter, tmp_path: Path, project: Path
) -> None:
    definition = tool(tmp_path, "print('debug line')\n'done'\n", name="printer")
    result = call(runtime, definition, {}, context(project, job_id="job-7"))
    assert result.result == "done"
    events = [
        event
        for event in emitter.of_type("sandbox_print")
        if isinstance(event, SandboxPrintEvent) and event.job_id == "job-7"
    ]
    assert [(event.script, event.stream, event.text) for event in events] == [
        (f"{tmp_path.name}/printer.pym", "stdout", "debug line\n")
    ]


def test_edited_script_is_reloaded(runtime: ToolRuntime, tmp_path: Path, project: Path) -> None:
    definition = tool(tmp_path, "'first'\n")
    assert call(runtime, definition, {}, context(project)).result == "first"
    definition.pym.write_text("'second'\n", encoding="utf-8")
    stat = definition.pym.stat()
    os.utime(definition.pym, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert call(runtime, definition, {}, context(project)).result == "second"


def test_concurrent_calls(runtime: ToolRuntime, tmp_path: Path, project: Path) -> None:
    definition = tool(tmp_path, ECHO_TYPED)

    async def many() -> list[ToolResult]:
        return list(
            await asyncio.gather(
                *(runtime.run(definition, {"text": str(i)}, context(project)) for i in range(8))
            )
        )

    assert [result.result for result in asyncio.run(many())] == [str(i) for i in range(8)]


def test_harness_agent_end_to_end(tmp_path: Path, project: Path) -> None:
    harness = load_agents()["harness"]
    with ToolRuntime(CONFIG) as real:
        echo = call(
            real, harness.tool("echo"), {"text": "f"}, context(project, harness.capabilities)
        )
        submit = call(
            real,
            harness.tool("submit_result"),
            {"summary": "echoed f"},
            context(project, harness.capabilities),
        )
    assert echo.outcome == "success"
    assert echo.result == "f"
    assert echo.summary == 'Working on function f in pkg/mod.py.\necho returned "f"'
    assert submit.outcome == "success"
    assert submit.result == {"status": "success", "summary": "echoed f"}


def test_closed_runtime_returns_errors(tmp_path: Path, project: Path) -> None:
    closed = ToolRuntime(CONFIG)
    closed.close()
    result = call(closed, tool(tmp_path, "1\n"), {}, context(project))
    assert result.outcome == "error"
    assert "unavailable" in (result.error or "")
