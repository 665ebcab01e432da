"""Docstring capabilities: read a node's docstring and write one in a chosen style.

Edits go through libcst (in ``_docstring_cst``), so everything else in the file (formatting,
comments, quotes) stays byte-for-byte. The host builds the Args/Returns/Yields/Raises
sections from the signature and body; the caller supplies the summary and the
descriptions. When a docstring is replaced, descriptions and extra sections it already had
are kept unless new ones are given. Nothing is invented: what no one described (not the
caller, not the old docstring, not a raise statement's message) is left out and listed as
``undescribed``, for the person to write.

Codes: TOOL_101..TOOL_103 path problems, TOOL_105 no definition with that qualname,
TOOL_106 the file does not parse, TOOL_601 invalid style or empty summary.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Mapping
from typing import Any

from remora.errors import ToolError
from remora.operations.docstring._format import (
    STYLES,
    DocstringContent,
    ParsedDocstring,
    parse_docstring,
    render,
)
from remora.tools.capabilities.pysource import locate, parse_python
from remora.tools.capabilities.registry import CapabilityContext, capability
from remora.tools.capabilities.signature import describe, raise_messages
from remora.tools.capabilities.store_io import (
    bounded_diff,
    read_source,
    read_text,
    write_text,
)

LINE_LENGTH = 88
RETURN_KEY = "return"
"""How ``undescribed`` names the return value (``yield`` for a generator's values)."""
YIELD_KEY = "yield"
_NO_VALUE = frozenset({"None", "NoReturn", "Never", "typing.NoReturn", "typing.Never"})
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
    code in ``style`` (google, numpy or sphinx; default: the operation's ``style`` option,
    else google). ``params`` maps parameter names to descriptions, ``raises`` exception names
    to descriptions; both optional. ``types`` maps parameter names (and ``return``) without
    an annotation to the type observed when the code ran, shown beside their descriptions.
    An existing docstring is replaced, otherwise one is inserted; the result shows the diff
    and lists what is left ``undescribed``.
    """
    qualname = _qualname(qualname)
    chosen = style_option(ctx, style)
    line = _summary(summary)
    relative, text, bom = read_source(ctx, path)
    tree = parse_python(text, relative)
    located = locate(tree, qualname, relative) if qualname else None
    info = describe(text, located) if located else None
    old_text = docstring_of(tree, qualname)
    old = parse_docstring(old_text) if old_text else ParsedDocstring(style="plain")
    given = {str(k).lstrip("*"): str(v) for k, v in (params or {}).items() if str(v).strip()}
    messages = raise_messages(located.node) if located else {}
    content, ignored, undescribed = _content(
        line, description, info, old, given, returns, dict(raises or {}), messages, types or {}
    )
    from remora.operations.docstring import _cst as _docstring_cst  # libcst, imported on first use

    module, node, indent = _docstring_cst.find(text, qualname)
    body_lines = render(content, chosen, LINE_LENGTH - len(indent) - 3)
    literal = _literal(body_lines, indent, module.default_newline)
    new_text, action = _docstring_cst.apply(module, node, literal)
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
    }


def _qualname(qualname: str | None) -> str:
    """``""`` (or None) means the module; otherwise a dotted name such as ``Class.method``."""
    text = (qualname or "").strip()
    if text and not all(part.isidentifier() for part in text.split(".")):
        raise ToolError(
            "TOOL_105", f"'{text}' is not a qualified name", "use a name such as 'Class.method'"
        )
    return text


def style_option(ctx: CapabilityContext, style: str | None) -> str:
    """``style``, else the operation's ``style`` option, else google (TOOL_601 if unknown)."""
    options = ctx.system.get("options")
    default = options.get("style") if isinstance(options, Mapping) else None
    chosen = str(style or default or "google").strip().lower()
    if chosen not in STYLES:
        raise ToolError(
            "TOOL_601", f"unknown docstring style '{chosen}'", "use google, numpy or sphinx"
        )
    return chosen


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
    return content, sorted(set(given) - names), undescribed


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
