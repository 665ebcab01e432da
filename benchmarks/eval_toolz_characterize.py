"""Remora's test and sample_data agents on toolz, against Hypothesis, in one run.

For N seeded public functions of the pinned toolz sdist:

* **test**: Remora writes characterization tests (with the model's proposals, and host
  candidates only: ``operations.test.options.model_inputs=false``). Measured: tests kept,
  flaky tests dropped, the kept tests' pass rate when run again twice here (must be 100%),
  and each function's line and branch coverage from its generated tests alone. Baseline:
  ``hypothesis write`` on the same functions, its file run unedited, coverage measured the
  same way (a failing or non-importable file counts as 0%).
* **sample_data**: share of functions with at least one fixture that calls without an
  argument error, with and without the model's proposals. Baseline: ``st.builds``.
* For each Remora variant: jobs per minute, mean turns, tool-call validity, wall time.

Usage::

    python benchmarks/eval_toolz_characterize.py [--functions 12] [--seed 0]
        [--skip-remora] [--json out.json] [--keep DIR]
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _hypothesis_baseline import from_type_fixtures, ghostwriter_coverage
from _toolz import (
    TOOLZ,
    Stopwatch,
    copy_project,
    fetch_timed,
    in_workdir,
    jobs_summary,
    mean,
    module_name,
    package_modules,
    pct,
    pick,
    project_env,
    run_remora,
    save_raw,
    seeded,
    table,
)

OPS = "test,sample_data"
HOST_ONLY = (
    "operations.test.options.model_inputs=false",
    "operations.sample_data.options.model_inputs=false",
)


@dataclass(frozen=True)
class Chosen:
    path: str
    name: str

    @property
    def target(self) -> str:
        return f"{self.path}::{self.name}"

    @property
    def module(self) -> str:
        return module_name(self.path)


def candidates(project: Path) -> list[Chosen]:
    """Public module-level functions of toolz's own modules (``curried`` re-exports skipped)."""
    found = []
    for path in package_modules(project):
        if "/curried/" in path:
            continue
        tree = ast.parse((project / path).read_text(encoding="utf-8"))
        found += [
            Chosen(path, node.name)
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
        ]
    return found


@dataclass
class Variant:
    name: str
    wall_s: float = 0.0
    error: str | None = None
    per_function: dict[str, dict[str, Any]] = field(default_factory=dict)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)


