"""Docstring capabilities: read a node's docstring and write one in the project's convention.

A docstring the authors wrote is edited, never re-rendered (:mod:`._edit`): their summary,
paragraphs, examples, literal blocks and sections stay byte for byte, and only what is
missing is inserted in place (a summary where there is none, an entry or a section where
the docstring's convention has a place for it), plus the mechanical fix of a summary's mood
and final period. A docstring this job wrote itself (there was none) is rendered whole, in
the project's convention (:func:`project_convention`: google, numpy, sphinx, or plain prose
with no sections), through libcst (``_docstring_cst``), so everything else in the file
stays byte for byte. The caller supplies the summary and the descriptions. Nothing is
invented: what no one described (not the caller, not the old docstring, not a raise
statement's message) is left out and listed as ``undescribed``, for the person to write.

Codes: TOOL_101..TOOL_103 path problems, TOOL_105 no definition with that qualname,
TOOL_106 the file does not parse, TOOL_601 invalid style or empty summary.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from remora import pyast
from remora.errors import ToolError
from remora.operations.docstring import _edit
from remora.operations.docstring._format import (
    CONVENTIONS,
    DocstringContent,
    ParsedDocstring,
    imperative,
    parse_docstring,
    render,
    section_blocks,
    standard_style,
)
from remora.operations.docstring.options import DocstringOptions
from remora.tools.capabilities.project import is_test_file
from remora.tools.capabilities.pysource import locate, parse_python
from remora.tools.capabilities.registry import CapabilityContext, capability
from remora.tools.capabilities.ruff import run_ruff
from remora.tools.capabilities.signature import describe, raise_messages
from remora.tools.capabilities.store_io import (
    bounded_diff,
    read_source,
    read_text,
    scan_text,
    walk_files,
    write_text,
)

LINE_LENGTH = 88
RETURN_KEY = "return"
"""How ``undescribed`` names the return value (``yield`` for a generator's values)."""
YIELD_KEY = "yield"
_NO_VALUE = frozenset({"None", "NoReturn", "Never", "typing.NoReturn", "typing.Never"})
_COORDINATED_VERB = re.compile(
    r"\b(?:and|or|then)\s+(?!is\b|has\b|was\b|does\b|as\b|its\b|this\b|thus\b)"
    r"[a-z]+(?:ies|sses|shes|ches|xes|zes|[^su]s)\b"
)
"""A second verb in the third person after a conjunction ("... and returns ...")."""
_YIELD_TYPE = re.compile(
    r"^(?:typing\.|collections\.abc\.)?(?:Async)?(?:Iterator|Iterable|Generator)\[\s*([^,\]]+(?:\[[^\]]*\])?)"
)


@capability
def docstring_get(ctx: CapabilityContext, path: str, qualname: str) -> dict[str, Any]:
    """Read the docstring of a function, method, class or (empty qualname) the module.

    Besides the text, says which style it is written in and which parameters it does not
    document yet.
    """
    qualname = _qualname(qualname)
    relative, text = read_text(ctx, path)
    tree = parse_python(text, relative)
    info = describe(text, locate(tree, qualname, relative)) if qualname else None
    docstring = docstring_of(tree, qualname)
    parsed = parse_docstring(docstring) if docstring else None
    names = [p["name"] for p in info["params"]] if info else []
    documented = [name for name in names if parsed and name in parsed.params]
    return {
        "path": relative,
        "qualname": qualname,
        "kind": info["kind"] if info else "module",
        "has_docstring": docstring is not None,
        "docstring": docstring,
        "style": parsed.style if parsed else None,
        "summary": parsed.summary if parsed else None,
        "sections": parsed.section_names if parsed else [],
        "documented_params": documented,
        "missing_params": [name for name in names if name not in documented],
        "line": info["line"] if info else 1,
    }


@capability
def docstring_set(
    ctx: CapabilityContext,
    path: str,
    qualname: str,
    summary: str,
    style: str | None = None,
    description: str | None = None,
    params: dict[str, str] | None = None,
    returns: str | None = None,
    raises: dict[str, str] | None = None,
    types: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Write the docstring of a function, method, class or (empty qualname) the module.

    Give the one-line ``summary``; the Args/Returns/Raises sections are built from the
    code in ``style`` (google, numpy, sphinx or plain; default: the operation's ``style``
    option, ``auto`` the project's own convention). ``params`` maps parameter names to
    descriptions, ``raises`` exception names to descriptions; both optional. ``types``
    maps parameter names (and ``return``) without an annotation to the type observed when
    the code ran, shown beside their descriptions. A docstring the authors wrote is edited
    in place: ``summary`` is inserted only where it has none, and what it does not describe
    yet is inserted where its convention has a place (``fixes`` lists a mechanical fix of
    its summary); otherwise one is written whole. The result shows the diff and lists what
    is left ``undescribed``.
    """
    qualname = _qualname(qualname)
    chosen = style_option(ctx, style)
    line = _summary(summary)
    relative, text, bom = read_source(ctx, path)
    tree = parse_python(text, relative)
    located = locate(tree, qualname, relative) if qualname else None
    info = describe(text, located) if located else None
    old_text = docstring_of(tree, qualname)
    given = {str(k).lstrip("*"): str(v) for k, v in (params or {}).items() if str(v).strip()}
    messages = raise_messages(located.node) if located else {}
    old = parse_docstring(old_text) if old_text else ParsedDocstring(style="plain")
    built = _content(
        line,
        description,
        info,
        old,
        given,
        returns,
        dict(raises or {}),
        messages,
        types or {},
        chosen,
    )
    if authored(ctx, relative, qualname, old_text):
        assert old_text is not None
        node: ast.AST = located.node if located else tree
        edited = _edit_authored(
            ctx, relative, qualname, (text, bom, node, old_text), chosen, line, built
        )
        edited["undescribed"] = left_out(info, edited["docstring"], style_option(ctx, None))
        return edited
    content, ignored, undescribed = built
    from remora.operations.docstring import _cst as _docstring_cst  # libcst, imported on first use

    module, found, indent = _docstring_cst.find(text, qualname)
    body_lines = render(content, chosen, LINE_LENGTH - len(indent) - 3)
    literal = _literal(body_lines, indent, module.default_newline)
    new_text, action = _docstring_cst.apply(module, found, literal)
    if new_text != text:
        parse_python(new_text, relative)
        write_text(ctx, relative, new_text, bom=bom)
    else:
        action = "unchanged"
    return {
        "path": relative,
        "qualname": qualname,
        "style": chosen,
        "action": action,
        "docstring": inspect.cleandoc("\n".join(body_lines)),
        "diff": bounded_diff(relative, text, new_text),
        "ignored_params": ignored,
        "undescribed": undescribed,
        "fixes": [],
    }


def authored(ctx: CapabilityContext, relative: str, qualname: str, current: str | None) -> bool:
    """Whether the docstring of ``qualname`` is the authors' (it was there when this job
    first wrote to it), so it may only be edited in place; one this job wrote is its own."""
    seen: dict[tuple[str, str], bool] = ctx.state.setdefault(f"{__name__}.authored", {})
    return seen.setdefault((relative, qualname), current is not None)


def _edit_authored(
    ctx: CapabilityContext,
    relative: str,
    qualname: str,
    source: tuple[str, bool, ast.AST, str],
    chosen: str,
    summary: str,
    built: tuple[DocstringContent, list[str], list[str]],
) -> dict[str, Any]:
    """``docstring_set`` on a docstring the authors wrote: insert what is missing, fix the
    summary's mood and final period, keep every line of theirs (checked)."""
    text, bom, node, old_text = source
    content, ignored, _ = built
    literal = _edit.find_literal(text, node)
    old = parse_docstring(old_text)
    convention = standard_style(old_text) or chosen
    result = {
        "path": relative,
        "qualname": qualname,
        "style": convention,
        "action": "unchanged",
        "docstring": old_text,
        "diff": "",
        "ignored_params": ignored,
        "undescribed": [],
        "fixes": [],
        "inserted": [],
    }
    if literal is None:
        return result
    from remora.operations.docstring import _cst as _docstring_cst  # libcst, imported on first use

    _, _, indent = _docstring_cst.find(text, qualname)
    newline = "\r\n" if "\r\n" in text else "\n"
    body = literal.body
    fixes: tuple[str, ...] = ()
    if not old.summary:
        body = _edit.insert_summary(literal, summary, indent=indent, newline=newline)
        fixes = ("summary inserted",)
    else:
        mood = _needs_mood(ctx, text, relative, node, old.summary)
        period = project_convention(ctx).periods
        body, fixes = _edit.fix_summary(
            literal,
            standard_style(old_text) or "plain",
            mood=mood,
            period=period,
            indent=indent,
            newline=newline,
        )
    missing = _missing(content, old) if convention != "plain" and literal.triple else None
    if missing is not None:
        width = LINE_LENGTH - len(indent) - 3
        blocks = [
            (kind, header, [_edit.escape(line, literal) for line in entries])
            for kind, header, entries in section_blocks(missing, convention, width)
            if all(_edit.can_hold(line, literal) for line in entries)
        ]
        result["inserted"] = [kind for kind, _, _ in blocks]
        if blocks:
            body = _edit.insert_sections(
                dataclasses.replace(literal, body=body),
                convention,
                blocks,
                indent=indent,
                newline=newline,
            )
    new_literal = literal.source(body)
    new_text = text[: literal.start] + new_literal + text[literal.end :]
    if new_text != text:
        new_doc = docstring_of(parse_python(new_text, relative), qualname) or ""
        if not _edit.kept_lines(old_text, new_doc, summary_fixed=bool(fixes)):
            raise ToolError(
                "TOOL_602",
                f"editing the docstring of {qualname or 'the module'} would change the "
                "authors' text; nothing was written",
                "this is a bug in Remora's docstring editor: please report it",
            )
        write_text(ctx, relative, new_text, bom=bom)
        result.update(
            action="edited", docstring=new_doc, diff=bounded_diff(relative, text, new_text)
        )
    result["fixes"] = [fix for fix in fixes if fix != "summary inserted"]
    return result


def _missing(content: DocstringContent, old: ParsedDocstring) -> DocstringContent:
    """The parts of ``content`` the authors' docstring ``old`` does not have yet."""
    return DocstringContent(
        summary="",
        params=tuple(item for item in content.params if item[0].lstrip("*") not in old.params),
        returns=None if old.returns else content.returns,
        yields=None if old.yields else content.yields,
        raises=tuple(item for item in content.raises if item[0] not in old.raises),
        typed_in_docstring=content.typed_in_docstring,
    )


def _needs_mood(
    ctx: CapabilityContext, text: str, relative: str, node: ast.AST, summary: str
) -> bool:
    """Whether the summary of a function (not a class, module or property) starts with a
    verb in the third person that ruff's D401 also flags ("Returns the ..."): the word
    alone does not tell a verb from a noun ("Series of ..."). A summary with a second
    such verb ("Applies f and returns ...") is left alone: fixing the first word only
    would make it worse, and which later words are verbs is not mechanical."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    if any(
        (isinstance(d, ast.Name) and d.id in ("property", "cached_property"))
        or (isinstance(d, ast.Attribute) and d.attr in ("property", "cached_property", "setter"))
        for d in node.decorator_list
    ):
        return False
    if imperative(summary) == summary or _COORDINATED_VERB.search(summary):
        return False
    items = ruff_on_text(ctx, text, relative, ["D401"])
    first = node.body[0].lineno if node.body else node.lineno
    return any(
        item.get("code") == "D401" and item["location"]["row"] in (node.lineno, first)
        for item in items
    )


def ruff_on_text(
    ctx: CapabilityContext,
    text: str,
    relative: str,
    select: list[str],
    options: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """ruff's ``select`` findings on ``text`` (named ``relative``), ``--isolated``: the
    project's own ruff settings do not apply."""
    with tempfile.TemporaryDirectory() as home:
        return run_ruff(
            ctx,
            Path(home),
            Path(home),
            [f"--stdin-filename={relative}", "-"],
            select,
            stdin=text,
            options=("--isolated", *options),
        )


def _qualname(qualname: str | None) -> str:
    """``""`` (or None) means the module; otherwise a dotted name such as ``Class.method``."""
    text = (qualname or "").strip()
    if text and not all(part.isidentifier() for part in text.split(".")):
        raise ToolError(
            "TOOL_105", f"'{text}' is not a qualified name", "use a name such as 'Class.method'"
        )
    return text


def style_option(ctx: CapabilityContext, style: str | None) -> str:
    """``style``, else the operation's ``style`` option; ``auto`` (the default) is the
    project's own convention (:func:`project_convention`). TOOL_601 if unknown."""
    chosen = str(style or ctx.options(DocstringOptions).style).strip().lower()
    if chosen == "auto":
        return project_convention(ctx).style
    if chosen not in CONVENTIONS:
        raise ToolError(
            "TOOL_601",
            f"unknown docstring style '{chosen}'",
            "use auto, google, numpy, sphinx or plain",
        )
    return chosen


@dataclass(frozen=True)
class Convention:
    """How a project writes its docstrings: the ``style`` of their sections (plain: none)
    and whether its summaries end with a period."""

    style: str
    periods: bool
    docstrings: int
    """How many docstrings it was read from (0: too few to tell, so the defaults)."""


DEFAULT_CONVENTION = Convention("google", True, 0)
"""What a project with too few docstrings to follow gets."""
MIN_CONVENTION_DOCSTRINGS = 3
"""Fewer docstrings than this say nothing about a convention: the default applies."""
MAX_CONVENTION_FILES = 200
MAX_CONVENTION_DOCSTRINGS = 400
_conventions: dict[str, Convention] = {}


def project_convention(ctx: CapabilityContext) -> Convention:
    """The convention the project's docstrings already follow, read once per project root
    and process from up to :data:`MAX_CONVENTION_DOCSTRINGS` docstrings (the node's own file
    first, test files last): the most common sectioned style when at least a quarter of
    the documented definitions with parameters use one, plain prose when they do not;
    periods when at least half of the summaries end with one."""
    key = str(ctx.store.root)
    if key not in _conventions:
        _conventions[key] = _read_convention(ctx)
    return _conventions[key]


def _read_convention(ctx: CapabilityContext) -> Convention:
    own = str(ctx.system.get("file_path") or "")
    files = walk_files(ctx, "", (".py",))
    files.sort(key=lambda path: (path != own, is_test_file(path), path.count("/"), path))
    styles: dict[str, int] = {}
    with_params = 0
    summaries = 0
    periods = 0
    seen = 0
    for path in files[:MAX_CONVENTION_FILES]:
        source = scan_text(ctx, path)
        try:
            tree = pyast.parse(source or "")
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            docstring = ast.get_docstring(node)
            if not docstring:
                continue
            seen += 1
            style = standard_style(docstring)
            if style:
                styles[style] = styles.get(style, 0) + 1
            if not isinstance(node, ast.ClassDef) and len(node.args.args) > (
                1 if node.args.args and node.args.args[0].arg in ("self", "cls") else 0
            ):
                with_params += 1
            summary = parse_docstring(docstring).summary
            if summary:
                summaries += 1
                periods += summary.rstrip()[-1:] in ".!?"
        if seen >= MAX_CONVENTION_DOCSTRINGS:
            break
    if seen < MIN_CONVENTION_DOCSTRINGS:
        return DEFAULT_CONVENTION
    sectioned = sum(styles.values())
    style = (
        max(sorted(styles), key=lambda name: styles[name])
        if sectioned and sectioned * 4 >= max(with_params, 1)
        else "plain"
    )
    return Convention(style, periods * 2 >= summaries, seen)


def left_out(info: dict[str, Any] | None, docstring: str | None, style: str) -> list[str]:
    """What a complete docstring of the definition ``python_signature`` describes as
    ``info`` (None: a module) describes and ``docstring`` does not, in its convention (its
    own sections', else the project's ``style``): parameters, ``return``/``yield`` and the
    exceptions it raises; none in plain prose, which has no place for them, nor for a
    module. Everything when there is no docstring and the convention has sections."""
    if info is None:
        return []
    convention = (docstring and standard_style(docstring)) or style
    if convention == "plain":
        return []
    parsed = parse_docstring(docstring) if docstring else None
    documented = parsed.params if parsed else {}
    left = [param["name"] for param in info["params"] if param["name"] not in documented]
    if info["kind"] == "class":
        return left
    value = value_item(info)
    if value == YIELD_KEY and not (parsed and parsed.yields):
        left.append(YIELD_KEY)
    elif value == RETURN_KEY and not (parsed and parsed.returns):
        left.append(RETURN_KEY)
    raised = parsed.raises if parsed else {}
    return left + [name for name in info["raises"] if name not in raised]


def _summary(summary: str) -> str:
    text = " ".join(str(summary or "").split()).strip()
    while len(text) > 1 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    if not text:
        raise ToolError(
            "TOOL_601", "the summary is empty", "give one sentence saying what the code does"
        )
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def _content(
    summary: str,
    description: str | None,
    info: dict[str, Any] | None,
    old: ParsedDocstring,
    given: dict[str, str],
    returns: str | None,
    raises: dict[str, str],
    messages: dict[str, str],
    types: dict[str, str],
    style: str = "google",
) -> tuple[DocstringContent, list[str], list[str]]:
    """The docstring's parts, the given names that are not parameters, and what is left
    undescribed: supplied text first, then what the old docstring said, then (raises) the
    raise statement's message. Nothing is made up: a parameter, return value or exception
    without a description is left out for the person to describe."""
    params: list[tuple[str, str | None, str]] = []
    observed: set[str] = set()
    names: set[str] = set()
    undescribed: list[str] = []
    for param in info["params"] if info else []:
        name = param["name"]
        names.add(name)
        stars = {"var_positional": "*", "var_keyword": "**"}.get(param["kind"], "")
        text = given.get(name) or old.params.get(name)
        annotation = _unquote(param["annotation"])
        if text and annotation is None and types.get(name):
            observed.add(stars + name)
        if text:
            params.append((stars + name, annotation or types.get(name), _sentence(text)))
        else:
            undescribed.append(name)
    returned: tuple[str | None, str] | None = None
    yielded: tuple[str | None, str] | None = None
    thrown: list[tuple[str, str]] = []
    value = value_item(info) if info else None
    if info and info["kind"] != "class":
        annotation = _unquote(info["returns"])
        if value == YIELD_KEY:
            match = _YIELD_TYPE.match(annotation or "")
            text = returns or old.yields
            if text:
                yielded = (match.group(1).strip() if match else None, _sentence(text))
            else:
                undescribed.append(YIELD_KEY)
        elif value == RETURN_KEY:
            text = returns or old.returns
            if text:
                returned = (annotation or types.get(RETURN_KEY), _sentence(text))
            else:
                undescribed.append(RETURN_KEY)
        for name in dict.fromkeys([*info["raises"], *old.raises, *raises]):
            text = raises.get(name) or old.raises.get(name) or messages.get(name)
            if text:
                thrown.append((name, _sentence(text)))
            else:
                undescribed.append(name)
    content = DocstringContent(
        summary=summary,
        description=(description if description is not None else old.description).strip(),
        params=tuple(params),
        returns=returned,
        yields=yielded,
        raises=tuple(thrown),
        other_sections=tuple(old.other_sections),
        typed_in_docstring=frozenset(observed),
    )
    return content, sorted(set(given) - names), [] if style == "plain" else undescribed


def value_item(info: dict[str, Any]) -> str | None:
    """What a docstring says of the code's value, described by ``python_signature``'s
    ``info``: :data:`YIELD_KEY` for a generator, :data:`RETURN_KEY` for code that returns
    a value (annotated so, or returning one), None for a class or nothing returned."""
    if info["kind"] == "class":
        return None
    if info["is_generator"]:
        return YIELD_KEY
    annotation = _unquote(info["returns"])
    if (annotation and annotation not in _NO_VALUE) or (not annotation and info["returns_value"]):
        return RETURN_KEY
    return None


def _unquote(annotation: str | None) -> str | None:
    """``"Box"`` (a forward reference) as ``Box``; other annotations unchanged."""
    if annotation and len(annotation) > 1 and annotation[0] == annotation[-1] in "'\"":
        return annotation[1:-1].strip() or None
    return annotation


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?:" else text + "."


def docstring_of(tree: ast.Module, qualname: str) -> str | None:
    node: ast.AST = tree
    if qualname:
        node = locate(tree, qualname, "the file").node
    if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    return ast.get_docstring(node, clean=True)


def _literal(lines: list[str], indent: str, newline: str = "\n") -> str:
    """The source of a triple-quoted string holding ``lines`` at ``indent``."""
    text = "\n".join(lines)
    prefix = ""
    if "\\" in text:
        if '"""' not in text and not text.endswith("\\"):
            prefix = "r"
        else:
            text = text.replace("\\", "\\\\")
    text = text.replace('"""', '\\"\\"\\"')
    body = text.split("\n")
    if len(body) == 1:
        single = body[0][:-1] + '\\"' if body[0].endswith('"') else body[0]
        if len(indent) + len(single) + 6 + len(prefix) <= LINE_LENGTH:
            return f'{prefix}"""{single}"""'
    rest = "".join(newline + (indent + item if item else "") for item in body[1:])
    return f'{prefix}"""{body[0]}{rest}{newline}{indent}"""'
