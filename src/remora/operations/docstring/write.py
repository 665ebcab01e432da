"""The docstring agent's two host steps around the model's one decision.

``docstring_evidence`` gathers what the model needs to write a docstring, before its first
turn: the signature, what is left to describe, what the code raises and with which message,
how the project calls the function (its tests first) and what those calls returned when the
host ran them, and the summaries of what it calls (:mod:`.grounding`). ``docstring_write``
takes the model's words and refuses the ones the host can show to be empty or false (a name
restated, a result kind never observed, code or numbers the function does not have, a run
of words said twice, an unfinished sentence, the prompt copied): the model hears why, twice,
and the third refusal leaves the docstring to the person. It writes the rest, with the
observed types where the signature has none, and checks the result with pydoclint and ruff
in the same step; what is still missing is listed, for the model's next turn or, in the
end, for the person.

Codes: TOOL_101..TOOL_103 path problems, TOOL_105 no definition with that qualname,
TOOL_106 the file does not parse, TOOL_601 empty summary.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from remora.operations.docstring._format import (
    imperative,
    parse_docstring,
)
from remora.operations.docstring.check import (
    description_problem,
    docstring_check,
    docstring_summary_check,
)
from remora.operations.docstring.docstrings import (
    RETURN_KEY,
    YIELD_KEY,
    authored,
    docstring_of,
    docstring_set,
    left_out,
    style_option,
    value_item,
)
from remora.operations.docstring.grounding import (
    Observed,
    call_lines,
    callee_summaries,
    examples,
    judged_kinds,
    observe,
)
from remora.operations.docstring.options import DocstringOptions
from remora.operations.docstring.similar import Documented, similar_summaries
from remora.tools.capabilities.pysource import locate, parse_python
from remora.tools.capabilities.registry import CapabilityContext, capability
from remora.tools.capabilities.regressions import base_content, tests_broken_by
from remora.tools.capabilities.signature import describe, raise_messages
from remora.tools.capabilities.store_io import read_text

COVERED = ("DOC1", "DOC2", "DOC4", "DOC5", "D417", "missing:")
"""Checker findings that only say something is undescribed (``undescribed`` lists it)."""
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z])")
MAX_COMPLAINTS = 2
"""A refused summary goes back to the model as a complaint this many times; the next
refusal leaves the docstring to the person."""
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@capability
def docstring_evidence(ctx: CapabilityContext, path: str, qualname: str) -> dict[str, Any]:
    """What the model needs to document one definition, read by the host.

    ``describe`` lists what has no description yet (parameters, ``return``/``yield``, and
    exceptions raised without a message to describe them); ``described`` the parameters
    the current docstring already describes (kept unless rewritten);
    ``raises`` maps raised exceptions to the raise statement's message; ``calls`` are lines
    of the project that call the name (tests first); ``observed`` what those calls (and the
    docstring's examples) returned when run; ``callees`` the summaries of what it calls;
    ``text`` renders it all for the model. Calls with values the host chose itself
    (:func:`~remora.operations.docstring.grounding.observe_chosen`) judge the summary where
    nothing else says what the code returns, but are not shown: the plainest values of each
    kind led the model's words astray ("Convert a number to an int." for a function seen
    turning -1 into '-1').
    """
    relative, text = read_text(ctx, path)
    tree = parse_python(text, relative)
    located = locate(tree, qualname, relative)
    info = describe(text, located)
    messages = raise_messages(located.node)
    left = left_out(info, docstring_of(tree, qualname), style_option(ctx, None))
    to_describe = [item for item in left if not messages.get(item)]
    names = [param["name"] for param in info["params"]]
    found = call_lines(ctx, relative, info["name"])
    calls = [f"{path}:{number}: {line}" for path, number, line in found]
    grounding = _grounding(ctx, relative, qualname, [line for _, _, line in found])
    lines = [f"Signature: {_signature(info)}"]
    lines.append(
        "Describe: " + ", ".join(_label(name) for name in to_describe)
        if to_describe
        else "Everything is described already; write the summary."
    )
    described = [name for name in names if name not in to_describe]
    if described:
        lines.append("Already described (kept unless you rewrite them): " + ", ".join(described))
    for name in info["raises"]:
        said = messages.get(name)
        lines.append(f"Raises {name}" + (f' with the message "{said}"' if said else ""))
    if calls:
        lines.append("How the project calls it:")
        lines.extend(f"  {line}" for line in calls)
    if grounding.observed.lines:
        lines.append("What those calls returned when the host ran them:")
        lines.extend(f"  {line}" for line in grounding.observed.lines)
    if grounding.callees:
        lines.append("It calls:")
        lines.extend(f"  {line}" for line in grounding.callees)
    similar = _similar(ctx, relative, qualname)
    if similar:
        lines.append("How maintainers summed up similar code:")
        lines.extend(f"  {entry.shown()}" for entry in similar)
    return {
        "describe": to_describe,
        "described": described,
        "raises": {name: messages.get(name) for name in info["raises"]},
        "calls": calls,
        "observed": grounding.observed.lines,
        "callees": grounding.callees,
        "similar": [entry.shown() for entry in similar],
        "text": "\n".join(lines),
    }


@capability
def docstring_write(
    ctx: CapabilityContext,
    path: str,
    qualname: str,
    summary: str,
    details: str | None = None,
    avoid: list[str] | None = None,
) -> dict[str, Any]:
    """Write the docstring with the model's summary (its first sentence, in the imperative
    mood: "Counts" -> "Count"); the sections come from the code, with the descriptions the
    docstring already has. Nothing is written when the summary is not usable:
    ``summary_problem`` says why (see ``docstring_summary_check``; ``avoid`` as there).
    Then what is left, as :func:`docstring_next` says."""
    relative, _ = read_text(ctx, path)
    summary = imperative(first_sentence(" ".join(str(summary or "").split())))
    checked_summary = _summary_checked(ctx, relative, qualname, summary, avoid)
    grounding = _grounding(ctx, relative, qualname)
    if not checked_summary["ok"]:
        refused = _refused(ctx, relative, qualname)
        refused.append(checked_summary["detail"] or checked_summary["problem"])
        return {
            "written": False,
            "summary_problem": checked_summary["problem"],
            "detail": checked_summary["detail"],
            "left_for_person": len(refused) > MAX_COMPLAINTS,
        }
    extra = details.strip() if details and details.strip() else None
    written = docstring_set(ctx, relative, qualname, summary, None, extra, types=grounding.types)
    return {
        "written": True,
        "action": written["action"],
        "docstring": written["docstring"],
        "diff": written["diff"],
        **docstring_next(ctx, relative, qualname),
    }


@capability
def docstring_screen(
    ctx: CapabilityContext, path: str, qualname: str, summary: str, avoid: list[str] | None = None
) -> dict[str, Any]:
    """Whether ``docstring_write`` would take ``summary``, without writing it or counting a
    refusal: ``ok``, and ``problem`` and ``detail`` as ``docstring_summary_check`` says. The
    loop screens several of the model's answers with it and writes the one it picks."""
    relative, _ = read_text(ctx, path)
    summary = imperative(first_sentence(" ".join(str(summary or "").split())))
    return _summary_checked(ctx, relative, qualname, summary, avoid)


