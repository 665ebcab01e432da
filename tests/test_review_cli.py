"""The review commands: runs, accept, reject, diff, undo, and interactive review in a real pty."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pexpect
import pytest

from remora.cli.review import wrapped
from remora.orchestration import JobRecord, ReviewService, RunStore
from remora.runner.result import AgentResult
from remora.workspace import WorkspaceManager
from tests.cli_helpers import run_cli

REMORA = Path(sys.executable).with_name("remora")


def original(name: str) -> bytes:
    return f"def {name}():\n    return 1\n".encode()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for name in "abcde":
        (root / f"{name}.py").write_bytes(original(name))
    return root


def make_run(root: Path, jobs: list[tuple[str, str]]) -> tuple[str, dict[str, str]]:
    """A run whose jobs (operation, file stem) each changed one file; returns workspace ids."""
    manager = WorkspaceManager(root)
    store = RunStore(manager)
    run = store.start(["."], ["lint", "docstring"])
    ids: dict[str, str] = {}
    for operation, stem in jobs:
        node_id = f"node{stem}"
        with manager.create(operation, node_id, run.run_id, file_path=f"{stem}.py") as ws:
            body = b"    return 2\n" if operation == "lint" else b'    """Doc."""\n    return 1\n'
            ws.write(f"{stem}.py", f"def {stem}():\n".encode() + body)
            result = AgentResult(
                status="success",
                operation=operation,
                node_id=node_id,
                workspace_id=ws.workspace_id,
                changed_files=ws.changed_paths(),
                summary=f"{operation} improved {stem}",
            )
            ids[f"{operation}:{stem}"] = ws.workspace_id
        job = JobRecord.from_result(result).model_copy(
            update={"qualname": stem, "file_path": f"{stem}.py", "start_line": 1}
        )
        store.record_job(run.run_id, job)
    store.finish(run.run_id)
    return run.run_id, ids


def reviews(root: Path, run_id: str) -> dict[str, str]:
    manifest = RunStore(WorkspaceManager(root)).read(run_id)
    return {job.workspace_id or "": job.review for job in manifest.jobs}


def cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    monkeypatch.setenv("COLUMNS", "200")
    result = run_cli(list(args), capsys)
    return result.code, result.out, result.err


def test_runs_lists_runs_as_table_and_json(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(monkeypatch, capsys, "runs", "-p", str(project))
    assert code == 0 and "no runs recorded yet" in out
    assert not (project / ".remora").exists()
    run_id, _ = make_run(project, [("lint", "a"), ("docstring", "b")])
    code, out, _ = cli(monkeypatch, capsys, "runs", "-p", str(project))
    assert code == 0 and run_id in out and "completed" in out
    code, out, _ = cli(monkeypatch, capsys, "runs", "-p", str(project), "--format", "json")
    (summary,) = json.loads(out)
    assert (summary["run_id"], summary["jobs"], summary["pending"]) == (run_id, 2, 2)


def test_accept_by_id_and_all_for_one_operation(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id, ids = make_run(project, [("lint", "a"), ("lint", "b"), ("docstring", "c")])
    code, out, _ = cli(monkeypatch, capsys, "accept", ids["lint:a"], "-p", str(project))
    assert code == 0 and f"accepted {ids['lint:a']}: 1 written" in out
    assert (project / "a.py").read_bytes() == b"def a():\n    return 2\n"
    args = ["accept", "--all", "--run", run_id, "--operation", "docstring", "-p", str(project)]
    code, out, _ = cli(monkeypatch, capsys, *args)
    assert code == 0 and ids["docstring:c"] in out and ids["lint:b"] not in out
    assert reviews(project, run_id) == {
        ids["lint:a"]: "accepted",
        ids["lint:b"]: "pending",
        ids["docstring:c"]: "accepted",
    }


def test_a_conflict_fails_only_that_workspace(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id, ids = make_run(project, [("lint", "a"), ("lint", "b")])
    (project / "a.py").write_bytes(b"def a():\n    return 99\n")
    code, out, err = cli(monkeypatch, capsys, "accept", "--all", "-p", str(project))
    assert code == 1
    assert f"WS_004: cannot accept {ids['lint:a']}" in err
    assert "1 of 2 workspace(s) not accepted" in err
    assert f"accepted {ids['lint:b']}" in out
    assert (project / "a.py").read_bytes() == b"def a():\n    return 99\n"
    assert reviews(project, run_id)[ids["lint:a"]] == "pending"


def test_reject_diff_and_undo(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id, ids = make_run(project, [("lint", "a"), ("docstring", "b")])
    code, out, _ = cli(monkeypatch, capsys, "diff", ids["lint:a"], "-p", str(project))
    assert code == 0
    assert out == (
        "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n def a():\n-    return 1\n+    return 2\n"
    )
    code, out, _ = cli(monkeypatch, capsys, "reject", ids["docstring:b"], "-p", str(project))
    assert code == 0 and "rejected" in out
    cli(monkeypatch, capsys, "accept", ids["lint:a"], "-p", str(project))
    code, out, _ = cli(monkeypatch, capsys, "undo", ids["lint:a"], "-p", str(project))
    assert code == 0 and "restored a.py" in out
    assert (project / "a.py").read_bytes() == original("a")
    code, _, err = cli(monkeypatch, capsys, "undo", ids["lint:a"], "-p", str(project))
    assert code == 1 and err.startswith("WS_003: ")
    assert reviews(project, run_id) == {ids["lint:a"]: "pending", ids["docstring:b"]: "rejected"}


def test_undo_after_an_edit_refuses_or_keeps_the_edit(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, ids = make_run(project, [("lint", "a"), ("lint", "b")])
    args = ["accept", "--all", "-p", str(project)]
    assert cli(monkeypatch, capsys, *args)[0] == 0
    edited = b"def a():\n    return 42\n"
    (project / "a.py").write_bytes(edited)
    code, _, err = cli(monkeypatch, capsys, "undo", ids["lint:a"], "-p", str(project))
    assert code == 1 and err.startswith("WS_005: ")
    assert (project / "a.py").read_bytes() == edited
    undo = ["undo", ids["lint:a"], "--keep-changed", "-p", str(project)]
    code, out, err = cli(monkeypatch, capsys, *undo)
    assert code == 0 and "undone" in out
    assert "left as is (changed since the accept): a.py" in err
    assert (project / "a.py").read_bytes() == edited


def test_retry_of_an_unreadable_workspace_discards_it(project: Path) -> None:
    _, ids = make_run(project, [("lint", "a")])
    manager = WorkspaceManager(project)
    (db,) = [path for path in manager.workspaces_dir.iterdir() if ids["lint:a"] in path.name]
    db.write_bytes(b"not a database at all" * 100)
    request = ReviewService(manager).retry(ids["lint:a"])
    assert request.operation == "lint"
    assert not any(ids["lint:a"] in path.name for path in manager.workspaces_dir.iterdir())
    assert (project / "a.py").read_bytes() == original("a")


def test_bad_input_gives_codes_not_tracebacks(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(monkeypatch, capsys, "diff", "lint-nothing", "-p", str(project))
    assert code == 1 and err.startswith("WS_002: ") and "Traceback" not in err
    code, _, err = cli(monkeypatch, capsys, "accept", "-p", str(project))
    assert code == 2 and "--all" in err
    code, _, err = cli(monkeypatch, capsys, "accept", "--all", "-p", str(project))
    assert code == 1 and err.startswith("WS_009: ")


def test_review_without_a_terminal_points_at_the_other_commands(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    make_run(project, [("lint", "a")])
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, _, err = cli(monkeypatch, capsys, "review", "-p", str(project))
    assert code == 1
    assert err.startswith("WS_008: remora review is interactive and needs a terminal")
    for command in ("remora diff", "remora accept", "remora reject"):
        assert command in err
    assert (project / "a.py").read_bytes() == original("a")


PROMPT = r"\[a/r/s/t/e/A/q/\?\]"


def spawn_review(project: Path, *args: str, editor: str = "false") -> pexpect.spawn:
    env = dict(os.environ, TERM="dumb", COLUMNS="120", LINES="50", EDITOR=editor)
    env.pop("VISUAL", None)
    return pexpect.spawn(
        str(REMORA),
        ["review", "--project", str(project), *args],
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 120),
    )


def test_pending_changes_of_every_run_are_reviewed_newest_per_node(project: Path) -> None:
    """A watch save or a retry makes a new run: review with no id offers every run's
    pending changes, the newest of each node and operation, and leaves the older ones."""
    first, old = make_run(project, [("lint", "a"), ("lint", "b")])
    second, new = make_run(project, [("lint", "a"), ("docstring", "c")])
    assert first < second
    pending = ReviewService(WorkspaceManager(project)).pending_everywhere()
    assert [job.workspace_id for job in pending.jobs] == [
        new["lint:a"],
        old["lint:b"],
        new["docstring:c"],
    ]
    assert (pending.runs, pending.hidden) == (2, 1)
    only = ReviewService(WorkspaceManager(project)).pending_everywhere("docstring")
    assert [job.workspace_id for job in only.jobs] == [new["docstring:c"]]
    child = spawn_review(project)
    child.expect(r"3 change\(s\) to review, the newest per node, from 2 run\(s\); 1 older")
    child.expect(PROMPT)
    child.sendline("q")
    child.expect(pexpect.EOF)
    child.close()
    assert reviews(project, first)[old["lint:a"]] == "pending"  # left as it was


def test_keys_help_and_editing_the_proposal_in_the_editor(project: Path, tmp_path: Path) -> None:
    _, ids = make_run(project, [("lint", "a")])
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys\n"
        "path = sys.argv[1]\n"
        "text = open(path).read().replace('return 2', 'return 3')\n"
        "open(path, 'w').write(text)\n"
    )
    child = spawn_review(project, editor=f"{sys.executable} {script}")
    child.expect(PROMPT)
    child.sendline("?")
    child.expect("e  edit: open the proposed file")
    child.expect(PROMPT)
    child.sendline("e")
    child.expect("edited a.py")
    child.expect(r"\+    return 3")  # the diff is shown again, as edited
    child.expect(PROMPT)
    child.sendline("a")
    child.expect(f"{ids['lint:a']}: accepted")
    child.expect(pexpect.EOF)
    child.close()
    assert (project / "a.py").read_bytes() == b"def a():\n    return 3\n"


def test_an_editor_that_fails_changes_nothing(project: Path) -> None:
    make_run(project, [("lint", "a")])
    child = spawn_review(project, editor="false")
    child.expect(PROMPT)
    child.sendline("e")
    child.expect(r"the editor \(false\) exited with 1; nothing changed")
    child.expect(PROMPT)
    child.sendline("q")
    child.expect(pexpect.EOF)
    child.close()
    assert (project / "a.py").read_bytes() == original("a")


def test_long_lines_are_folded_with_a_marker_never_cut() -> None:
    diff = "@@ -1 +1 @@\n+" + "x" * 25 + "END\n short"
    hook = "\N{RIGHTWARDS ARROW WITH HOOK} "
    assert wrapped(diff, 12).splitlines() == [
        "@@ -1 +1 @@",
        "+" + "x" * 11,
        f"+{hook}" + "x" * 9,
        f"+{hook}xxxxxEND",
        " short",
    ]


def test_interactive_review_in_a_pseudo_terminal(project: Path) -> None:
    run_id, ids = make_run(
        project,
        [("lint", "a"), ("lint", "b"), ("docstring", "c"), ("docstring", "d"), ("docstring", "e")],
    )
    child = spawn_review(project)
    child.expect(r"5 change\(s\) to review")
    child.expect(r"\[1/5\] lint · a \(a\.py:1\)")
    child.expect(r"\+    return 2")
    child.expect(PROMPT)
    child.sendline("a")
    child.expect("accepted: 1 written")
    child.expect(r"\[2/5\] lint · b")
    child.expect(PROMPT)
    child.sendline("r")
    child.expect("rejected")
    child.expect(r"\[3/5\] docstring · c")
    child.expect(r"\+    \"\"\"Doc\.\"\"\"")
    child.expect(PROMPT)
    child.sendline("x")
    child.expect("Please select one of the available options")
    child.sendline("t")
    child.expect("What is wrong with it")
    child.sendline("the summary is wrong")
    child.expect("marked for retry")
    child.expect(r"\[4/5\] docstring · d")
    child.expect(PROMPT)
    child.sendline("A")
    child.expect(f"{ids['docstring:e']}: accepted")
    child.expect("review of every run")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert (project / "a.py").read_bytes() == b"def a():\n    return 2\n"
    assert (project / "b.py").read_bytes() == original("b")
    assert (project / "c.py").read_bytes() == original("c")
    assert b'"""Doc."""' in (project / "d.py").read_bytes()
    assert b'"""Doc."""' in (project / "e.py").read_bytes()
    assert reviews(project, run_id) == {
        ids["lint:a"]: "accepted",
        ids["lint:b"]: "rejected",
        ids["docstring:c"]: "retry_requested",
        ids["docstring:d"]: "accepted",
        ids["docstring:e"]: "accepted",
    }
    manifest = RunStore(WorkspaceManager(project)).read(run_id)
    [retried] = [job for job in manifest.jobs if job.workspace_id == ids["docstring:c"]]
    assert retried.retry_note == "the summary is wrong"  # for the retry's model


def test_interactive_skip_and_quit_change_nothing(project: Path) -> None:
    run_id, _ = make_run(project, [("lint", "a"), ("lint", "b")])
    child = spawn_review(project, run_id, "--operation", "lint")
    child.expect(PROMPT)
    child.sendline("s")
    child.expect(r"\[2/2\] lint · b")
    child.expect(PROMPT)
    child.sendline("q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert [(project / f"{n}.py").read_bytes() for n in "ab"] == [original("a"), original("b")]
    assert set(reviews(project, run_id).values()) == {"pending"}


def test_a_run_review_names_the_jobs_that_left_their_work_to_you(project: Path) -> None:
    """A docstring job whose every summary was refused proposes nothing; reviewing its run
    says so, with the reason, before the changes to review."""
    run_id, _ = make_run(project, [("lint", "a")])
    store = RunStore(WorkspaceManager(project))
    failed = AgentResult(
        status="failed",
        operation="docstring",
        node_id="nodeb",
        error="no docstring written for b: no usable summary (refused: it stops "
        "mid-sentence); left for you",
    )
    store.record_job(
        run_id,
        JobRecord.from_result(failed).model_copy(
            update={"qualname": "b", "file_path": "b.py", "start_line": 1}
        ),
    )
    child = spawn_review(project, run_id)
    child.expect(r"1 job\(s\) proposed no change and leave the work to you:")
    child.expect(r"docstring · b \(b\.py:1\): no docstring written for b: no usable summary")
    child.expect("left for you")
    child.expect(r"1 change\(s\) to review")
    child.expect(PROMPT)
    child.sendline("q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    manifest = store.read(run_id)
    assert [job.qualname for job in manifest.left_for_person()] == ["b"]
    assert manifest.left_for_person("lint") == []
