"""``pytest_run``: run the real pytest on the workspace and report per-test outcomes.

pytest runs in a :func:`~remora.tools.isolation.project_sandbox` over the workspace (so the
job's edits are what gets tested, and what the tests write or delete is discarded with the
sandbox, never a workspace change), with a scrubbed environment, no cache provider, no
bytecode, rlimits and a hard timeout. Outcomes come from the JUnit XML report written to
the sandbox's exchange directory; collection errors are reported per file and do not stop
other files.

Codes: TOOL_101 a path to test does not exist, TOOL_104 an unusable timeout, TOOL_201 pytest
timed out, TOOL_401 pytest could not run (usage or internal error, or no report written).
"""

from __future__ import annotations

import posixpath
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

from remora.errors import ToolError
from remora.tools.capabilities.registry import CapabilityContext, capability
from remora.tools.capabilities.store_io import checked_path, is_dir, not_found
from remora.tools.capabilities.values import as_float
from remora.tools.isolation import project_sandbox
from remora.tools.process import import_roots

MAX_TESTS = 200
_MESSAGE_LIMIT = 500
_DETAIL_LINES = 15
_DETAIL_LIMIT = 1500
_OUTCOMES = ("passed", "failed", "error", "skipped")


@capability
def pytest_run(
    ctx: CapabilityContext, paths: list[str] | str, timeout: float | None = None
) -> dict[str, Any]:
    """Run pytest on test files, directories or node ids and return each test's outcome.

    An empty list runs what the project's own configuration (``testpaths``) selects. Each test
    has nodeid, outcome (passed, failed, error, skipped), message and duration; ``totals``
    counts them and ``collection_errors`` lists files that could not be imported.
    """
    targets, writable = _targets(ctx, paths)
    limit = ctx.time_left(ctx.config.subprocess_timeout)
    seconds = limit if timeout is None else min(as_float(timeout, "timeout"), limit)
    with project_sandbox(ctx.store, ctx.config, writable=writable, harvest=False) as box:
        report = box.exchange / "report.xml"
        argv = box.module_argv(
            "pytest",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            "-o",
            "junit_family=xunit1",
            "-o",
            "junit_logging=no",
            f"--rootdir={box.root}",
            "--continue-on-collection-errors",
            "--no-header",
            "-q",
            *(_in_view(box.root, target) for target in targets),
        )
        result = box.run(argv, pythonpath=import_roots(box.root), timeout=seconds, what="pytest")
        xml_text = report.read_text(encoding="utf-8") if report.is_file() else None
    output_tail = "\n".join(result.stdout.strip().splitlines()[-20:])
    if result.returncode in (3, 4) or xml_text is None:
        detail = (result.stderr.strip() or output_tail).splitlines()[-3:]
        raise ToolError(
            "TOOL_401",
            f"pytest could not run (exit code {result.returncode}): {' | '.join(detail)}",
            "check the paths and the project's pytest configuration",
        )
    tests, collection_errors = parse_junit(xml_text)
    totals = {outcome: 0 for outcome in _OUTCOMES}
    for test in tests:
        totals[test["outcome"]] += 1
    totals["total"] = len(tests)
    return {
        "exit_code": result.returncode,
        "ok": result.returncode == 0,
        "totals": totals,
        "tests": tests[:MAX_TESTS],
        "tests_truncated": len(tests) > MAX_TESTS,
        "collection_errors": collection_errors,
        "duration": round(result.duration, 3),
        "output_tail": output_tail if not tests else "",
    }


def _targets(ctx: CapabilityContext, paths: list[str] | str) -> tuple[list[str], list[str]]:
    """Checked ``path[::test]`` targets, which must exist in the workspace, and the
    directories they live in (tests may write next to themselves)."""
    items = [paths] if isinstance(paths, str) else list(paths)
    targets: list[str] = []
    directories: list[str] = []
    for item in items:
        file_part, sep, rest = str(item).partition("::")
        relative = checked_path(ctx, file_part, allow_root=True)
        directory = is_dir(ctx, relative)
        if not directory and not ctx.store.exists(relative):
            raise not_found(ctx, relative, "test path")
        targets.append(relative + sep + rest)
        parent = relative if directory else posixpath.dirname(relative)
        if parent:
            directories.append(parent)
    return targets, directories


def _in_view(view: Path, target: str) -> str:
    """An absolute target inside the view, so no path can be read as a pytest option."""
    file_part, sep, rest = target.partition("::")
    return str(view / file_part if file_part else view) + sep + rest


def parse_junit(xml_text: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(tests, collection errors) from a pytest JUnit report in the xunit1 family."""
    try:
        root = ElementTree.fromstring(xml_text)
    except ElementTree.ParseError as exc:
        raise ToolError(
            "TOOL_401", f"pytest wrote an unreadable report: {exc}", "run the tests again"
        ) from None
    tests: list[dict[str, Any]] = []
    collection_errors: list[dict[str, Any]] = []
    for case in root.iter("testcase"):
        classname = case.get("classname", "")
        name = case.get("name", "")
        file = case.get("file", "")
        problem = next(
            (child for child in case if child.tag in ("failure", "error", "skipped")), None
        )
        if not classname and problem is not None and problem.tag == "error":
            collection_errors.append(
                {
                    "path": file or name.replace(".", "/") + ".py",
                    "message": _error_lines(problem.text or "") or problem.get("message", ""),
                }
            )
            continue
        outcome, message, details = "passed", None, None
        if problem is not None:
            outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[problem.tag]
            message = problem.get("message") or None
            if problem.get("type") == "pytest.xfail":
                message = "expected failure (xfail)" + (f": {message}" if message else "")
            if outcome != "skipped":
                message = message or _error_lines(problem.text or "")
                details = _details(problem.text or "")
        tests.append(
            {
                "nodeid": _nodeid(file, classname, name),
                "outcome": outcome,
                "message": message[:_MESSAGE_LIMIT] if message else None,
                "details": details,
                "duration": _seconds(case.get("time")),
            }
        )
    return tests, collection_errors


def _nodeid(file: str, classname: str, name: str) -> str:
    """``file::Class::test`` rebuilt from the file attribute and the dotted classname."""
    parts = classname.split(".") if classname else []
    if file:
        stem = posixpath.splitext(posixpath.basename(file))[0]
        module = posixpath.splitext(file)[0].replace("/", ".")
        if classname == module or classname.startswith(module + "."):
            classes = classname[len(module) + 1 :].split(".") if classname != module else []
        elif stem in parts:
            classes = parts[len(parts) - parts[::-1].index(stem) :]
        else:
            classes = []
        return "::".join([file, *[c for c in classes if c], name])
    return "::".join([*parts, name])


def _error_lines(text: str) -> str:
    """The ``E   ...`` lines pytest uses for the essence of an error."""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    return " ".join(lines)[:_MESSAGE_LIMIT]


def _details(text: str) -> str | None:
    lines = text.strip().splitlines()[-_DETAIL_LINES:]
    joined = "\n".join(lines)
    return joined[-_DETAIL_LIMIT:] if joined else None


def _seconds(value: str | None) -> float:
    try:
        return round(float(value or 0.0), 3)
    except ValueError:
        return 0.0
