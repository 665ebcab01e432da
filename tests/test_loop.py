"""The agent loop against scripted models: history, parsing, validation, results, events."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from remora.errors import ModelError, RunnerError, ToolError
from remora.events import CollectingEmitter, GuardTriggeredEvent, ToolCallEvent
from remora.model.base import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec, Usage
from remora.runner import AgentResult, AgentRun, LoopSettings, LoopTool, run_agent, watching
from remora.runner.history import estimate_tokens
from remora.testing import ScriptedModel, ScriptedTools, ScriptExhaustedError, Step, call
from remora.tools.result import ToolResult

SYSTEM = "You are a model that can do function calling with the following functions"
NODE = "Fix the lint issues in src/app.py:\nimport os\nx=1"


def spec(
    name: str, properties: dict[str, Any] | None = None, required: list[str] | None = None
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=f"{name} tool",
        parameters={
            "type": "object",
            "properties": properties or {},
            "required": required or [],
            "additionalProperties": False,
        },
    )


READ_FILE = LoopTool(spec("read_file", {"path": {"type": "string"}}, ["path"]), "read")
RUN_LINTER = LoopTool(spec("run_linter"), "read")
APPLY_FIX = LoopTool(
    spec(
        "apply_fix",
        {"code": {"type": "string"}, "line": {"type": "integer"}},
        ["code", "line"],
    ),
    "write",
)
SUBMIT = LoopTool(
    spec(
        "submit_result",
        {
            "status": {"type": "string"},
            "summary": {"type": "string"},
            "changed_files": {"type": "array", "items": {"type": "string"}},
            "details": {"type": "object"},
        },
        ["status", "summary"],
    ),
    "terminal",
)
TOOLS = [READ_FILE, RUN_LINTER, APPLY_FIX, SUBMIT]


@dataclass
class Workspace:
    changed: list[str] = field(default_factory=list)

    def changed_paths(self) -> list[str]:
        return list(self.changed)


def make_tools(workspace: Workspace, **overrides: Any) -> ScriptedTools:
    def read_file(arguments: dict[str, Any]) -> ToolResult:
        path = arguments["path"]
        return ToolResult(outcome="success", summary=f"read {path}", result=f"contents of {path}")

    def apply_fix(arguments: dict[str, Any]) -> ToolResult:
        workspace.changed.append("src/app.py")
        return ToolResult(
            outcome="success", summary=f"fixed {arguments['code']} at line {arguments['line']}"
        )

    replies: dict[str, Any] = {
        "read_file": read_file,
        "run_linter": ToolResult(
            outcome="success",
            summary="1 issue: F401 at line 1",
            result=[{"code": "F401", "line": 1}],
            choices={"code": ["F401"]},
        ),
        "apply_fix": apply_fix,
        "submit_result": ToolResult(outcome="success", summary="submitted"),
    }
    replies.update(overrides)
    return ScriptedTools(replies)


@dataclass
class Run:
    result: AgentResult
    model: ScriptedModel
    tools: ScriptedTools
    events: CollectingEmitter
    workspace: Workspace

    def types(self) -> list[str]:
        return [event.type for event in self.events.events]

    def guards(self) -> list[str]:
        return [
            event.guard for event in self.events.events if isinstance(event, GuardTriggeredEvent)
        ]


def run(
    script: Sequence[Step],
    *,
    settings: LoopSettings | None = None,
    tools: list[LoopTool] | None = None,
    invoker: ScriptedTools | None = None,
    workspace: Workspace | None = None,
    model: ScriptedModel | None = None,
    **kwargs: Any,
) -> Run:
    workspace = workspace or Workspace()
    invoker = invoker or make_tools(workspace)
    model = model or ScriptedModel(script)
    emitter = CollectingEmitter()
    result = asyncio.run(
        run_agent(
            AgentRun(
                system_prompt=SYSTEM,
                node_context=NODE,
                tools=TOOLS if tools is None else tools,
                settings=settings or LoopSettings(max_turns=6),
                operation="lint",
                node_id="abc123",
                workspace_id="ws-1",
                **{
                    name: kwargs.pop(name)
                    for name in [f.name for f in dataclasses.fields(AgentRun)]
                    if name in kwargs
                },
            ),
            model=model,
            invoke=invoker,
            changed_paths=workspace.changed_paths,
            observers=[
                *watching(emitter, kwargs.pop("transcript_path", None)),
                *kwargs.pop("observers", []),
            ],
            **kwargs,
        )
    )
    return Run(result, model, invoker, emitter, workspace)


def last_tool_response(request: ModelRequest) -> Any:
    tool = [message for message in request.messages if message.role == "tool"][-1]
    return json.loads(tool.content)


SUBMIT_OK = call(
    "submit_result", status="success", summary="fixed F401", changed_files=["src/app.py"]
)


def test_history_grows_turn_by_turn_and_the_run_submits() -> None:
    outcome = run([call("run_linter"), call("apply_fix", code="F401", line=1), SUBMIT_OK])
    assert outcome.model.message_counts == [2, 4, 6]
    first, _, third = outcome.model.requests
    assert third.messages[:2] == first.messages
    roles = [m.role for m in third.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    result = outcome.result
    assert result.status == "success"
    assert result.summary == "fixed F401"
    assert result.changed_files == ["src/app.py"]
    assert result.workspace_id == "ws-1"
    assert result.error is None
    assert outcome.tools.names() == ["run_linter", "apply_fix", "submit_result"]


def test_system_prompt_is_rendered_once_and_reused() -> None:
    outcome = run([call("run_linter"), call("run_linter"), SUBMIT_OK])
    systems = [request.messages[0] for request in outcome.model.requests]
    assert all(message is systems[0] for message in systems)
    assert systems[0].content == SYSTEM
    assert all(request.messages[1].content == NODE for request in outcome.model.requests)


def test_request_carries_catalog_sampling_and_conversation() -> None:
    outcome = run(
        [SUBMIT_OK],
        settings=LoopSettings(max_turns=4, temperature=0.0, max_tokens=200),
        adapter="adapters/lint.gguf",
        model_id="lint-lora",
    )
    request = outcome.model.requests[0]
    assert [tool.name for tool in request.tools] == [
        "read_file",
        "run_linter",
        "apply_fix",
        "submit_result",
    ]
    assert request.allowed_tools is None
    assert request.tool_choice == "required"
    assert request.temperature == 0.0
    assert request.max_tokens == 200
    assert request.adapter == "adapters/lint.gguf"
    assert request.model_id == "lint-lora"
    assert request.conversation_id is not None
    assert request.conversation_id.startswith("lint:abc123:")


def test_tool_results_reach_the_model_as_name_response_json() -> None:
    outcome = run([call("read_file", path="a.py"), SUBMIT_OK])
    tool_message = outcome.model.requests[1].messages[-1]
    assert tool_message.role == "tool"
    assert tool_message.name == "read_file"
    assert tool_message.tool_call_id == "call_1_0"
    assert json.loads(tool_message.content) == {
        "name": "read_file",
        "response": {"outcome": "success", "summary": "read a.py", "result": "contents of a.py"},
    }
    assistant = outcome.model.requests[1].messages[-2]
    assert assistant.tool_calls == [
        ToolCall(id="call_1_0", name="read_file", arguments={"path": "a.py"}, parse_path="native")
    ]
    assert assistant.content == ""


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("<start_function_call>call:run_linter{}<end_function_call>", "functiongemma"),
        ('<tool_call>{"name": "run_linter", "arguments": {}}</tool_call>', "tool_call_tag"),
        ('I will lint. {"name": "run_linter", "parameters": {}}', "json"),
        (
            '{"tool_calls": [{"function": {"name": "run_linter", "arguments": "{}"}}]}',
            "json_tool_calls",
        ),
        ('```json\n{"name": "run_linter", "arguments": {}}\n```', "fenced"),
        ("run_linter()", "pythonic"),
    ],
)
def test_every_parse_path_drives_the_loop(text: str, path: str) -> None:
    outcome = run([text, SUBMIT_OK])
    assert outcome.tools.names() == ["run_linter", "submit_result"]
    assert outcome.result.status == "success"
    assert outcome.result.telemetry.parse_paths == {path: 1, "native": 1}
    assistant = outcome.model.requests[1].messages[2]
    assert assistant.tool_calls[0].parse_path == path
    assert assistant.content == "", "the model's call is kept in canonical form, not as text"


def test_parallel_calls_run_in_order_and_each_gets_a_result() -> None:
    outcome = run([[call("read_file", path="a.py"), call("run_linter")], SUBMIT_OK])
    assert outcome.tools.names() == ["read_file", "run_linter", "submit_result"]
    roles = [m.role for m in outcome.model.requests[1].messages]
    assert roles == ["system", "user", "assistant", "tool", "tool"]


def test_calls_after_a_successful_submit_are_ignored_and_reported() -> None:
    outcome = run([[SUBMIT_OK, call("run_linter")]])
    assert outcome.tools.names() == ["submit_result"]
    assert outcome.result.details["ignored_calls_after_submit"] == ["run_linter"]


def test_invalid_arguments_are_fed_back_and_the_model_recovers() -> None:
    outcome = run(
        [
            call("apply_fix", code="F401", line="first"),
            call("apply_fix", code="F401", line=1),
            SUBMIT_OK,
        ]
    )
    *_, error_message, note = outcome.model.requests[1].messages
    assert note.role == "user"
    assert "none of your calls was valid" in note.content.lower()
    payload = json.loads(error_message.content)
    assert payload["name"] == "apply_fix"
    assert payload["response"]["outcome"] == "error"
    assert "argument 'line' must be integer" in payload["response"]["error"]
    assert outcome.tools.names() == ["apply_fix", "submit_result"]
    assert outcome.result.status == "success"
    telemetry = outcome.result.telemetry
    assert telemetry.invalid_calls == 1
    assert telemetry.requeries == 1
    assert telemetry.tool_calls == {"apply_fix": 1, "submit_result": 1}
    invalid = [
        e for e in outcome.events.events if isinstance(e, ToolCallEvent) and e.effect == "invalid"
    ]
    assert len(invalid) == 1


def test_harmless_coercion_is_applied_and_counted() -> None:
    outcome = run([call("apply_fix", code="F401", line="1"), SUBMIT_OK])
    assert outcome.tools.calls[0] == ("apply_fix", {"code": "F401", "line": 1})
    assert outcome.result.telemetry.coercions == 1
    assert outcome.result.telemetry.invalid_calls == 0


def test_unknown_tool_gets_the_valid_names_and_closest_match() -> None:
    outcome = run([call("run_lint"), call("run_linter"), SUBMIT_OK])
    payload = json.loads(outcome.model.requests[1].messages[-2].content)
    error = payload["response"]["error"]
    assert "unknown tool 'run_lint'" in error
    assert "Did you mean 'run_linter'?" in error
    assert "Valid tools: apply_fix, read_file, run_linter, submit_result" in error
    assert outcome.result.status == "success"


def test_a_call_mistake_gets_a_corrective_requery() -> None:
    outcome = run(["I think the code is fine.", call("run_linter"), SUBMIT_OK])
    second = outcome.model.requests[1]
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "user"]
    assert second.messages[2].content == "I think the code is fine."
    note = second.messages[3].content
    assert "did not contain a function call" in note
    assert "run_linter" in note
    telemetry = outcome.result.telemetry
    assert telemetry.tool_misses == 1
    assert telemetry.requeries == 1
    assert telemetry.textual_tool_call_patterns == 0
    assert outcome.result.status == "success"


def test_unparseable_call_counts_as_textual_pattern_and_names_the_problem() -> None:
    outcome = run(["<start_function_call>call:run_linter{verbose:", call("run_linter"), SUBMIT_OK])
    note = outcome.model.requests[1].messages[-1].content
    assert "could not be read as a function call" in note
    assert outcome.result.telemetry.textual_tool_call_patterns == 1
    assert outcome.result.telemetry.tool_misses == 1


def test_submit_tool_error_is_shown_and_the_run_continues() -> None:
    attempts: list[dict[str, Any]] = []

    def submit(arguments: dict[str, Any]) -> ToolResult:
        attempts.append(arguments)
        if len(attempts) == 1:
            return ToolResult.failure("file still has lint errors: F401")
        return ToolResult(outcome="success", summary="verified")

    workspace = Workspace()
    outcome = run(
        [SUBMIT_OK, call("apply_fix", code="F401", line=1), SUBMIT_OK],
        invoker=make_tools(workspace, submit_result=submit),
        workspace=workspace,
    )
    feedback = json.loads(outcome.model.requests[1].messages[-1].content)
    assert feedback["response"]["error"] == "file still has lint errors: F401"
    assert outcome.result.status == "success"
    assert len(attempts) == 2


def test_changed_files_come_from_the_workspace_not_the_claim() -> None:
    workspace = Workspace(changed=["./src/app.py", "src/other.py"])
    outcome = run(
        [
            call(
                "submit_result",
                status="success",
                summary="done",
                changed_files=["src/app.py", "src/ghost.py"],
            )
        ],
        workspace=workspace,
    )
    result = outcome.result
    assert result.changed_files == ["src/app.py", "src/other.py"]
    assert result.details["claimed_but_not_changed"] == ["src/ghost.py"]
    assert result.details["changed_but_not_claimed"] == ["src/other.py"]


def test_unknown_status_claim_becomes_failed() -> None:
    outcome = run([call("submit_result", status="done", summary="all good", details={"n": 1})])
    assert outcome.result.status == "failed"
    assert outcome.result.details == {"n": 1, "claimed_status": "done"}
    assert outcome.result.error == "agent reported failure: all good"


def test_submit_tool_verification_overrides_the_model() -> None:
    verified = ToolResult(
        outcome="partial",
        summary="tests fail",
        result={"status": "failed", "summary": "2 of 5 tests fail", "details": {"failing": 2}},
    )
    outcome = run(
        [call("submit_result", status="success", summary="all tests pass")],
        invoker=make_tools(Workspace(), submit_result=verified),
    )
    result = outcome.result
    assert result.status == "failed"
    assert result.summary == "2 of 5 tests fail"
    assert result.details == {"failing": 2, "submit_outcome": "partial"}


def test_skipped_status_is_kept() -> None:
    outcome = run([call("submit_result", status="Skipped", summary="nothing to lint")])
    assert outcome.result.status == "skipped"
    assert outcome.result.error is None


def test_max_turns_ends_with_a_submit_only_turn() -> None:
    outcome = run(
        [call("read_file", path="a.py"), call("apply_fix", code="F401", line=1), SUBMIT_OK],
        settings=LoopSettings(max_turns=2),
    )
    final = outcome.model.requests[2]
    assert final.allowed_tools == ["submit_result"]
    assert final.tool_choice == "submit_result"
    assert "turn limit is reached" in final.messages[-1].content
    assert final.messages[-1].role == "user"
    assert outcome.result.status == "success"
    assert outcome.result.telemetry.stall_triggers["max_turns"] == 1
    assert outcome.result.telemetry.turns == 3


HOST_SUBMIT = LoopTool(spec("submit_result", {"summary": {"type": "string"}}), "terminal", True)
"""A submit the host takes: its verdict, not the model's claim, says what was done."""


