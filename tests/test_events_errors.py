"""Event emitters and the error contract."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from remora.errors import ConfigError, RemoraError, ToolError, WorkspaceError
from remora.events import (
    CollectingEmitter,
    FanoutEmitter,
    JsonlEmitter,
    NullEmitter,
    RunStarted,
    ToolCallEvent,
)


def test_jsonl_emitter_writes_one_object_per_line_from_many_threads(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "events.jsonl"
    emitter = JsonlEmitter(path)

    def work(thread: int) -> None:
        for turn in range(50):
            emitter.emit(
                ToolCallEvent(turn=turn, tool=f"t{thread}", effect="read", arguments={"x": "é"})
            )

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    emitter.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 200
    records = [json.loads(line) for line in lines]
    assert {record["type"] for record in records} == {"tool_call"}
    assert records[0]["arguments"] == {"x": "é"}


def test_jsonl_emitter_appends_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    for _ in range(2):
        emitter = JsonlEmitter(path)
        emitter.emit(RunStarted(targets=["a"], operations=["lint"]))
        emitter.close()
    assert len(path.read_text().splitlines()) == 2


def test_fanout_and_collecting() -> None:
    first, second = CollectingEmitter(), CollectingEmitter()
    fanout = FanoutEmitter(first, second, NullEmitter())
    fanout.emit(RunStarted(targets=[], operations=[]))
    fanout.close()
    assert len(first.of_type("run_started")) == len(second.events) == 1


def test_events_reject_unknown_fields() -> None:
    with pytest.raises(ValueError):
        RunStarted(targets=[], operations=[], surprise=1)  # type: ignore[call-arg]


def test_error_render_and_codes() -> None:
    error = WorkspaceError("WS_009", "conflict in a.py", "edit the file by hand")
    assert error.render() == "WS_009: conflict in a.py (edit the file by hand)"
    assert str(ToolError("TOOL_001", "boom")) == "TOOL_001: boom"
    assert isinstance(error, RemoraError)
    assert ConfigError.exit_code == 2


def test_error_code_must_match_its_class() -> None:
    with pytest.raises(ValueError):
        ConfigError("WS_001", "wrong family")
