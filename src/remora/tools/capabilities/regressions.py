"""Which of the project's tests an edit breaks: run them with the edit, then the failures
again without it.

Plain helpers for capabilities (not capabilities themselves): the lint agent undoes a fix
that breaks a test, the docstring agent an edit of an authors' docstring that a test reads
(``assert 'Returns None' in f.__doc__``).
"""

from __future__ import annotations

from typing import Any

from remora.tools.capabilities.project import module_tests
from remora.tools.capabilities.pytest_runner import pytest_run
from remora.tools.capabilities.registry import CapabilityContext
from remora.tools.capabilities.store_io import store_read


def tests_broken_by(
    ctx: CapabilityContext, relative: str, original: bytes, tests: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """The tests that import the module (``tests``, else found) and fail with the file as
    the store has it but pass with ``original``, and those that fail either way. The store
    keeps its content."""
    tests = module_tests(ctx, relative) if tests is None else tests
    if not tests:
        return [], []
    failing = failing_tests(pytest_run(ctx, tests))
    if not failing:
        return [], []
    edited = store_read(ctx, relative)
    ctx.store.write(relative, original)
    try:
        still = set(failing_tests(pytest_run(ctx, failing)))
    finally:
        ctx.store.write(relative, edited)
    return [nodeid for nodeid in failing if nodeid not in still], sorted(still)


def failing_tests(report: dict[str, Any]) -> list[str]:
    """The node ids of a ``pytest_run`` report's failed and erroring tests, and the files
    that could not be collected."""
    failed = [t["nodeid"] for t in report["tests"] if t["outcome"] in ("failed", "error")]
    return failed + [error["path"] for error in report["collection_errors"]]


def base_content(ctx: CapabilityContext, relative: str) -> bytes | None:
    """The project's own bytes of ``relative`` (what the job started from), if it has any."""
    original = ctx.store.root / relative
    try:
        return original.read_bytes() if original.is_file() else None
    except OSError:
        return None