def _summary_checked(
    ctx: CapabilityContext, relative: str, qualname: str, summary: str, avoid: list[str] | None
) -> dict[str, Any]:
    """``docstring_summary_check`` of ``summary`` with what the host knows of ``qualname``."""
    _, text = read_text(ctx, relative)
    tree = parse_python(text, relative)
    located = locate(tree, qualname, relative)
    grounding = _grounding(ctx, relative, qualname)
    name = describe(text, located)["name"]
    shown = [entry.summary for entry in _similar(ctx, relative, qualname) if entry.name != name]
    return docstring_summary_check(
        ctx,
        summary,
        name,
        [*(avoid or []), *shown],
        sorted(set(_IDENTIFIER.findall(text)) | set(dir(builtins))),
        sorted(grounding.kinds),
        "\n".join(text.splitlines()[located.node.lineno - 1 : located.node.end_lineno]),
        sorted(grounding.item_kinds),
        [*examples(located.node), *grounding.observed.lines],
    )


@capability
def docstring_describe(
    ctx: CapabilityContext, path: str, qualname: str, item: str, text: str
) -> dict[str, Any]:
    """Add the model's description of one ``item`` (a parameter, ``return``, ``yield`` or an
    exception the code raises) to the docstring, unless it helps no reader
    (:func:`~remora.operations.docstring.check.description_problem`, or it copies the
    signature; ``refused`` says why). A refused item is asked again, with the complaint,
    :data:`MAX_COMPLAINTS` times; then ``left_for_person`` and it is not asked again. Then
    what is left, as :func:`docstring_next` says."""
    relative, source = read_text(ctx, path)
    tree = parse_python(source, relative)
    info = describe(source, locate(tree, qualname, relative))
    asked = _asked(ctx, relative, qualname)
    annotations = {param["name"]: param["annotation"] or "" for param in info["params"]}
    summary = _summary_of(tree, qualname)
    seen = [summary or "", *_written(ctx, relative, qualname)]
    params: dict[str, str] = {}
    returns: str | None = None
    raises: dict[str, str] = {}
    refused: str | None
    if item in annotations:
        refused = description_problem(text, item, annotations[item], seen)
        params = {item: text}
    elif item == value_item(info):
        refused = description_problem(text, info["name"], info["returns"] or "", seen)
        returns = text
    elif item in info["raises"]:
        refused = description_problem(text, item, "", seen)
        raises = {item: text}
    else:
        refused = "nothing of that name to describe"
    if refused is None and f"{info['name']}(" in text:
        refused = "copies the signature"
    if refused is None and summary is not None:
        types = _grounding(ctx, relative, qualname).types
        docstring_set(ctx, relative, qualname, summary, None, None, params, returns, raises, types)
        _written(ctx, relative, qualname).append(text)
    elif refused is None:
        refused = "the docstring has no summary yet"
    complaints = _refused(ctx, relative, f"{qualname}:{item}")
    if refused is not None:
        complaints.append(refused)
    left_for_person = len(complaints) > MAX_COMPLAINTS or refused in (
        None,
        "nothing of that name to describe",
        "the docstring has no summary yet",
    )
    if left_for_person:
        asked.add(item)
    return {
        "item": item,
        "refused": refused,
        "left_for_person": refused is not None and left_for_person,
        **docstring_next(ctx, relative, qualname),
    }


