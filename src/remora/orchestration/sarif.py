"""A run as SARIF 2.1.0, for code scanning (GitHub, GitLab, IDE viewers).

:func:`sarif_log` turns a run manifest and the changes its workspaces hold into one SARIF
log (a plain dict, ready for ``json.dumps``); :func:`workspace_changes` reads those changes.

Results, in the manifest's job order:

* one per job that failed, was interrupted or left part of its work for the person
  (``partial``), and one per job that proposed a change: ``ruleId`` is the operation
  (``remora/docstring``), the level ``error`` for a job Remora could not do (an error was
  recorded), ``warning`` for work left to the person, ``note`` for a change that only
  waits for review; the job's change, where it has one, is the result's ``fixes``
  (one ``artifactChange`` per file, its ``replacements`` computed from the workspace's
  base and new content);
* one per lint issue left for a person (no tool may fix it): ``ruleId`` is the lint code
  (``B904``), the region where it is in the project's version of the file, ruff's
  documentation as the rule's ``helpUri``.

Lines and columns count from 1, columns in Unicode code points (``columnKind``); paths
are relative to the project root (``%SRCROOT%``).
"""

from __future__ import annotations

import difflib
import importlib.metadata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from remora import __version__
from remora.errors import RemoraError
from remora.orchestration.runs import JobRecord, RunManifest
from remora.workspace import WorkspaceManager

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SARIF_SCHEMA_PATH = Path(__file__).resolve().parents[1] / "data" / "sarif-schema-2.1.0.json"
"""The official schema (OASIS, errata 01), shipped so tests and users can validate offline."""
SRCROOT = "%SRCROOT%"
LEFT_STATUSES = frozenset({"failed", "interrupted", "partial", "left"})

_OPERATION_RULES = {
    "lint": "a lint job that failed, left fixable issues, or proposes fixes",
    "docstring": "a docstring job that failed, left part of a docstring for the person, "
    "or proposes a docstring",
    "test": "a test job that failed, left branches untested, or proposes tests",
    "sample_data": "a sample-data job that failed, left work for the person, or proposes data",
}


@dataclass(frozen=True)
class FileChange:
    """One file a workspace changed: ``before`` None for a new file, ``after`` None for a
    deleted one (text only; binary files have no textual fix)."""

    path: str
    before: str | None
    after: str | None


def workspace_changes(
    manager: WorkspaceManager, manifest: RunManifest
) -> dict[str, list[FileChange]]:
    """The text changes of every job of ``manifest`` that has a workspace with changes, by
    workspace id; a workspace that is gone (rejected, retried) or unreadable is left out."""
    found: dict[str, list[FileChange]] = {}
    for job in manifest.jobs:
        if job.workspace_id is None or not job.changed_files:
            continue
        try:
            with manager.open(job.workspace_id) as workspace:
                entries = workspace.entries()
        except RemoraError:
            continue
        changes = []
        for entry in entries:
            before, after = _text(entry.base_data), _text(entry.data)
            if (before is None and entry.base_data is not None) or (
                after is None and entry.data is not None
            ):
                continue  # binary or not UTF-8
            changes.append(FileChange(entry.path, before, after))
        found[job.workspace_id] = changes
    return found


