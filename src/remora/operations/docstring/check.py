"""Check one docstring the way a reviewer would: pydoclint, ruff's D rules, and the names.

``docstring_check`` runs the real pydoclint and ruff (``D`` rules under the pydocstyle
convention of the style) on the workspace's current text and keeps what they report about
this node; it adds its own comparison of documented and actual parameter names. Whether
type hints appear in signatures or docstrings is a project's choice, so pydoclint's
type-hint presence codes are not reported; nor is D206 (a docstring indented with tabs),
which a tab-indented file's docstrings cannot avoid.

``docstring_summary_check`` tells a summary that says something from one that only
repeats the function's name ("Get user." for ``get_user``), which a small model tends to
write and which helps no reader, and from one the host can show to be false or broken: a
result kind the code was not seen returning, code or numbers it does not have, a run of
words said twice, an unfinished sentence, the prompt's own words.

Codes: TOOL_105 no definition with that qualname, TOOL_106 the file does not parse,
TOOL_301 ruff or pydoclint failed.
"""

from __future__ import annotations

import ast
import difflib
import re
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from remora.errors import ToolError
from remora.operations.docstring._format import parse_docstring, standard_style
from remora.operations.docstring.docstrings import ruff_on_text, style_option
from remora.operations.docstring.grounding import contradiction
from remora.tools.capabilities.pysource import locate, parse_python
from remora.tools.capabilities.registry import CapabilityContext, capability
from remora.tools.capabilities.signature import describe
from remora.tools.capabilities.store_io import read_text
from remora.tools.process import python_command, run_command, scrubbed_env

CONVENTIONS = {"google": "google", "numpy": "numpy", "sphinx": "pep257", "plain": "pep257"}
_TYPE_HINT_CODES = frozenset({"DOC105", "DOC106", "DOC107", "DOC108", "DOC109", "DOC110", "DOC111"})
# Not this docstring's doing: module docstrings, and D206 (indented with tabs), which
# follows a tab-indented file's own indentation.
_NOT_THIS_DOCSTRING = frozenset({"D100", "D104", "D206"})
_OUTPUT_LIMIT = 8_000_000  # reports cover the whole file; this node's part is kept
_PYDOCLINT_LINE = re.compile(r"^\s+(\d+): (DOC\d+): (.*)$")
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")
_FILLER = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "it",
        "its",
        "of",
        "for",
        "to",
        "and",
        "or",
        "in",
        "on",
        "with",
        "from",
        "by",
        "as",
        "is",
        "are",
        "be",
        "function",
        "method",
        "class",
        "do",
        "does",
        "run",
        "runs",
        "call",
        "calls",
        "perform",
        "performs",
        "handle",
        "handles",
        "given",
        "value",
        "values",
    ]
)


@capability
def docstring_check(
    ctx: CapabilityContext, path: str, qualname: str, style: str | None = None
) -> dict[str, Any]:
    """Check the docstring of one function, method or class; list every problem found.

    ``clean`` is true when it exists and pydoclint, ruff's D rules for the style and the
    parameter names agree. The style is ``style``, else the docstring's own sections',
    else the project's convention; plain prose is checked by ruff's pep257 rules only.
    Each problem has source (pydoclint, ruff or names), code, line and message.
    """
    relative, text = read_text(ctx, path)
    tree = parse_python(text, relative)
    located = locate(tree, qualname, relative)
    node = located.node
    docstring = ast.get_docstring(node, clean=True)
    own = standard_style(docstring) if docstring else None
    chosen = style_option(ctx, style) if style else own or style_option(ctx, None)
    first = node.body[0] if node.body else None
    last_line = first.end_lineno if docstring is not None and first is not None else node.lineno
    span = (node.lineno, last_line or node.lineno)
    problems = [
        *_ruff_problems(ctx, text, relative, chosen, span),
        *(_pydoclint_problems(ctx, text, chosen, node.lineno) if chosen != "plain" else []),
    ]
    info = describe(text, located)
    names = [param["name"] for param in info["params"]]
    missing: list[str] = []
    extra: list[str] = []
    parsed = parse_docstring(docstring) if docstring is not None else None
    if parsed is not None:
        if parsed.section_names:
            missing = [name for name in names if name not in parsed.params]
            extra = [name for name in parsed.params if name not in names]
        for name in missing:
            problems.append(_problem("names", "missing", node.lineno, f"'{name}' not documented"))
        for name in extra:
            problems.append(
                _problem("names", "extra", node.lineno, f"'{name}' documented but not a parameter")
            )
    else:
        problems.insert(0, _problem("names", "missing", node.lineno, "no docstring"))
    problems = list({(p["code"], p["message"]): p for p in problems}.values())
    return {
        "path": relative,
        "qualname": qualname,
        "style": chosen,
        "has_docstring": docstring is not None,
        "summary": parsed.summary if parsed is not None else None,
        "clean": docstring is not None and not problems,
        "problems": problems,
        "missing_params": missing,
        "extra_params": extra,
    }


