"""Shared helpers of the toolz evaluations (``eval_toolz_lint.py``, ``eval_toolz_docstring.py``).

The third-party package is the pinned sdist of toolz 1.0.0, fetched by pip into a temporary
directory at run time and unpacked into scratch projects (the package ``toolz/``, its tests in
``toolz/tests/``, ``tlz/`` which those tests import, and ``setup.py``/``setup.cfg``, which mark
the project root for Remora). Nothing from toolz is kept in this repository.

Every external command goes through :func:`run_command`, which never raises: a tool that
fails, times out or is missing comes back as a :class:`CommandResult` for the table to show.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from remora.tools.capabilities.ruff import ruff_command

TOOLZ = "toolz==1.0.0"
TEST_TIMEOUT_S = 600.0
REMORA_TIMEOUT_S = 4 * 3600.0
_NOT_MODULES = ("__init__.py", "_version.py")
_NUMBER = re.compile(r"[-+]?[0-9.]+%?|-|[0-9]+/[0-9]+")
T = TypeVar("T")


class ToolzUnavailable(Exception):
    """The sdist could not be downloaded or unpacked."""


@dataclass
class CommandResult:
    """One finished (or killed) command; ``returncode`` -1 when it could not start."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def tail(self, lines: int = 3) -> str:
        """The last lines of stderr (else stdout), for a table cell or an error message."""
        if self.timed_out:
            return f"timed out after {self.wall_s:.0f}s"
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return " | ".join(text[-lines:]) if text else f"exit {self.returncode}"


def project_env(project: Path) -> dict[str, str]:
    """The environment of commands run on a scratch project: its code first, no bytecode."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(project)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_command(
    argv: Sequence[str],
    cwd: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> CommandResult:
    """Run ``argv`` in its own process group; on timeout the whole group is killed."""
    started = time.perf_counter()
    try:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except OSError as exc:
        return CommandResult(list(argv), -1, "", f"could not start: {exc}", 0.0)
    try:
        stdout, stderr = process.communicate(stdin, timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        timed_out = True
    return CommandResult(
        list(argv),
        process.returncode,
        stdout,
        stderr,
        time.perf_counter() - started,
        timed_out,
    )


# --- the package --------------------------------------------------------------------------


def fetch_sdist(directory: Path) -> Path:
    """Download the pinned sdist into ``directory`` and unpack it; the unpacked root."""
    directory.mkdir(parents=True, exist_ok=True)
    download = run_command(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            TOOLZ,
            "--no-deps",
            "--no-binary",
            ":all:",
            "--disable-pip-version-check",
            "-q",
            "-d",
            str(directory),
        ],
        cwd=directory,
        timeout=300,
    )
    archives = sorted(directory.glob("toolz-*.tar.gz"))
    if not download.ok or not archives:
        raise ToolzUnavailable(f"pip download {TOOLZ} failed: {download.tail()}")
    try:
        with tarfile.open(archives[0]) as archive:
            archive.extractall(directory / "unpacked", filter="data")
    except (OSError, tarfile.TarError) as exc:
        raise ToolzUnavailable(f"cannot unpack {archives[0].name}: {exc}") from None
    roots = [path for path in (directory / "unpacked").iterdir() if (path / "toolz").is_dir()]
    if not roots:
        raise ToolzUnavailable(f"{archives[0].name} has no toolz/ package")
    return roots[0]


def copy_project(source: Path, dest: Path) -> Path:
    """A scratch copy of a project (the sdist root or another scratch project)."""
    keep = ("toolz", "tlz", "setup.py", "setup.cfg")
    dest.mkdir(parents=True)
    for name in keep:
        path = source / name
        if path.is_dir():
            shutil.copytree(
                path, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        elif path.is_file():
            shutil.copy2(path, dest / name)
    return dest


def package_modules(project: Path) -> list[str]:
    """toolz's own modules, relative posix paths: no tests, no ``__init__``, no ``_version``."""
    package = project / "toolz"
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(project).as_posix()
        if "/tests/" in relative or path.name in _NOT_MODULES:
            continue
        found.append(relative)
    return found


def module_name(relative: str) -> str:
    """``toolz/sandbox/core.py`` -> ``toolz.sandbox.core``."""
    return relative.removesuffix(".py").replace("/", ".")