def _verdict(status: str) -> ToolResult:
    return ToolResult(
        outcome="success", summary=status, result={"status": status, "summary": "host verdict"}
    )


@pytest.mark.parametrize(
    ("script", "settings"),
    [
        ([call("read_file", path=f"{n}.py") for n in range(2)], LoopSettings(max_turns=2)),
        (["no idea"] * 2, LoopSettings(max_turns=10, max_requeries=1)),
    ],
    ids=["turn limit", "unusable replies"],
)
def test_a_closing_turn_with_a_host_submit_is_the_hosts(
    script: list[Step], settings: LoopSettings
) -> None:
    """At the turn limit or after too many unusable replies the model used to be asked to
    submit; where the submit is a host step the host submits, and its verdict stands."""
    invoker = make_tools(Workspace(), submit_result=_verdict("partial"))
    outcome = run(script, settings=settings, tools=[READ_FILE, HOST_SUBMIT], invoker=invoker)
    assert outcome.result.status == "partial"
    assert outcome.result.summary == "host verdict"
    assert outcome.tools.calls[-1] == ("submit_result", {})
    assert all(r.allowed_tools != ["submit_result"] for r in outcome.model.requests)
    assert outcome.guards()[-1] == "host_finish"
    assert len(outcome.model.requests) == len(script)


