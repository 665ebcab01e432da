"""The cost of ``remora analyze --changed`` against a full run, on a commit that touches
three functions of a 50-file project.

A scratch git repository of ``--files`` modules (each with a few functions and an unused
import the lint host fixes) is committed; three functions in two files are edited; then
``remora analyze --ops OPS`` runs on the whole project and ``remora analyze --changed --ops
OPS`` on the change, alternating, ``--rounds`` times each, as real subprocesses. The
figures that matter are the jobs each runs and the ratio of median wall times (this
machine is shared and absolute times drift). Host-only operations, so no model is loaded.

    python benchmarks/bench_changed.py [--files 50] [--rounds 2] [--ops lint,docstring]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOST_ONLY = ["--set", "operations.docstring.options.use_model=false"]


def module(index: int) -> str:
    functions = "\n\n".join(
        f"def f{index}_{n}(values, factor={n + 1}):\n"
        f"    total = 0\n"
        f"    for value in values:\n"
        f"        total += value * factor\n"
        f"    return total\n"
        for n in range(4)
    )
    return f'"""Module {index}."""\n\nimport os\n\n\n{functions}'


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def analyze(root: Path, ops: str, changed: bool) -> tuple[float, int]:
    """Seconds and jobs of one ``remora analyze`` run (its state removed afterwards)."""
    command = [sys.executable, "-m", "remora", *HOST_ONLY, "analyze", "--ops", ops, "-f", "json"]
    if changed:
        command.append("--changed")
    started = time.perf_counter()
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"analyze failed ({done.returncode}): {done.stderr[-2000:]}")
    jobs = len(json.loads(done.stdout)["jobs"])
    subprocess.run(["rm", "-rf", str(root / ".remora")], check=True)
    return seconds, jobs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ops", default="lint,docstring")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "project"
        (root / "pkg").mkdir(parents=True)
        (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
        (root / ".gitignore").write_text(".remora/\n")
        (root / "pkg" / "__init__.py").write_text("")
        for index in range(args.files):
            (root / "pkg" / f"mod{index}.py").write_text(module(index))
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "base")
        for index, function in ((0, 1), (0, 2), (7, 3)):
            path = root / "pkg" / f"mod{index}.py"
            text = path.read_text()
            path.write_text(
                text.replace(
                    f"def f{index}_{function}(values, factor={function + 1}):\n    total = 0\n",
                    f"def f{index}_{function}(values, factor={function + 1}):\n    total = 1\n",
                )
            )
        full: list[float] = []
        changed: list[float] = []
        jobs = {"full": 0, "changed": 0}
        for _ in range(args.rounds):
            seconds, jobs["full"] = analyze(root, args.ops, changed=False)
            full.append(seconds)
            seconds, jobs["changed"] = analyze(root, args.ops, changed=True)
            changed.append(seconds)
    full_s, changed_s = statistics.median(full), statistics.median(changed)
    print(f"project: {args.files} modules, {args.files * 4} functions; 3 functions changed")
    print(f"full run:      {jobs['full']:4d} jobs, median {full_s:7.1f} s")
    print(f"--changed run: {jobs['changed']:4d} jobs, median {changed_s:7.1f} s")
    print(f"ratio: --changed takes {changed_s / full_s:.1%} of a full run's time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