@capability
def docstring_next(ctx: CapabilityContext, path: str, qualname: str) -> dict[str, Any]:
    """What is left: ``undescribed`` (parameters, ``return``/``yield``, exceptions the
    docstring leaves out), ``next`` (the first of them not asked yet this job; None when
    none is left or the operation's ``describe`` option is false) and ``done`` (nothing
    undescribed and the checkers find nothing)."""
    relative, text = read_text(ctx, path)
    tree = parse_python(text, relative)
    info = describe(text, locate(tree, qualname, relative))
    docstring = docstring_of(tree, qualname)
    undescribed = left_out(info, docstring, style_option(ctx, None))
    asked = _asked(ctx, relative, qualname)
    checked = _checked(ctx, relative, qualname, text)
    if authored(ctx, relative, qualname, docstring):
        checked = {**checked, "clean": True, "problems": []}
    ask = ctx.options(DocstringOptions).describe
    upcoming = next((item for item in undescribed if item not in asked), None) if ask else None
    names = {param["name"] for param in info["params"]}
    return {
        "undescribed": undescribed,
        "next": upcoming,
        "next_is_param": upcoming in names,
        "problems": [f"{p['code']}: {p['message']}" for p in checked["problems"]],
        "done": checked["clean"] and not undescribed,
    }


@capability
def docstring_ask(ctx: CapabilityContext, left: dict[str, Any], action: str) -> dict[str, Any]:
    """The tool result after a write: ``action`` (what was done), then the next item for the
    model to describe (the grammar holds its ``item`` to that name; submitting leaves it
    and the rest for the person), or the summary to reword when the checkers complain
    about it, or ``submit_result`` alone, which the host calls: nothing is left that the
    model is asked for."""
    item = left.get("next")
    if item is not None:
        return {
            "outcome": "success",
            "summary": f"{action}\nNow call describe with item {item}: "
            + _ask(item, bool(left.get("next_is_param"))),
            "next_tools": ["describe", "submit_result"],
            "choices": {"item": [item]},
        }
    other = [problem for problem in left.get("problems", []) if not problem.startswith(COVERED)]
    if other:
        return {
            "outcome": "success",
            "summary": f"{action}\nProblems: " + "; ".join(other[:4]) + ". Call write_docstring "
            "again with a better summary, or submit_result to leave them for the person.",
            "next_tools": ["write_docstring", "submit_result"],
        }
    return {"outcome": "success", "summary": action, "next_tools": ["submit_result"]}


def _ask(item: str, is_param: bool) -> str:
    if is_param:
        return f"what `{item}` means and which values it takes."
    if item == RETURN_KEY:
        return "what the returned value is."
    if item == YIELD_KEY:
        return "what the values it yields are."
    return f"when {item} is raised."


