"""Stall guards, as a state machine and through the loop with scripted models."""

from __future__ import annotations

import json

import pytest

from remora.runner.catalog import LoopTool, ToolCatalog
from remora.runner.guards import (
    CYCLE,
    MAX_TURNS,
    MISTAKE_LIMIT,
    READ_ONLY_FORCE,
    READ_ONLY_NUDGE,
    REPEAT_FORCE,
    REQUERY,
    CallRecord,
    Guards,
    call_signature,
)
from remora.runner.settings import LoopSettings
from remora.testing import ScriptedModel, call
from remora.tools.result import ToolResult
from tests.test_loop import (
    APPLY_FIX,
    READ_FILE,
    RUN_LINTER,
    SUBMIT,
    SUBMIT_OK,
    Workspace,
    make_tools,
    run,
    spec,
)

CATALOG = ToolCatalog([READ_FILE, RUN_LINTER, APPLY_FIX, SUBMIT])
OK = ToolResult(outcome="success", summary="ok")


def guards(**settings: int) -> Guards:
    return Guards(CATALOG, LoopSettings(**settings))  # type: ignore[arg-type]


def read(path: str = "a.py") -> CallRecord:
    return CallRecord("read_file", call_signature("read_file", {"path": path}), "read")


def lint() -> CallRecord:
    return CallRecord("run_linter", call_signature("run_linter", {}), "read")


def fix(line: int = 1) -> CallRecord:
    return CallRecord(
        "apply_fix", call_signature("apply_fix", {"code": "F401", "line": line}), "write"
    )


# --- the state machine ----------------------------------------------------------------


def test_signature_is_canonical() -> None:
    assert call_signature("t", {"a": 1, "b": [1, 2]}) == call_signature("t", {"b": [1, 2], "a": 1})
    assert call_signature("t", {"a": 1}) != call_signature("t", {"a": "1"})
    assert call_signature("t", {"a": 1}) != call_signature("u", {"a": 1})


def test_first_plan_allows_everything_with_the_configured_choice() -> None:
    plan, firings = Guards(CATALOG, LoopSettings(tool_choice="auto")).plan(1)
    assert plan.allowed is None
    assert plan.tool_choice == "auto"
    assert firings == []


def test_results_are_remembered_until_a_write() -> None:
    state = guards()
    state.remember(read().signature, "read", OK)
    assert state.earlier_result(read().signature) is OK
    state.remember(fix().signature, "write", OK)
    assert state.earlier_result(read().signature) is None
    assert state.earlier_result(fix().signature) is OK


def test_read_only_nudge_then_force() -> None:
    state = guards(read_only_nudge_after=2, read_only_force_after=3)
    assert state.end_turn([read()], None) == []
    nudge = state.end_turn([lint()], None)
    assert [f.guard for f in nudge] == [READ_ONLY_NUDGE]
    assert "Now make the change with apply_fix, or call submit_result" in nudge[0].message
    assert state.plan(3)[0].allowed is None
    force = state.end_turn([read("b.py")], None)
    assert [f.guard for f in force] == [READ_ONLY_FORCE]
    plan, _ = state.plan(4)
    assert plan.allowed == ("apply_fix", "submit_result")
    assert plan.tool_choice == "required"
    assert state.end_turn([fix()], None) == []
    assert state.plan(5)[0].allowed is None


def test_force_without_write_tools_leaves_submit_only() -> None:
    catalog = ToolCatalog([READ_FILE, SUBMIT])
    state = Guards(catalog, LoopSettings(read_only_nudge_after=1, read_only_force_after=1))
    firings = state.end_turn([read()], None)
    assert "only these tools are allowed: submit_result" in firings[0].message
    assert state.plan(2)[0].allowed == ("submit_result",)
    nudging = Guards(catalog, LoopSettings(read_only_nudge_after=1, read_only_force_after=5))
    assert "Now call submit_result" in nudging.end_turn([read()], None)[0].message


