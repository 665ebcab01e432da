"""What a run shows while it runs: the jobs in flight are named with their elapsed time,
live on a terminal, and a long job is named once without one."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pytest

from remora.cli._run_display import LONG_JOB_S, RunningJobs
from remora.events import JobFinished, JobStarted, ToolCallEvent
from tests.stores import write_tree
from tests.test_analyze_cli import MARKER, SCRIPTED, SOURCE


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def started(job: str, qualname: str) -> JobStarted:
    return JobStarted(
        job_id=job, operation="docstring", node_id=job, qualname=qualname, file_path="m.py"
    )


def test_the_jobs_in_flight_are_named_longest_first_with_their_elapsed_time() -> None:
    clock = Clock()
    running = RunningJobs(announce=False, clock=clock)
    assert running.summary() == ""
    running.emit(started("a", "merge_with"))
    clock.now += 10
    running.emit(started("b", "dissoc"))
    clock.now += 2
    assert running.summary() == "running: docstring merge_with 12s, docstring dissoc 2s"
    running.emit(
        JobFinished(
            job_id="a",
            operation="docstring",
            node_id="a",
            status="success",
            summary="",
            wall_time_s=12,
        )
    )
    assert running.summary() == "running: docstring dissoc 2s"
    for index in range(4):
        running.emit(started(f"x{index}", f"f{index}"))
    assert running.summary(limit=2).endswith("(+3 more)")


def test_without_live_bars_a_long_job_is_named_once(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    running = RunningJobs(announce=True, clock=clock)
    running.emit(started("a", "merge_with"))
    clock.now += LONG_JOB_S - 1
    running.emit(
        ToolCallEvent(job_id="a", turn=1, tool="write_docstring", effect="write", arguments={})
    )
    assert capsys.readouterr().err == ""
    clock.now += 2
    running.emit(ToolCallEvent(job_id="a", turn=2, tool="describe", effect="write", arguments={}))
    clock.now += 30
    running.emit(ToolCallEvent(job_id="a", turn=3, tool="describe", effect="write", arguments={}))
    assert capsys.readouterr().err.splitlines() == [
        f"still running after {LONG_JOB_S + 1:.0f}s: docstring merge_with"
    ]


def test_a_terminal_shows_the_running_job_while_it_runs(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "proj", SOURCE)
    env = dict(os.environ, REMORA_TEST_MODEL_DELAY="1.5", COLUMNS="160", LINES="40")
    child = pexpect.spawn(
        sys.executable,
        [str(SCRIPTED), *MARKER, "analyze", "pkg/mod.py", "--ops", "marker", "-j", "1"],
        cwd=str(project),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 160),
    )
    child.expect(r"running: marker first \d+s")
    child.expect(r"running: marker second \d+s")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
