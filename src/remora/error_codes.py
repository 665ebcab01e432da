"""Every error code Remora raises, with what it means, read from where it is raised.

There is no second list to keep in step: the registry is built from Remora's own source
(shipped with the package), so a new code is known the moment it is raised:

* **raised**: each call that passes a code literal with its message and hint
  (``ToolError("TOOL_303", f"...", "leave it for a person; ...")``, or ``code=...``
  keywords), and dicts mapping a code to its hint;
* **documented**: the clause after each code in the docstrings that list codes (the
  ``RemoraError`` subclasses' docstrings in :mod:`remora.errors`, and module or class
  docstrings with ``Codes:`` / ``Error codes (stable):``), and, in a source checkout, the
  ``| CODE | ... |`` rows of the tables in ``docs/*.md``;
* **family**: the ``RemoraError`` subclass whose prefix the code has (its docstring's
  first line and its exit code).

``remora explain CODE`` shows an entry. A message template keeps its placeholders as
``{...}`` (the values are only known when it is raised).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import remora
from remora.errors import RemoraError

CODE = re.compile(r"\b([A-Z]+)_(\d{3})\b")
CODE_TEXT = re.compile(r"^[A-Z]+_\d{3}$")
_PLACEHOLDER = re.compile(r"^\{[^{}]*\}$")
PACKAGE_ROOT = Path(remora.__file__).resolve().parent
SELF = "remora/error_codes.py"
_RANGE = re.compile(r"\b([A-Z]+)_(\d{3})\s*\.\.\s*([A-Z]+)_(\d{3})\b")
_PROSE_RANGE = re.compile(r"\b[A-Z]+_\d{3}-\d{3}\b")
"""``DISC_102-105`` in a sentence about several codes: not a listing of one."""
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)`'\"])\.\s+(?=[A-Z`(])|;\s|\.$|\n\s*\n")
_LISTING = re.compile(r"\bcodes\b[^:\n]{0,40}:", re.IGNORECASE)
"""Where a docstring starts listing codes: ``Codes:``, ``Error codes (stable):``."""
_TABLE_ROW = re.compile(r"^\|\s*`?([A-Z]+_\d{3})`?\s*\|(.+)\|\s*$", re.MULTILINE)


@dataclass(frozen=True)
class RaiseSite:
    """One place a code is raised: its message template and hint, and where."""

    message: str
    hint: str | None
    where: str
    """``remora/path.py:LINE`` inside the package."""


@dataclass(frozen=True)
class Documented:
    """What a listing of codes says about one: the clause after the code, and where."""

    text: str
    where: str


@dataclass(frozen=True)
class Family:
    """The ``RemoraError`` subclass of a prefix."""

    prefix: str
    error_class: str
    summary: str
    exit_code: int


@dataclass
class ErrorCode:
    """Everything Remora's source says about one code."""

    code: str
    family: Family | None = None
    documented: list[Documented] = field(default_factory=list)
    raised: list[RaiseSite] = field(default_factory=list)

    @property
    def meaning(self) -> str:
        """One line: the first documentation, else the first message raised."""
        if self.documented:
            return self.documented[0].text
        return next((site.message for site in self.raised if site.message), "")

    @property
    def hints(self) -> list[str]:
        """The distinct hints given where it is raised, in source order (a hint that is only
        a computed value, ``{hint}``, says nothing here)."""
        return list(
            dict.fromkeys(
                site.hint for site in self.raised if site.hint and not _PLACEHOLDER.match(site.hint)
            )
        )


def normalize(code: str) -> str:
    """``code`` as Remora writes codes (upper case, surrounding space removed)."""
    return code.strip().upper()


def lookup(code: str) -> ErrorCode | None:
    """The entry of ``code``, or None when Remora's source neither raises nor documents
    it. Only the source files that mention the code are read."""
    wanted = normalize(code)
    if not CODE_TEXT.match(wanted):
        return None
    entries = _collect(_sources(mentioning=wanted), _docs_tables(), only=wanted)
    return entries.get(wanted)


