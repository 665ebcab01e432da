"""The child side of ``call_function``: import a module by path, call one callable, report.

Run as ``python -P -s _call_child.py REQUEST RESULT`` with the workspace view as working
directory; it imports nothing from Remora (the view may contain any project, even Remora
itself). The request is JSON with ``file``, ``roots``, ``qualname``, ``args`` and
``kwargs``; the result, written to a file so the callee's own prints cannot corrupt it, is
one of ``{"returned": ...}``, ``{"raised": ...}`` or ``{"error": ...}`` (the callable could
not be resolved: nothing was called).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import itertools
import json
import os
import sys
import traceback
import types
from pathlib import Path
from typing import Any

REPR_LIMIT = 2000
MESSAGE_LIMIT = 1000
TRACEBACK_LIMIT = 2000
GENERATOR_ITEMS = 100


class ResolveError(Exception):
    """The qualname does not name something that can be called as a plain function."""


def type_name(value: object) -> str:
    kind = value if isinstance(value, type) else type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def safe_repr(value: object) -> str:
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<repr failed: {type_name(exc)}: {exc}>"
    return text if len(text) <= REPR_LIMIT else text[:REPR_LIMIT] + "..."


def exact_json(value: object) -> tuple[bool, Any]:
    """(True, value) when ``value`` survives a JSON round trip unchanged (tuples do not)."""
    try:
        encoded = json.dumps(value, allow_nan=False, sort_keys=True)
        decoded = json.loads(encoded)
        same = bool(decoded == value) and type(decoded) is type(value)
    except Exception:
        return False, None
    return (True, decoded) if same and len(encoded) <= REPR_LIMIT * 10 else (False, None)


def module_name(file: Path, roots: list[Path]) -> str | None:
    """The dotted name ``file`` has under the deepest of ``roots`` (``src/`` before the view)."""
    for root in sorted(roots, key=lambda path: len(path.parts), reverse=True):
        try:
            parts = list(file.relative_to(root).with_suffix("").parts)
        except ValueError:
            continue
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(part.isidentifier() for part in parts):
            return ".".join(parts)
    return None


def load_module(file: Path, roots: list[Path]) -> types.ModuleType:
    """Import ``file`` under its package name when it has one, so relative imports work."""
    name = module_name(file, roots)
    if name is not None:
        module = importlib.import_module(name)
        loaded = getattr(module, "__file__", None)
        if loaded and Path(loaded).resolve() == file.resolve():
            return module
    spec = importlib.util.spec_from_file_location("__remora_target__", file)
    if spec is None or spec.loader is None:
        raise ResolveError(f"cannot import {file.name} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(file.parent))
    spec.loader.exec_module(module)
    return module


def resolve(module: types.ModuleType, qualname: str) -> Any:
    """The callable at ``qualname``; instance methods and properties are refused."""
    target: Any = module
    walked: list[str] = []
    for part in qualname.split("."):
        owner = target
        if not hasattr(owner, part):
            where = ".".join(walked) or "the module"
            names = sorted(n for n in dir(owner) if not n.startswith("_"))[:20]
            if inspect.isfunction(owner):
                raise ResolveError(
                    f"'{part}' is local to function '{'.'.join(walked)}' and cannot be called"
                )
            raise ResolveError(f"{where} has no attribute '{part}'; it has: {', '.join(names)}")
        walked.append(part)
        if isinstance(owner, type):
            static = inspect.getattr_static(owner, part)
            if isinstance(static, property):
                raise ResolveError(f"'{qualname}' is a property, not a function")
            if inspect.isfunction(static):
                raise ResolveError(
                    f"'{qualname}' is an instance method and needs an instance of "
                    f"{owner.__name__}; only functions, classes, staticmethods and "
                    "classmethods can be called directly"
                )
        target = getattr(owner, part)
    if not callable(target):
        raise ResolveError(f"'{qualname}' is a {type_name(target)}, not a callable")
    return target


def describe_return(value: Any) -> dict[str, Any]:
    if inspect.isgenerator(value):
        items = list(itertools.islice(value, GENERATOR_ITEMS + 1))
        value, truncated, kind = items[:GENERATOR_ITEMS], len(items) > GENERATOR_ITEMS, "generator"
    else:
        truncated, kind = False, type_name(value)
    ok, encoded = exact_json(value)
    result: dict[str, Any] = {"repr": safe_repr(value), "type": kind}
    if ok:
        result["json"] = encoded
    if truncated:
        result["items_truncated"] = True
    return result


def describe_exception(exc: BaseException) -> dict[str, Any]:
    """Type, message and the traceback of the callee's frames only (not this helper's)."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename != __file__ and not frame.filename.startswith("<frozen importlib")
    ]
    text = "".join(["Traceback (most recent call last):\n"] if frames else []) + "".join(
        traceback.format_list(frames) + traceback.format_exception_only(exc)
    )
    return {
        "type": type_name(exc),
        "message": str(exc)[:MESSAGE_LIMIT],
        "traceback": text[-TRACEBACK_LIMIT:],
    }


def run(request: dict[str, Any]) -> dict[str, Any]:
    file = Path(request["file"])
    roots = [Path(root) for root in request["roots"]]
    try:
        module = load_module(file, roots)
    except ResolveError as exc:
        return {"error": {"stage": "import", "message": str(exc)}}
    except BaseException as exc:
        return {"raised": describe_exception(exc), "stage": "import"}
    try:
        target = resolve(module, request["qualname"])
    except ResolveError as exc:
        return {"error": {"stage": "resolve", "message": str(exc)}}
    try:
        value = target(*request["args"], **request["kwargs"])
        if inspect.iscoroutine(value):
            value = asyncio.run(value)
        return {"returned": describe_return(value), "stage": "call"}
    except BaseException as exc:
        return {"raised": describe_exception(exc), "stage": "call"}


def main(argv: list[str]) -> int:
    request_path, result_path = Path(argv[1]), Path(argv[2])
    request = json.loads(request_path.read_text(encoding="utf-8"))
    caller = os.getpid()
    result = run(request)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.getpid() != caller:
        os._exit(0)  # a process the callee forked returned here: only the caller reports
    Path(result_path).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