def rerun(project: Path, test_file: str) -> tuple[int, int]:
    """(passed, total) of a generated test file run twice here with plain pytest."""
    passed = total = 0
    for seed in ("11", "12"):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file],
            cwd=project,
            env={**project_env(project), "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        tail = done.stdout.strip().splitlines()[-1:] or [""]
        numbers = {word: int(count) for count, word in _counts(tail[0])}
        passed += numbers.get("passed", 0)
        total += sum(numbers.values())
    return passed, total


def _counts(line: str) -> list[tuple[str, str]]:
    words = line.replace(",", " ").split()
    return [
        (words[i], words[i + 1].rstrip(","))
        for i in range(len(words) - 1)
        if words[i].isdigit() and words[i + 1] in ("passed", "failed", "error", "errors")
    ]


def run_variant(name: str, project: Path, chosen: list[Chosen], sets: tuple[str, ...]) -> Variant:
    targets = [item.target for item in chosen]
    run = run_remora(project, targets, OPS, sets)
    variant = Variant(name, wall_s=run.wall_s, error=run.error)
    for op in OPS.split(","):
        jobs = run.jobs(op)
        variant.jobs[op] = jobs_summary(jobs, run.wall_s * len(jobs) / max(len(run.jobs()), 1))
    for item in chosen:
        row: dict[str, Any] = {}
        for job in run.jobs():
            if job.get("file_path") != item.path or job.get("qualname") != item.name:
                continue
            details = job.get("details") or {}
            if job["operation"] == "test":
                row["test_status"] = job.get("status")
                row["tests"] = len(details.get("tests", []))
                row["dropped"] = len(details.get("dropped", []))
                row["line_rate"] = details.get("line_rate", 0.0)
                row["branch_rate"] = details.get("branch_rate", 0.0)
                if details.get("test_file") and (project / details["test_file"]).is_file():
                    row["rerun_passed"], row["rerun_total"] = rerun(project, details["test_file"])
            else:
                row["fixture_status"] = job.get("status")
                row["fixtures"] = details.get("fixtures", 0)
        variant.per_function[item.target] = row
    return variant


def run(args: argparse.Namespace, work: Path) -> int:
    clock = Stopwatch()
    sdist = fetch_timed(work, clock)
    if sdist is None:
        return 2
    original = copy_project(sdist, work / "original")
    pool = candidates(original)
    chosen = pick(seeded(args.seed, "functions"), pool, args.functions)
    print(f"{len(chosen)} of {len(pool)} public functions (seed {args.seed}):")
    print("  " + " ".join(item.target for item in chosen))

    started = time.perf_counter()
    ghost = {item.target: ghostwriter_coverage(original, item.module, item.name) for item in chosen}
    builds = {item.target: from_type_fixtures(original, item.module, item.name) for item in chosen}
    clock.since("hypothesis", started)

    variants: list[Variant] = []
    if not args.skip_remora:
        for name, sets in (("remora", ()), ("remora host-only", HOST_ONLY)):
            project = copy_project(original, work / name.replace(" ", "-"))
            variant = run_variant(name, project, chosen, sets)
            variants.append(variant)
            clock.add(name, variant.wall_s)

    report(chosen, ghost, builds, variants, clock)
    save_raw(
        args.json,
        {
            "package": TOOLZ,
            "seed": args.seed,
            "candidates": len(pool),
            "chosen": [item.target for item in chosen],
            "hypothesis_write": ghost,
            "st_builds": builds,
            "variants": [asdict(v) for v in variants],
            "times_s": clock.parts,
        },
    )
    return 0


def report(
    chosen: list[Chosen],
    ghost: dict[str, dict[str, Any]],
    builds: dict[str, dict[str, Any]],
    variants: list[Variant],
    clock: Stopwatch,
) -> None:
    n = len(chosen)
    print(f"\n## test: coverage of each function from its generated tests alone ({TOOLZ})\n")
    rows: list[list[object]] = []
    rows.append(
        [
            "hypothesis write",
            sum(1 for g in ghost.values() if g.get("passed", 0) and not g.get("failed", 0)),
            "-",
            "-",
            mean(g.get("line_rate", 0.0) for g in ghost.values()),
            mean(g.get("branch_rate", 0.0) for g in ghost.values()),
        ]
    )
    for v in variants:
        rows_f = list(v.per_function.values())
        passed = sum(r.get("rerun_passed", 0) for r in rows_f)
        total = sum(r.get("rerun_total", 0) for r in rows_f)
        rows.append(
            [
                v.name,
                sum(1 for r in rows_f if r.get("tests")),
                pct(passed, total),
                sum(r.get("dropped", 0) for r in rows_f),
                mean(r.get("line_rate", 0.0) or 0.0 for r in rows_f),
                mean(r.get("branch_rate", 0.0) or 0.0 for r in rows_f),
            ]
        )
    headers = ["", f"functions with passing tests /{n}", "kept pass (2 reruns)", "dropped"]
    print(table([*headers, "mean line cov", "mean branch cov"], rows))

    print("\n## sample_data: functions with >= 1 fixture that calls without an argument error\n")
    rows = [["st.builds", pct(sum(1 for b in builds.values() if b.get("ok")), n)]]
    for v in variants:
        with_fixture = sum(1 for r in v.per_function.values() if r.get("fixtures"))
        rows.append([v.name, pct(with_fixture, n)])
    print(table(["", "share"], rows))

    print("\n## throughput\n")
    rows = []
    for v in variants:
        for op, s in v.jobs.items():
            rows.append(
                [
                    f"{v.name} {op}",
                    s["jobs"],
                    s["jobs_per_min"],
                    s["mean_turns"],
                    s["call_validity"],
                    s["mean_job_wall_s"],
                ]
            )
    print(table(["", "jobs", "jobs/min", "turns", "validity", "job wall s"], rows))
    print(f"\nper function: {os.linesep.join(_per_function(chosen, ghost, builds, variants))}")
    print(f"\ntimes: {clock.render()}")


def _per_function(
    chosen: list[Chosen],
    ghost: dict[str, dict[str, Any]],
    builds: dict[str, dict[str, Any]],
    variants: list[Variant],
) -> list[str]:
    lines = [""]
    for item in chosen:
        g = ghost[item.target]
        parts = [f"{item.target}: hypothesis {g.get('line_rate', 0):.0%}"]
        parts.append(f"builds {'ok' if builds[item.target].get('ok') else '-'}")
        for v in variants:
            r = v.per_function.get(item.target, {})
            parts.append(
                f"{v.name} {r.get('tests', 0)} tests {r.get('line_rate') or 0:.0%}/"
                f"{r.get('branch_rate') or 0:.0%} fixtures {r.get('fixtures', 0)}"
            )
        lines.append("  " + "; ".join(parts))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--functions", type=int, default=12, help="how many functions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-remora", action="store_true", help="run only the baselines")
    parser.add_argument("--json", type=Path, default=None, help="save the raw numbers here")
    parser.add_argument("--keep", type=Path, default=None, help="work (and keep files) here")
    args = parser.parse_args()
    return in_workdir(args.keep, "eval-toolz-characterize-", lambda work: run(args, work))


if __name__ == "__main__":
    sys.exit(main())