def _text(data: bytes | None) -> str | None:
    if data is None or b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def sarif_log(
    manifest: RunManifest,
    changes: Mapping[str, Sequence[FileChange]] | None = None,
    *,
    information_uri: str | None = None,
) -> dict[str, Any]:
    """The SARIF 2.1.0 log of one run: results for what was left to the person, what
    failed and what Remora proposes, with fixes from ``changes`` (by workspace id)."""
    changes = changes or {}
    rules: dict[str, dict[str, Any]] = {}
    results: list[dict[str, Any]] = []
    for job in manifest.jobs:
        job_changes = list(changes.get(job.workspace_id or "", ()))
        job_result = _job_result(job, job_changes)
        if job_result is not None:
            rules.setdefault(job_result["ruleId"], _operation_rule(job.operation))
            results.append(job_result)
        for issue in _person_issues(job):
            result, rule = _issue_result(job, issue, job_changes)
            rules.setdefault(result["ruleId"], rule)
            results.append(result)
    driver: dict[str, Any] = {
        "name": "remora",
        "version": __version__,
        "semanticVersion": __version__,
        "rules": list(rules.values()),
    }
    uri = information_uri or _project_url()
    if uri:
        driver["informationUri"] = uri
    for result in results:
        result["ruleIndex"] = list(rules).index(result["ruleId"])
    root = Path(manifest.project_root)
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {"driver": driver},
                "invocations": [
                    {
                        "executionSuccessful": manifest.status == "completed",
                        "properties": {"runId": manifest.run_id, "status": manifest.status},
                    }
                ],
                "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri().rstrip("/") + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": results,
                "properties": {"runId": manifest.run_id, "operations": manifest.operations},
            }
        ],
    }


def _project_url() -> str | None:
    """The installed distribution's home page, where its metadata names one."""
    try:
        meta = importlib.metadata.metadata("remora")
    except importlib.metadata.PackageNotFoundError:
        return None
    for value in [*(meta.get_all("Home-page") or []), *(meta.get_all("Project-URL") or [])]:
        url = str(value or "").rpartition(", ")[2].strip()
        if url.startswith(("https://", "http://")):
            return url
    return None


def _operation_rule(operation: str) -> dict[str, Any]:
    said = _OPERATION_RULES.get(
        operation, f"a {operation} job that failed, left work for the person, or proposes a change"
    )
    return {
        "id": f"remora/{operation}",
        "name": f"remora-{operation}",
        "shortDescription": {"text": f"Remora's {operation} operation"},
        "fullDescription": {"text": said[0].upper() + said[1:] + "."},
        "help": {
            "text": "Review proposed changes with 'remora review'; 'remora explain CODE' "
            "says what an error code means."
        },
        "properties": {"category": "operation"},
    }


def _job_result(job: JobRecord, changes: list[FileChange]) -> dict[str, Any] | None:
    """The result of a job that failed, left work for the person or proposes a change."""
    proposes = bool(changes) and job.review == "pending"
    if job.status not in LEFT_STATUSES and not proposes:
        return None
    if job.status in ("failed", "interrupted"):
        level = "error" if job.error else "warning"
    elif job.status in ("partial", "left"):
        level = "warning"
    else:
        level = "note"
    said = job.error or job.summary or job.status
    name = job.qualname or job.node_id
    result: dict[str, Any] = {
        "ruleId": f"remora/{job.operation}",
        "level": level,
        "message": {"text": f"{job.operation} {name}: {said}"},
        "properties": {
            "operation": job.operation,
            "status": job.status,
            "review": job.review,
            "jobId": job.job_id,
            "nodeId": job.node_id,
            **({"workspaceId": job.workspace_id} if job.workspace_id else {}),
        },
    }
    if job.file_path:
        region = {"startLine": job.start_line} if job.start_line else None
        result["locations"] = [_location(job.file_path, region, name)]
    if changes:
        result["fixes"] = [
            {
                "description": {"text": job.summary or f"Remora's {job.operation} change"},
                "artifactChanges": [_artifact_change(change) for change in changes],
            }
        ]
    return result


def _person_issues(job: JobRecord) -> list[dict[str, Any]]:
    found = job.details.get("for_a_person")
    if not isinstance(found, list):
        return []
    return [
        issue
        for issue in found
        if isinstance(issue, dict)
        and isinstance(issue.get("code"), str)
        and isinstance(issue.get("line"), int)
    ]