def test_a_blocked_repeat_that_leaves_only_host_steps_ends_with_the_hosts_submit() -> None:
    """The model repeats its one call until the repeat guard blocks it; what is left is the
    host's, so the host submits instead of asking the model for it."""
    invoker = make_tools(Workspace(), submit_result=_verdict("failed"))
    tools = [APPLY_FIX, HOST_SUBMIT]
    outcome = run([call("apply_fix", code="F401", line=1)] * 5, tools=tools, invoker=invoker)
    assert len(outcome.model.requests) == 3
    assert outcome.guards() == ["repeat", "repeat", "repeat_force", "host_finish"]
    assert outcome.tools.names() == ["apply_fix", "submit_result"]
    assert outcome.result.status == "failed"


def test_a_model_submit_is_still_asked_of_the_model() -> None:
    """Where the agent leaves the submit to the model, a blocked repeat leaves it that."""
    outcome = run([call("apply_fix", code="F401", line=1)] * 3 + [SUBMIT_OK])
    assert outcome.model.requests[-1].allowed_tools == ["read_file", "run_linter", "submit_result"]
    assert "host_finish" not in outcome.guards()
    assert outcome.result.status == "success"


def test_run_that_never_submits_still_ends_with_a_structured_result() -> None:
    model = ScriptedModel([call("read_file", path="a.py")], repeat_last=True)
    outcome = run([], model=model, settings=LoopSettings(max_turns=2, max_requeries=1))
    result = outcome.result
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.startswith("RUN_002")
    assert result.telemetry.turns == 4, "2 turns + 1 closing turn + 1 retry"
    assert result.telemetry.invalid_calls == 2
    assert outcome.types()[-1] == "agent_done"