def check_import(project: Path, module: str) -> tuple[bool, str]:
    """Whether ``import module`` works in the project; the error's last line when not."""
    result = run_command(
        [sys.executable, "-c", f"import {module}"], project, 120, env=project_env(project)
    )
    return result.ok, "" if result.ok else result.tail(1)


def run_package_tests(project: Path, timeout: float = TEST_TIMEOUT_S) -> tuple[bool, str]:
    """toolz's own test suite on the project: (all passed, pytest's closing line)."""
    result = run_command(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "toolz/tests"],
        project,
        timeout,
        env=project_env(project),
    )
    lines = [line for line in result.stdout.strip().splitlines() if line.strip()]
    summary = lines[-1].strip("= ") if lines else result.tail(1)
    if result.timed_out:
        summary = result.tail()
    return result.ok, summary


def ruff_json(project: Path, files: Sequence[str], args: Sequence[str]) -> list[dict[str, Any]]:
    """``ruff check --isolated --output-format json ARGS FILES`` in the project; raises
    RuntimeError when ruff fails (exit 2) or prints something unreadable."""
    argv = [*ruff_command(), "check", "--isolated", "--no-cache", "--output-format", "json"]
    result = run_command([*argv, *args, *files], project, 300)
    if result.returncode not in (0, 1) or result.timed_out:
        raise RuntimeError(f"ruff failed: {result.tail()}")
    try:
        items = json.loads(result.stdout or "[]")
    except json.JSONDecodeError:
        raise RuntimeError(f"ruff printed no JSON: {result.stdout[:200]!r}") from None
    for item in items:
        with contextlib.suppress(ValueError):
            item["filename"] = Path(item["filename"]).resolve().relative_to(project.resolve())
        item["filename"] = Path(item["filename"]).as_posix()
    return list(items)


# --- Remora through its CLI ------------------------------------------------------------------


@dataclass
class RemoraRun:
    """One ``remora analyze`` call: the manifest when there is one, else why not."""

    manifest: dict[str, Any] | None
    error: str | None
    wall_s: float
    exit_code: int
    stderr: str = ""

    def jobs(self, operation: str | None = None) -> list[dict[str, Any]]:
        jobs = list((self.manifest or {}).get("jobs", []))
        return [job for job in jobs if operation is None or job.get("operation") == operation]


def run_remora(
    project: Path,
    paths: Sequence[str],
    ops: str,
    extra_sets: Iterable[str] = (),
    timeout: float = REMORA_TIMEOUT_S,
) -> RemoraRun:
    """``remora analyze PATHS --ops OPS --auto-accept --format json`` in the project.

    Exit code 1 (some job failed) still yields the manifest. ``error`` says why there is
    none: "not available" when the operation has no agent (RUN_020), else the exit code
    and the last lines of stderr.
    """
    sets = [arg for value in extra_sets for arg in ("--set", value)]
    argv = [
        sys.executable,
        "-m",
        "remora",
        "-q",
        *sets,
        "analyze",
        *paths,
        "--ops",
        ops,
        "--auto-accept",
        "--format",
        "json",
    ]
    result = run_command(argv, project, timeout, env=project_env(project))
    manifest = _manifest(result.stdout)
    error = None
    if manifest is None and "RUN_020" in result.stderr:
        match = re.search(r"RUN_020: [^\n]*", result.stderr)
        error = "not available" + (f" ({match.group(0)})" if match else "")
    elif manifest is None:
        error = f"exit {result.returncode}: {result.tail()}"
        manifest = _saved_manifest(project)
        if manifest is not None:
            error += "; jobs from the run's saved manifest (nothing accepted)"
    elif result.returncode not in (0, 1):
        error = f"exit {result.returncode}: {result.tail()}"
    return RemoraRun(manifest, error, result.wall_s, result.returncode, result.stderr)


def _saved_manifest(project: Path) -> dict[str, Any] | None:
    """The newest run manifest under the default state directory (a run that was killed
    printed none, but recorded its finished jobs there)."""
    runs = sorted((project / ".remora" / "runs").glob("*.json"))
    if not runs:
        return None
    try:
        value = json.loads(runs[-1].read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) and "jobs" in value else None


def _manifest(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text:
        return None
    start = text.find("{")
    if start < 0:
        return None
    try:
        value = json.loads(text[start:])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) and "jobs" in value else None


