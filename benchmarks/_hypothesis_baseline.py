"""Deterministic Hypothesis baselines of Remora's "test" and "sample_data" agents on toolz.

* :func:`ghostwriter_coverage`: what ``hypothesis write`` gives for free. Its tests are run
  unedited and judged, like the test agent's, on the line and branch coverage of the one
  function (``remora.tools.capabilities._coverage``).
* :func:`from_type_fixtures`: what ``st.builds`` infers from the signature alone. The drawn
  arguments are passed to the function to see whether they are usable sample data.

Both run the project's code in child processes (never in the benchmark process), with
Hypothesis's files in a temporary directory, and never raise: a failure is a field of the
result. By hand::

    python benchmarks/_hypothesis_baseline.py --module toolz.itertoolz --qualname take [...]
        [--project DIR] [--examples 20] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import inspect
import json
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from _toolz import (
    TOOLZ,
    CommandResult,
    ToolzUnavailable,
    fetch_sdist,
    project_env,
    run_command,
    save_raw,
)
from remora.tools.capabilities._coverage import file_entry, function_coverage, function_span

# ``hypothesis`` has no ``__main__``: this is its console script, on this interpreter.
HYPOTHESIS_CLI = "import sys; from hypothesis.extra.cli import main; sys.exit(main())"
CHILD_FLAG = "--child"
ARGUMENT_ERRORS = (TypeError, AttributeError)
ITEMS_CONSUMED = 100


def _env(project: Path, scratch: Path) -> dict[str, str]:
    """The project's environment, with Hypothesis's files in ``scratch``, wide pytest summaries."""
    storage = str(scratch / ".hypothesis")
    return project_env(project) | {"HYPOTHESIS_STORAGE_DIRECTORY": storage, "COLUMNS": "250"}


def _module_file(project: Path, module: str) -> Path:
    base = project.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _short(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def _pytest_error(stdout: str) -> str:
    """The first FAILED/ERROR line of pytest's short summary, else its last line."""
    lines = stdout.splitlines()
    found = next((line for line in lines if line.startswith(("FAILED ", "ERROR "))), None)
    return found[:300] if found else _short(stdout)