@functools.cache
def registry() -> dict[str, ErrorCode]:
    """Every code Remora's source raises or documents, sorted by code."""
    entries = _collect(_sources(), _docs_tables())
    return dict(sorted(entries.items()))


def families() -> dict[str, Family]:
    """Each ``RemoraError`` subclass imported so far, by prefix."""
    found: dict[str, Family] = {}
    pending: list[type[RemoraError]] = [RemoraError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls is RemoraError or cls.prefix in found:
            continue
        doc = (cls.__doc__ or "").strip().splitlines()
        found[cls.prefix] = Family(
            prefix=cls.prefix,
            error_class=cls.__name__,
            summary=doc[0].strip() if doc else "",
            exit_code=int(cls.exit_code),
        )
    return found


def _exit_code(family: Family | None, code: str) -> int | None:
    """The exit code the CLI gives for ``code`` (RUN_ usage codes exit 2)."""
    if family is None:
        return None
    from remora.errors import RunnerError

    if family.prefix == RunnerError.prefix:
        return 2 if code in RunnerError.usage_codes else 1
    return family.exit_code


def exit_code(entry: ErrorCode) -> int | None:
    """The exit status ``remora`` ends with when ``entry``'s error stops a command."""
    return _exit_code(entry.family, entry.code)


def _sources(mentioning: str | None = None) -> Iterator[tuple[str, str]]:
    """(package-relative path, text) of each Python file of the package, only those whose
    text has ``mentioning`` when given."""
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if mentioning is None or mentioning.rpartition("_")[0] + "_" in text:
            yield f"remora/{path.relative_to(PACKAGE_ROOT).as_posix()}", text


def _docs_tables() -> list[tuple[str, str]]:
    """The docs pages of a source checkout (none in an installed wheel)."""
    docs = PACKAGE_ROOT.parents[1] / "docs"
    if not (PACKAGE_ROOT.parents[1] / "pyproject.toml").is_file() or not docs.is_dir():
        return []
    pages = []
    for path in sorted(docs.glob("*.md")):
        try:
            pages.append((f"docs/{path.name}", path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
    return pages


def _collect(
    sources: Iterable[tuple[str, str]],
    pages: Iterable[tuple[str, str]],
    only: str | None = None,
) -> dict[str, ErrorCode]:
    known = families()
    entries: dict[str, ErrorCode] = {}

    def entry(code: str) -> ErrorCode:
        if code not in entries:
            prefix = code.rpartition("_")[0]
            entries[code] = ErrorCode(code=code, family=known.get(prefix))
        return entries[code]

    for where, text in sources:
        if where == SELF:
            continue  # this module's docstrings only describe the format
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for code, site in _raise_sites(tree, where):
            if only in (None, code):
                entry(code).raised.append(site)
        for docstring, line, listing in _docstrings(tree, where):
            if listing:
                for code, clause in _clauses(docstring):
                    found = Documented(clause, f"{where}:{line}")
                    if only in (None, code) and found not in entry(code).documented:
                        entry(code).documented.append(found)
    for where, text in pages:
        for match in _TABLE_ROW.finditer(text):
            code = match.group(1)
            cells = [cell.strip() for cell in match.group(2).split("|") if cell.strip()]
            if cells and only in (None, code):
                said = cells[0] + (f" ({'; '.join(cells[1:])})" if cells[1:] else "")
                entry(code).documented.append(Documented(said, where))
    return entries


def _docstrings(tree: ast.Module, where: str) -> Iterator[tuple[str, int, bool]]:
    """Each docstring of ``tree`` that lists codes, from where the listing starts, with its
    line: the error classes' docstrings in ``remora/errors.py`` whole, any other from its
    ``Codes:`` (or ``Error codes ...:``) on."""
    nodes: list[ast.AST] = [tree]
    nodes += [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    for node in nodes:
        assert isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        doc = ast.get_docstring(node, clean=True)
        if not doc or not CODE.search(doc):
            continue
        line = getattr(node, "lineno", 1)
        if where == "remora/errors.py" and isinstance(node, ast.ClassDef):
            yield doc, line, True
            continue
        marker = _LISTING.search(doc)
        if marker is not None:
            yield doc[marker.end() :], line, True


def _clauses(doc: str) -> Iterator[tuple[str, str]]:
    """(code, what the listing says of it) for each code a listing docstring names: the
    text after the code up to the next code or the end of the sentence. Codes that share
    a clause (``TOOL_801/TOOL_802 ...``, ``TOOL_101..TOOL_103 ...``) each get it."""
    text = re.sub(r"\s+", " ", _expand_ranges(doc))
    matches = list(CODE.finditer(text))
    waiting: list[str] = []
    for index, match in enumerate(matches):
        code = match.group(0)
        stop = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        clause = text[match.end() : stop]
        end = _SENTENCE_END.search(clause)
        if end is not None:
            clause = clause[: end.start()]
        clause = _tidy(clause)
        waiting.append(code)
        if clause:
            for each in dict.fromkeys(waiting):
                yield each, clause
            waiting = []


def _expand_ranges(doc: str) -> str:
    """``TOOL_101..TOOL_103`` written out as each code; ``DISC_102-105`` (prose about
    several codes) left out."""

    def expand(match: re.Match[str]) -> str:
        prefix, first, other, last = match.groups()
        if other not in (None, prefix) or not first < last or int(last) - int(first) > 20:
            return match.group(0)
        return "/".join(f"{prefix}_{n:03d}" for n in range(int(first), int(last) + 1))

    return _RANGE.sub(expand, _PROSE_RANGE.sub("these codes", doc))


def _tidy(clause: str) -> str:
    if clause.lstrip().startswith(")"):
        return ""  # the code was in parentheses: a mention, not a listing
    clause = clause.strip(" \t,;:/-")
    clause = re.sub(r"^(?:is|are|means)\s+", "", clause)
    clause = re.sub(r"[\s,;]+(?:and|or)$", "", clause).strip(" ,;:/-(")
    if clause.count("(") > clause.count(")"):
        clause = clause.rpartition("(")[0].strip(" ,;:/-") or clause
    if clause.count(")") > clause.count("("):
        clause = clause.rstrip(")").strip()
    return clause if re.search(r"[a-z]", clause) else ""


def _raise_sites(tree: ast.Module, where: str) -> Iterator[tuple[str, RaiseSite]]:
    """Calls that pass a code literal (first argument or ``code=``) with a message and
    hint, and dict entries mapping a code literal to a string (a hint table)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            code_node: ast.expr | None = node.args[0] if node.args else None
            keywords = {kw.arg: kw.value for kw in node.keywords if kw.arg}
            if "code" in keywords:
                code_node = keywords["code"]
            code = _literal(code_node)
            if code is None or not CODE_TEXT.match(code):
                continue
            positional = node.args[1:] if code_node is (node.args[0] if node.args else None) else []
            if not _callee(node).endswith("Error"):  # a helper: its text arguments
                positional = [arg for arg in positional if _textual(arg)]
            message = keywords.get("message") or (positional[0] if positional else None)
            hint = keywords.get("hint") or (positional[1] if len(positional) > 1 else None)
            if message is None:
                continue
            yield code, RaiseSite(source_template(message), _hint(hint), f"{where}:{node.lineno}")
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                code = _literal(key)
                if key is None or code is None or not CODE_TEXT.match(code):
                    continue
                if _literal(value):
                    yield code, RaiseSite("", source_template(value), f"{where}:{key.lineno}")


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _textual(node: ast.expr) -> bool:
    """Whether ``node`` is text written in the source (a message or hint, not a value)."""
    if isinstance(node, ast.BinOp):
        return _textual(node.left) or _textual(node.right)
    return isinstance(node, ast.JoinedStr) or _literal(node) is not None


def _literal(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _hint(node: ast.expr | None) -> str | None:
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return None
    return source_template(node) or None


def source_template(node: ast.expr) -> str:
    """A message as a reader sees it: literal text kept, each computed part ``{...}``."""
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                parts.append("{" + _placeholder(value.value) + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return source_template(node.left) + source_template(node.right)
    if isinstance(node, ast.IfExp):
        return f"{source_template(node.body)} | {source_template(node.orelse)}"
    return "{" + _placeholder(node) + "}"


def _placeholder(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else "..."
