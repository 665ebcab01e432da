"""``accept --all`` across runs, as ``review`` lists them, and an undo blocked by later accepts
(WS_005 names them), through the real ``remora`` entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.orchestration import JobRecord, RunStore
from remora.runner.result import AgentResult
from remora.workspace import WorkspaceManager
from tests.test_review_cli import cli, make_run, original, project, reviews

__all__ = ["project"]  # the fixture, shared with test_review_cli


def run_writing(root: Path, operation: str, stem: str, text: str) -> tuple[str, str]:
    """A run of one job that rewrote ``<stem>.py`` as ``text``; returns (run id, workspace id)."""
    manager = WorkspaceManager(root)
    store = RunStore(manager)
    run = store.start(["."], [operation])
    with manager.create(operation, f"node{stem}", run.run_id, file_path=f"{stem}.py") as ws:
        ws.write(f"{stem}.py", text.encode())
        result = AgentResult(
            status="success",
            operation=operation,
            node_id=f"node{stem}",
            workspace_id=ws.workspace_id,
            changed_files=ws.changed_paths(),
        )
        workspace_id = ws.workspace_id
    job = JobRecord.from_result(result).model_copy(
        update={"qualname": stem, "file_path": f"{stem}.py", "start_line": 1}
    )
    store.record_job(run.run_id, job)
    store.finish(run.run_id)
    return run.run_id, workspace_id


def test_accept_all_takes_every_runs_pending_changes_in_review_order(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first, old = make_run(project, [("lint", "a"), ("lint", "b")])
    second, new = make_run(project, [("lint", "a"), ("docstring", "c")])
    code, out, err = cli(monkeypatch, capsys, "accept", "--all", "-p", str(project))
    assert code == 0, err
    accepted = [line.split()[1].rstrip(":") for line in out.splitlines() if "accepted" in line]
    assert accepted == [new["lint:a"], old["lint:b"], new["docstring:c"]]
    assert "1 older change(s) of the same nodes left pending" in err
    assert reviews(project, first) == {old["lint:a"]: "pending", old["lint:b"]: "accepted"}
    assert reviews(project, second) == {new["lint:a"]: "accepted", new["docstring:c"]: "accepted"}
    assert (project / "b.py").read_bytes() == b"def b():\n    return 2\n"
    assert (project / "c.py").read_bytes() == b'def c():\n    """Doc."""\n    return 1\n'


def test_accept_all_reports_a_change_that_conflicts_with_an_earlier_one_and_goes_on(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs' changes of one file that cannot both apply: the first in review's order is
    accepted, the second refused with WS_004 and left pending, and the rest still go in."""
    first, old = make_run(project, [("lint", "a"), ("lint", "b")])
    second, other = run_writing(project, "docstring", "a", "def a():\n    return 3\n")
    code, out, err = cli(monkeypatch, capsys, "accept", "--all", "-p", str(project))
    assert code == 1
    # review's order: the newest run's operation (docstring) first, then lint's a and b
    assert out.splitlines() == [
        f"accepted {other}: 1 written",
        f"accepted {old['lint:b']}: 1 written",
    ]
    assert f"WS_004: cannot accept {old['lint:a']}" in err
    assert "1 of 3 workspace(s) not accepted" in err
    assert (project / "a.py").read_bytes() == b"def a():\n    return 3\n"
    assert reviews(project, first) == {old["lint:a"]: "pending", old["lint:b"]: "accepted"}
    assert reviews(project, second) == {other: "accepted"}


def test_undo_refused_by_later_accepts_names_them(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, old = make_run(project, [("lint", "a")])
    assert cli(monkeypatch, capsys, "accept", old["lint:a"], "-p", str(project))[0] == 0
    second, new = make_run(project, [("docstring", "a")])
    assert cli(monkeypatch, capsys, "accept", new["docstring:a"], "-p", str(project))[0] == 0
    code, _, err = cli(monkeypatch, capsys, "undo", old["lint:a"], "-p", str(project))
    assert code == 1 and err.startswith("WS_005: ")
    said = " ".join(err.split())
    assert f"by 1 later accept(s): {new['docstring:a']} (docstring, run {second}; a.py)" in said
    assert f"'remora undo {new['docstring:a']}'" in said
    assert "your edits" not in said
    # Undoing in the order named works.
    assert cli(monkeypatch, capsys, "undo", new["docstring:a"], "-p", str(project))[0] == 0
    assert cli(monkeypatch, capsys, "undo", old["lint:a"], "-p", str(project))[0] == 0
    assert (project / "a.py").read_bytes() == original("a")


def test_undo_refused_by_an_edit_alone_names_no_accept(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, ids = make_run(project, [("lint", "a"), ("lint", "b")])
    assert cli(monkeypatch, capsys, "accept", "--all", "-p", str(project))[0] == 0
    (project / "a.py").write_bytes(b"def a():\n    return 42\n")
    code, _, err = cli(monkeypatch, capsys, "undo", ids["lint:a"], "-p", str(project))
    said = " ".join(err.split())
    assert code == 1 and said.startswith("WS_005: ")
    assert "later accept" not in said.split("hint")[0] and "revert your edits" in said