def test_consecutive_mistakes_close_then_fail() -> None:
    model = ScriptedModel(["no idea"], repeat_last=True)
    outcome = run([], model=model, settings=LoopSettings(max_turns=10, max_requeries=1))
    requests = outcome.model.requests
    assert [r.allowed_tools for r in requests] == [None, None, ["submit_result"], ["submit_result"]]
    assert outcome.result.status == "failed"
    assert (outcome.result.error or "").startswith("RUN_003")
    assert outcome.guards() == ["requery", "mistake_limit", "requery", "requery"]
    assert outcome.result.telemetry.tool_misses == 4


def test_choices_from_a_result_go_into_the_next_requests_until_new_ones_come() -> None:
    relisted = ToolResult(outcome="success", summary="fixed", choices={"code": ["E711"]})
    outcome = run(
        [
            call("run_linter"),
            call("read_file", path="a.py"),
            call("apply_fix", code="F401", line=1),
            SUBMIT_OK,
        ],
        invoker=make_tools(Workspace(), apply_fix=relisted),
    )
    assert outcome.model.requests[0].choices == {}
    assert outcome.model.requests[1].choices == {"code": ["F401"]}
    assert outcome.model.requests[2].choices == {"code": ["F401"]}  # a read keeps them
    assert outcome.model.requests[3].choices == {"code": ["E711"]}


def test_choices_survive_a_mistake_turn() -> None:
    outcome = run([call("run_linter"), "hmm", SUBMIT_OK])
    assert outcome.model.requests[2].choices == {"code": ["F401"]}


def test_next_tools_narrow_the_next_turn_and_bind_the_validator() -> None:
    linter = ToolResult(outcome="success", summary="1 issue", next_tools=["apply_fix", "read_file"])
    outcome = run(
        [
            call("run_linter"),
            call("submit_result", summary="too early"),
            call("apply_fix", code="F401", line=1),
            SUBMIT_OK,
        ],
        invoker=make_tools(Workspace(), run_linter=linter),
    )
    assert outcome.model.requests[0].allowed_tools is None
    assert outcome.model.requests[1].allowed_tools == ["read_file", "apply_fix"]
    assert outcome.result.telemetry.invalid_calls == 1  # submit_result was not allowed yet
    assert outcome.result.status == "success"


