"""The child side of ``call_function`` and ``observe_cases``: import a module by path, call.

Run as ``python -P -s _call_child.py REQUEST RESULT`` with the workspace view as working
directory; it imports nothing from Remora (the view may contain any project, even Remora
itself). Results go to a file so the callee's own prints cannot corrupt them.

- A *call* request is JSON with ``file``, ``roots``, ``qualname``, ``args`` and ``kwargs``;
  the result is one of ``{"returned": ...}``, ``{"raised": ...}`` or ``{"error": ...}`` (the
  callable could not be resolved: nothing was called).
- An *observe* request (``"mode": "observe"``) carries ``cases`` whose arguments are Python
  source. Each case is evaluated and called in turn, in a fresh working directory, with a
  time limit, its stdout captured and the lines of the function it ran traced; one JSON line
  per case is appended to the result file as soon as the case ends, so a case that kills the
  process loses only itself. What it returned is consumed into data (:func:`materialize`);
  a returned callable is called on the request's ``call_args``; a method's receiver is read
  before and after (:func:`receiver_state`); a case that drew random numbers is rerun
  (:func:`observe_with_reruns`).
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import contextlib
import hashlib
import hmac
import importlib
import importlib.util
import inspect
import io
import itertools
import json
import os
import random
import re
import shutil
import signal
import sys
import time
import traceback
import types
from collections.abc import Iterable, Iterator, Mapping, Sized
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


class CaseTimeout(BaseException):
    """A case ran past its time limit (a BaseException, so ``except Exception`` in the
    callee does not swallow it)."""


HELPER_MODULES = (
    "operator",
    "itertools",
    "functools",
    "math",
    "datetime",
    "decimal",
    "fractions",
    "collections",
)
STDOUT_LIMIT = 2000
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def namespace(module: types.ModuleType) -> dict[str, Any]:
    """What case source is evaluated in: the module's names over builtins, plus the helper
    modules, exactly as a generated test imports them."""
    names: dict[str, Any] = {"__builtins__": builtins}
    for helper in HELPER_MODULES:
        names[helper] = importlib.import_module(helper)
    names.update({k: v for k, v in vars(module).items() if not k.startswith("_")})
    return names


def literal(value: Any, names: dict[str, Any]) -> str | None:
    """``repr(value)`` when evaluating it gives back an equal value of the same type."""
    text = safe_repr(value)
    if len(text) > REPR_LIMIT:
        return None
    try:
        back = eval(text, dict(names))
        same = type(back) is type(value) and bool(back == value)
    except BaseException:
        return None
    return text if same else None


def canonical(value: Any) -> str:
    """A repr that does not depend on hash seeds or addresses: how two runs are compared."""
    if isinstance(value, set | frozenset):
        return "{" + ", ".join(sorted(canonical(v) for v in value)) + "}"
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(sorted(f"{canonical(k)}: {canonical(v)}" for k, v in value.items()))
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ", ".join(canonical(v) for v in value) + "]"
    return _ADDRESS.sub("", safe_repr(value))


def assertable_type(kind: type, module: types.ModuleType) -> str:
    """The nearest class a test can name: a builtin, or a class the module defines or
    imports (``ParserError`` re-exported from a private module) by that name."""
    for base in kind.__mro__:
        if base.__module__ == "builtins":
            return str(base.__qualname__)
        if getattr(module, base.__name__, None) is base:
            return str(base.__name__)
    return "Exception"


def observe_value(value: Any, names: dict[str, Any], items_limit: int) -> dict[str, Any]:
    """:func:`observe_data`'s description of ``value``."""
    return observe_data(value, names, items_limit)[0]