@capability
def docstring_summary_check(
    ctx: CapabilityContext,
    summary: str,
    name: str,
    avoid: list[str] | None = None,
    known_names: list[str] | None = None,
    kinds: list[str] | None = None,
    code: str | None = None,
    item_kinds: list[str] | None = None,
    examples: list[str] | None = None,
) -> dict[str, Any]:
    """Whether ``summary`` says more than the name ``name`` already does, and nothing the
    host knows to be false.

    ``problem`` is None for a usable summary, else ``empty``, ``multi_line``, ``too_long``
    (over 100 characters), ``copies_text`` (mostly words copied from one of the ``avoid``
    texts, such as the tool's own instructions, or the signature), ``repeats_name`` (no
    word beyond the name's own and filler words), ``repeats_words`` (a run of words said
    twice, as a small model does when it runs on), ``unfinished`` (it stops mid-sentence),
    ``unknown_name`` (it names code that is not in ``known_names``), ``unknown_number`` (it
    states a number the definition's ``code`` does not have) or ``wrong_kind`` (the
    result it claims, or its items, are of none of the observed ``kinds`` or
    ``item_kinds``; see
    :func:`~remora.operations.docstring.grounding.contradiction`; or it claims a thing where
    only True or False were seen), ``vague`` (it would fit any function: "Return the
    result.") or ``copies_example`` (it takes words from the values of the ``examples``
    shown, not from the code). ``detail`` says more.
    """
    text = " ".join(str(summary or "").split())
    words = _WORD.findall(text.lower())
    problem: str | None = None
    detail = ""
    if not text.strip(" .\"'"):
        problem = "empty"
    elif "\n" in str(summary).strip():
        problem = "multi_line"
    elif len(text) > 100:
        problem = "too_long"
    elif _repeats(words, name):
        problem = "repeats_name"
    elif (
        f"{name}(" in text
        or TOOL_TALK.search(text)
        or any(_copied(words, other) for other in avoid or [])
    ):
        problem = "copies_text"
    elif repeated := repeated_run(words):
        problem, detail = "repeats_words", f'"{repeated}" is said twice'
    elif unfinished(text):
        problem, detail = "unfinished", "it stops mid-sentence"
    elif known_names is not None and (unknown := unknown_names(text, known_names)):
        problem, detail = "unknown_name", f"the code has no {', '.join(unknown)}"
    elif code is not None and (numbers := unknown_numbers(text, code)):
        problem, detail = "unknown_number", f"the code has no {', '.join(numbers)}"
    elif wrong := contradiction(text, set(kinds or ()), set(item_kinds or ())):
        problem, detail = "wrong_kind", wrong
    elif set(kinds or ()) == {"boolean"} and not states_a_test(words):
        problem = "wrong_kind"
        detail = "it says the code returns a thing, but it was seen returning only True or False"
    elif vague(words, name):
        problem, detail = "vague", "it would fit any function"
    elif copied := copied_example_words(text, examples or [], code or ""):
        problem = "copies_example"
        detail = f"{', '.join(copied)} come from an example's values, not from the code"
    return {"ok": problem is None, "problem": problem, "detail": detail, "summary": text}


_TEST_WORDS = frozenset(
    [
        *("whether", "if", "true", "false", "bool", "boolean", "check", "checks", "test"),
        *("tests", "tell", "tells", "determine", "determines", "decide", "decides", "is"),
        *("are", "has", "have", "can", "predicate", "verify", "verifies", "validate"),
        *("validates", "match", "matches", "contains", "contain", "detect", "detects"),
        *("ensure", "ensures", "assert", "asserts", "confirm", "confirms"),
    ]
)


def states_a_test(words: list[str]) -> bool:
    """Whether a summary says its code answers a question ("Check if x is a collection.",
    "Return True when ..."), as a function seen returning only True or False does; "Return
    the object as a collection." does not."""
    return any(word in _TEST_WORDS for word in words)


