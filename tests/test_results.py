"""Run manifests: atomic writes, listing, review states, and the review service's bookkeeping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remora.discovery import CSTNode
from remora.errors import WorkspaceError
from remora.orchestration import JobRecord, ReviewService, RunManifest, RunStore, new_run_id
from remora.runner.result import AgentResult, AgentTelemetry
from remora.workspace import WorkspaceManager


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_bytes(b"def a():\n    return 1\n")
    return root


@pytest.fixture
def manager(project: Path) -> WorkspaceManager:
    return WorkspaceManager(project)


@pytest.fixture
def store(manager: WorkspaceManager) -> RunStore:
    return RunStore(manager)


def add_job(
    manager: WorkspaceManager,
    store: RunStore,
    run_id: str,
    operation: str,
    node_id: str,
    content: bytes,
    status: str = "success",
) -> str:
    with manager.create(operation, node_id, run_id, file_path="a.py") as ws:
        ws.write("a.py", content)
        result = AgentResult(
            status=status,  # type: ignore[arg-type]
            operation=operation,
            node_id=node_id,
            workspace_id=ws.workspace_id,
            changed_files=ws.changed_paths(),
            summary=f"{operation} on {node_id}",
            telemetry=AgentTelemetry(turns=3, prompt_tokens=120),
        )
        store.record_job(run_id, JobRecord.from_result(result))
        return ws.workspace_id


def test_new_run_ids_sort_by_time_and_are_unique() -> None:
    first = new_run_id(now=1_700_000_000)
    second = new_run_id(now=1_700_000_060)
    assert first.startswith("20231114-221320000-") and first < second
    assert new_run_id(now=1_700_000_000.25) < new_run_id(now=1_700_000_000.5)  # same second
    assert new_run_id(now=1) != new_run_id(now=1)


def test_job_record_from_result_keeps_node_and_telemetry() -> None:
    node = CSTNode(
        node_id="n1",
        node_type="function",
        name="a",
        qualname="a",
        file_path="a.py",
        start_line=1,
        end_line=2,
        start_byte=0,
        end_byte=10,
        text="def a(): ...",
        source_hash="0" * 64,
    )
    result = AgentResult(
        status="success",
        operation="lint",
        node_id="n1",
        workspace_id="lint-n1",
        changed_files=["a.py"],
        summary="fixed E501",
        telemetry=AgentTelemetry(turns=4),
    )
    job = JobRecord.from_result(result, node)
    assert (job.job_id, job.qualname, job.file_path, job.review) == (
        "lint-n1",
        "a",
        "a.py",
        "pending",
    )
    assert job.telemetry.turns == 4
    assert job.label == "a (a.py:1)"
    failed = JobRecord.from_result(result.model_copy(update={"status": "failed"}))
    assert failed.review == "none"
    nothing = JobRecord.from_result(result.model_copy(update={"changed_files": []}))
    assert nothing.review == "none"


def test_manifest_round_trips_atomically(store: RunStore) -> None:
    run = store.start(["src"], ["lint", "docstring"])
    path = store.path(run.run_id)
    assert json.loads(path.read_text())["status"] == "running"
    store.record_job(run.run_id, JobRecord(job_id="lint-x", operation="lint", node_id="x"))
    store.record_job(
        run.run_id, JobRecord(job_id="lint-x", operation="lint", node_id="x", summary="again")
    )
    finished = store.finish(run.run_id)
    again = store.read(run.run_id)
    assert again == finished
    assert again.status == "completed" and again.finished_at is not None
    assert [job.summary for job in again.jobs] == ["again"]
    assert not list(store.runs_dir.glob("*.remora-tmp"))


def test_finished_jobs_are_appended_and_folded_in_by_the_next_write(store: RunStore) -> None:
    """Recording a job appends one line (the manifest is not rewritten, whatever the run's
    size); every read sees it, the run's end folds the journal into the manifest, and a
    line cut short by a crash is left out."""
    run = store.start(["src"], ["lint"])
    path = store.path(run.run_id)
    written = path.read_bytes()
    for index in range(3):
        store.record_job(
            run.run_id, JobRecord(job_id=f"lint-{index}", operation="lint", node_id=str(index))
        )
    store.record_job(
        run.run_id, JobRecord(job_id="lint-1", operation="lint", node_id="1", summary="again")
    )
    assert path.read_bytes() == written
    journal = store.journal_path(run.run_id)
    assert len(journal.read_text().splitlines()) == 4
    with journal.open("ab") as handle:
        handle.write(b'{"job_id": "lint-9", "operation"')  # the process died mid-line
    read = store.read(run.run_id)
    assert [(job.job_id, job.summary) for job in read.jobs] == [
        ("lint-0", ""),
        ("lint-1", "again"),
        ("lint-2", ""),
    ]
    assert [summary.run_id for summary in store.list()] == [run.run_id]
    finished = store.finish(run.run_id)
    assert not journal.exists()
    assert finished.jobs == read.jobs and store.read(run.run_id) == finished


def test_listing_and_resolving_runs(store: RunStore) -> None:
    with pytest.raises(WorkspaceError) as info:
        store.resolve(None)
    assert info.value.code == "WS_009"
    old = store.start([], ["lint"], run_id="20240101-000000-aaaaaa")
    new = store.start([], ["lint"], run_id="20240102-000000-bbbbbb")
    assert store.resolve(None).run_id == new.run_id
    assert store.resolve(old.run_id).run_id == old.run_id
    (store.runs_dir / "20230101-000000-cccccc.json").write_text("{broken")
    summaries = store.list()
    assert [s.run_id for s in summaries] == [new.run_id, old.run_id, "20230101-000000-cccccc"]
    assert summaries[-1].status == "unreadable"
    with pytest.raises(WorkspaceError) as info:
        store.read("20230101-000000-cccccc")
    assert info.value.code == "WS_010"
    for bad in ("../etc", "nope"):
        with pytest.raises(WorkspaceError) as info:
            store.read(bad)
        assert info.value.code == "WS_009"


def test_pending_reviews_are_grouped_by_operation_in_run_order() -> None:
    manifest = RunManifest(
        run_id="r",
        project_root="/p",
        operations=["lint", "docstring"],
        jobs=[
            JobRecord(job_id="d1", operation="docstring", node_id="1", review="pending"),
            JobRecord(
                job_id="l2", operation="lint", node_id="2", file_path="b.py", review="pending"
            ),
            JobRecord(
                job_id="l1", operation="lint", node_id="1", file_path="a.py", review="pending"
            ),
            JobRecord(job_id="l3", operation="lint", node_id="3", review="accepted"),
        ],
    )
    assert [job.job_id for job in manifest.pending_reviews()] == ["l1", "l2", "d1"]
    assert [job.job_id for job in manifest.pending_reviews("docstring")] == ["d1"]
    summary = manifest.summary()
    assert (summary.pending, summary.accepted, summary.jobs) == (3, 1, 4)


def test_review_service_keeps_the_manifest_in_step(
    manager: WorkspaceManager, store: RunStore, project: Path
) -> None:
    run = store.start(["."], ["lint", "docstring"])
    lint = add_job(manager, store, run.run_id, "lint", "n1", b"def a():\n    return 2\n")
    doc = add_job(
        manager, store, run.run_id, "docstring", "n1", b'def a():\n    """A."""\n    return 1\n'
    )
    other = add_job(manager, store, run.run_id, "lint", "n2", b"x\n")
    service = ReviewService(manager)

    service.accept(lint)
    service.accept(doc)
    assert project.joinpath("a.py").read_bytes() == b'def a():\n    """A."""\n    return 2\n'
    reviews = {job.workspace_id: job.review for job in store.read(run.run_id).jobs}
    assert reviews == {lint: "accepted", doc: "accepted", other: "pending"}

    service.undo(doc)
    assert store.read(run.run_id).job_for_workspace(doc).review == "pending"  # type: ignore[union-attr]
    request = service.retry(other)
    assert request.node_id == "n2"
    service.reject(doc)
    final = {job.workspace_id: job.review for job in store.read(run.run_id).jobs}
    assert final == {lint: "accepted", doc: "rejected", other: "retry_requested"}
    assert all(job.reviewed_at for job in store.read(run.run_id).jobs)


def test_reconcile_repairs_drift(manager: WorkspaceManager, store: RunStore) -> None:
    run = store.start(["."], ["lint"])
    gone = add_job(manager, store, run.run_id, "lint", "gone", b"1\n")
    accepted = add_job(manager, store, run.run_id, "lint", "acc", b"2\n")
    retried = add_job(manager, store, run.run_id, "lint", "retry", b"3\n")
    service = ReviewService(manager)
    manager.remove(gone)  # a reject interrupted before it reached the manifest
    service.workspaces.accept(accepted)  # bypasses the manifest hook on purpose
    store.update(
        run.run_id,
        lambda m: setattr(m.job_for_workspace(retried), "review", "retry_requested"),
    )
    store.update(run.run_id, lambda m: setattr(m.job_for_workspace(accepted), "review", "pending"))
    manifest = service.reconcile(run.run_id)
    reviews = {job.workspace_id: job.review for job in manifest.jobs}
    assert reviews == {gone: "rejected", accepted: "accepted", retried: "retry_requested"}
    assert manager.state(retried) == "discarded"
    assert store.read(run.run_id) == manifest


def test_manifest_hook_ignores_workspaces_without_a_run(manager: WorkspaceManager) -> None:
    with manager.create("lint", "solo") as ws:
        ws.write("solo.py", b"x\n")
    ReviewService(manager).accept("lint-solo")
    assert manager.state("lint-solo") == "accepted"