def observe_data(value: Any, names: dict[str, Any], items_limit: int) -> tuple[dict[str, Any], Any]:
    """What a returned value looks like to a test. Iterators, views and containers of them
    are consumed (see :func:`materialize`) into plain data; ``shape`` tells the host how its
    test consumes the result the same way, ``literal`` is the data's source when it evaluates
    back to an equal value, and ``no_literal`` says why not when it does not."""
    top_iterator = isinstance(value, Iterator) and not isinstance(value, str | bytes)
    data, shape, truncated = materialize(value, items_limit)
    kind = "iterator" if top_iterator else "value"
    ok, encoded = exact_json(data)
    text = literal(data, names)
    result: dict[str, Any] = {
        "kind": kind,
        "type": type_name(data if shape != "v" else value),
        "repr": safe_repr(data),
        "literal": text,
        "canonical": canonical(data),
        "items_truncated": truncated,
        "shape": shape,
    }
    if text is None:
        result["no_literal"] = why_no_literal(data)
        if shape == "v" and not callable(data) and not isinstance(data, type):
            seen = receiver_state(data, names)
            attributes = [
                {"what": what, **entry} for what, entry in sorted(seen.items()) if what != "repr"
            ]
            if attributes:
                result["attributes"] = attributes[:STATE_ITEMS]
    if ok:
        result["json"] = encoded
    return result, data


def why_no_literal(value: Any) -> str:
    """Why a value has no literal a test can compare with, as a code the host words."""
    if callable(value):
        return "callable"
    text = safe_repr(value)
    if len(text) > REPR_LIMIT:
        return "too_long"
    if _ADDRESS.search(text):
        return "address"
    return "no_eval"


SHOWN_ITEMS = 10
"""Items a test pins of an iterator that had more than the host's limit."""
_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))


def _consumable(value: Any) -> bool:
    """Iterators, dict views and deques: a test must consume them to see what they hold
    (a deque's repr needs a name the test may not have)."""
    if isinstance(value, str | bytes | bytearray):
        return False
    return isinstance(value, (Iterator, *_VIEWS, collections.deque))


def materialize(value: Any, limit: int, depth: int = 0) -> tuple[Any, Any, bool]:
    """``value`` as plain data, the *shape* of the consumption, and whether an iterator
    was cut at ``limit`` items.

    Shapes, as the host renders them into a test: ``"v"`` the value itself;
    ``{"k": "it", "n": bound or None, "e": element shape}`` an iterator or view, consumed
    into a list (at most ``n`` items when it had more); ``{"k": "seq", "e": shape}`` a list or
    tuple whose items are consumed alike, as a list; ``{"k": "tup", "e": [shapes]}`` a tuple
    whose positions are consumed each its own way; ``{"k": "map", "e": shape}`` a dict whose
    values are; ``{"k": "dict", "e": shape}`` a dict of ``collections`` (``defaultdict``),
    compared as a plain dict. Each item is consumed before the next is drawn, as a test's
    comprehension does (the groups of ``groupby`` are gone once it moves on). Items that
    would need different shapes leave the value as it is."""
    if depth > 4:
        return value, "v", False
    if _consumable(value):
        items: list[Any] = []
        shapes: list[Any] = []
        cut_here = inner_cut = False
        iterator = iter(value)
        while True:
            try:
                item = next(iterator)
            except StopIteration:
                break
            if len(items) == limit:
                cut_here = True
                break
            data, shape, cut = materialize(item, limit, depth + 1)
            items.append(data)
            shapes.append(shape)
            inner_cut |= cut
        if cut_here:
            # an endless (or very long) iterator: a test pins its first items only
            del items[SHOWN_ITEMS:], shapes[SHOWN_ITEMS:]
        element = _uniform(shapes)
        if element is None:
            return items, "v", cut_here or inner_cut
        shape = {"k": "it", "n": len(items) if cut_here else None, "e": element}
        return items, shape, cut_here or inner_cut
    if isinstance(value, list | tuple) and type(value) in (list, tuple):
        parts = [materialize(item, limit, depth + 1) for item in value]
        shapes = [shape for _, shape, _ in parts]
        if all(shape == "v" for shape in shapes):
            return value, "v", False
        cut = any(truncated for _, _, truncated in parts)
        element = _uniform(shapes)
        if element is not None and (type(value) is list or len(value) > 4):
            return [data for data, _, _ in parts], {"k": "seq", "e": element}, cut
        if type(value) is tuple and len(value) <= 4:
            return tuple(data for data, _, _ in parts), {"k": "tup", "e": shapes}, cut
        return value, "v", False
    if isinstance(value, dict) and type(value).__module__ == "collections":
        # defaultdict, OrderedDict, Counter: their reprs need names a test may not have;
        # compared as the dict they hold
        entries = {key: materialize(item, limit, depth + 1) for key, item in value.items()}
        element = _uniform([shape for _, shape, _ in entries.values()])
        if element is None:
            return value, "v", False
        cut = any(truncated for _, _, truncated in entries.values())
        consumed = {key: entry[0] for key, entry in entries.items()}
        return consumed, {"k": "dict", "e": element}, cut
    if type(value) is dict:
        entries = {key: materialize(item, limit, depth + 1) for key, item in value.items()}
        element = _uniform([shape for _, shape, _ in entries.values()])
        if element is None or element == "v":
            return value, "v", False
        cut = any(truncated for _, _, truncated in entries.values())
        consumed = {key: entry[0] for key, entry in entries.items()}
        return consumed, {"k": "map", "e": element}, cut
    return value, "v", False


