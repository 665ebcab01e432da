"""Workspaces on a generated 5,000-file project: overlay + view versus copying the tree.

Side by side, several rounds interleaved, medians compared (this machine is shared and
absolute times drift):

* copy: ``shutil.copytree`` of the project, what a naive sandbox would do;
* workspace: create a workspace, write 3 files, materialize the view (and, reported
  separately, the whole lifecycle including capture and cleanup of the view).

Then the accept of a workspace with 1,000 changed files (journal, temp + fsync + rename
per file, backups for undo) next to plain ``write_bytes`` of the same files, and
``call_function`` isolated by bubblewrap on the same project next to a bare subprocess call
(``bench_isolation.py`` has the full isolation figures).

    python benchmarks/bench_workspace.py [--files 5000] [--rounds 5] [--accept-files 1000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from remora.workspace import WorkspaceManager, WorkspaceReview

MODULE = "def function_{i}(value):\n    return value + {i}\n\n" * 20


def generate(root: Path, files: int) -> list[str]:
    """A package tree: 20 packages x 10 sub-packages, files spread evenly."""
    paths = []
    per_dir = max(1, files // 200)
    for index in range(files):
        directory = f"pkg{index // (per_dir * 10) % 20:02d}/sub{index // per_dir % 10}"
        rel = f"{directory}/mod{index:05d}.py"
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(MODULE.format(i=index))
        paths.append(rel)
    (root / "pyproject.toml").write_text("[project]\nname = 'generated'\n")
    return paths


def time_copy(root: Path, scratch: Path, round_no: int) -> float:
    target = scratch / f"copy{round_no}"
    start = time.perf_counter()
    shutil.copytree(root, target, symlinks=True)
    elapsed = time.perf_counter() - start
    shutil.rmtree(target)
    return elapsed


def time_workspace(
    manager: WorkspaceManager, paths: list[str], round_no: int
) -> tuple[float, float]:
    """(create + write 3 + materialize, the same plus capture and view cleanup)."""
    start = time.perf_counter()
    workspace = manager.create("bench", f"round{round_no}")
    workspace.write(paths[7], b"X = 'changed'\n")
    workspace.write(paths[len(paths) // 2], b"Y = 'changed'\n")
    workspace.write("tests/test_generated.py", b"def test_ok():\n    assert True\n")
    with workspace.materialize() as view:
        built = time.perf_counter() - start
        assert (view / "tests" / "test_generated.py").is_file()
    total = time.perf_counter() - start
    workspace.close()
    manager.remove(workspace.workspace_id)
    return built, total


def time_accept(
    manager: WorkspaceManager, root: Path, paths: list[str], round_no: int
) -> tuple[float, float]:
    """(accept of len(paths) changed files, plain write_bytes of the same files)."""
    with manager.create("bench", f"accept{round_no}") as workspace:
        for rel in paths:
            workspace.write(rel, f"# round {round_no}\n".encode() + (root / rel).read_bytes())
        workspace_id = workspace.workspace_id
    start = time.perf_counter()
    WorkspaceReview(manager).accept(workspace_id)
    accept = time.perf_counter() - start
    payload = {rel: (root / rel).read_bytes() + b"# plain\n" for rel in paths}
    start = time.perf_counter()
    for rel, data in payload.items():
        (root / rel).write_bytes(data)
    plain = time.perf_counter() - start
    return accept, plain


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--accept-files", type=int, default=1000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="remora-bench-") as temp:
        scratch = Path(temp)
        root = scratch / "project"
        paths = generate(root, args.files)
        manager = WorkspaceManager(root)
        time_workspace(manager, paths, -1)  # warm-up: state directories, imports

        copies: list[float] = []
        built: list[float] = []
        lifecycle: list[float] = []
        for round_no in range(args.rounds):
            copies.append(time_copy(root, scratch, round_no))
            view_time, total_time = time_workspace(manager, paths, round_no)
            built.append(view_time)
            lifecycle.append(total_time)

        from bench_isolation import call_rows

        calls = call_rows(root, scratch, args.rounds)

        accepts: list[float] = []
        plains: list[float] = []
        for round_no in range(max(1, args.rounds // 2)):
            accept, plain = time_accept(manager, root, paths[: args.accept_files], round_no)
            accepts.append(accept)
            plains.append(plain)

    copy_median = statistics.median(copies)
    built_median = statistics.median(built)
    life_median = statistics.median(lifecycle)
    accept_median = statistics.median(accepts)
    plain_median = statistics.median(plains)
    count = args.accept_files
    print(f"project          {args.files} files, {args.rounds} rounds interleaved (medians)")
    print(f"copy tree        {copy_median * 1000:8.1f} ms")
    print(f"workspace        {built_median * 1000:8.1f} ms  create + write 3 + materialize")
    print(f"  + capture      {life_median * 1000:8.1f} ms  ... and capture + remove the view")
    print(f"ratio            copy/workspace = {copy_median / built_median:.0f}x  (target >= 50x)")
    print(f"ratio (full)     copy/workspace lifecycle = {copy_median / life_median:.0f}x")
    print(
        f"isolated call    {calls['bwrap'] * 1000:8.1f} ms  call_function under bubblewrap vs"
        f" {calls['bare'] * 1000:.1f} ms bare subprocess = {calls['bwrap'] / calls['bare']:.2f}x"
    )
    print(
        f"accept           {count} files in {accept_median * 1000:.0f} ms"
        f" = {count / accept_median:.0f} files/s (journal, fsync, rename, backups)"
    )
    print(
        f"plain write      {count} files in {plain_median * 1000:.0f} ms;"
        f" accept/plain = {accept_median / plain_median:.1f}x the cost of unsafe writes"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
