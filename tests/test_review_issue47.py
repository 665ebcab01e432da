"""Issue 47 (hangs and tracebacks) in review: a module merge on a user's test file with a
3,000-term expression, and an ``$EDITOR`` that does not split, end in coded errors with
nothing lost, never a traceback."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pytest

from remora.module_union import module_docstring, union_modules
from remora.orchestration import JobRecord, RunStore
from remora.runner.result import AgentResult
from remora.workspace import WorkspaceManager
from tests.cli_helpers import run_cli

REMORA = Path(sys.executable).with_name("remora")
PROMPT = r"\[a/r/s/t/e/A/q/\?\]"
TEST_FILE = "tests/test_mod.py"
HEADER = '"""Tests for pkg.mod."""\n\nfrom pkg.mod import grade\n\n\n'
DEEP = "TOTAL = " + " + ".join(["1"] * 3000) + "\n"
"""An expression whose syntax tree is deeper than the interpreter's recursion limit."""


def module_with_tests(*tests: str) -> str:
    return HEADER + "\n\n".join(
        f"def test_{name}():\n    assert grade({name!r})\n" for name in tests
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    return root


def propose(root: Path, new: str) -> tuple[str, str]:
    """A run of the test agent whose workspace writes ``new`` to the test file; returns the
    run and workspace ids."""
    manager = WorkspaceManager(root)
    store = RunStore(manager)
    run = store.start(["."], ["characterize"])
    with manager.create("characterize", "nodegrade", run.run_id, file_path="pkg/mod.py") as ws:
        ws.write(TEST_FILE, new.encode())
        result = AgentResult(
            status="success",
            operation="characterize",
            node_id="nodegrade",
            workspace_id=ws.workspace_id,
            changed_files=ws.changed_paths(),
            summary="tests for grade",
        )
        workspace_id = ws.workspace_id
    job = JobRecord.from_result(result).model_copy(
        update={"qualname": "grade", "file_path": "pkg/mod.py", "start_line": 1}
    )
    store.record_job(run.run_id, job)
    store.finish(run.run_id)
    return run.run_id, workspace_id


def review_state(root: Path, run_id: str, workspace_id: str) -> str:
    manifest = RunStore(WorkspaceManager(root)).read(run_id)
    return next(job.review for job in manifest.jobs if job.workspace_id == workspace_id)


def test_too_deep_a_module_is_no_union() -> None:
    deep = module_with_tests("small") + "\n\n" + DEEP
    assert union_modules("", deep, module_with_tests("big")) is None
    assert (
        union_modules(module_with_tests("small"), deep, module_with_tests("small", "big")) is None
    )
    assert union_modules(deep, deep, deep + "\n\ndef test_big():\n    pass\n") is None
    assert module_docstring(HEADER + DEEP) is None


@pytest.mark.parametrize("base_existed", [True, False], ids=["edited", "created"])
def test_accepting_onto_a_test_file_with_a_3000_term_expression_is_a_conflict(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    base_existed: bool,
) -> None:
    """The generated tests join the user's test module, to which the user added (or which
    the user wrote, meanwhile) an expression too deep to parse: accept refuses the
    workspace with WS_004, leaves the file as the user wrote it and the change pending."""
    path = project / TEST_FILE
    if base_existed:
        path.write_text(module_with_tests("small"))
    run_id, workspace_id = propose(project, module_with_tests("small", "big"))
    users = module_with_tests("small", "medium") + "\n\n" + DEEP
    path.write_text(users)
    monkeypatch.setenv("COLUMNS", "200")
    result = run_cli(["accept", workspace_id, "-p", str(project)], capsys)
    assert result.code == 1
    assert result.err.startswith(f"WS_004: cannot accept {workspace_id}: {TEST_FILE}")
    assert "Traceback" not in result.err and "RecursionError" not in result.err
    assert path.read_text() == users
    assert review_state(project, run_id, workspace_id) == "pending"
    with WorkspaceManager(project).open(workspace_id) as workspace:
        assert workspace.info().status == "pending"
        assert workspace.read(TEST_FILE) == module_with_tests("small", "big").encode()


def spawn_review(project: Path, editor: str) -> pexpect.spawn:
    env = dict(os.environ, TERM="dumb", COLUMNS="120", LINES="50", EDITOR=editor)
    env.pop("VISUAL", None)
    return pexpect.spawn(
        str(REMORA),
        ["review", "--project", str(project)],
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 120),
    )


def test_an_editor_command_with_an_unbalanced_quote_is_a_coded_error(project: Path) -> None:
    """``EDITOR='vim "'`` cannot be split into a command: edit says so with a code and a
    hint, the proposal stays as it was and can still be accepted."""
    proposed = module_with_tests("small", "big")
    run_id, workspace_id = propose(project, proposed)
    child = spawn_review(project, editor='vim "')
    child.expect(PROMPT)
    child.sendline("e")
    index = child.expect([r"WS_020: the editor .* is not a command", "Traceback", pexpect.EOF])
    assert index == 0, f"{child.before}{child.after}"
    child.expect(PROMPT)  # the change is shown again and the question asked again
    child.sendline("a")
    child.expect(f"{workspace_id}: accepted")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert (project / TEST_FILE).read_text() == proposed
    assert review_state(project, run_id, workspace_id) == "accepted"