def _uniform(shapes: list[Any]) -> Any:
    """The one shape all items share ("v" for none), or None when they differ."""
    if not shapes:
        return "v"
    first = shapes[0]
    return first if all(shape == first for shape in shapes[1:]) else None


RETURNED_CALLS = 3


def call_returned(
    value: Any, names: dict[str, Any], arguments: list[str], limit: int, depth: int = 0
) -> list[dict[str, Any]]:
    """A returned callable (a decorator's wrapper, ``compose``'s function) called on the
    host's argument lists: up to :data:`RETURNED_CALLS` calls that returned different
    results, or one that raised when none returned. A call that does not fit the callable
    (TypeError, AttributeError) is not kept. A call that returns a callable in turn (a
    decorator factory's decorator, given a function) has its own ``calls``, one level
    down; when some calls pin a value, those that pin none are left out."""
    kept: list[dict[str, Any]] = []
    raised: dict[str, Any] | None = None
    seen: set[str] = set()
    for text in arguments:
        if len(kept) >= RETURNED_CALLS:
            break
        try:
            args, kwargs = eval(f"(lambda *a, **k: (a, k))({text})", dict(names))
        except BaseException:
            continue
        try:
            result = value(*args, **kwargs)
            if inspect.iscoroutine(result):
                result.close()
                continue
            observed = observe_value(result, names, limit)
            if depth == 0 and callable(result) and not isinstance(result, type):
                inner = call_returned(result, names, arguments, limit, depth + 1)
                if inner:
                    observed["calls"] = inner
        except CaseTimeout:
            raise
        except (TypeError, AttributeError):
            continue
        except Exception as exc:
            if raised is None:
                raised = {
                    "args": text,
                    "raised": type_name(exc),
                    "assert_type": assertable_type(type(exc), inspect.getmodule(value) or sys),
                }
            continue
        key = json.dumps([observed["canonical"], outcome({"returned": observed})], default=str)
        if key in seen or ("calls" in observed and any("calls" in each for each in kept)):
            # one decorated function says what a decorator does; another (of a value that
            # is not a function) shows only what the first left in a shared cache
            continue
        seen.add(key)
        kept.append({"args": text, **observed})
    pinning = [call for call in kept if _pins(call)]
    return pinning or kept or ([raised] if raised else [])


def _pins(call: dict[str, Any]) -> bool:
    """Whether a call's check says more than its type."""
    return call.get("literal") is not None or any(_pins(inner) for inner in call.get("calls", []))


STATE_ITEMS = 20