def test_decision_prompts_declare_only_the_tools_allowed_that_turn() -> None:
    linter = ToolResult(outcome="success", summary="1 issue", next_tools=["apply_fix"])
    outcome = run(
        [call("run_linter"), call("apply_fix", code="F401", line=1), SUBMIT_OK],
        invoker=make_tools(Workspace(), run_linter=linter),
        declare_allowed_only=True,
    )
    first, second = outcome.model.requests[:2]
    # No tool narrowed the first turn: every tool is declared.
    assert [tool.name for tool in first.tools] == [tool.spec.name for tool in TOOLS]
    assert [tool.name for tool in second.tools] == ["apply_fix"]
    assert second.allowed_tools == ["apply_fix"]
    assert outcome.result.status == "success"
    # By default every request declares the whole catalog.
    default = run(
        [call("run_linter"), call("apply_fix", code="F401", line=1), SUBMIT_OK],
        invoker=make_tools(Workspace(), run_linter=linter),
    )
    assert [tool.name for tool in default.model.requests[1].tools] == [
        tool.spec.name for tool in TOOLS
    ]


def test_guards_win_over_next_tools() -> None:
    stuck = ToolResult(outcome="success", summary="read", next_tools=["read_file"])
    outcome = run(
        [call("read_file", path=f"f{index}.py") for index in range(3)] + [SUBMIT_OK],
        invoker=make_tools(Workspace(), read_file=stuck),
        settings=LoopSettings(max_turns=6, read_only_nudge_after=1, read_only_force_after=2),
    )
    forced = outcome.model.requests[2].allowed_tools
    assert forced is not None and "read_file" not in forced


def test_tool_exceptions_become_error_results() -> None:
    def broken(arguments: dict[str, Any]) -> ToolResult:
        raise RuntimeError("disk on fire")

    def refused(arguments: dict[str, Any]) -> ToolResult:
        raise ToolError("TOOL_009", "sandbox refused", "raise the memory limit")

    outcome = run(
        [call("read_file", path="a.py"), call("run_linter"), SUBMIT_OK],
        invoker=make_tools(Workspace(), read_file=broken, run_linter=refused),
    )
    first = last_tool_response(outcome.model.requests[1])
    assert first["response"]["error"] == "tool read_file crashed: RuntimeError: disk on fire"
    second = last_tool_response(outcome.model.requests[2])
    assert second["response"]["error"] == "TOOL_009: sandbox refused (raise the memory limit)"
    assert outcome.result.status == "success"


def test_model_error_ends_the_run_failed_with_its_code() -> None:
    outcome = run([call("run_linter"), ModelError("MODEL_002", "server down", "start vllm")])
    assert outcome.result.status == "failed"
    assert outcome.result.error == "MODEL_002: server down (start vllm)"
    assert outcome.result.telemetry.turns == 2
    assert outcome.types()[-1] == "agent_done"


def test_telemetry_counts_tokens_latency_and_timeline() -> None:
    outcome = run([call("run_linter"), call("apply_fix", code="F401", line=1), SUBMIT_OK])
    telemetry = outcome.result.telemetry
    assert telemetry.turns == 3
    assert telemetry.model_calls == 3
    assert telemetry.tool_calls == {"run_linter": 1, "apply_fix": 1, "submit_result": 1}
    assert telemetry.tool_calls_by_effect == {"read": 1, "write": 1, "terminal": 1}
    assert telemetry.parse_paths == {"native": 3}
    responses = outcome.events.of_type("model_response")
    assert telemetry.prompt_tokens == sum(e.model_dump()["prompt_tokens"] for e in responses)
    assert telemetry.prompt_tokens > 0
    assert telemetry.cached_prompt_tokens > 0
    assert 0 < telemetry.cached_prompt_tokens < telemetry.prompt_tokens
    assert telemetry.completion_tokens > 0
    assert len(telemetry.model_latency_s) == 3
    assert set(telemetry.tool_latency_s) == {"run_linter", "apply_fix", "submit_result"}
    assert [(entry.kind, entry.name) for entry in telemetry.timeline] == [
        ("model", "model"),
        ("tool", "run_linter"),
        ("model", "model"),
        ("tool", "apply_fix"),
        ("model", "model"),
        ("tool", "submit_result"),
    ]
    assert telemetry.wall_time_s > 0


def test_events_cover_every_step_and_carry_ids() -> None:
    outcome = run(["nope", call("run_linter"), SUBMIT_OK], run_id="run-1", job_id="job-7")
    assert outcome.types() == [
        "model_request",
        "model_response",
        "guard_triggered",
        "model_request",
        "model_response",
        "tool_call",
        "tool_result",
        "model_request",
        "model_response",
        "tool_call",
        "tool_result",
        "agent_done",
    ]
    assert {(event.run_id, event.job_id) for event in outcome.events.events} == {("run-1", "job-7")}
    done = outcome.events.events[-1]
    assert done.model_dump()["telemetry"]["turns"] == 3
    assert done.model_dump()["status"] == "success"
    response = outcome.events.events[4].model_dump()
    assert response["parse_paths"] == ["native"]
    assert response["tool_calls"] == 1
    request = outcome.events.events[0].model_dump()
    assert request["messages"] == 2
    assert request["allowed_tools"] == ["read_file", "run_linter", "apply_fix", "submit_result"]


