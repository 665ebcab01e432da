"""Which isolation runs, what happens without any, and how writes come back as changes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from remora.errors import ToolError
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.call import call_function
from remora.tools.isolation import _probe, isolation_status, project_sandbox
from remora.tools.isolation._probe import Mechanism
from tests.cli_helpers import run_cli
from tests.stores import capability_context, write_tree

CODE = """
import os
import shutil


def marker(name):
    with open(name, "w") as handle:
        handle.write("ran")
    return "ran"


def remove(path):
    os.remove(path)


def remove_tree(path):
    shutil.rmtree(path)


def recreate(path):
    shutil.rmtree(path)
    os.makedirs(path)
    with open(os.path.join(path, "fresh.txt"), "w") as handle:
        handle.write("fresh")


def caches():
    os.makedirs("pkg/__pycache__", exist_ok=True)
    with open("pkg/__pycache__/mod.cpython-311.pyc", "wb") as handle:
        handle.write(b"bytecode")
    with open("pkg/stale.pyc", "wb") as handle:
        handle.write(b"bytecode")


def touch_only(path):
    os.chmod(path, 0o644)
    os.utime(path, (1, 1))


def exists(path):
    return os.path.exists(path)
"""


def unavailable(name: str) -> Mechanism:
    return Mechanism(name, False, f"{name} faked unavailable")  # type: ignore[arg-type]


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    root = write_tree(
        tmp_path / "proj",
        {
            "pkg/__init__.py": "",
            "pkg/code.py": CODE,
            "data/a.txt": "a",
            "data/sub/b.txt": "b",
            "keep.txt": "keep",
        },
    )
    return capability_context(root, isolation="bwrap")


def call(ctx: CapabilityContext, name: str, *args: object) -> dict:
    return call_function(ctx, "pkg/code.py", name, json.dumps(list(args)))


def test_auto_takes_bubblewrap_here_and_says_why() -> None:
    status = isolation_status("auto")
    assert status.level == "bwrap"
    assert "overlay" in status.reason
    assert [mechanism.available for mechanism in status.mechanisms] == [True, True]


def test_auto_falls_back_to_landlock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_probe, "probe_bwrap", lambda: unavailable("bwrap"))
    status = isolation_status("auto")
    assert status.level == "landlock"
    assert "bwrap faked unavailable" in status.reason and "Landlock ABI" in status.reason


def test_without_any_isolation_project_code_is_refused(
    monkeypatch: pytest.MonkeyPatch, ctx: CapabilityContext
) -> None:
    monkeypatch.setattr(_probe, "probe_bwrap", lambda: unavailable("bwrap"))
    monkeypatch.setattr(_probe, "probe_landlock", lambda: unavailable("landlock"))
    auto = capability_context(ctx.store.root, isolation="auto")
    with pytest.raises(ToolError) as info:
        call(auto, "marker", "ran.txt")
    assert info.value.code == "TOOL_801"
    assert "tools.isolation: none" in (info.value.hint or "")
    assert not auto.store.exists("ran.txt") and not (auto.store.root / "ran.txt").exists()
    forced = capability_context(ctx.store.root, isolation="landlock")
    with pytest.raises(ToolError) as info:
        call(forced, "marker", "ran.txt")
    assert info.value.code == "TOOL_802"


def test_isolation_none_is_an_explicit_opt_out(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/code.py": CODE})
    ctx = capability_context(root, isolation="none")
    assert isolation_status("none").level == "none"
    assert call(ctx, "marker", "ran.txt")["returned"]["json"] == "ran"
    assert not ctx.store.exists("ran.txt") and not (root / "ran.txt").exists()
    with project_sandbox(ctx.store, ctx.config, harvest=True) as box:
        box.run(["/bin/sh", "-c", "echo ran > ran.txt"], timeout=10, what="sh")
    assert ctx.store.read("ran.txt") == b"ran\n"  # a new file at the view's root is captured


def harvested(ctx: CapabilityContext, script: str) -> None:
    """Run ``script`` in a sandbox that harvests, as a command whose writes are the point."""
    with project_sandbox(ctx.store, ctx.config, harvest=True) as box:
        box.run(["/bin/sh", "-c", script], timeout=10, what="sh")


def test_observed_writes_and_deletes_are_discarded(ctx: CapabilityContext) -> None:
    call(ctx, "marker", "ran.txt")
    call(ctx, "remove", "keep.txt")
    call(ctx, "remove_tree", "data")
    assert ctx.store.changed_paths() == []
    assert ctx.store.read("keep.txt") == b"keep" and ctx.store.read("data/sub/b.txt") == b"b"


def test_deleting_files_becomes_workspace_deletes(ctx: CapabilityContext) -> None:
    harvested(ctx, "rm keep.txt && rm -r data")
    assert ctx.store.changed_paths() == ["data/a.txt", "data/sub/b.txt", "keep.txt"]
    assert not ctx.store.exists("keep.txt") and (ctx.store.root / "keep.txt").exists()


def test_a_recreated_directory_deletes_what_it_had(ctx: CapabilityContext) -> None:
    harvested(ctx, "rm -r data && mkdir data && printf fresh > data/fresh.txt")
    assert ctx.store.read("data/fresh.txt") == b"fresh"
    assert not ctx.store.exists("data/a.txt") and not ctx.store.exists("data/sub/b.txt")


def test_caches_and_metadata_only_changes_are_not_changes(ctx: CapabilityContext) -> None:
    script = "mkdir -p pkg/__pycache__ && echo b > pkg/__pycache__/m.cpython-311.pyc"
    harvested(ctx, script + " && echo b > pkg/stale.pyc && chmod 644 keep.txt && touch keep.txt")
    assert ctx.store.changed_paths() == []


def test_the_workspace_deletes_are_invisible_to_project_code(ctx: CapabilityContext) -> None:
    ctx.store.delete("keep.txt")
    assert call(ctx, "exists", "keep.txt")["returned"]["json"] is False
    assert call(ctx, "exists", "data/a.txt")["returned"]["json"] is True
    assert ctx.store.changed_paths() == ["keep.txt"]


def test_a_failed_run_discards_what_it_wrote(ctx: CapabilityContext) -> None:
    with pytest.raises(RuntimeError), project_sandbox(ctx.store, ctx.config, harvest=True) as box:
        (box.exchange / "ignored").write_text("x")
        box.run(["/bin/sh", "-c", "echo partial > out.txt"], timeout=10, what="sh")
        raise RuntimeError("the caller failed")
    assert ctx.store.changed_paths() == []


def test_harvest_reports_what_it_wrote_and_skipped(tmp_path: Path) -> None:
    ctx = capability_context(write_tree(tmp_path / "proj", {"a.txt": "a"}), max_file_mb=1)
    script = "echo new > a.txt; mkdir d; echo x > d/x; head -c 3000000 /dev/zero > big.bin"
    with project_sandbox(ctx.store, ctx.config, harvest=True) as box:
        box.run(["/bin/sh", "-c", script], timeout=10, what="sh")
    assert box.harvest is not None
    assert box.harvest.written == ["a.txt", "d/x"]
    assert "size limit" in box.harvest.skipped["big.bin"]
    assert ctx.store.changed_paths() == ["a.txt", "d/x"]


def test_doctor_reports_the_level_in_a_real_process(tmp_path: Path) -> None:
    remora = Path(sys.executable).with_name("remora")
    done = subprocess.run(
        [
            str(remora),
            "--set",
            "tools.isolation=landlock",
            "--set",
            "model.threads=3",
            "doctor",
            str(tmp_path),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["isolation"]["level"] == "landlock"
    assert report["isolation"]["mechanisms"]["bwrap"]["available"] is True
    assert report["model"]["threads"] == 3
    assert "model.threads" in report["model"]["threads_reason"]
    load = report["model"]["load"]
    assert load["profile"] in {"extra_buffers", "plain_buffers"}
    assert "loads and generates in a child process" in load["reason"]
    assert load["attempts"][-1]["outcome"] == "ok"


def test_doctor_exits_1_when_project_code_could_not_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(_probe, "probe_bwrap", lambda: unavailable("bwrap"))
    monkeypatch.setattr(_probe, "probe_landlock", lambda: unavailable("landlock"))
    result = run_cli(["doctor", str(tmp_path)], capsys)
    assert result.code == 1
    assert "REFUSED" in result.out and "landlock faked unavailable" in result.out