def receiver_state(receiver: Any, names: dict[str, Any]) -> dict[str, dict[str, str]]:
    """What a test can see of an instance: its public attributes that have a literal (an
    iterator attribute is not consumed), its ``len``, its items when it is a container, and
    its ``repr`` when that has no address; each as ``{"literal", "canonical"}``."""
    state: dict[str, dict[str, str]] = {}
    attributes = getattr(receiver, "__dict__", None)
    if isinstance(attributes, dict):
        for name, value in list(attributes.items())[:STATE_ITEMS]:
            if name.startswith("_") or not name.isidentifier() or callable(value):
                continue
            if _consumable(value):
                continue
            text = literal(value, names)
            if text is not None:
                state[f"attr:{name}"] = {"literal": text, "canonical": canonical(value)}
    try:
        if isinstance(receiver, Sized):
            state["len"] = {"literal": str(len(receiver)), "canonical": str(len(receiver))}
        if isinstance(receiver, Iterable) and not isinstance(receiver, Iterator | Mapping):
            items = list(itertools.islice(iter(receiver), STATE_ITEMS + 1))
            text = literal(items, names) if len(items) <= STATE_ITEMS else None
            if text is not None:
                state["items"] = {"literal": text, "canonical": canonical(items)}
    except Exception:
        pass
    shown = safe_repr(receiver)
    if not _ADDRESS.search(shown) and len(shown) <= 200:
        state["repr"] = {"literal": repr(shown), "canonical": shown}
    return state


def state_change(
    before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]
) -> list[dict[str, str]]:
    """The entries of the receiver's state the call changed (or added), in a fixed order;
    the repr only when nothing more specific changed."""
    changed = [
        {"what": key, "literal": entry["literal"], "canonical": entry["canonical"]}
        for key, entry in sorted(after.items())
        if key != "repr" and before.get(key, {}).get("canonical") != entry["canonical"]
    ]
    shown = after.get("repr")
    if not changed and shown and before.get("repr", {}).get("canonical") != shown["canonical"]:
        changed.append({"what": "repr", **shown})
    return changed


def copy_named_files(pairs: list[list[str]], workdir: Path) -> dict[str, str]:
    """Copy each project file a case names (``[source, relative path]``) into the case's
    working directory at that relative path, so that the case finds it where its test, run
    from the project's root, does; a copy, never a link the case could write through. The
    directory's state after copying (see :func:`_tree_state`): a call that changes it wrote
    files (a copy it changed too: its test, run from the project's root, must not)."""
    for source, relative in pairs:
        parts = Path(relative).parts
        if Path(relative).is_absolute() or ".." in parts or not parts:
            continue
        destination = workdir.joinpath(*parts)
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
        except OSError:
            continue
    return _tree_state(workdir)


_DIGEST_LIMIT = 1 << 20
"""Files up to this size are compared by content, larger ones by size."""


def _tree_state(directory: Path) -> dict[str, str]:
    """Every path under ``directory`` with a digest of each file's bytes ("" for a
    directory or what cannot be read)."""
    state: dict[str, str] = {}
    for path in sorted(directory.rglob("*")):
        digest = ""
        if path.is_file() and not path.is_symlink():
            try:
                size = path.stat().st_size
                digest = (
                    hashlib.sha256(path.read_bytes()).hexdigest()
                    if size <= _DIGEST_LIMIT
                    else f"size:{size}"
                )
            except OSError:
                digest = "?"
        state[str(path.relative_to(directory))] = digest
    return state


