"""One evaluation run: resolve the package, run its own tests once, then each operation.

Every operation works on its own scratch copies under one work directory (a temporary one,
or ``out/work`` when the user keeps it), so a run never touches the package's source. An
operation that breaks is reported with its error; the others still run.
"""

from __future__ import annotations

import dataclasses
import datetime
import shlex
import tempfile
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, Field

from remora import __version__
from remora.errors import EvalError
from remora.evaluation.context import (
    DEFAULT_TEST_TIMEOUT_S,
    EvalContext,
    Evaluator,
    NullProgress,
    OperationProgress,
    ProgressSink,
)
from remora.evaluation.package import Project, resolve_package
from remora.evaluation.published import as_published
from remora.evaluation.report import EvalReport, OperationReport, to_markdown
from remora.evaluation.session import RemoraSession

DEFAULT_LIMIT = 6
SETUP = "setup"


class EvalOptions(BaseModel):
    """What to evaluate: SPEC, the operations (none: every one that can be measured), how
    many modules/functions each, the seed."""

    spec: str
    operations: list[str] = Field(default_factory=list)
    limit: int = DEFAULT_LIMIT
    seed: int = 0
    out: Path | None = None
    test_timeout: float = DEFAULT_TEST_TIMEOUT_S
    rows: list[str] | None = Field(
        default=None,
        description="Measure only these of Remora's rows, by name (None: all); the gate "
        "measures a candidate's row apart from the rows that do not depend on it.",
    )
    baselines: bool = Field(
        default=True,
        description="False: leave out the baseline tools' rows where an operation can (test "
        "and sample_data); the gate's candidate evaluations, whose table has Remora's rows only.",
    )
    as_published: bool = Field(
        default=False,
        description="Measure every chosen operation on the package as published, every "
        "change accepted: value beside harm (remora.evaluation.published), not the "
        "operations' own evaluations; every installed operation can be measured.",
    )

    def check(self, known: Sequence[str]) -> None:
        """Refuse options that cannot run, before any work (EVAL_004-006); ``known`` are
        the operations that can be measured."""
        unknown = [name for name in self.operations if name not in known]
        if unknown or not known:
            raise EvalError(
                "EVAL_004",
                f"unknown operation {', '.join(unknown)}" if unknown else "no operation given",
                f"choose from {', '.join(known)}",
            )
        if self.limit < 1 or self.seed < 0:
            raise EvalError(
                "EVAL_005",
                f"--limit must be at least 1 and --seed at least 0 (got {self.limit}, {self.seed})",
                "e.g. --limit 6 --seed 0",
            )
        if self.out is not None and self.out.exists() and any(self.out.iterdir()):
            raise EvalError(
                "EVAL_006",
                f"{self.out} is not empty",
                "give a new or empty directory; a run never overwrites an earlier one",
            )

    def command(self, assignments: Sequence[str] = ()) -> str:
        """The command line that repeats this run exactly."""
        words = ["remora"]
        for assignment in assignments:
            words += ["--set", assignment]
        words += ["eval", self.spec]
        if self.as_published:
            words.append("--as-published")
        words += ["--ops", ",".join(self.operations)]
        words += ["--limit", str(self.limit), "--seed", str(self.seed)]
        return shlex.join(words)


def _fetch_note(spec: str) -> str:
    """What fetching ``spec`` runs on this machine, said before it starts."""
    if Path(spec).expanduser().exists():
        return ""
    return " (pip download runs the sdist's build backend here, outside the sandbox)"


def run_eval(
    options: EvalOptions,
    *,
    evaluators: Mapping[str, Evaluator],
    session: RemoraSession,
    progress: ProgressSink | None = None,
) -> EvalReport:
    """Evaluate the package ``options.spec`` names with ``evaluators`` (by operation name,
    from ``remora.operations``); the report (also written to ``out``). With
    ``options.as_published`` every operation the session knows is measured as published
    instead (:func:`~remora.evaluation.published.as_published`), ``evaluators`` unused."""
    if options.as_published:
        evaluators = {name: as_published(name) for name in session.defaults}
    options.check(list(evaluators))
    if not options.operations:
        options = options.model_copy(update={"operations": list(evaluators)})
    sink = progress or NullProgress()
    started = time.perf_counter()
    with _work_directory(options.out) as work:
        sink.update(SETUP, description=f"getting {options.spec}{_fetch_note(options.spec)}")
        source = resolve_package(options.spec, work)
        tools = session.config(Project(source.root, source)).tools
        source = dataclasses.replace(source, tools=tools)
        original = source.copy_to(work / "original")
        report = EvalReport(
            remora_version=__version__,
            spec=options.spec,
            package=source.label,
            command=options.command(session.assignments),
            seed=options.seed,
            limit=options.limit,
            operations=list(options.operations),
            model=session.describe_model(original),
            started=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        )
        sink.update(SETUP, description=f"running {source.label}'s own tests")
        report.test_suite = original.run_tests(options.test_timeout)
        sink.update(SETUP, total=1, advance=1, description=f"{source.label} ready")
        for operation in options.operations:
            directory = work / operation
            directory.mkdir()
            context = EvalContext(
                original=original,
                work=directory,
                seed=options.seed,
                limit=options.limit,
                session=session,
                suite=report.test_suite,
                progress=OperationProgress(operation, sink),
                test_timeout=options.test_timeout,
                rows=frozenset(options.rows) if options.rows is not None else None,
                baselines=options.baselines,
            )
            report.reports.append(_evaluate(operation, evaluators[operation], context))
        report.wall_s = time.perf_counter() - started
        if options.out is not None:
            write_report(report, options.out)
    return report


def write_report(report: EvalReport, directory: Path) -> None:
    """``report.json`` and ``report.md`` in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.json").write_text(report.model_dump_json(indent=2) + "\n", "utf-8")
    (directory / "report.md").write_text(to_markdown(report), encoding="utf-8")


def _evaluate(operation: str, evaluate: Evaluator, context: EvalContext) -> OperationReport:
    """One operation's report; an unexpected failure becomes the report's error."""
    started = time.perf_counter()
    try:
        report = evaluate(context)
    except Exception as exc:  # one broken operation must not lose the others' results
        report = OperationReport(
            operation=operation,
            unit="",
            selection=[],
            columns=[],
            scores=[],
            error=f"internal error: {type(exc).__name__}: {exc}",
            details={"traceback": traceback.format_exc()},
        )
    report.wall_s = time.perf_counter() - started
    return report


@contextmanager
def _work_directory(out: Path | None) -> Iterator[Path]:
    """``out/work`` (kept for inspection) or a temporary directory removed afterwards."""
    if out is not None:
        work = out / "work"
        work.mkdir(parents=True)
        yield work
        return
    with tempfile.TemporaryDirectory(prefix="remora-eval-") as temp:
        yield Path(temp)
