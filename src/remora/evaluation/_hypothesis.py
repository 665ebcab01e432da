"""The deterministic Hypothesis baselines of the test and sample_data agents.

* :func:`ghostwriter_coverage`: what ``hypothesis write MODULE.FUNCTION`` gives for free.
  The file it prints is run unedited (``--hypothesis-seed=0``) and measured like Remora's
  tests (:mod:`remora.evaluation._testrun`): the function's line and branch coverage, 0% when
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

import functools
import importlib.util
import inspect
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from remora.evaluation._commands import CommandResult, run_command
from remora.evaluation._functions import FunctionRef
from remora.evaluation._package import Project
from remora.evaluation._testrun import FileRun, run_test_file

HYPOTHESIS_MISSING = "hypothesis is not installed: pip install 'remora[eval]'"
CLI_MISSING = "hypothesis's command line (click) is not installed: pip install 'remora[eval]'"
# ``hypothesis`` has no ``__main__``: this is its console script, on this interpreter.
HYPOTHESIS_CLI = "import sys; from hypothesis.extra.cli import main; sys.exit(main())"
WRITE_TIMEOUT_S = 120.0
DRAW_TIMEOUT_S = 120.0
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
    written = run_command(
        [sys.executable, "-c", HYPOTHESIS_CLI, "write", target],
        scratch,
        WRITE_TIMEOUT_S,
        env=_env(project, scratch),
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
    in a child process (:func:`_draw_and_call`) running in ``scratch``."""
    started = time.perf_counter()
    missing = missing_hypothesis()
    if missing is not None:
        return FromTypeResult(error=missing)
    scratch.mkdir(parents=True, exist_ok=True)
    module = project.module_name(function.path)
    try:
        program = _child_program()
    except OSError as exc:
        return FromTypeResult(error=f"cannot read the drawing program's source: {exc}")
    result = run_command(
        [sys.executable, "-c", program, module, function.name, str(examples)],
        scratch,
        DRAW_TIMEOUT_S,
        env=_env(project, scratch),
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


def _env(project: Project, scratch: Path) -> dict[str, str]:
    """The project's environment, Hypothesis's files in ``scratch``, wide pytest output."""
    storage = str(scratch / ".hypothesis")
    return project.env(HYPOTHESIS_STORAGE_DIRECTORY=storage, COLUMNS="250")


def _failure(result: CommandResult) -> str:
    if result.timed_out:
        return result.tail(1)
    lines = [line.strip() for line in (result.stderr or result.stdout).splitlines()]
    lines = [line for line in lines if line]
    return lines[-1][:300] if lines else f"exit {result.returncode}"


@functools.cache
def _child_program() -> str:
    """The child's ``-c`` program: :func:`_draw_and_call` from its own source, so the child
    imports Hypothesis and the package under test, and no module of Remora."""
    return "\n".join(
        [
            "from __future__ import annotations",
            "from typing import Any",
            inspect.getsource(_draw_and_call),
            inspect.getsource(_child_main),
            "_child_main()",
        ]
    )


def _child_main() -> None:
    """Run in the child: ``-c PROGRAM MODULE QUALNAME EXAMPLES``; the result as the last
    line of stdout (anything the package prints goes to stderr)."""
    import contextlib
    import json
    import resource
    import sys

    limit = 2 * 1024**3  # a drawn argument must not take the machine's memory
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    with contextlib.redirect_stdout(sys.stderr):
        result = _draw_and_call(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    print(json.dumps(result, default=str))


def _draw_and_call(module: str, qualname: str, examples: int) -> dict[str, Any]:
    """Draw ``examples`` argument sets as ``st.builds(function)`` would, then call the
    function with each (an iterator result consumed up to 100 items, lazy code being common).

    A stand-in with the function's signature and annotations records the draws, so drawing
    and calling are told apart. Self-contained: it runs from its source in a child.
    """
    import functools
    import importlib
    import inspect
    from collections import Counter
    from collections.abc import Iterator
    from itertools import islice

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    out: dict[str, Any] = {"strategy_ok": False, "draws": 0, "calls_ok": 0, "returned": 0}
    try:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        parameters = list(inspect.signature(target).parameters.values())
    except Exception as exc:
        error = f"cannot resolve {module}.{qualname}: {type(exc).__name__}: {exc}"
        return out | {"error": error[:300]}

    def record(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return args, kwargs

    drawn: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    @settings(
        max_examples=examples,
        database=None,
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
    )
    @given(st.builds(functools.update_wrapper(record, target)))
    def collect(arguments: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
        drawn.append(arguments)

    try:
        collect()
    except Exception as exc:
        return out | {"error": f"cannot draw: {type(exc).__name__}: {exc}"[:300]}
    raised: Counter[str] = Counter()
    for args, kwargs in drawn:
        try:
            result = target(*args, **kwargs)
            if isinstance(result, Iterator):
                list(islice(result, 100))
            out["returned"] += 1
        except Exception as exc:
            raised[type(exc).__name__] += 1
            if isinstance(exc, TypeError | AttributeError):
                continue
        out["calls_ok"] += 1
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    required = [p.name for p in parameters if p.default is p.empty and p.kind not in variadic]
    unfilled = [name for name in required if not any(name in kw for _, kw in drawn)]
    return out | {
        "strategy_ok": bool(drawn),
        "draws": len(drawn),
        "raised": dict(raised),
        "unfilled": unfilled,
        "error": None,
    }