def observe_case(
    case: dict[str, Any],
    target: Any,
    module: types.ModuleType,
    names: dict[str, Any],
    request: dict[str, Any],
    again: int = 0,
) -> tuple[dict[str, Any], Any]:
    """Evaluate one case's arguments, call, and record what happened; with the returned
    value as data (consumed), for comparing runs. ``again`` numbers a rerun (its own working
    directory)."""
    stage = "arguments"
    record: dict[str, Any] = {"id": case["id"]}
    data: Any = None
    arcs: set[tuple[int, int]] = set()
    tracer = make_tracer(request["file"], request["span"], arcs)
    workdir = Path(request["cwd"]) / (f"case-{case['id']}" + (f"-again-{again}" if again else ""))
    workdir.mkdir(parents=True, exist_ok=True)
    copied = copy_named_files(case.get("copy") or [], workdir)
    os.chdir(workdir)
    stdout = io.StringIO()
    outside: list[str] = []
    limit = request["items_limit"]
    started = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, float(request["case_timeout"]))
    try:
        with contextlib.redirect_stdout(stdout), WATCH.watching(workdir) as outside:
            scope = dict(names)
            args = [eval(text, scope) for text in case["args"]]
            kwargs = {key: eval(text, scope) for key, text in case["kwargs"]}
            call = target
            receiver: Any = None
            before: dict[str, dict[str, str]] = {}
            if case.get("receiver"):
                stage = "receiver"
                receiver = eval(case["receiver"], scope)
                before = receiver_state(receiver, names)
                call = getattr(receiver, request["qualname"].split(".")[-1])
            stage = "call"
            RANDOM.start()
            sys.settrace(tracer)
            try:
                value = call(*args, **kwargs)
                if inspect.iscoroutine(value):
                    value = asyncio.run(value)
                stage = "iterate" if isinstance(value, Iterator) else stage
                returned, data = observe_data(value, names, limit)
                if callable(value) and not isinstance(value, type) and request.get("call_args"):
                    calls = call_returned(value, names, request["call_args"], limit)
                    if calls:
                        returned["calls"] = calls
                record["returned"] = returned
                if receiver is not None:
                    record["state"] = state_change(before, receiver_state(receiver, names))
            finally:
                sys.settrace(None)
                record["drew_random"] = RANDOM.stop()
    except CaseTimeout:
        record["timed_out"] = True
    except BaseException as exc:
        raised = describe_exception(exc)
        raised["assert_type"] = assertable_type(type(exc), module)
        raised["canonical"] = _ADDRESS.sub("", f"{raised['type']}: {raised['message']}")
        raised["at_boundary"] = not any(
            frame.filename == request["file"] for frame in traceback.extract_tb(exc.__traceback__)
        )
        record["raised"] = raised
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.settrace(None)
    record["stage"] = stage
    record["seconds"] = round(time.perf_counter() - started, 4)
    record["stdout"] = stdout.getvalue()[:STDOUT_LIMIT]
    record["stdout_truncated"] = len(stdout.getvalue()) > STDOUT_LIMIT
    record["arcs"] = sorted(arcs)
    record["wrote_files"] = _tree_state(workdir) != copied
    if outside:
        record["wrote_outside"] = list(outside)
    return record, data


RERUNS = 8
"""In-process reruns of a case that drew random numbers, each seeded from the system: a
result with two equally likely outcomes shows one in all 18 runs of the two processes once
in about 130,000 times."""
RERUN_SECONDS = 0.25


def observe_with_reruns(
    case: dict[str, Any],
    target: Any,
    module: types.ModuleType,
    names: dict[str, Any],
    request: dict[str, Any],
) -> dict[str, Any]:
    """:func:`observe_case`, and when the case drew random numbers, :data:`RERUNS` reruns
    with other seeds; a result that varies gets ``varies``: what held in every run."""
    record, data = observe_case(case, target, module, names, request)
    if not record.pop("drew_random", False) or record.get("timed_out"):
        return record
    if record["seconds"] > RERUN_SECONDS or record.get("stage") not in ("call", "iterate"):
        return record
    runs = [(record, data)]
    for again in range(1, RERUNS + 1):
        random.seed(int.from_bytes(os.urandom(8), "big"))
        rerun, rerun_data = observe_case(case, target, module, names, request, again)
        rerun.pop("drew_random", None)
        if rerun.get("timed_out"):
            record["varies"] = {"runs": again + 1}
            return record
        runs.append((rerun, rerun_data))
    if len({outcome(run) for run, _ in runs}) > 1:
        record["varies"] = invariants(runs, names)
    return record