def first_sentence(text: str) -> str:
    """The first sentence of ``text``: a small model's second sentence tends to run on
    into claims the code does not support ("If the sequence is empty, return the first
    value.")."""
    found = _SENTENCE_END.search(text)
    return text[: found.start() + 1] if found else text


def _summary_of(tree: ast.Module, qualname: str) -> str | None:
    """The summary line of the current docstring, if there is one."""
    docstring = docstring_of(tree, qualname)
    return parse_docstring(docstring).summary or None if docstring else None


def _checked(ctx: CapabilityContext, relative: str, qualname: str, text: str) -> dict[str, Any]:
    """``docstring_check`` of ``text``, run once per text in this job: the verdict after the
    last write checks the very text that write was checked on."""
    checked: dict[tuple[str, str, str], dict[str, Any]] = ctx.state.setdefault(
        f"{__name__}.checked", {}
    )
    key = (relative, qualname, hashlib.sha256(text.encode("utf-8")).hexdigest())
    if key not in checked:
        checked[key] = docstring_check(ctx, relative, qualname)
    return checked[key]


@dataclass
class Grounding:
    """What the host knows of one definition's behaviour: the project's calls as run, the
    summaries of what it calls, the kinds of result it returns and of the items of what it
    returns (:func:`~remora.operations.docstring.grounding.judged_kinds`) and the types its
    parameters and result were seen with in the project's calls."""

    observed: Observed
    callees: list[str]
    kinds: set[str]
    item_kinds: set[str]
    types: dict[str, str]


def _grounding(
    ctx: CapabilityContext, relative: str, qualname: str, calls: list[str] | None = None
) -> Grounding:
    """The :class:`Grounding` of ``qualname``, gathered once per job (the evidence step
    passes the project's ``calls``; without them, the docstring's examples are run)."""
    cache: dict[tuple[str, str], Grounding] = ctx.state.setdefault(f"{__name__}.grounding", {})
    key = (relative, qualname)
    if key in cache:
        return cache[key]
    _, text = read_text(ctx, relative)
    tree = parse_python(text, relative)
    located = locate(tree, qualname, relative)
    observed = observe(
        ctx, relative, qualname, located.node, [*examples(located.node), *(calls or [])]
    )
    kinds, item_kinds = judged_kinds(ctx, relative, qualname, located.node, text, observed)
    types = dict(observed.param_types)
    if observed.return_type and observed.return_type != "None":
        types[RETURN_KEY] = observed.return_type
    cache[key] = Grounding(
        observed,
        callee_summaries(ctx, relative, tree, located.node),
        kinds,
        item_kinds,
        types,
    )
    return cache[key]


def _similar(ctx: CapabilityContext, relative: str, qualname: str) -> list[Documented]:
    """The summaries of similar documented code shown with the evidence (found once per
    job; :mod:`.similar`)."""
    cache: dict[tuple[str, str], list[Documented]] = ctx.state.setdefault(f"{__name__}.similar", {})
    key = (relative, qualname)
    if key not in cache:
        wanted = ctx.options(DocstringOptions).similar_examples
        _, text = read_text(ctx, relative)
        node = locate(parse_python(text, relative), qualname, relative).node
        cache[key] = (
            similar_summaries(ctx, relative, node, qualname)
            if wanted and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            else []
        )
    return cache[key]


def _refused(ctx: CapabilityContext, path: str, qualname: str) -> list[str]:
    """Why each summary the model gave in this job was refused (keyed ``qualname:item``,
    each description of that item)."""
    refused: dict[tuple[str, str], list[str]] = ctx.state.setdefault(f"{__name__}.refused", {})
    return refused.setdefault((path, qualname), [])


def _asked(ctx: CapabilityContext, path: str, qualname: str) -> set[str]:
    """The items the model was asked to describe in this job (each is asked once)."""
    asked: dict[tuple[str, str], set[str]] = ctx.state.setdefault(f"{__name__}.asked", {})
    return asked.setdefault((path, qualname), set())


def _written(ctx: CapabilityContext, path: str, qualname: str) -> list[str]:
    """The descriptions written in this job (a later one may not copy them)."""
    written: dict[tuple[str, str], list[str]] = ctx.state.setdefault(f"{__name__}.written", {})
    return written.setdefault((path, qualname), [])


