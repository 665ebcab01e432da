"""Docstring text: parse a docstring (google, numpy, sphinx) and render new text.

Pure text, no syntax trees: ``docstrings.py`` decides what goes in (from the signature and
the body) and where it goes. Parsing is forgiving: it says what a docstring already
describes and where its sections are (:func:`sections_of`), so ``_edit`` can insert what is
missing; rendering writes a whole docstring only where Remora wrote the one it replaces
(or there was none), and the sections ``_edit`` inserts (:func:`section_blocks`).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

STYLES = ("google", "numpy", "sphinx")
CONVENTIONS = (*STYLES, "plain")
"""What a project's docstrings follow: a sectioned style, or plain prose (a summary,
paragraphs and examples, no per-parameter sections), as toolz writes them."""

_GOOGLE_HEADERS = {
    "args": "params",
    "arguments": "params",
    "parameters": "params",
    "params": "params",
    "keyword args": "params",
    "keyword arguments": "params",
    "returns": "returns",
    "return": "returns",
    "yields": "yields",
    "yield": "yields",
    "raises": "raises",
    "exceptions": "raises",
}
_KNOWN_HEADERS = {
    *_GOOGLE_HEADERS,
    "attributes",
    "example",
    "examples",
    "note",
    "notes",
    "see also",
    "todo",
    "warning",
    "warnings",
    "references",
    "methods",
    "other parameters",
    "receives",
}
_GOOGLE_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_NUMPY_RULE = re.compile(r"^\s*-{3,}\s*$")
_SPHINX_FIELD = re.compile(
    r"^:(param|parameter|arg|argument|key|keyword|type|returns?|rtype|raises?|except|exception"
    r"|yields?|ytype|var|ivar|cvar|vartype|meta)\b"
)
_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_][\w.]*)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


@dataclass
class ParsedDocstring:
    """What an existing docstring says, in style-independent form."""

    style: str
    summary: str = ""
    description: str = ""
    params: dict[str, str] = field(default_factory=dict)
    returns: str = ""
    yields: str = ""
    raises: dict[str, str] = field(default_factory=dict)
    other_sections: list[str] = field(default_factory=list)

    @property
    def section_names(self) -> list[str]:
        """Sections present, style-independent: params, returns, yields, raises, then others."""
        names = ["params"] if self.params else []
        names += ["returns"] if self.returns else []
        names += ["yields"] if self.yields else []
        names += ["raises"] if self.raises else []
        others = [section.splitlines()[0].strip(": ").lower() for section in self.other_sections]
        return names + others


@dataclass(frozen=True)
class DocstringContent:
    """Everything a rendered docstring holds; descriptions are final text."""

    summary: str
    description: str = ""
    params: tuple[tuple[str, str | None, str], ...] = ()
    returns: tuple[str | None, str] | None = None
    yields: tuple[str | None, str] | None = None
    raises: tuple[tuple[str, str], ...] = ()
    other_sections: tuple[str, ...] = ()
    typed_in_docstring: frozenset[str] = frozenset()
    """Parameters whose type the google style shows (``name (type): ...``): the signature
    does not say it; it was observed."""


def detect_style(text: str) -> str:
    """google | numpy | sphinx | plain, from the section markup present."""
    lines = text.splitlines()
    for index, line in enumerate(lines[:-1]):
        if line.strip().lower() in _KNOWN_HEADERS and _NUMPY_RULE.match(lines[index + 1]):
            return "numpy"
    if any(_SPHINX_FIELD.match(line.strip()) for line in lines):
        return "sphinx"
    for line in lines:
        match = _GOOGLE_HEADER.match(line)
        if match and match.group(1).strip().lower() in _KNOWN_HEADERS:
            return "google"
    return "plain"


def parse_docstring(text: str) -> ParsedDocstring:
    """Split a cleaned docstring (``inspect.cleandoc``) into its parts."""
    style = detect_style(text)
    lines = text.splitlines()
    head_end = len(lines)
    for index, line in enumerate(lines):
        if _starts_section(style, lines, index, line):
            head_end = index
            break
    head = "\n".join(lines[:head_end]).strip()
    summary, _, description = head.partition("\n\n")
    parsed = ParsedDocstring(
        style=style, summary=" ".join(summary.split()), description=description.strip()
    )
    rest = lines[head_end:]
    if style == "google":
        _parse_google(rest, parsed)
    elif style == "numpy":
        _parse_numpy(rest, parsed)
    elif style == "sphinx":
        _parse_sphinx(rest, parsed)
    return parsed


def standard_style(text: str) -> str | None:
    """The style of ``text``'s parameter, return, yield or raise sections (google, numpy,
    sphinx), or None when it has none of them: a "See Also:" or "Examples:" heading alone
    does not make prose a google docstring."""
    lines = text.splitlines()
    for style in ("numpy", "sphinx", "google"):
        if any(kind in SECTION_RANK for kind, _, _ in sections_of(lines, style)):
            return style
    return None


SECTION_RANK = {"params": 0, "returns": 1, "yields": 1, "raises": 2}
"""Where a section goes among the others: parameters, then the value, then exceptions;
any other section (examples, notes, see also) ranks after them."""


def section_starts(lines: Sequence[str], style: str) -> list[int]:
    """The indices of the lines of a cleaned docstring that start a section of ``style``
    (for sphinx: each field)."""
    return [index for index, line in enumerate(lines) if _starts_section(style, lines, index, line)]


def sections_of(lines: Sequence[str], style: str) -> list[tuple[str, int, int]]:
    """The sections of a cleaned docstring's ``lines`` in ``style``: (kind, first line, one
    past the last); kind is params, returns, yields, raises or other. A google section ends
    where text comes back to the left margin; sphinx fields of one kind in a row make one
    section."""
    starts = section_starts(lines, style)
    found: list[tuple[str, int, int]] = []
    for position, start in enumerate(starts):
        end = starts[position + 1] if position + 1 < len(starts) else len(lines)
        if style == "google":
            end = next(
                (
                    i
                    for i in range(start + 1, end)
                    if lines[i].strip() and not lines[i][0].isspace()
                ),
                end,
            )
            kind = _GOOGLE_HEADERS.get(lines[start].strip().rstrip(":").strip().lower(), "other")
        elif style == "numpy":
            kind = _GOOGLE_HEADERS.get(lines[start].strip().lower(), "other")
        else:
            end = next(
                (i for i in range(start + 1, end) if not lines[i][:1].isspace()),
                end,
            )
            kind = _SPHINX_KINDS.get(lines[start].strip()[1:].split()[0].rstrip(":"), "other")
        if style == "sphinx" and found and found[-1][0] == kind and found[-1][2] == start:
            found[-1] = (kind, found[-1][1], end)
        else:
            found.append((kind, start, end))
    return found


_SPHINX_KINDS = {
    **dict.fromkeys(("param", "parameter", "arg", "argument", "key", "keyword", "type"), "params"),
    **dict.fromkeys(("returns", "return", "rtype"), "returns"),
    **dict.fromkeys(("yields", "yield", "ytype"), "yields"),
    **dict.fromkeys(("raises", "raise", "except", "exception"), "raises"),
}


def section_blocks(
    content: DocstringContent, style: str, width: int
) -> list[tuple[str, list[str], list[str]]]:
    """The sections ``content`` fills, rendered in ``style`` one kind at a time: (kind,
    header lines, entry lines), for insertion into a docstring that has some of them."""
    blocks: list[tuple[str, list[str], list[str]]] = []
    parts: list[tuple[str, DocstringContent]] = [
        (
            "params",
            DocstringContent(
                "", params=content.params, typed_in_docstring=content.typed_in_docstring
            ),
        ),
        ("returns", DocstringContent("", returns=content.returns)),
        ("yields", DocstringContent("", yields=content.yields)),
        ("raises", DocstringContent("", raises=content.raises)),
    ]
    headers = {"google": 1, "numpy": 2, "sphinx": 0}[style]
    for kind, part in parts:
        rendered = render(part, style, width)[2:]
        if rendered:
            blocks.append((kind, rendered[:headers], rendered[headers:]))
    return blocks


def _starts_section(style: str, lines: Sequence[str], index: int, line: str) -> bool:
    if style == "numpy":
        return (
            index + 1 < len(lines)
            and line.strip().lower() in _KNOWN_HEADERS
            and bool(_NUMPY_RULE.match(lines[index + 1]))
        )
    if style == "sphinx":
        return not line[:1].isspace() and bool(_SPHINX_FIELD.match(line.strip()))
    if style == "google":
        match = _GOOGLE_HEADER.match(line)
        return bool(match) and match is not None and match.group(1).lower() in _KNOWN_HEADERS
    return False


def _blocks(lines: list[str], is_header: list[bool]) -> list[tuple[str, list[str]]]:
    blocks: list[tuple[str, list[str]]] = []
    for line, header in zip(lines, is_header, strict=True):
        if header:
            blocks.append((line, []))
        elif blocks:
            blocks[-1][1].append(line)
    return blocks


def _entries(body: list[str]) -> list[tuple[str, list[str]]]:
    """Entries of an indented section body: a line at the base indent and its continuations."""
    filled = [line for line in body if line.strip()]
    if not filled:
        return []
    base = min(len(line) - len(line.lstrip()) for line in filled)
    entries: list[tuple[str, list[str]]] = []
    for line in body:
        if not line.strip():
            if entries:
                entries[-1][1].append("")
            continue
        if len(line) - len(line.lstrip()) == base:
            entries.append((line.strip(), []))
        elif entries:
            entries[-1][1].append(line.strip())
    return entries


def _join(first: str, more: list[str]) -> str:
    return " ".join(part for part in [first, *more] if part).strip()


def _parse_google(lines: list[str], parsed: ParsedDocstring) -> None:
    headers = [_starts_section("google", lines, i, line) for i, line in enumerate(lines)]
    for header, body in _blocks(lines, headers):
        kind = _GOOGLE_HEADERS.get(header.strip().rstrip(":").strip().lower())
        if kind == "params" or kind == "raises":
            target = parsed.params if kind == "params" else parsed.raises
            for first, more in _entries(body):
                match = _ENTRY.match(first)
                if match:
                    target[match.group(1).lstrip("*")] = _join(match.group(3), more)
        elif kind in ("returns", "yields"):
            text = _join("", [line.strip() for line in body])
            match = re.match(r"^([\w\[\], .|'\"]+):\s+(.+)$", text)
            setattr(parsed, kind, match.group(2) if match else text)
        else:
            parsed.other_sections.append("\n".join([header, *body]).rstrip())


def _parse_numpy(lines: list[str], parsed: ParsedDocstring) -> None:
    headers = [_starts_section("numpy", lines, i, line) for i, line in enumerate(lines)]
    for header, body in _blocks(lines, headers):
        body = body[1:]
        kind = _GOOGLE_HEADERS.get(header.strip().lower())
        entries = _entries(body)
        if kind in ("params", "raises"):
            target = parsed.params if kind == "params" else parsed.raises
            for first, more in entries:
                name = first.split(":", 1)[0].strip()
                for part in name.split(","):
                    target[part.strip().lstrip("*")] = _join("", more)
        elif kind in ("returns", "yields"):
            setattr(parsed, kind, " ".join(_join("", more) for _, more in entries).strip())
        else:
            rule = "-" * len(header.strip())
            parsed.other_sections.append("\n".join([header, rule, *body]).rstrip())


def _parse_sphinx(lines: list[str], parsed: ParsedDocstring) -> None:
    fields: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.strip().startswith(":"):
            fields.append((line.strip(), []))
        elif fields:
            fields[-1][1].append(line.strip())
    for first, more in fields:
        match = re.match(r"^:([^:]+):\s*(.*)$", first)
        if not match:
            continue
        words = match.group(1).split()
        text = _join(match.group(2), more)
        kind = words[0]
        if kind in ("param", "parameter", "arg", "argument", "key", "keyword") and len(words) > 1:
            parsed.params[words[-1].lstrip("*")] = text
        elif kind in ("returns", "return"):
            parsed.returns = text
        elif kind in ("yields", "yield"):
            parsed.yields = text
        elif kind in ("raises", "raise", "except", "exception") and len(words) > 1:
            parsed.raises[words[-1]] = text
        elif kind not in ("type", "rtype", "ytype"):
            parsed.other_sections.append("\n".join([first, *("    " + m for m in more if m)]))


def render(content: DocstringContent, style: str, width: int) -> list[str]:
    """The docstring's lines (no quotes, no outer indentation) in ``style`` (plain: the
    summary and the description, no sections).

    The summary stays one line however long: wrapped, its second line would read as a
    description without the blank line before it (pydocstyle's D205).
    """
    lines = [" ".join(content.summary.split())]
    if content.description:
        for paragraph in content.description.split("\n\n"):
            lines += ["", *_wrap(paragraph, width)]
    sections: list[list[str]] = []
    if style == "google":
        sections = _google(content, width)
    elif style == "numpy":
        sections = _numpy(content, width)
    elif style == "sphinx":
        sphinx = _sphinx(content, width)
        sections = [sphinx] if sphinx else []
    sections += [section.splitlines() for section in content.other_sections]
    for section in sections:
        lines += ["", *section]
    return lines


def _wrap(text: str, width: int, indent: str = "", first: str = "") -> list[str]:
    return textwrap.wrap(
        " ".join(text.split()),
        width=max(width, 30),
        initial_indent=indent + first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [indent + first.rstrip()]


def _google(content: DocstringContent, width: int) -> list[list[str]]:
    sections: list[list[str]] = []
    if content.params:
        body = ["Args:"]
        for name, annotation, text in content.params:
            shown = f"{name} ({annotation})" if name in content.typed_in_docstring else name
            body += _hanging(f"    {shown}: ", text, width, "        ")
        sections.append(body)
    for title, value in (("Returns:", content.returns), ("Yields:", content.yields)):
        if value is not None:
            kind, text = value
            lead = f"{kind}: " if kind else ""
            sections.append([title, *_hanging("    " + lead, text, width, "        ")])
    if content.raises:
        body = ["Raises:"]
        for name, text in content.raises:
            body += _hanging(f"    {name}: ", text, width, "        ")
        sections.append(body)
    return sections


def _numpy(content: DocstringContent, width: int) -> list[list[str]]:
    sections: list[list[str]] = []
    if content.params:
        body = ["Parameters", "----------"]
        for name, annotation, text in content.params:
            body.append(f"{name} : {annotation}" if annotation else name)
            body += _wrap(text, width, "    ")
        sections.append(body)
    for title, value in (("Returns", content.returns), ("Yields", content.yields)):
        if value is not None:
            kind, text = value
            rule = "-" * len(title)
            sections.append([title, rule, kind or "result", *_wrap(text, width, "    ")])
    if content.raises:
        body = ["Raises", "------"]
        for name, text in content.raises:
            body += [name, *_wrap(text, width, "    ")]
        sections.append(body)
    return sections


def _sphinx(content: DocstringContent, width: int) -> list[str]:
    lines: list[str] = []
    for name, annotation, text in content.params:
        lines += _hanging(f":param {name}: ", text, width, "    ")
        if annotation:
            lines.append(f":type {name}: {annotation}")
    for field_name, type_field, value in (
        ("returns", "rtype", content.returns),
        ("yields", "ytype", content.yields),
    ):
        if value is not None:
            kind, text = value
            lines += _hanging(f":{field_name}: ", text, width, "    ")
            if kind:
                lines.append(f":{type_field}: {kind}")
    for name, text in content.raises:
        lines += _hanging(f":raises {name}: ", text, width, "    ")
    return lines


def _hanging(lead: str, text: str, width: int, indent: str) -> list[str]:
    """``lead`` + wrapped ``text``, continuation lines at ``indent``."""
    return textwrap.wrap(
        " ".join(text.split()),
        width=max(width, len(lead) + 20),
        initial_indent=lead,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [lead.rstrip()]


def name_summary(name: str) -> str:
    """``median_low`` -> ``Median low.``, ``NormalDist`` -> ``Normal dist.``: a summary
    that only repeats the name (the evaluation's baseline, and the mistake the expert
    makes on purpose for the checker to refuse)."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").split()
    text = " ".join(words).lower()
    return text[:1].upper() + text[1:] + "."


_THIRD_PERSON = re.compile(r"^([A-Z][a-z]+?)(ies|sses|shes|ches|xes|zes|s)\b")
_KEEP_S = frozenset({"This", "Is", "Has", "Was", "Does", "Its", "As", "Always", "Thus"})
_NOT_A_VERB = ("us", "ss", "is", "as", "os", "ys")
"""Endings of words with an ``s`` that is not a verb's third person (Status, Alias)."""


def imperative(summary: str) -> str:
    """``Returns the x.`` -> ``Return the x.``: the mood the agent's prompt asks for."""
    found = _THIRD_PERSON.match(summary)
    if not found or found.group(0) in _KEEP_S or found.group(0).endswith(_NOT_A_VERB):
        return summary
    stem, ending = found.group(1), found.group(2)
    word = {"ies": stem + "y", "s": stem}.get(ending, stem + ending[:-2])
    return word + summary[found.end() :]