def outcome(record: dict[str, Any]) -> tuple[Any, ...]:
    """What two runs of a case must agree on to be the same behaviour."""
    returned, raised = record.get("returned") or {}, record.get("raised") or {}
    state = [entry["canonical"] for entry in record.get("state", [])]
    calls = [call.get("canonical") or call.get("raised") for call in returned.get("calls", [])]
    attributes = [entry["canonical"] for entry in returned.get("attributes", [])]
    return (
        *attributes,
        returned.get("canonical"),
        raised.get("canonical"),
        record.get("stdout"),
        *state,
        *calls,
    )


def invariants(runs: list[tuple[dict[str, Any], Any]], names: dict[str, Any]) -> dict[str, Any]:
    """What held in every run of a case whose result varies: the exception class it always
    raised, or the result's type, length and sorted items (each when equal in every run)."""
    found: dict[str, Any] = {"runs": len(runs)}
    raised = [record.get("raised") for record, _ in runs]
    if any(raised):
        types = {item["assert_type"] for item in raised if item}
        if all(raised) and len(types) == 1:
            found["raised"] = types.pop()
        return found
    shapes = {json.dumps(record["returned"].get("shape")) for record, _ in runs}
    types = {record["returned"]["type"] for record, _ in runs}
    if len(shapes) > 1:
        return found
    if len(types) == 1 and shapes == {'"v"'}:
        found["type"] = types.pop()
    datas = [data for _, data in runs]
    with contextlib.suppress(Exception):
        lengths = {len(data) for data in datas}
        if len(lengths) == 1:
            found["len"] = lengths.pop()
    with contextlib.suppress(Exception):
        ordered = [sorted(data) for data in datas]
        if all(canonical(items) == canonical(ordered[0]) for items in ordered):
            text = literal(ordered[0], names)
            if text is not None:
                found["sorted"] = text
    return found


class RandomWatch:
    """Whether a case drew random numbers: from the global generator (its state moved), a
    generator seeded from the system (``random.Random()``), or the system's own source
    (``os.urandom``: ``SystemRandom``, ``secrets``, ``uuid.uuid4``). Installed before the
    project's code is imported, so what it binds from ``os`` is the watched function."""

    def __init__(self) -> None:
        self.drew = False
        self.state: Any = None
        system = os.urandom
        seed = random.Random.seed

        def urandom(size: int) -> bytes:
            self.drew = True
            return system(size)

        def watched_seed(generator: random.Random, a: Any = None, version: int = 2) -> None:
            if a is None:
                self.drew = True
            seed(generator, a, version)

        os.urandom = urandom
        random._urandom = urandom  # type: ignore[attr-defined]
        random.Random.seed = watched_seed  # type: ignore[method-assign,assignment]

    def start(self) -> None:
        self.drew, self.state = False, random.getstate()

    def stop(self) -> bool:
        return self.drew or random.getstate() != self.state


class WriteWatch:
    """What a case writes or deletes outside its own working directory, seen through an
    audit hook (``sys.addaudithook``; it cannot be removed, so it is installed once and
    watches only while a case runs). A test of such a call would do the same in the user's
    project when pytest runs it: write ``.git/config``, delete a file."""

    _EVENTS = frozenset(
        {
            "os.remove",
            "os.rmdir",
            "os.mkdir",
            "os.truncate",
            "os.chmod",
            "os.chown",
            "os.symlink",
            "os.link",
            "os.utime",
            "shutil.rmtree",
        }
    )
    _WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def __init__(self) -> None:
        self.workdir: str | None = None
        self.seen: list[str] = []
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self.workdir is None:
            return
        paths: list[Any] = []
        if event == "open" and len(args) >= 3:
            path, mode, flags = args[0], args[1], args[2]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & self._WRITE_FLAGS
            )
            paths = [path] if writes else []
        elif event in ("os.rename", "os.replace") and len(args) >= 2:
            paths = [args[0], args[1]]
        elif event in self._EVENTS and args:
            paths = [args[0]]
        for path in paths:
            if isinstance(path, int) or path is None:
                continue
            try:
                full = os.path.abspath(os.fsdecode(path))
            except (TypeError, ValueError):
                continue
            inside = full == self.workdir or full.startswith(self.workdir + os.sep)
            if not inside and len(self.seen) < 5 and full not in self.seen:
                self.seen.append(full)

    @contextlib.contextmanager
    def watching(self, workdir: Path) -> Iterator[list[str]]:
        self.workdir, self.seen = os.path.abspath(workdir), []
        try:
            yield self.seen
        finally:
            self.workdir = None


