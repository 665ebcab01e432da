"""The deterministic Hypothesis baselines of the test and sample_data agents.

* :func:`ghostwriter_coverage`: what ``hypothesis write MODULE.FUNCTION`` gives for free.
  The file it prints is run unedited (``--hypothesis-seed=0``) and measured like Remora's
  tests (:mod:`._testrun`): the function's line and branch coverage, 0% when
  the file does not import or a test fails, with the reason.
* :func:`from_type_fixtures`: what ``st.builds(function)`` infers from the signature alone
  (``st.from_type`` of each annotated parameter; unannotated required ones stay unfilled).
  ``EXAMPLES`` argument sets are drawn and passed to the function, to see whether any is
  usable sample data: a call that raises no argument error (TypeError, AttributeError).

The package under test is only ever imported in child processes, with Hypothesis's files in
the evaluation's scratch directory. Nothing here raises: a tool that fails, or a missing
Hypothesis, is a field of the result.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from remora.evaluation.commands import CommandResult
from remora.evaluation.functions import FunctionRef
from remora.evaluation.package import Project
from remora.operations.characterize._testrun import FileRun, run_test_file

HYPOTHESIS_MISSING = "hypothesis is not installed: pip install 'remora[eval]'"
CLI_MISSING = "hypothesis's command line (click) is not installed: pip install 'remora[eval]'"
# ``hypothesis`` has no ``__main__``: this is its console script, on this interpreter.
HYPOTHESIS_CLI = "import sys; from hypothesis.extra.cli import main; sys.exit(main())"
WRITE_TIMEOUT_S = 120.0
DRAW_TIMEOUT_S = 120.0
DRAW_CHILD = Path(__file__).with_name("_draw_child.py")
EXAMPLES = 20


class GhostwriterResult(BaseModel):
    """``hypothesis write`` on one function: whether it wrote a file, and that file's runs.

    ``line_rate``/``branch_rate`` are what counts (0 when ``zero_reason`` is set)."""

    written: bool = False
    write_s: float = 0.0
    run: FileRun | None = None
    line_rate: float = 0.0
    branch_rate: float = 0.0
    zero_reason: str | None = None
    error: str | None = None


class FromTypeResult(BaseModel):
    """``st.builds`` on one function: ``draws`` argument sets (``strategy_ok`` when any
    could be drawn), ``calls_ok`` of them called without an argument error, ``returned``
    without any exception, ``raised`` by exception type, and ``unfilled`` the required
    parameters it never supplied."""

    strategy_ok: bool = False
    draws: int = 0
    calls_ok: int = 0
    returned: int = 0
    raised: dict[str, int] = Field(default_factory=dict)
    unfilled: list[str] = Field(default_factory=list)
    error: str | None = None
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        """At least one drawn example is usable sample data."""
        return self.calls_ok > 0


def missing_hypothesis(*, cli: bool = False) -> str | None:
    """Why the baselines cannot run in this environment (None when they can)."""
    if importlib.util.find_spec("hypothesis") is None:
        return HYPOTHESIS_MISSING
    if cli and importlib.util.find_spec("click") is None:
        return CLI_MISSING
    return None


def ghostwriter_coverage(
    project: Project, function: FunctionRef, scratch: Path, timeout: float
) -> GhostwriterResult:
    """Coverage of ``function`` by the unedited tests ``hypothesis write`` prints for it.

    The file, its junit reports and coverage data are kept in ``scratch`` (with an empty
    ``pytest.ini``, so the project's pytest settings stay out); ``timeout`` bounds its runs.
    """
    missing = missing_hypothesis(cli=True)
    if missing is not None:
        return GhostwriterResult(zero_reason="hypothesis not installed", error=missing)
    scratch.mkdir(parents=True, exist_ok=True)
    target = f"{project.module_name(function.path)}.{function.name}"
    written = project.run(
        [sys.executable, "-c", HYPOTHESIS_CLI, "write", target],
        WRITE_TIMEOUT_S,
        cwd=scratch,
        env=_env(scratch),
        what="hypothesis write",
    )
    write_s = round(written.wall_s, 2)
    if not written.ok or not written.stdout.strip():
        error = _failure(written) if not written.ok else "hypothesis write printed nothing"
        return GhostwriterResult(write_s=write_s, zero_reason="not written", error=error)
    test_file = scratch / f"test_ghostwritten_{function.name}.py"
    test_file.write_text(written.stdout, encoding="utf-8")
    (scratch / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    run = run_test_file(
        project,
        test_file,
        function,
        scratch / "runs",
        cwd=scratch,
        timeout=timeout,
        pytest_args=["--hypothesis-seed=0"],
    )
    return GhostwriterResult(
        written=True,
        write_s=write_s,
        run=run,
        line_rate=run.line_rate,
        branch_rate=run.branch_rate,
        zero_reason=run.zero_reason,
        error=run.error,
    )


def from_type_fixtures(
    project: Project, function: FunctionRef, scratch: Path, examples: int = EXAMPLES
) -> FromTypeResult:
    """Whether ``st.builds`` alone yields arguments ``function`` accepts, drawn and called
    in a child process (:mod:`._draw_child`) running in ``scratch``."""
    started = time.perf_counter()
    missing = missing_hypothesis()
    if missing is not None:
        return FromTypeResult(error=missing)
    scratch.mkdir(parents=True, exist_ok=True)
    module = project.module_name(function.path)
    result = project.run(
        [sys.executable, "-P", str(DRAW_CHILD), module, function.name, str(examples)],
        DRAW_TIMEOUT_S,
        cwd=scratch,
        env=_env(scratch),
        what="st.builds",
    )
    lines = result.stdout.strip().splitlines()
    try:
        found = FromTypeResult.model_validate_json(lines[-1]) if lines else None
    except ValidationError:
        found = None
    if found is None:
        found = FromTypeResult(error=_failure(result))
    found.wall_s = round(time.perf_counter() - started, 2)
    return found


def _env(scratch: Path) -> dict[str, str]:
    """Hypothesis's files in ``scratch``, wide pytest output."""
    return {"HYPOTHESIS_STORAGE_DIRECTORY": str(scratch / ".hypothesis"), "COLUMNS": "250"}


def _failure(result: CommandResult) -> str:
    if result.timed_out:
        return result.tail(1)
    lines = [line.strip() for line in (result.stderr or result.stdout).splitlines()]
    lines = [line for line in lines if line]
    return lines[-1][:300] if lines else f"exit {result.returncode}"