def vague(words: list[str], name: str) -> bool:
    """Whether a summary would fit any function: every word is generic ("Return a value
    when the function is called.", "Process the data and return the result.") and none
    is a word of the name (a summary of only the name's words is ``repeats_name``)."""
    own: set[str] = set()
    for part in _CAMEL.findall(name.replace("_", " ")):
        own |= _forms(part.lower())
    return bool(words) and all(word in _VAGUE and not (_forms(word) & own) for word in words)


_QUOTED = re.compile(r"""(?:[rbuf]|rb|br)?(['"])(.*?)(?<!\\)\1""")
_NAMES = re.compile(r"\b[A-Z][a-z]{2,}")


def copied_example_words(text: str, examples: Sequence[str], code: str) -> list[str]:
    """The words of ``text`` that come from the names the ``examples`` shown make up (a
    capitalized word of a string argument, or a capitalized name an example binds: ``>>>
    Point = namedlist('Point', ['x', 'y'])``) and from nowhere in the ``code``: a small
    model copies such an example's values into the summary ("Named list of points.") as if
    the code were about them. Plain words of an example's strings are not counted: they
    name the concept as often as an example ("camel case" for ``camelize('camel_case')``)."""
    shown: set[str] = set()
    for example in examples:
        call = re.split(r" (?:returns|yields|raises) ", example, maxsplit=1)[0]
        for found in _QUOTED.finditer(call):
            shown.update(word.lower() for word in _NAMES.findall(found.group(2)))
        bound = re.match(r"\s*([A-Z]\w*)\s*=[^=]", call)
        if bound:
            shown.update(part.lower() for part in _CAMEL.findall(bound.group(1)))
    if not shown:
        return []
    own = _without_docstrings(code)
    mine: set[str] = set()
    for part in _CAMEL.findall(own.replace("_", " ")):
        mine |= _forms(part.lower())
    copied: list[str] = []
    for word in _WORD.findall(text.lower()):
        if word in _FILLER or len(word) < 3:
            continue
        forms = _forms(word)
        stem = any(len(form) >= 4 and any(m.startswith(form) for m in mine) for form in forms)
        if any(form in shown for form in forms) and not forms & mine and not stem:
            copied.append(f'"{word}"')
    return list(dict.fromkeys(copied))


def _without_docstrings(code: str) -> str:
    """``code`` without its docstrings (an example in the docstring is not the code's own
    word); string literals the code uses are kept."""
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:
        return code
    lines = code.splitlines(keepends=True)
    spans: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            spans.append((body[0].lineno, body[0].end_lineno or body[0].lineno))
    for start, end in sorted(spans, reverse=True):
        del lines[start - 1 : end]
    return "".join(lines)


def repeated_run(words: list[str]) -> str | None:
    """A run of three words said twice, or a word other than filler said three times."""
    seen: set[tuple[str, ...]] = set()
    for start in range(len(words) - 2):
        run = tuple(words[start : start + 3])
        if run in seen:
            return " ".join(run)
        seen.add(run)
    counts: dict[str, int] = {}
    for word in words:
        if word not in _FILLER:
            counts[word] = counts.get(word, 0) + 1
            if counts[word] >= 3:
                return word
    return None


_DANGLING = frozenset(
    [
        *("a", "an", "the", "of", "to", "and", "or", "is", "are", "was", "be", "with", "for"),
        *("from", "by", "in", "on", "into", "as", "if", "that", "which", "its", "their", "than"),
        *("whether", "when", "not", "but", "at", "this", "these", "each", "every"),
    ]
)


def unfinished(text: str) -> bool:
    """Whether ``text`` stops mid-sentence: on an article, a preposition or a conjunction
    ("If terms are not specified, it is a."), on a comma or colon, or with a bracket or a
    backtick left open."""
    stripped = text.strip().rstrip(".!?").rstrip()
    words = _WORD.findall(stripped.lower())
    if not words or stripped.endswith((",", ":", ";", "-")):
        return bool(words)
    if stripped.count("(") != stripped.count(")") or stripped.count("`") % 2:
        return True
    return stripped[-1].isalnum() and words[-1] in _DANGLING


_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]*\w)")


