"""A forged owner pid in ``.remora`` names no live process and never a traceback (issue 47).

``os.kill`` raises ``OverflowError`` for a pid beyond ``pid_t`` and signals a whole
process group for zero or a negative one, so such an owner is taken as gone: the run shows
as interrupted. A pid that is not an integer makes the manifest invalid (WS_010).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from remora.orchestration.runs import RunOwner
from remora.workspace.materialize import sweep_stale_views
from tests.support.cli_process import run_remora

RUN_ID = "20260101-000000000-abcdef"


def _project(root: Path, pid: object) -> Path:
    """A project whose one run is still ``running``, owned by ``pid`` on this host."""
    runs = root / ".remora" / "runs"
    runs.mkdir(parents=True)
    (root / "mod.py").write_text("X = 1\n", encoding="utf-8")
    manifest = {
        "format_version": 1,
        "run_id": RUN_ID,
        "created_at": 1.0,
        "status": "running",
        "project_root": str(root),
        "targets": ["mod.py"],
        "operations": ["docstring"],
        "jobs": [
            {
                "job_id": "docstring:mod.py::X",
                "operation": "docstring",
                "node_id": "mod.py::X",
                "status": "running",
            }
        ],
        "owner": {"pid": pid, "host": socket.gethostname(), "started": None},
    }
    (runs / f"{RUN_ID}.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


FORGED = [2**70, -(2**70), 2**31, -1, 0]


@pytest.mark.parametrize("pid", FORGED)
def test_runs_and_retry_take_a_forged_owner_pid_as_gone(tmp_path: Path, pid: int) -> None:
    project = _project(tmp_path / "repo", pid)
    listed = run_remora("runs", "--format", "json", cwd=project, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    [summary] = json.loads(listed.stdout)
    assert summary["status"] == "interrupted"
    retried = run_remora("retry", cwd=project, timeout=120)
    assert retried.returncode == 0, retried.stderr
    assert "Traceback" not in retried.stderr
    assert "nothing is marked for retry" in retried.stdout + retried.stderr


def test_a_non_integer_owner_pid_is_an_invalid_manifest(tmp_path: Path) -> None:
    project = _project(tmp_path / "repo", "abc")
    listed = run_remora("runs", "--format", "json", cwd=project, timeout=120)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    assert json.loads(listed.stdout)[0]["status"] == "unreadable"
    retried = run_remora("retry", cwd=project, timeout=120)
    assert retried.returncode != 0 and "Traceback" not in retried.stderr
    assert "WS_010:" in retried.stdout + retried.stderr


@pytest.mark.parametrize("pid", FORGED)
def test_an_owner_with_no_possible_pid_is_gone(pid: int) -> None:
    assert RunOwner(pid=pid, host=socket.gethostname()).gone()


def test_a_live_owner_is_not_gone() -> None:
    assert not RunOwner(pid=os.getppid(), host=socket.gethostname()).gone()


def test_the_view_sweep_survives_forged_owner_names(tmp_path: Path) -> None:
    views = tmp_path / "views"
    kept = ["\u00b2-ws-0a0b", f"{os.getpid()}-ws-0a0b"]  # not a view's name; this process
    for name in (f"{2**70}-ws-0a0b", f"{2**31}-ws-0a0b", *kept):
        (views / name).mkdir(parents=True)
    assert sweep_stale_views(views) == 2
    assert sorted(path.name for path in views.iterdir()) == sorted(kept)