def test_abab_cycle_blocks_both_tools_for_one_turn() -> None:
    state = guards(read_only_nudge_after=9, read_only_force_after=9)
    for record in (read(), fix(), read()):
        assert all(f.guard != CYCLE for f in state.end_turn([record], None))
    firings = state.end_turn([fix()], None)
    assert [f.guard for f in firings] == [CYCLE]
    assert "read_file -> apply_fix" in firings[0].detail
    assert state.plan(5)[0].allowed == ("run_linter", "submit_result")
    assert state.plan(6)[0].allowed is None


def test_abcabc_cycle_is_caught_and_aaaa_is_not_a_cycle() -> None:
    state = guards(read_only_nudge_after=9, read_only_force_after=9)
    sequence = [read(), lint(), fix(), read(), lint()]
    for record in sequence:
        assert state.end_turn([record], None) == []
    assert [f.guard for f in state.end_turn([fix()], None)] == [CYCLE]
    same = guards(read_only_nudge_after=9, read_only_force_after=9)
    for _ in range(4):
        assert same.end_turn([read()], None) == []


def test_repeats_force_progress_after_max_repeats() -> None:
    state = guards(max_repeats=2, read_only_nudge_after=9, read_only_force_after=9)
    record = read()
    first = state.repeated("read_file", record.signature)
    assert "not run again" in first.message
    repeated = CallRecord(record.name, record.signature, "read", repeated=True)
    assert state.end_turn([repeated], None) == []
    state.repeated("read_file", record.signature)
    firings = state.end_turn([repeated], None)
    assert [f.guard for f in firings] == [REPEAT_FORCE]
    assert state.plan(3)[0].allowed == ("run_linter", "apply_fix", "submit_result")


def test_mistakes_requery_then_close_then_stop() -> None:
    state = guards(max_requeries=2, max_turns=20)
    assert [f.guard for f in state.end_turn([], "no call")] == [REQUERY]
    assert [f.guard for f in state.end_turn([], "no call")] == [REQUERY]
    closing = state.end_turn([], "no call")
    assert [f.guard for f in closing] == [MISTAKE_LIMIT]
    for turn in (4, 5, 6):
        plan, _ = state.plan(turn)
        assert (plan.allowed, plan.tool_choice, plan.stop) == (
            ("submit_result",),
            "submit_result",
            None,
        )
        assert [f.guard for f in state.end_turn([], "no call")] == [REQUERY]
    plan, _ = state.plan(7)
    assert plan.stop is not None
    assert plan.stop.startswith("RUN_003")


def test_a_valid_turn_resets_the_mistake_count() -> None:
    state = guards(max_requeries=1)
    state.end_turn([], "no call")
    state.end_turn([lint()], None)
    assert [f.guard for f in state.end_turn([], "no call")] == [REQUERY]


def test_max_turns_closing_turn() -> None:
    state = guards(max_turns=2, max_requeries=0)
    assert state.plan(2)[0].allowed is None
    plan, firings = state.plan(3)
    assert [f.guard for f in firings] == [MAX_TURNS]
    assert "submit_result" in firings[0].message
    assert plan.allowed == ("submit_result",)
    assert plan.closing
    stop, again = state.plan(4)
    assert again == []
    assert stop.stop is not None
    assert stop.stop.startswith("RUN_002")


# --- through the loop -----------------------------------------------------------------


def test_identical_call_is_not_executed_again() -> None:
    outcome = run([call("read_file", path="a.py"), call("read_file", path="a.py"), SUBMIT_OK])
    assert outcome.tools.names() == ["read_file", "submit_result"]
    request = outcome.model.requests[2]
    earlier, repeated = [m for m in request.messages if m.role == "tool"]
    assert json.loads(repeated.content) == json.loads(earlier.content)
    assert "It was not run again" in request.messages[-1].content
    telemetry = outcome.result.telemetry
    assert telemetry.repeats == 1
    assert telemetry.stall_triggers[("repeat")] == 1
    assert "repeat" in outcome.guards()


def test_identical_read_after_a_write_runs_again() -> None:
    outcome = run(
        [
            call("read_file", path="a.py"),
            call("apply_fix", code="F401", line=1),
            call("read_file", path="a.py"),
            SUBMIT_OK,
        ]
    )
    assert outcome.tools.names() == ["read_file", "apply_fix", "read_file", "submit_result"]
    assert outcome.result.telemetry.repeats == 0