def test_transcript_has_full_prompts_and_raw_output(tmp_path: Path) -> None:
    transcript = tmp_path / "logs" / "lint.txt"
    run(['{"name": "run_linter", "arguments": {}}', SUBMIT_OK], transcript_path=transcript)
    text = transcript.read_text(encoding="utf-8")
    assert text.count("=== turn") == 2
    assert text.count(SYSTEM) == 2, "every request is logged in full"
    assert text.count("import os") == 2
    assert '{"name": "run_linter", "arguments": {}}' in text
    assert "parsed [json] run_linter({})" in text
    assert '"summary": "1 issue: F401 at line 1"' in text
    assert "##### done: success" in text


def test_trimming_keeps_system_and_node_context() -> None:
    big = ToolResult(outcome="success", summary="read a big file", result="y" * 3000)
    model = ScriptedModel(
        [call("read_file", path=f"f{index}.py") for index in range(5)] + [SUBMIT_OK]
    )
    outcome = run(
        [],
        model=model,
        invoker=make_tools(Workspace(), read_file=big),
        settings=LoopSettings(
            max_turns=8,
            context_size=2400,
            max_tokens=200,
            read_only_force_after=9,
            read_only_nudge_after=9,
        ),
    )
    for request in outcome.model.requests:
        assert request.messages[0].content == SYSTEM
        assert request.messages[1].content == NODE
    last = outcome.model.requests[-1]
    trimmed = [m for m in last.messages if m.role == "tool" and '"trimmed": true' in m.content]
    assert trimmed, "older results were replaced by their summaries"
    assert '"summary": "read a big file"' in trimmed[0].content
    assert outcome.result.telemetry.context_trims > 0
    assert outcome.result.status == "success"


class VerboseRenderer(ScriptedModel):
    """A backend whose rendered prompt is twice as long as the history counts it."""

    def render(self, request: ModelRequest) -> str:
        return "".join(2 * message.content for message in request.messages)

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)


def test_the_prompt_is_trimmed_to_the_budget_as_the_backend_renders_it() -> None:
    big = ToolResult(outcome="success", summary="read a big file", result="y" * 1500)
    script = [call("read_file", path=f"f{index}.py") for index in range(5)] + [SUBMIT_OK]
    settings = LoopSettings(
        max_turns=8,
        context_size=2400,
        max_tokens=200,
        read_only_force_after=9,
        read_only_nudge_after=9,
    )
    measured = VerboseRenderer(script)
    outcome = run(
        [], model=measured, invoker=make_tools(Workspace(), read_file=big), settings=settings
    )
    assert outcome.result.status == "success"
    rendered = [measured.count_tokens(measured.render(r)) for r in measured.requests]
    assert max(rendered) <= settings.prompt_budget
    plain = ScriptedModel(script)  # no render: only the history's own count applies
    run([], model=plain, invoker=make_tools(Workspace(), read_file=big), settings=settings)
    assert max(measured.count_tokens(measured.render(r)) for r in plain.requests) > (
        settings.prompt_budget
    )
    for request in measured.requests:
        assert request.messages[0].content == SYSTEM and request.messages[1].content == NODE


def test_count_tokens_from_the_model_is_used() -> None:
    seen: list[str] = []

    def count(text: str) -> int:
        seen.append(text)
        return len(text)

    run([SUBMIT_OK], count_tokens=count)
    assert SYSTEM in seen
    assert NODE in seen


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ([READ_FILE], "exactly one terminal tool named submit_result"),
        ([READ_FILE, READ_FILE, SUBMIT], "listed twice"),
        ([LoopTool(spec("finish"), "terminal"), SUBMIT], "exactly one terminal tool"),
        ([], "at least one tool"),
        ([LoopTool(spec("x"), "mutate"), SUBMIT], "has effect 'mutate'"),  # type: ignore[arg-type]
    ],
)
def test_unusable_catalog_is_a_runner_error(tools: list[LoopTool], message: str) -> None:
    with pytest.raises(RunnerError, match=message) as raised:
        run([SUBMIT_OK], tools=tools)
    assert raised.value.code == "RUN_001"


def test_settings_come_from_config() -> None:
    from remora.config import ModelConfig, RunnerConfig

    settings = LoopSettings.from_config(
        RunnerConfig(read_only_force_after=5), ModelConfig(context_size=4096), agent_max_turns=7
    )
    assert settings.max_turns == 7
    assert settings.read_only_force_after == 5
    assert settings.prompt_budget == 4096 - 384
    overridden = LoopSettings.from_config(
        RunnerConfig(max_turns=3), ModelConfig(), agent_max_turns=7
    )
    assert overridden.max_turns == 3


def test_settings_reject_impossible_values() -> None:
    with pytest.raises(RunnerError, match="max_tokens"):
        LoopSettings(context_size=512, max_tokens=512)
    with pytest.raises(RunnerError, match="max_turns"):
        LoopSettings(max_turns=0)