def _issue_result(
    job: JobRecord, issue: Mapping[str, Any], changes: list[FileChange]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A lint issue left for a person, located in the project's version of the file (the
    job's lines are those of its own version, which may have lines added or removed)."""
    code = str(issue["code"])
    path = job.file_path or ""
    change = next((item for item in changes if item.path == path), None)
    line_map = _line_map(change)
    start = line_map(int(issue["line"]))
    end = line_map(int(issue.get("end_line") or issue["line"]))
    region: dict[str, Any] = {"startLine": start, "endLine": max(start, end)}
    column, end_column = issue.get("column"), issue.get("end_column")
    if isinstance(column, int) and column > 0:
        region["startColumn"] = column
        if isinstance(end_column, int) and end_column > 0 and (end > start or end_column >= column):
            region["endColumn"] = end_column
    message = str(issue.get("message") or code)
    note = str(issue.get("note") or "")
    result: dict[str, Any] = {
        "ruleId": code,
        "level": "warning",
        "message": {"text": f"{message} ({note})" if note else message},
        "locations": [_location(path, region, job.qualname)],
        "properties": {"operation": job.operation, "jobId": job.job_id, "leftFor": "person"},
    }
    url = issue.get("url")
    slug = str(url).rstrip("/").rpartition("/")[2] if isinstance(url, str) and url else ""
    rule: dict[str, Any] = {
        "id": code,
        "shortDescription": {"text": slug.replace("-", " ") if slug else code},
        "fullDescription": {
            "text": f"{code}: a lint issue no tool may fix; it is left for a person "
            f"('remora explain {code}' says why and what to do)."
        },
        "properties": {"category": "lint"},
    }
    if slug:
        rule["name"] = slug
        rule["helpUri"] = str(url)
    return result, rule


def _location(path: str, region: dict[str, Any] | None, name: str | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": path, "uriBaseId": SRCROOT}}
    if region:
        physical["region"] = region
    location: dict[str, Any] = {"physicalLocation": physical}
    if name:
        location["logicalLocations"] = [{"fullyQualifiedName": name}]
    return location


def _line_map(change: FileChange | None) -> Callable[[int], int]:
    """A function from a line of ``change.after`` to the same line of ``change.before``
    (a line the change added maps to where it was added); identity without a change."""
    if change is None or change.before is None or change.after is None:
        return lambda line: line
    before = change.before.splitlines(keepends=True)
    after = change.after.splitlines(keepends=True)
    blocks = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    last = max(1, len(before))

    def mapped(line: int) -> int:
        index = line - 1
        for tag, i1, _, j1, j2 in blocks:
            if j1 <= index < j2:
                return min(last, (i1 + index - j1 if tag == "equal" else i1) + 1)
        return min(last, max(1, line))

    return mapped


def _artifact_change(change: FileChange) -> dict[str, Any]:
    """The replacements that turn ``change.before`` into ``change.after``, by lines."""
    before = (change.before or "").splitlines(keepends=True)
    after = (change.after or "").splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    replacements = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start_line, start_column = _position(before, i1)
        end_line, end_column = _position(before, i2)
        replacement: dict[str, Any] = {
            "deletedRegion": {
                "startLine": start_line,
                "startColumn": start_column,
                "endLine": end_line,
                "endColumn": end_column,
            }
        }
        inserted = "".join(after[j1:j2])
        if inserted:
            replacement["insertedContent"] = {"text": inserted}
        replacements.append(replacement)
    return {
        "artifactLocation": {"uri": change.path, "uriBaseId": SRCROOT},
        "replacements": replacements,
    }


def _position(lines: list[str], index: int) -> tuple[int, int]:
    """Line and column where line ``index`` (0-based) of ``lines`` starts; the end of the
    text when ``index`` is past its last line."""
    if index < len(lines):
        return index + 1, 1
    if not lines:
        return 1, 1
    last = lines[-1]
    if last.endswith(("\n", "\r")):
        return len(lines) + 1, 1
    return len(lines), len(last) + 1