def test_repeated_call_is_blocked_after_max_repeats() -> None:
    same = call("run_linter")
    outcome = run(
        [same, same, same, call("apply_fix", code="F401", line=1), SUBMIT_OK],
        settings=LoopSettings(
            max_turns=9, max_repeats=2, read_only_force_after=9, read_only_nudge_after=9
        ),
    )
    assert outcome.tools.names() == ["run_linter", "apply_fix", "submit_result"]
    allowed = outcome.model.requests[3].allowed_tools
    assert allowed == ["read_file", "apply_fix", "submit_result"]
    assert outcome.result.telemetry.repeats == 2
    assert outcome.result.telemetry.stall_triggers[REPEAT_FORCE] == 1


def test_read_only_streak_nudges_then_forces_write_tools() -> None:
    outcome = run(
        [
            call("read_file", path="a.py"),
            call("run_linter"),
            call("read_file", path="b.py"),
            call("apply_fix", code="F401", line=1),
            SUBMIT_OK,
        ],
        settings=LoopSettings(max_turns=9, read_only_nudge_after=2, read_only_force_after=3),
    )
    requests = outcome.model.requests
    assert "Now make the change with apply_fix" in requests[2].messages[-1].content
    assert requests[2].allowed_tools is None
    assert requests[3].allowed_tools == ["apply_fix", "submit_result"]
    assert requests[3].tool_choice == "required"
    assert "only these tools are allowed" in requests[3].messages[-1].content
    assert requests[4].allowed_tools is None
    assert outcome.result.telemetry.stall_triggers == {READ_ONLY_NUDGE: 1, READ_ONLY_FORCE: 1}


def test_backend_ignoring_the_allowed_set_is_caught_by_the_loop() -> None:
    outcome = run(
        [
            call("read_file", path="a.py"),
            call("run_linter"),
            call("read_file", path="b.py"),
            call("read_file", path="c.py"),
            call("apply_fix", code="F401", line=1),
            SUBMIT_OK,
        ],
        settings=LoopSettings(max_turns=9, read_only_nudge_after=2, read_only_force_after=3),
    )
    assert outcome.tools.names() == [
        "read_file",
        "run_linter",
        "read_file",
        "apply_fix",
        "submit_result",
    ]
    refused = json.loads(
        [m for m in outcome.model.requests[4].messages if m.role == "tool"][-1].content
    )
    assert "not available this turn" in refused["response"]["error"]
    assert outcome.result.telemetry.invalid_calls == 1


def test_abab_cycle_through_the_loop() -> None:
    script = [
        call("read_file", path="a.py"),
        call("run_linter"),
        call("read_file", path="a.py"),
        call("run_linter"),
        call("apply_fix", code="F401", line=1),
        SUBMIT_OK,
    ]
    outcome = run(
        script, settings=LoopSettings(max_turns=9, read_only_nudge_after=9, read_only_force_after=9)
    )
    assert CYCLE in outcome.guards()
    assert outcome.model.requests[4].allowed_tools == ["apply_fix", "submit_result"]
    assert "going in circles" in outcome.model.requests[4].messages[-1].content
    assert outcome.result.status == "success"


def test_every_guard_emits_an_event_and_counts() -> None:
    model = ScriptedModel(["hello"], repeat_last=True)
    outcome = run([], model=model, settings=LoopSettings(max_turns=3, max_requeries=0))
    counts = outcome.result.telemetry.stall_triggers
    events = outcome.guards()
    assert sorted(events) == sorted(guard for guard, n in counts.items() for _ in range(n))
    assert events[0] == MISTAKE_LIMIT


@pytest.mark.parametrize("effect", ["read", "write"])
def test_harness_shaped_agent_with_one_tool(effect: str) -> None:
    echo = LoopTool(spec("echo", {"text": {"type": "string"}}, ["text"]), effect)  # type: ignore[arg-type]
    outcome = run(
        [call("echo", text="hi"), SUBMIT_OK],
        tools=[echo, SUBMIT],
        invoker=make_tools(Workspace(), echo=ToolResult(outcome="success", summary="hi")),
    )
    assert outcome.result.status == "success"
    assert outcome.result.telemetry.tool_calls_by_effect == {effect: 1, "terminal": 1}