def unknown_numbers(text: str, code: str) -> list[str]:
    """The numbers above 2 that ``text`` states and ``code`` does not have: a small model
    takes them from the examples it was shown ("Extract the first 100 items.") and states
    them as the code's own."""
    have = set(_NUMBER.findall(code))
    return [
        number
        for number in dict.fromkeys(_NUMBER.findall(text))
        if float(number) > 2 and number not in have
    ]


_CODE_NAME = re.compile(
    r"(?<!`)`([A-Za-z_][\w.]*(?:\(\))?)`(?!`)|\b([A-Za-z_]\w*(?:\.\w+)*\(\))|\b(\w*_\w+)\b"
)


def unknown_names(text: str, known: Sequence[str]) -> list[str]:
    """The names of code in ``text`` (an identifier in single backticks, called as
    ``name()`` or written with an underscore) that are not among ``known`` (a dotted name is
    known by any of its parts); a literal in double backticks (````key=value````) is not a
    name."""
    names = set(known)
    unknown: list[str] = []
    for match in _CODE_NAME.finditer(text):
        shown = next(group for group in match.groups() if group)
        parts = [part for part in re.split(r"[.()\[\]]", shown) if part]
        if parts and not any(part in names for part in parts) and shown not in unknown:
            unknown.append(f"`{shown}`")
    return unknown


_GENERIC = frozenset(
    [
        "result",
        "results",
        "return",
        "returned",
        "returns",
        "object",
        "objects",
        "parameter",
        "parameters",
        "argument",
        "arguments",
        "input",
        "inputs",
        "output",
        "data",
        "item",
        "items",
        "thing",
        "variable",
        "optional",
        "specified",
        "provided",
        "passed",
        "used",
        "use",
        "some",
        "any",
        "instance",
        "type",
        "default",
        "none",
        "exception",
        "error",
        "raised",
        "raise",
        "raises",
        "if",
        "when",
        "occurs",
        "failure",
        "fails",
        "something",
        "wrong",
        "goes",
        "next",
    ]
)
"""Words that say nothing about a particular parameter or value ("The input object.")."""


TOOL_TALK = re.compile(
    r"\bnow call\b|\bcall (?:describe|write_docstring|submit_result|read_signature)\b"
    r"|^document(?:ed)?\b|\bone-line summary\b|\bsections are (?:added|built)\b"
    r"|\bthe host\b|\bfor you\b|\bimperative mo(?:od|de)\b",
    re.IGNORECASE,
)
"""Words of the agent's tools and of its training episodes' submit summaries ("Documented
f: ..."), which a small model copies instead of describing the code."""


def restates(description: str, name: str, annotation: str = "") -> bool:
    """Whether a parameter's, return value's or exception's ``description`` says nothing
    beyond its name (or its function's), its annotation and generic words: filler such
    as "The offsets." for ``offsets``, "The result." or "On failure."."""
    words = _WORD.findall(description.lower())
    own: set[str] = set()
    for part in _CAMEL.findall(f"{name} {annotation}".replace("_", " ")):
        own |= _forms(part.lower())
    return all(word in _FILLER or word in _GENERIC or _forms(word) & own for word in words)


def description_problem(
    description: str, name: str, annotation: str = "", seen: Sequence[str] = ()
) -> str | None:
    """Why a description of a parameter, return value or exception helps no reader, or
    None: it only restates the name (:func:`restates`), is too short to say anything,
    speaks of the tools instead of the code (:data:`TOOL_TALK`), copies text already used
    (the summary, another description: ``seen``), repeats itself, as small models do
    when they run on, or stops mid-sentence."""
    text = " ".join(description.split())
    words = _WORD.findall(text.lower())
    if len(words) < 2 or not any(len(word) > 2 for word in words):
        return "too short to say anything"
    if TOOL_TALK.search(text):
        return "speaks of the tools, not the code"
    if restates(text, name, annotation):
        return "only restates the name"
    for other in seen:
        theirs = _WORD.findall(other.lower())
        if _copied(words, other) or (len(theirs) >= 3 and _copied(theirs, text)):
            return "copies text used elsewhere"
    sentences = [" ".join(_WORD.findall(part.lower())) for part in re.split(r"[.;!?]", text)]
    sentences = [sentence for sentence in sentences if sentence]
    if len(sentences) != len(set(sentences)) or repeated_run(words):
        return "repeats itself"
    if unfinished(text):
        return "stops mid-sentence"
    return None


_SAYS_NOTHING = frozenset(["return", "returns", "get", "gets"])
"""Verbs that add nothing to a name: "Return the is_arity of a function." for ``is_arity``
says only the name."""


