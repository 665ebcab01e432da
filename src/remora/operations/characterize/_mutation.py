"""Mutation score of one function under one test file: how many of its mutants the tests kill.

Coverage says a line ran; a mutant says whether a test would notice the line being wrong. The
mutants (:mod:`._mutator`) are run by a pytest plugin (:mod:`._mutants_plugin`) inside one
pytest process, started by ``launch`` (in the job's sandbox, or by the evaluation on its
copy), which collects the tests once. A process that dies or hangs is started again after the
mutant it was on, which counts as killed (``crashed``). The score is killed over killed and
survived; a mutant that does not compile is left out.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from remora.operations.characterize._mutator import MAX_MUTANTS, MutatorError, mutants

PLUGIN = "remora_mutants"
TEST_TIMEOUT = 2.0
_RELAUNCHES = 3
_HERE = Path(__file__).resolve().parent

Status = Literal["killed", "survived", "invalid", "not_run"]


class MutantOutcome(BaseModel):
    """One mutant: where, what changed, and which tests killed it."""

    index: int
    line: int
    change: str
    status: Status = "not_run"
    killed_by: list[str] = []
    timed_out: bool = False
    crashed: bool = False
    reason: str = ""


class MutationReport(BaseModel):
    """The mutants of one function under one test file."""

    mutants: list[MutantOutcome] = []
    baseline_failed: list[str] = []
    error: str | None = None

    @property
    def killed(self) -> int:
        return sum(1 for m in self.mutants if m.status == "killed")

    @property
    def measured(self) -> int:
        return sum(1 for m in self.mutants if m.status in ("killed", "survived"))

    @property
    def score(self) -> float | None:
        """Killed over killed and survived; None when no mutant could be measured."""
        return self.killed / self.measured if self.measured else None

    def survivors(self) -> list[MutantOutcome]:
        return [m for m in self.mutants if m.status == "survived"]

    def kills(self) -> dict[str, set[int]]:
        """Each test's killed mutants."""
        found: dict[str, set[int]] = {}
        for mutant in self.mutants:
            for test in mutant.killed_by:
                found.setdefault(test, set()).add(mutant.index)
        return found

    def summary(self) -> str:
        if self.score is None:
            return f"mutation score not measured ({self.error or 'no mutant'})"
        return f"mutants killed {self.killed}/{self.measured} ({self.score:.0%})"


Launch = Callable[[Path, Path], str]
"""Runs pytest with ``-p remora_mutants`` and ``REMORA_MUTANTS`` set to the request (first
path), the plugin's directory (second path) importable; returns the output's tail."""


def plugin_directory(workdir: Path) -> Path:
    """A directory holding the plugin and the mutator under the names the plugin imports."""
    directory = workdir / "remora-mutants-plugin"
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_HERE / "_mutants_plugin.py", directory / f"{PLUGIN}.py")
    shutil.copyfile(_HERE / "_mutator.py", directory / "remora_mutator.py")
    return directory


def measure_mutants(
    source: str,
    qualname: str,
    *,
    module_file: Path,
    workdir: Path,
    launch: Launch,
    limit: int = MAX_MUTANTS,
    test_timeout: float = TEST_TIMEOUT,
) -> MutationReport:
    """Run the tests ``launch`` starts against each mutant of ``qualname`` (whose module is
    ``module_file`` as the tests import it). Never raises on the tests' account."""
    try:
        listed = mutants(source, qualname, limit)
    except (MutatorError, SyntaxError) as exc:
        return MutationReport(error=str(exc))
    report = MutationReport(
        mutants=[MutantOutcome(index=m.index, line=m.line, change=m.change) for m in listed]
    )
    if not listed:
        return report
    plugin = plugin_directory(workdir)
    by_index = {m.index: m for m in report.mutants}
    pending = [m.index for m in listed]
    for attempt in range(_RELAUNCHES + 1):
        results = workdir / f"mutants-{attempt}.jsonl"
        request = workdir / f"mutants-{attempt}.json"
        request.write_text(
            json.dumps(
                {
                    "file": str(module_file),
                    "qualname": qualname,
                    "mutants": pending,
                    "results": str(results),
                    "test_timeout": test_timeout,
                }
            ),
            encoding="utf-8",
        )
        tail = launch(request, plugin)
        records = _records(results)
        baseline = next((r["baseline"] for r in records if "baseline" in r), None)
        error = next((r["error"] for r in records if "error" in r), None)
        if baseline is None or error:
            report.error = error or f"the tests did not run: {tail}"
            return report
        report.baseline_failed = list(baseline["failed"])
        for record in records:
            if "id" in record and record["id"] in by_index:
                _record(by_index[record["id"]], record)
        pending = [index for index in pending if by_index[index].status == "not_run"]
        if not pending:
            break
        stuck = by_index[pending.pop(0)]
        stuck.status, stuck.crashed = "killed", True
        stuck.reason = f"the test process died or hung: {tail}"[:200]
    return report


def _record(outcome: MutantOutcome, record: dict[str, Any]) -> None:
    if "invalid" in record:
        outcome.status, outcome.reason = "invalid", str(record["invalid"])[:200]
        return
    killed = record.get("killed_by")
    outcome.killed_by = [str(name) for name in killed] if isinstance(killed, list) else []
    outcome.timed_out = bool(record.get("timed_out"))
    outcome.status = "killed" if outcome.killed_by else "survived"


def _records(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            found.append(record)
    return found


def pytest_targets(test_file: Path | str, tests: Collection[str]) -> list[str]:
    """pytest's ids of ``tests`` in ``test_file`` (a job's own tests, not the other tests of
    its module); the whole file when none is named."""
    return [f"{test_file}::{name}" for name in tests] or [str(test_file)]
