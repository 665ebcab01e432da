"""A pytest plugin that runs a test file against each mutant of one function.

Loaded with ``-p remora_mutants`` when ``REMORA_MUTANTS`` names a request (JSON: ``file``,
``qualname``, ``mutants`` to run, ``results`` to append to, ``test_timeout`` in seconds). It
replaces pytest's run loop: the collected tests run once as they are (the baseline: a test
failing there cannot kill anything), then once per mutant, with the code object of every live
function object of ``qualname`` swapped for the mutant's (:mod:`remora_mutator` compiles it),
and restored after. Collection and imports happen once, so a mutant costs only its tests'
time. A test that runs longer than ``test_timeout`` is stopped and counts as killing the
mutant (a mutant that loops forever is caught). One JSON line per mutant is appended as it
finishes, so a run that dies can resume after the last line.

Standard library and pytest only: this file is copied into the sandbox and imported by the
project's interpreter.
"""

from __future__ import annotations

import ast
import gc
import json
import os
import signal
import time
from collections.abc import Collection
from types import CodeType, FunctionType
from typing import Any

import pytest

_REQUEST = "REMORA_MUTANTS"


class MutantTimeout(BaseException):
    """Raised in a test that ran past its time; a BaseException so ``except Exception`` in the
    code under test does not swallow it."""


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: Any) -> bool | None:
    path = os.environ.get(_REQUEST)
    if not path:
        return None
    from remora_mutator import (  # type: ignore[import-not-found]  # copied beside this file
        MutatorError,
        function_code,
        mutated_code,
    )

    with open(path, encoding="utf-8") as handle:
        request = json.load(handle)
    items = list(session.items)
    timeout = float(request.get("test_timeout", 2.0))
    with open(request["results"], "a", encoding="utf-8") as results:

        def emit(record: dict[str, Any]) -> None:
            results.write(json.dumps(record) + "\n")
            results.flush()

        if session.testsfailed or not items:
            what = "could not be collected" if session.testsfailed else "were not found"
            emit({"error": f"the tests {what}"})
            return True
        failed, _ = _run_tests(items, timeout)
        source = _read(request["file"])
        tree = ast.parse(source)
        original = function_code(compile(tree, request["file"], "exec"), tree, request["qualname"])
        functions = _live_functions(request["file"], request["qualname"], original)
        emit({"baseline": {"tests": [i.name for i in items], "failed": sorted(failed)}})
        if not functions:
            emit({"error": f"no function object of {request['qualname']} was imported"})
            return True
        originals = [function.__code__ for function in functions]
        filename = originals[0].co_filename
        for index in request["mutants"]:
            try:
                code = mutated_code(source, filename, request["qualname"], index)
            except MutatorError as exc:
                emit({"id": index, "invalid": str(exc)})
                continue
            if any(len(code.co_freevars) != len(o.co_freevars) for o in originals):
                emit({"id": index, "invalid": "its free variables differ"})
                continue
            started = time.perf_counter()
            _swap(functions, [code] * len(functions))
            try:
                killed, timed_out = _run_tests(items, timeout, skip=failed)
            finally:
                _swap(functions, originals)
            emit(
                {
                    "id": index,
                    "killed_by": sorted(killed),
                    "timed_out": sorted(timed_out),
                    "seconds": round(time.perf_counter() - started, 3),
                }
            )
    return True


def _run_tests(
    items: list[Any],
    timeout: float,
    skip: Collection[str] = (),
) -> tuple[set[str], set[str]]:
    """Run each test once; the names of those that failed, and of those that timed out."""
    from _pytest.runner import runtestprotocol

    failed: set[str] = set()
    timed_out: set[str] = set()
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for item in items:
            if item.name in skip:
                continue
            signal.setitimer(signal.ITIMER_REAL, timeout, 0.05)
            try:
                reports = runtestprotocol(item, nextitem=None, log=False)
            except MutantTimeout:
                reports = []
                timed_out.add(item.name)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            if not reports or any(report.failed for report in reports):
                failed.add(item.name)
                if any("MutantTimeout" in str(report.longrepr) for report in reports):
                    timed_out.add(item.name)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return failed, timed_out


def _alarm(signum: int, frame: object) -> None:
    raise MutantTimeout("the test ran past its time under this mutant")


def _live_functions(file: str, qualname: str, original: CodeType) -> list[FunctionType]:
    """Every function object whose code is ``qualname``'s in ``file``, as imported (its name,
    qualified name where the interpreter records one, and first line)."""
    wanted = os.path.realpath(file)
    name = qualname.rsplit(".", 1)[-1]
    found = []
    for candidate in gc.get_objects():
        if type(candidate) is not FunctionType:
            continue
        code: CodeType = candidate.__code__
        if code.co_name != name or getattr(code, "co_qualname", qualname) != qualname:
            continue
        if code.co_firstlineno != original.co_firstlineno:
            continue
        if os.path.realpath(code.co_filename) == wanted:
            found.append(candidate)
    return found


def _swap(functions: list[FunctionType], codes: list[CodeType]) -> None:
    for index, function in enumerate(functions):
        function.__code__ = codes[index]


def _read(path: str) -> bytes:
    """The module's bytes: the parser reads its encoding declaration."""
    with open(path, "rb") as handle:
        return handle.read()