# --- cancellation and timeouts ---------------------------------------------------------


def test_cancel_set_during_a_tool_stops_before_the_next_model_call() -> None:
    cancel = asyncio.Event()
    workspace = Workspace()

    def apply_and_interrupt(arguments: dict[str, Any]) -> ToolResult:
        workspace.changed.append("src/app.py")
        cancel.set()
        return ToolResult(outcome="success", summary="fixed")

    outcome = run(
        [call("apply_fix", code="F401", line=1), SUBMIT_OK],
        invoker=make_tools(workspace, apply_fix=apply_and_interrupt),
        workspace=workspace,
        cancel=cancel,
    )
    result = outcome.result
    assert result.status == "interrupted"
    assert result.error == "RUN_004: the run was cancelled"
    assert result.changed_files == ["src/app.py"], "the workspace is left intact"
    assert len(outcome.model.requests) == 1
    assert outcome.model.remaining == 1
    assert outcome.types()[-1] == "agent_done"
    assert outcome.events.events[-1].model_dump()["status"] == "interrupted"


def test_cancel_during_a_model_call_abandons_it() -> None:
    cancel = asyncio.Event()

    async def slow(request: ModelRequest) -> Step:
        asyncio.get_running_loop().call_later(0.01, cancel.set)
        await asyncio.sleep(30)
        return SUBMIT_OK

    outcome = run([slow], cancel=cancel)
    assert outcome.result.status == "interrupted"
    assert outcome.result.telemetry.model_calls == 0


def test_cancel_between_parallel_calls_skips_the_rest() -> None:
    cancel = asyncio.Event()

    def read_and_cancel(arguments: dict[str, Any]) -> ToolResult:
        cancel.set()
        return ToolResult(outcome="success", summary="read")

    outcome = run(
        [[call("read_file", path="a.py"), call("run_linter")]],
        invoker=make_tools(Workspace(), read_file=read_and_cancel),
        cancel=cancel,
    )
    assert outcome.tools.names() == ["read_file"]
    assert outcome.result.status == "interrupted"


def test_job_timeout_interrupts_a_slow_model() -> None:
    async def slow(request: ModelRequest) -> Step:
        await asyncio.sleep(30)
        return SUBMIT_OK

    outcome = run([slow], settings=LoopSettings(job_timeout=0.05))
    assert outcome.result.status == "interrupted"
    assert (outcome.result.error or "").startswith("RUN_005: the job timed out")


def test_job_timeout_with_a_cancel_event_too() -> None:
    async def slow(request: ModelRequest) -> Step:
        await asyncio.sleep(30)
        return SUBMIT_OK

    outcome = run([slow], settings=LoopSettings(job_timeout=0.05), cancel=asyncio.Event())
    assert (outcome.result.error or "").startswith("RUN_005")


def test_task_cancellation_propagates_after_agent_done() -> None:
    emitter = CollectingEmitter()

    async def slow(request: ModelRequest) -> Step:
        await asyncio.sleep(30)
        return SUBMIT_OK

    async def main() -> None:
        task = asyncio.create_task(
            run_agent(
                AgentRun(
                    system_prompt=SYSTEM,
                    node_context=NODE,
                    tools=TOOLS,
                    operation="lint",
                    node_id="n",
                ),
                model=ScriptedModel([slow]),
                invoke=make_tools(Workspace()),
                observers=watching(emitter),
            )
        )
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    done = emitter.of_type("agent_done")
    assert len(done) == 1
    assert done[0].model_dump()["status"] == "interrupted"


def test_backend_timeout_before_the_deadline_is_not_an_interruption() -> None:
    async def flaky(request: ModelRequest) -> ModelResponse:
        raise TimeoutError("socket timeout")

    with pytest.raises(TimeoutError, match="socket timeout"):
        run([flaky])


# --- the scripted doubles themselves ----------------------------------------------------


def test_scripted_model_replays_steps_and_records_requests() -> None:
    async def dynamic(request: ModelRequest) -> Step:
        return call("echo", n=len(request.messages))

    model = ScriptedModel(["plain text", call("a"), [call("b"), call("c")], dynamic])
    request = ModelRequest(messages=[Message(role="user", content="hi")])

    async def drive() -> list[ModelResponse]:
        return [await model.complete(request) for _ in range(4)]

    text, single, parallel, produced = asyncio.run(drive())
    assert (text.content, text.raw_text, text.tool_calls) == ("plain text", "plain text", [])
    assert [c.name for c in single.tool_calls] == ["a"]
    assert [c.name for c in parallel.tool_calls] == ["b", "c"]
    assert produced.tool_calls[0].arguments == {"n": 1}
    assert model.message_counts == [1, 1, 1, 1]
    assert model.remaining == 0
    with pytest.raises(ScriptExhaustedError, match="after 4 response"):
        asyncio.run(model.complete(request))


