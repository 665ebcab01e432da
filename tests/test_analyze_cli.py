"""``remora analyze`` as users run it: a real subprocess, the scripted model in place of the LLM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remora.orchestration import ReviewService, RunStore
from remora.workspace import WorkspaceManager
from tests.stores import write_tree

REPO = Path(__file__).resolve().parents[1]
SCRIPTED = REPO / "tests" / "support" / "scripted_cli.py"
AGENTS = REPO / "tests" / "data" / "agents"
SOURCE = {
    "pyproject.toml": "[project]\nname = 'proj'\n",
    "pkg/__init__.py": "",
    "pkg/mod.py": "def first():\n    return 1\n\n\ndef second():\n    return 2\n",
    "pkg/other.py": "def skip_this():\n    return 3\n",
}
MARKER = ["--set", f"agents.dirs=[{AGENTS}]", "--set", "operations.marker.agent=marker"]


def remora(
    *args: str, cwd: Path, delay: float = 0.0, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REMORA_TEST_MODEL_DELAY": str(delay), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, str(SCRIPTED), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def spawn_analyze(project: Path, *, delay: float) -> subprocess.Popen[str]:
    """``remora analyze . --ops marker -j 1`` started in the background, each scripted model
    answer taking ``delay`` seconds, so a test can stop it mid-run."""
    return subprocess.Popen(
        [sys.executable, str(SCRIPTED), *MARKER, "analyze", ".", "--ops", "marker", "-j", "1"],
        cwd=project,
        env={**os.environ, "REMORA_TEST_MODEL_DELAY": str(delay)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "proj", SOURCE)


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in root.rglob("*.py")
        if ".remora" not in path.parts
    }


def test_check_and_diff_report_proposed_changes(project: Path) -> None:
    before = snapshot(project)
    done = remora(*MARKER, "analyze", ".", "--ops", "marker", "--check", "--diff", cwd=project)
    assert done.returncode == 1, done.stderr
    assert "+# marked first" in done.stdout and "+# marked second" in done.stdout
    assert "review with: remora review" in done.stdout
    assert snapshot(project) == before
    # without a terminal, one line per finished job on stderr
    assert "[3/3] marker" in done.stderr and "skip_this" in done.stderr
    plain = remora(*MARKER, "analyze", "pkg/other.py", "--ops", "marker", cwd=project)
    assert plain.returncode == 0, plain.stderr  # only a skipped job: nothing to change
    runs = RunStore(WorkspaceManager(project)).list()
    assert len(runs) == 2 and all(run.status == "completed" for run in runs)


def test_verbose_shows_every_tool_call_with_arguments_and_outcome(project: Path) -> None:
    done = remora("-v", *MARKER, "analyze", "pkg/mod.py", "--ops", "marker", "-j", "1", cwd=project)
    assert done.returncode == 0, done.stderr
    lines = [line.strip() for line in done.stderr.splitlines() if " turn " in line]
    assert len(lines) == 4  # mark and submit_result for each of two functions
    assert any(line.endswith("turn 1: mark({}) -> success: marked first") for line in lines), lines
    assert any('turn 2: submit_result({"summary": "done"}) -> success' in line for line in lines)


def test_json_output_and_auto_accept(project: Path) -> None:
    done = remora(
        *MARKER,
        "analyze",
        "pkg/mod.py",
        "--ops",
        "marker",
        "-f",
        "json",
        "--auto-accept",
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads(done.stdout)
    assert [job["qualname"] for job in manifest["jobs"]] == ["first", "second"]
    text = (project / "pkg/mod.py").read_text()
    assert text.endswith("return 2\n# marked first\n")
    # both jobs appended at the same place: the second accept conflicts and changes nothing
    assert "WS_004" in done.stderr


@pytest.mark.parametrize(
    ("ops", "said"),
    [
        ("nosuch", "unknown operation 'nosuch'"),
        ("marker,nosuch", "unknown operation 'nosuch'"),  # the known one does not run alone
        ("", "--ops names no operation"),  # not "every operation"
        (" , ", "--ops names no operation"),
    ],
)
def test_a_wrong_ops_list_is_a_usage_error_before_any_work(
    project: Path, ops: str, said: str
) -> None:
    done = remora(*MARKER, "analyze", ".", "--ops", ops, cwd=project)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"RUN_020: {said}" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (project / ".remora" / "runs").exists()  # nothing ran, no run recorded


def test_exit_codes_tell_a_finding_from_a_broken_run(project: Path) -> None:
    """As ruff's: 1 when --check finds changes, 2 when a job could not finish (here every
    job outruns runner.job_timeout), whether or not --check is given."""
    found = remora(*MARKER, "analyze", "pkg/mod.py", "--ops", "marker", "--check", cwd=project)
    assert found.returncode == 1, found.stderr
    timeout = ("--set", "runner.job_timeout=0.2")
    for check in ([], ["--check"]):
        broken = remora(
            *MARKER,
            *timeout,
            "analyze",
            "pkg/mod.py",
            "--ops",
            "marker",
            *check,
            cwd=project,
            delay=1.0,
        )
        assert broken.returncode == 2, broken.stdout + broken.stderr
        assert "2 interrupted" in broken.stdout
    assert "Exit codes, as ruff's" in remora("analyze", "--help", cwd=project).stdout


def test_global_options_work_after_the_command_name(project: Path) -> None:
    done = remora("analyze", "pkg/mod.py", "--ops", "marker", *MARKER, "-j", "1", "-v", cwd=project)
    assert done.returncode == 0, done.stderr
    assert any(" turn 1: mark({})" in line for line in done.stderr.splitlines())
    quiet = remora("config", "--set", "runner.max_turns=3", "-f", "json", "-q", cwd=project)
    assert quiet.returncode == 0, quiet.stderr
    assert json.loads(quiet.stdout)["runner"]["max_turns"] == 3


def test_the_printed_review_command_works_from_where_analyze_ran(project: Path) -> None:
    inside = project / "pkg"
    done = remora(*MARKER, "analyze", "mod.py", "--ops", "marker", cwd=inside)
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stdout.splitlines() if line.startswith("review with: ")]
    run_id = RunStore(WorkspaceManager(project)).list()[0].run_id
    assert line == f"review with: remora review {run_id} -p .."
    listed = remora("runs", "-p", "..", "-f", "json", cwd=inside)
    assert listed.returncode == 0 and run_id in listed.stdout
    # the state directory ignores itself, so git status stays clean
    assert (project / ".remora" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_ctrl_c_records_an_interrupted_run(project: Path) -> None:
    write_tree(project, {f"pkg/extra{i}.py": f"def f{i}():\n    return {i}\n" for i in range(6)})
    before = snapshot(project)
    process = spawn_analyze(project, delay=0.4)
    runs_dir = project / ".remora" / "runs"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until at least one job has finished
        journals = list(runs_dir.glob("*.jobs.jsonl")) if runs_dir.is_dir() else []
        if journals and '"status":"success"' in journals[0].read_text():
            break
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    manifest = RunStore(WorkspaceManager(project)).resolve(None)
    assert manifest.status == "interrupted"
    statuses = [job.status for job in manifest.jobs]
    assert "success" in statuses and "interrupted" in statuses
    assert manifest.pending_reviews(), "finished jobs stay reviewable"
    assert snapshot(project) == before


def test_retry_reruns_what_review_marked(project: Path) -> None:
    first = remora(*MARKER, "analyze", "pkg/mod.py", "--ops", "marker", cwd=project)
    assert first.returncode == 0, first.stderr
    service = ReviewService(WorkspaceManager(project))
    manifest = service.reconcile(None)
    marked = manifest.pending_reviews()[0]
    service.retry(marked.workspace_id or "")
    again = remora(*MARKER, "retry", cwd=project)
    assert again.returncode == 0, again.stderr
    store = RunStore(WorkspaceManager(project))
    newest = store.resolve(None)
    assert newest.run_id != manifest.run_id
    assert [(job.qualname, job.status) for job in newest.jobs] == [(marked.qualname, "success")]
    old = {job.job_id: job.review for job in store.read(manifest.run_id).jobs}
    assert old[marked.job_id] == "retried"  # not counted as rejected
    nothing = remora(*MARKER, "retry", manifest.run_id, cwd=project)
    assert nothing.returncode == 0 and "nothing is marked for retry" in nothing.stdout


def test_a_run_whose_process_was_killed_is_not_left_running(project: Path) -> None:
    process = spawn_analyze(project, delay=5)
    runs_dir = project / ".remora" / "runs"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(runs_dir.glob("*.json")):
        time.sleep(0.1)
    process.kill()  # as a closed terminal's SIGHUP would, with no chance to clean up
    process.wait(timeout=30)
    listed = remora("runs", "-f", "json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    [run] = json.loads(listed.stdout)
    assert run["status"] == "interrupted"
    manifest = RunStore(WorkspaceManager(project)).resolve(None)
    assert manifest.status == "interrupted"
    assert {job.status for job in manifest.jobs} <= {"interrupted", "success", "skipped"}