def _junit_counts(path: Path) -> tuple[dict[str, int], bool]:
    """Test counts of a pytest junit report, and whether a collection error is in it."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {"tests": 0, "passed": 0, "failed": 0, "skipped": 0}, False
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    attrs = suite.attrib if suite is not None else {}
    tests, skipped = int(attrs.get("tests", 0)), int(attrs.get("skipped", 0))
    failed = int(attrs.get("failures", 0)) + int(attrs.get("errors", 0))
    collection = any(e.get("message") == "collection failure" for e in root.iter("error"))
    counts = {"tests": tests, "passed": tests - failed - skipped, "failed": failed}
    return counts | {"skipped": skipped}, collection


def ghostwriter_coverage(
    project: Path, module: str, qualname: str, timeout: float = 300
) -> dict[str, Any]:
    """Coverage of ``module.qualname`` by the unedited tests of ``hypothesis write``.

    The rates count as 0 (``zero_reason`` says why) when nothing was written, the file does
    not import, no test ran or a test failed; ``measured_*`` keep what the run covered.
    """
    started = time.perf_counter()
    deadline = started + timeout
    out: dict[str, Any] = dict.fromkeys(("written", "importable"), False)
    out |= dict.fromkeys(("tests", "passed", "failed", "skipped"), 0)
    out |= dict.fromkeys(("line_rate", "branch_rate"), 0.0)
    out |= dict.fromkeys(("lines_total", "branches_total", "zero_reason", "error"))
    out |= dict.fromkeys(("measured_line_rate", "measured_branch_rate"))

    def left() -> float:
        return max(1.0, deadline - time.perf_counter())

    def finish(reason: str | None, error: str | None = None) -> dict[str, Any]:
        out["zero_reason"] = reason
        out["error"] = error
        if reason is not None:
            out["line_rate"] = out["branch_rate"] = 0.0
        out["seconds"] = round(time.perf_counter() - started, 2)
        return out

    def failure(result: CommandResult) -> str:
        return result.tail(1) if result.timed_out else _short(result.stderr or result.stdout)

    source_file = _module_file(project, module).resolve()
    try:
        span = function_span(source_file.read_text(encoding="utf-8"), qualname)
    except (OSError, ValueError) as exc:
        return finish("not found", str(exc))
    with tempfile.TemporaryDirectory(prefix="ghostwriter-") as temp:
        scratch = Path(temp)
        env = _env(project, scratch)
        argv = [sys.executable, "-c", HYPOTHESIS_CLI, "write", f"{module}.{qualname}"]
        written = run_command(argv, project, left(), env=env)
        if not written.ok or not written.stdout.strip():
            why = failure(written) if not written.ok else "hypothesis write printed nothing"
            return finish("not written", why)
        out["written"] = True
        test_file = scratch / f"test_ghostwritten_{qualname.replace('.', '_')}.py"
        test_file.write_text(written.stdout, encoding="utf-8")
        # An empty ini file next to the test keeps the project's pytest settings out.
        (scratch / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        data, junit = scratch / ".coverage", scratch / "junit.xml"
        coverage = [sys.executable, "-m", "coverage"]
        pytest = [*coverage, "run", "--branch", f"--data-file={data}", f"--include={source_file}"]
        pytest += ["-m", "pytest", "-p", "no:cacheprovider", "-q", "--hypothesis-seed=0"]
        tests = run_command([*pytest, f"--junitxml={junit}", str(test_file)], scratch, left(), env)
        counts, collection_error = _junit_counts(junit)
        out["importable"] = not (collection_error or tests.returncode == 2)
        if out["importable"]:
            out.update(counts)
        report = scratch / "cov.json"
        as_json = [*coverage, "json", f"--data-file={data}", "-o", str(report)]
        converted = run_command(as_json, scratch, left(), env)
        if converted.ok:
            entry = file_entry(json.loads(report.read_text(encoding="utf-8")), str(source_file))
            measured = function_coverage(entry, span)
            out["lines_total"] = measured.lines_total
            out["branches_total"] = measured.branches_total
            out["measured_line_rate"] = out["line_rate"] = measured.line_rate
            out["measured_branch_rate"] = out["branch_rate"] = measured.branch_rate
    why = _pytest_error(f"{tests.stdout}\n{tests.stderr}")
    if tests.timed_out:
        return finish("timed out", tests.tail(1))
    if not out["importable"]:
        return finish("not importable", why)
    if out["failed"]:
        return finish("tests failed", why)
    if not out["passed"]:
        return finish("no test passed", why)
    if not converted.ok:
        return finish("not measured", failure(converted))
    return finish(None)


def from_type_fixtures(
    project: Path, module: str, qualname: str, examples: int = 20, timeout: float = 120
) -> dict[str, Any]:
    """Whether ``st.builds`` alone yields arguments the function accepts (in a child process).

    ``strategy_ok``: arguments could be drawn at all; ``unfilled``: required parameters
    ``st.builds`` never supplied (it leaves out those without annotations, so the call gets
    a TypeError); ``calls_ok``: calls that raised no TypeError/AttributeError; ``returned``:
    calls that raised nothing; ``raised``: exceptions by type; ``ok``: ``calls_ok > 0``.
    """
    started = time.perf_counter()
    out: dict[str, Any] = {"strategy_ok": False, "draws": 0, "calls_ok": 0, "returned": 0}
    out |= {"raised": {}, "ok": False, "error": None}
    with tempfile.TemporaryDirectory(prefix="from-type-") as temp:
        argv = [sys.executable, __file__, CHILD_FLAG, module, qualname, str(examples)]
        result = run_command(argv, project, timeout, env=_env(project, Path(temp)))
    try:
        out |= json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        out["error"] = result.tail(1) if result.timed_out else _short(result.stderr)
    out["seconds"] = round(time.perf_counter() - started, 2)
    return out


def draw_and_call(module: str, qualname: str, examples: int) -> dict[str, Any]:
    """The child of :func:`from_type_fixtures`: draw ``examples`` argument sets as
    ``st.builds(func)`` would (a stand-in with the function's signature and annotations
    records them, so drawing and calling are told apart), then call the function with each
    (an iterator result is consumed up to ``ITEMS_CONSUMED`` items, toolz being lazy)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    out: dict[str, Any] = {"strategy_ok": False, "draws": 0, "calls_ok": 0, "returned": 0}
    try:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        parameters = inspect.signature(target).parameters.values()
    except Exception as exc:
        return out | {"error": f"cannot resolve: {type(exc).__name__}: {_short(str(exc))}"}

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
        return out | {"error": f"{type(exc).__name__}: {_short(str(exc))}"}
    raised: Counter[str] = Counter()
    for args, kwargs in drawn:
        try:
            result = target(*args, **kwargs)
            if isinstance(result, Iterator):
                list(islice(result, ITEMS_CONSUMED))
            out["returned"] += 1
        except Exception as exc:
            raised[type(exc).__name__] += 1
            if isinstance(exc, ARGUMENT_ERRORS):
                continue
        out["calls_ok"] += 1
    out |= {"strategy_ok": bool(drawn), "draws": len(drawn), "raised": dict(raised)}
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    required = [p.name for p in parameters if p.default is p.empty and p.kind not in variadic]
    out["unfilled"] = [name for name in required if not any(name in kw for _, kw in drawn)]
    return out | {"ok": out["calls_ok"] > 0, "error": None}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--module", required=True, help="e.g. toolz.itertoolz")
    parser.add_argument("--qualname", required=True, nargs="+", help="e.g. take")
    parser.add_argument("--project", type=Path, help="a toolz root (default: fetch the sdist)")
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None, help="save the raw numbers here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hypothesis-baseline-") as temp:
        try:
            project = args.project or fetch_sdist(Path(temp) / "sdist")
        except ToolzUnavailable as exc:
            print(f"cannot get {TOOLZ}: {exc}")
            return 1
        raw = {
            name: {
                "ghostwriter": ghostwriter_coverage(project, args.module, name),
                "from_type": from_type_fixtures(project, args.module, name, args.examples),
            }
            for name in args.qualname
        }
    print(json.dumps(raw, indent=2))
    save_raw(args.json, raw)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == [CHILD_FLAG]:
        with contextlib.redirect_stdout(sys.stderr):
            result = draw_and_call(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        print(json.dumps(result, default=str))
        sys.exit(0)
    sys.exit(main())