def test_scripted_model_usage_reports_the_shared_prefix_as_cached() -> None:
    model = ScriptedModel([call("a"), call("b")])
    first = ModelRequest(messages=[Message(role="system", content="s" * 40)])
    second = ModelRequest(messages=[*first.messages, Message(role="user", content="u" * 40)])

    async def drive() -> tuple[ModelResponse, ModelResponse]:
        return await model.complete(first), await model.complete(second)

    one, two = asyncio.run(drive())
    assert one.usage.prompt_tokens == 14
    assert one.usage.cached_prompt_tokens == 0
    assert two.usage.prompt_tokens == 28
    assert two.usage.cached_prompt_tokens == 14
    silent = asyncio.run(ScriptedModel([call("a")], usage=False).complete(first))
    assert silent.usage == Usage()


def test_scripted_model_raises_scripted_errors_and_closes() -> None:
    model = ScriptedModel([ModelError("MODEL_001", "boom")])
    with pytest.raises(ModelError, match="boom"):
        asyncio.run(model.complete(ModelRequest(messages=[])))
    asyncio.run(model.aclose())
    assert model.closed


def test_scripted_tools_record_calls_and_refuse_unknown_tools() -> None:
    tools = ScriptedTools({"a": ToolResult(outcome="success", summary="a")})

    async def drive() -> tuple[ToolResult, ToolResult]:
        return await tools("a", {"x": 1}), await tools("b", {})

    known, unknown = asyncio.run(drive())
    assert known.summary == "a"
    assert unknown.outcome == "error"
    assert tools.calls == [("a", {"x": 1}), ("b", {})]


def test_host_steps_run_without_a_model_turn_and_the_host_submits() -> None:
    """A result that leaves one next tool, declared a host step, is called by the host; a
    result that leaves a choice goes back to the model."""
    workspace = Workspace()

    def apply_fix(arguments: dict[str, Any]) -> ToolResult:
        workspace.changed.append("src/app.py")
        left = arguments["line"] == 1
        return ToolResult(
            outcome="success",
            summary="fixed",
            next_tools=["apply_fix", "submit_result"] if left else ["run_linter"],
        )

    invoker = make_tools(
        workspace,
        apply_fix=apply_fix,
        run_linter=ToolResult(outcome="success", summary="clean", next_tools=["submit_result"]),
        submit_result=ToolResult(
            outcome="success", summary="done", result={"status": "success", "summary": "host"}
        ),
    )
    host_tools = [
        READ_FILE,
        LoopTool(RUN_LINTER.spec, "read", host_step=True),
        APPLY_FIX,
        LoopTool(spec("submit_result", {"summary": {"type": "string"}}), "terminal", True),
    ]
    outcome = run(
        [call("apply_fix", code="F401", line=1), call("apply_fix", code="E501", line=2)],
        tools=host_tools,
        invoker=invoker,
        workspace=workspace,
    )
    assert outcome.tools.names() == ["apply_fix", "apply_fix", "run_linter", "submit_result"]
    assert outcome.tools.calls[-1] == ("submit_result", {})
    assert len(outcome.model.requests) == 2
    result = outcome.result
    assert (result.status, result.summary) == ("success", "host")
    assert result.telemetry.turns == 2
    assert result.telemetry.host_steps == 2
    second = outcome.model.requests[1]
    assert second.allowed_tools == ["apply_fix", "submit_result"]


def test_a_tool_left_as_the_only_next_step_is_not_called_unless_it_is_a_host_step() -> None:
    invoker = make_tools(
        Workspace(),
        run_linter=ToolResult(outcome="success", summary="clean", next_tools=["submit_result"]),
    )
    outcome = run([call("run_linter"), SUBMIT_OK], invoker=invoker)
    assert outcome.tools.names() == ["run_linter", "submit_result"]
    assert len(outcome.model.requests) == 2
    assert outcome.result.telemetry.host_steps == 0


def test_observers_see_every_step_and_the_loop_needs_none() -> None:
    """Telemetry, events and transcripts are observers: an added one sees each step in
    order, and without any but the loop's own telemetry the result is the same."""
    from remora.runner import LoopObserver

    class Steps(LoopObserver):
        def __init__(self) -> None:
            self.seen: list[str] = []

        def started(self, run: AgentRun) -> None:
            self.seen.append(f"started {run.operation}")

        def requested(self, turn: int, request: Any, allowed: list[str]) -> None:
            self.seen.append(f"requested {turn}")

        def tool_called(self, turn: int, call: Any, effect: str, host_step: bool) -> None:
            self.seen.append(f"called {call.name}")

        def finished(self, result: AgentResult) -> None:
            self.seen.append(f"finished {result.status}")

    steps = Steps()
    script = [call("run_linter"), SUBMIT_OK]
    watched = run(script, observers=[steps])
    assert steps.seen == [
        "started lint",
        "requested 1",
        "called run_linter",
        "requested 2",
        "called submit_result",
        "finished success",
    ]
    bare = asyncio.run(
        run_agent(
            AgentRun(
                system_prompt=SYSTEM, node_context=NODE, tools=TOOLS, operation="lint", node_id="x"
            ),
            model=ScriptedModel(script),
            invoke=make_tools(Workspace()),
        )
    )
    assert bare.status == watched.result.status == "success"
    assert (
        bare.telemetry.tool_calls
        == watched.result.telemetry.tool_calls
        == {
            "run_linter": 1,
            "submit_result": 1,
        }
    )