def tool_sequence(job: Mapping[str, Any]) -> list[str]:
    """The names of the job's executed tool calls, in order (telemetry.timeline)."""
    timeline = (job.get("telemetry") or {}).get("timeline") or []
    return [str(entry.get("name")) for entry in timeline if entry.get("kind") == "tool"]


def jobs_summary(jobs: Sequence[Mapping[str, Any]], wall_s: float) -> dict[str, Any]:
    """Throughput, turns and tool-call validity of a run's jobs.

    Validity is valid / (valid + invalid) calls, where valid calls are the executed ones
    (``telemetry.tool_calls``) plus repeats answered from memory (``telemetry.repeats``) and
    invalid ones are those the validator rejected (``telemetry.invalid_calls``).
    """
    statuses = Counter(str(job.get("status")) for job in jobs)
    telemetry = [job.get("telemetry") or {} for job in jobs]
    valid = sum(sum((t.get("tool_calls") or {}).values()) + t.get("repeats", 0) for t in telemetry)
    invalid = sum(t.get("invalid_calls", 0) for t in telemetry)
    turns = [t.get("turns", 0) for t in telemetry]
    job_walls = [t.get("wall_time_s", 0.0) for t in telemetry]
    return {
        "jobs": len(jobs),
        "statuses": dict(statuses),
        "jobs_per_min": len(jobs) / (wall_s / 60) if wall_s > 0 else None,
        "mean_turns": mean(turns),
        "mean_job_wall_s": mean(job_walls),
        "valid_calls": valid,
        "invalid_calls": invalid,
        "call_validity": valid / (valid + invalid) if valid + invalid else None,
    }


# --- seeded selection ------------------------------------------------------------------------


def seeded(seed: int, *labels: str) -> random.Random:
    """A generator for one decision: the same seed and labels give the same draws, whatever
    else the run draws (string seeds hash with SHA-512, not the salted ``hash``)."""
    return random.Random(":".join([str(seed), *labels]))


def pick(rng: random.Random, items: Sequence[T], n: int) -> list[T]:
    """``n`` of ``items`` (all when fewer), kept in their original order."""
    if n >= len(items):
        return list(items)
    chosen = sorted(rng.sample(range(len(items)), n))
    return [items[index] for index in chosen]


# --- output ------------------------------------------------------------------------------------


def mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return sum(items) / len(items) if items else None


def fmt(value: object, digits: int = 2) -> str:
    """A table cell: None as '-', floats rounded."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def pct(part: float | None, whole: float | None) -> str:
    if part is None or not whole:
        return "-"
    return f"{100 * part / whole:.0f}%"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain text table: numbers right-aligned, text left-aligned."""
    cells = [[str(h) for h in headers], *[[fmt(cell) for cell in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        parts = [
            cell.rjust(widths[i]) if i and _NUMBER.fullmatch(cell) else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


@dataclass
class Stopwatch:
    """Named wall times of a script's parts, printed at the end."""

    parts: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, seconds: float) -> None:
        self.parts[name] = self.parts.get(name, 0.0) + seconds

    def since(self, name: str, started: float) -> None:
        self.add(name, time.perf_counter() - started)

    def render(self) -> str:
        return "  ".join(f"{name} {seconds:.1f}s" for name, seconds in self.parts.items())


def in_workdir(keep: Path | None, prefix: str, run: Callable[[Path], int]) -> int:
    """``run`` in ``keep`` (a new or empty directory, kept) or in a temporary one."""
    if keep:
        if keep.exists() and any(keep.iterdir()):
            print(f"--keep {keep}: give a new or empty directory")
            return 2
        keep.mkdir(parents=True, exist_ok=True)
        return run(keep)
    with tempfile.TemporaryDirectory(prefix=prefix) as temp:
        return run(Path(temp))


def fetch_timed(work: Path, clock: Stopwatch) -> Path | None:
    """The unpacked sdist, with the time it took on ``clock``; None (said why) if unavailable."""
    started = time.perf_counter()
    try:
        sdist = fetch_sdist(work / "sdist")
    except ToolzUnavailable as exc:
        print(f"cannot get {TOOLZ}: {exc}")
        return None
    clock.since("fetch", started)
    return sdist


def save_raw(path: Path | None, raw: Mapping[str, Any]) -> None:
    """Write the raw numbers of a run as JSON, when ``--json`` asked for them."""
    if path is None:
        return
    path.write_text(json.dumps(raw, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"\nraw numbers: {path}")