def _repeats(words: list[str], name: str) -> bool:
    """Whether every word that is not filler is a form of a word of ``name``."""
    own: set[str] = set()
    for part in _CAMEL.findall(name.replace("_", " ")):
        own |= _forms(part.lower())
    return all(
        _forms(word) & own for word in words if word not in _FILLER and word not in _SAYS_NOTHING
    )


def _copied(words: list[str], other: str) -> bool:
    """Whether at least 70% of ``words`` come, in order, from ``other``."""
    theirs = _WORD.findall(other.lower())
    if not words or not theirs:
        return False
    matcher = difflib.SequenceMatcher(a=words, b=theirs, autojunk=False)
    shared = sum(block.size for block in matcher.get_matching_blocks())
    return shared >= 0.7 * len(words)


def _forms(word: str) -> set[str]:
    """``word`` and what it may be an inflection of (names -> name, parsing -> pars/parse)."""
    forms = {word}
    for suffix, replacement in (
        ("ies", "y"),
        ("es", ""),
        ("s", ""),
        ("ing", ""),
        ("ing", "e"),
        ("ed", ""),
        ("ed", "e"),
        ("d", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            forms.add(word[: -len(suffix)] + replacement)
    return forms


def _problem(source: str, code: str, line: int, message: str) -> dict[str, Any]:
    return {"source": source, "code": code, "line": line, "message": message}


def _ruff_problems(
    ctx: CapabilityContext, text: str, relative: str, style: str, span: tuple[int, int]
) -> list[dict[str, Any]]:
    """ruff's D findings on the lines from ``def`` to the docstring's end, under the
    convention of ``style`` (``--isolated``: the project's own D settings do not apply)."""
    convention = f"--config=lint.pydocstyle.convention='{CONVENTIONS[style]}'"
    items = ruff_on_text(ctx, text, relative, ["D"], (convention,))
    start, end = span
    return [
        _problem("ruff", item["code"], item["location"]["row"], item["message"])
        for item in items
        if item.get("code") not in _NOT_THIS_DOCSTRING and start <= item["location"]["row"] <= end
    ]


def _pydoclint_problems(
    ctx: CapabilityContext, text: str, style: str, def_line: int
) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as home:
        target = Path(home) / "checked.py"
        target.write_text(text, encoding="utf-8")
        result = run_command(
            python_command(
                "-c",
                "import sys; from pydoclint.main import main; sys.exit(main())",
                f"--style={style}",
                "--arg-type-hints-in-docstring=False",
                "--arg-type-hints-in-signature=False",
                "--check-return-types=False",
                "--check-yield-types=False",
                "--quiet",
                str(target),
            ),
            cwd=Path(home),
            env=scrubbed_env(Path(home)),
            timeout=ctx.time_left(ctx.config.subprocess_timeout),
            what="pydoclint",
            output_limit=_OUTPUT_LIMIT,
        )
    if result.returncode not in (0, 1):
        raise ToolError(
            "TOOL_301", f"pydoclint failed (exit code {result.returncode})", result.stderr[-300:]
        )
    problems: list[dict[str, Any]] = []
    for line in (result.stdout + result.stderr).splitlines():  # pydoclint reports on stderr
        match = _PYDOCLINT_LINE.match(line)
        if not match or match.group(2) in _TYPE_HINT_CODES or int(match.group(1)) != def_line:
            continue
        message = re.sub(
            r"\s*\(Or could be other formatting issues: [^)]*\)\.?", "", match.group(3)
        )
        problems.append(_problem("pydoclint", match.group(2), def_line, message.strip()))
    return problems


_VAGUE = (
    _FILLER
    | _GENERIC
    | frozenset(
        [
            *("get", "gets", "give", "gives", "new", "called", "calling", "code", "work"),
            *("works", "process", "processes", "execute", "executes", "provide", "provides"),
            *("compute", "computes", "produce", "produces", "create", "creates", "make"),
            *("makes", "something", "stuff", "operation", "task", "action", "appropriate"),
            *("corresponding", "relevant", "certain", "specific", "accordingly", "needed"),
            *("necessary", "based", "on", "upon", "then", "so", "after", "before", "whole"),
            *("whatever", "one", "ones", "thing", "things", "way", "according", "logic"),
        ]
    )
)
"""Words that say nothing about what a particular function does."""