def make_tracer(file: str, span: list[int], arcs: set[tuple[int, int]]) -> Any:
    """A ``sys.settrace`` function recording the arcs (line to line) run in ``span`` of
    ``file``; leaving the function from a line is the arc from it to -1."""
    first, last = span

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            line = frame.f_lineno
            if first <= line <= last:
                previous = previous_line.get(id(frame))
                if previous is not None:
                    arcs.add((previous, line))
                previous_line[id(frame)] = line
        elif event == "return":
            previous = previous_line.pop(id(frame), None)
            if previous is not None:
                arcs.add((previous, -1))  # where it left: an exit branch of its own
        return local

    previous_line: dict[int, int] = {}

    def outer(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "call" and frame.f_code.co_filename == file:
            return local
        return None

    return outer


WATCH: WriteWatch
RANDOM: RandomWatch


def signed(record: dict[str, Any], key: bytes) -> str:
    """``record`` as a result line the host can tell from one the project's code wrote:
    ``MAC JSON``, the MAC an HMAC-SHA256 of the JSON under the run's key."""
    text = json.dumps(record)
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest() + " " + text + "\n"


def observe(request: dict[str, Any], result_path: Path, key: bytes) -> None:
    """Run every case of an observe request, appending one signed line per case."""
    file = Path(request["file"])
    roots = [Path(root) for root in request["roots"]]

    def on_alarm(signum: int, frame: Any) -> None:
        raise CaseTimeout

    signal.signal(signal.SIGALRM, on_alarm)
    global WATCH, RANDOM
    WATCH = WriteWatch()
    RANDOM = RandomWatch()
    with result_path.open("a", encoding="utf-8") as out:
        if request.get("travel") is not None:
            unavailable = travel(float(request["travel"]), request.get("lend", []))
            if unavailable:
                out.write(signed({"travel_unavailable": unavailable}, key))
        try:
            module = load_module(file, roots)
            owner = request["qualname"].rsplit(".", 1)[0] if request.get("method") else None
            target = resolve(module, owner or request["qualname"])
        except ResolveError as exc:
            out.write(signed({"error": {"stage": "resolve", "message": str(exc)}}, key))
            return
        except BaseException as exc:
            out.write(signed({"raised": describe_exception(exc), "stage": "import"}, key))
            return
        request["file"] = module.__file__ or str(file)
        names = namespace(module)
        for case in request["cases"]:
            record = observe_with_reruns(case, target, module, names, request)
            out.write(signed(record, key))
            out.flush()


def travel(timestamp: float, lend: list[str]) -> str:
    """Move the wall clock (``time.time``, ``datetime.now``, ``date.today``...) to
    ``timestamp`` for the rest of the process, with time-machine, from the project's
    packages or else from ``lend`` (Remora's, for the same Python version); why not, if not."""
    try:
        import time_machine
    except ImportError:
        sys.path.extend(lend)
        try:
            import time_machine
        except ImportError as exc:
            return f"time-machine cannot be imported: {exc}"
    time_machine.travel(timestamp, tick=True).start()
    return ""


def main(argv: list[str]) -> int:
    request_path, result_path = Path(argv[1]), Path(argv[2])
    request = json.loads(request_path.read_text(encoding="utf-8"))
    caller = os.getpid()
    if request.get("mode") == "observe":
        key = bytes.fromhex(request.pop("key"))
        with contextlib.suppress(OSError):
            request_path.unlink()  # the key is gone from disk before project code runs
        observe(request, result_path, key)
        if os.getpid() != caller:
            os._exit(0)
        return 0
    result = run(request)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.getpid() != caller:
        os._exit(0)  # a process the callee forked returned here: only the caller reports
    Path(result_path).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