@capability
def docstring_verdict(ctx: CapabilityContext, path: str, qualname: str) -> dict[str, Any]:
    """The job's outcome on the host's word: ``success`` when the docstring describes
    everything and the checkers find nothing, ``partial`` when it is written but leaves
    something for the person (listed), ``left`` when there is none (the summary is left for
    the person)."""
    relative, text = read_text(ctx, path)
    tree = parse_python(text, relative)
    if docstring_of(tree, qualname) is None:
        refused = _refused(ctx, relative, qualname)
        why = f" (refused: {'; '.join(refused)})" if refused else ""
        return {
            "status": "left",
            "summary": f"no docstring written for {qualname}: no usable summary{why}; left for you",
            "details": {"refused_summaries": list(refused)},
        }
    left = docstring_next(ctx, relative, qualname)
    details = {"undescribed": left["undescribed"], "problems": left["problems"]}
    summary = _summary_of(tree, qualname)
    if left["done"]:
        return {
            "status": "success",
            "summary": f"Docstring of {qualname}: {summary}",
            "details": details,
        }
    parts = []
    if left["undescribed"]:
        parts.append("describe " + ", ".join(_label(item) for item in left["undescribed"]))
    other = [problem for problem in left["problems"] if not problem.startswith(COVERED)]
    parts.extend(other[:2])
    return {
        "status": "partial",
        "summary": f"Docstring of {qualname}: {summary} Left for you: " + "; ".join(parts),
        "details": details,
    }


@capability
def docstring_host_only(ctx: CapabilityContext, path: str, qualname: str) -> dict[str, Any]:
    """Everything the host writes without a model, then the verdict. A docstring with a
    summary is edited in place (the summary's mechanical fixes, what is missing inserted
    where its convention has a place, from the descriptions it has and the raise
    statements' messages); one that needs nothing is ``skipped``, complete in its own
    convention, and so is one whose edit breaks a test of the module that passed without
    it (a test may read ``__doc__``: toolz asserts ``'Returns None' in f.__doc__``).
    Without a summary nothing is written: one made from the name ("Itemfilter.") says
    nothing, and the job says the summary is left for you."""
    relative, text = read_text(ctx, path)
    current = docstring_of(parse_python(text, relative), qualname)
    summary = parse_docstring(current).summary if current else ""
    if not summary:
        return {
            "status": "left",
            "summary": f"no docstring written for {qualname}: its summary needs words and no "
            "model was asked (operations.docstring.options.use_model is false); left for you",
            "details": {},
        }
    written = docstring_set(ctx, relative, qualname, summary)
    done = [*written["fixes"], *(f"{kind} inserted" for kind in written.get("inserted", []))]
    original = base_content(ctx, relative) if written["action"] == "edited" else None
    broken = tests_broken_by(ctx, relative, original)[0] if original is not None else []
    if original is not None and broken:
        ctx.store.write(relative, original)
        return {
            "status": "skipped",
            "summary": f"the docstring of {qualname} is left as its authors wrote it: the "
            f"edit ({', '.join(done)}) breaks {', '.join(broken[:3])}, which reads it",
            "details": {"tests_broken_by_the_edit": broken},
        }
    verdict = docstring_verdict(ctx, relative, qualname)
    if done:
        verdict["details"] = {**verdict.get("details", {}), "edits": done}
    if done or authored(ctx, relative, qualname, current):
        said = ", ".join(done) if done else "as its authors wrote it"
        verdict["summary"] = verdict["summary"].replace(
            f"Docstring of {qualname}:", f"Docstring of {qualname} ({said}):", 1
        )
    if written["action"] == "unchanged" and verdict["status"] == "success":
        return {
            "status": "skipped",
            "summary": f"the docstring of {qualname} is complete in its own convention "
            f"({written['style']}); nothing to add",
            "details": {},
        }
    return verdict


def _signature(info: dict[str, Any]) -> str:
    params = []
    for param in info["params"]:
        stars = {"var_positional": "*", "var_keyword": "**"}.get(param["kind"], "")
        text = stars + param["name"]
        if param["annotation"]:
            text += f": {param['annotation']}"
        if param["default"] is not None:
            text += f" = {param['default']}"
        params.append(text)
    shown = f"{info['name']}({', '.join(params)})"
    return shown + (f" -> {info['returns']}" if info["returns"] else "")


def _label(name: str) -> str:
    return {RETURN_KEY: "the return value", YIELD_KEY: "the values it yields"}.get(name, name)
