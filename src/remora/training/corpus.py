"""The training corpus: real Python files, and the real material each agent learns from.

Files come from the standard library and installed packages (never the packages kept for
evaluation, :data:`HELD_OUT`). Each is known by its ``source``, its path relative to the
parent of the corpus entry it came from (``json/decoder.py``, ``textwrap.py``), which is
also the path the agents see in the scratch project and what splits go by.

What the experts need that the agents' tools do not give them is taken from the files
themselves, never invented: a docstring's first line (the episode then runs on the file
without that docstring, :func:`strip_docstring`), argument lists from real calls in the
function's doctests or in the corpus's tests (:func:`real_cases`), and, for lint, the
file's real issues plus a few realistic defects injected deterministically
(:func:`inject_defects`, with the catalogue the lint evaluation uses).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import json
import random
import re
import subprocess
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from remora import pyast
from remora.errors import TrainingError
from remora.evaluation._injections import CATALOGUE, Source
from remora.tools.capabilities._candidates import candidate_inputs
from remora.tools.capabilities._lint_rules import DEFAULT_RULES
from remora.tools.capabilities.ruff import ruff_command

HELD_OUT = frozenset({"more_itertools", "boltons", "toolz"})
"""Packages the evaluation measures on: never trained on."""

REAL_SOURCES = ("doctest", "test")
"""Where real calls come from: the function's own ``>>>`` examples and the corpus's tests."""

DEFAULT_STDLIB = (
    "_pydecimal.py",
    "argparse.py",
    "base64.py",
    "bisect.py",
    "calendar.py",
    "colorsys.py",
    "configparser.py",
    "csv.py",
    "dataclasses.py",
    "difflib.py",
    "email",
    "fnmatch.py",
    "fractions.py",
    "ftplib.py",
    "getopt.py",
    "gettext.py",
    "graphlib.py",
    "heapq.py",
    "html",
    "ipaddress.py",
    "json",
    "locale.py",
    "netrc.py",
    "optparse.py",
    "plistlib.py",
    "pprint.py",
    "quopri.py",
    "reprlib.py",
    "shlex.py",
    "smtplib.py",
    "statistics.py",
    "string.py",
    "textwrap.py",
    "tomllib",
    "urllib",
    "wave.py",
)
"""Standard-library modules and packages of the default corpus (pure Python, no side
effects on import, none the interpreter itself imports at start-up)."""

DEFAULT_PACKAGES = (
    "attr",
    "click",
    "docstring_parser",
    "dotenv",
    "filelock",
    "h11",
    "idna",
    "iniconfig",
    "jinja2",
    "markdown_it",
    "markupsafe",
    "mdurl",
    "mpmath",
    "packaging",
    "pathspec",
    "platformdirs",
    "pluggy",
    "sortedcontainers",
    "yaml",
)
"""Installed packages of the default corpus (pure Python sources)."""

_TEST_DIRS = frozenset({"test", "tests", "testing"})


@dataclass(frozen=True)
class CorpusFile:
    """One Python file of the corpus."""

    source: str
    path: Path
    entry: Path


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def default_corpus() -> list[Path]:
    """The default corpus entries that exist in this installation."""
    found = [stdlib_dir() / name for name in DEFAULT_STDLIB]
    found += [site_packages() / name for name in DEFAULT_PACKAGES]
    return [path for path in found if path.exists()]


def check_entry(entry: Path) -> None:
    """TRAIN_010 for a held-out package, TRAIN_011 for a path that is not there."""
    held = HELD_OUT.intersection(part.replace("-", "_") for part in entry.parts)
    if held:
        raise TrainingError(
            "TRAIN_010",
            f"{entry} belongs to {', '.join(sorted(held))}, kept for evaluation",
            "leave the evaluation packages (more_itertools, boltons, toolz) out of the corpus",
        )
    if not entry.exists():
        raise TrainingError(
            "TRAIN_011",
            f"corpus entry {entry} does not exist",
            "pass Python files or package directories",
        )


def _in_tests(relative: Path) -> bool:
    return bool(_TEST_DIRS.intersection(relative.parts[:-1])) or relative.name.startswith("test_")


def corpus_files(corpus: Sequence[Path]) -> list[CorpusFile]:
    """Every Python file of the corpus entries (tests and caches left out), by source.

    A file given twice, or two entries giving the same source, counts once (the first).
    """
    files: dict[str, CorpusFile] = {}
    for raw in corpus:
        entry = raw.resolve()
        check_entry(entry)
        paths = [entry] if entry.is_file() else sorted(entry.rglob("*.py"))
        for path in paths:
            relative = path.relative_to(entry.parent)
            if "__pycache__" in relative.parts or (entry.is_dir() and _in_tests(relative)):
                continue
            if path.suffix != ".py" or not path.is_file():
                continue
            files.setdefault(relative.as_posix(), CorpusFile(relative.as_posix(), path, entry))
    return [files[source] for source in sorted(files)]


def read_source(path: Path) -> str | None:
    """The file's text, or None when it is not UTF-8 Python that parses."""
    try:
        text = path.read_text(encoding="utf-8")
        pyast.parse(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    return text


# --- docstrings ---------------------------------------------------------------------------

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class Stripped:
    """A module without one definition's docstring, and that docstring's summary line."""

    text: str
    summary: str
    docstring: str


def find_definition(tree: ast.Module, qualname: str) -> _Definition | None:
    """The class or function ``qualname`` (``Outer.method``) of a module."""
    scope: Sequence[ast.stmt] = tree.body
    found: _Definition | None = None
    for part in qualname.split("."):
        found = next(
            (node for node in scope if isinstance(node, _Definition) and node.name == part),
            None,
        )
        if found is None:
            return None
        scope = found.body
    return found


def summary_problem(docstring: str, name: str = "") -> str | None:
    """Why a docstring's first line is not a summary to learn from (None when it is)."""
    paragraph = inspect.cleandoc(docstring).strip().split("\n\n")[0].strip()
    if not paragraph:
        return "the docstring is empty"
    if "\n" in paragraph:
        return "the summary spans several lines"
    if len(paragraph) > 100:
        return "the summary is longer than 100 characters"
    if len(paragraph.split()) < 3:
        return "the summary has fewer than three words"
    if paragraph.endswith((":", ",", ";")) or paragraph.startswith((">>>", ":", "..", "#")):
        return "the first line is not a summary"
    if "->" in paragraph or (name and re.match(rf"{re.escape(name)}\s*\(", paragraph)):
        return "the first line is a signature"
    if "\\" in paragraph:
        return "the summary holds a backslash"
    return None


def strip_docstring(text: str, qualname: str) -> Stripped | str:
    """``text`` without the docstring of ``qualname`` (and the blank lines after it), with
    its summary line; or why that docstring is not one to learn from."""
    tree = pyast.parse(text)
    node = find_definition(tree, qualname)
    if node is None:
        return "not a class or function of the module"
    docstring = ast.get_docstring(node, clean=False)
    if docstring is None:
        return "no docstring"
    problem = summary_problem(docstring, node.name)
    if problem is not None:
        return problem
    if len(node.body) < 2:
        return "the body is only the docstring"
    statement = node.body[0]
    lines = text.splitlines(keepends=True)
    first, last = statement.lineno, statement.end_lineno or statement.lineno
    before = lines[first - 1][: statement.col_offset]
    after = lines[last - 1][statement.end_col_offset or 0 :]
    if before.strip() or after.strip() or first <= node.lineno:
        return "the docstring shares a line with code"
    second = node.body[1]
    if isinstance(second, ast.Expr) and isinstance(second.value, ast.Constant):
        return "a string statement would become the docstring"
    end = last
    while end < len(lines) and not lines[end].strip():
        end += 1
    stripped = "".join(lines[: first - 1] + lines[end:])
    summary = inspect.cleandoc(docstring).strip().split("\n")[0].strip()
    return Stripped(stripped, summary, inspect.cleandoc(docstring))


# --- real calls ---------------------------------------------------------------------------


@cache
def _test_texts(entry: Path) -> tuple[tuple[str, str], ...]:
    """The test modules of a corpus entry: the standard library's ``test/test_<name>*``
    for its modules, a package's own ``tests/`` otherwise, as (path, text)."""
    stdlib = stdlib_dir().resolve()
    paths: list[Path] = []
    if entry.parent == stdlib:
        stem = entry.stem if entry.is_file() else entry.name
        tests = stdlib / "test"
        paths += sorted(tests.glob(f"test_{stem}.py")) + sorted(tests.glob(f"test_{stem}/**/*.py"))
    elif entry.is_dir():
        paths += sorted(p for p in entry.rglob("*.py") if _in_tests(p.relative_to(entry)))
    found: list[tuple[str, str]] = []
    for path in paths:
        try:
            found.append((f"tests/{path.name}", path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
    return tuple(found)


@cache
def _test_calls(entry: Path) -> dict[str, tuple[str, ...]]:
    """Every call in the entry's tests, as one-line source, by the name it calls: each
    test module is parsed once, not once per function of the corpus."""
    found: dict[str, dict[str, None]] = {}
    for _, text in _test_texts(entry):
        try:
            tree = pyast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if isinstance(name, str):
                with contextlib.suppress(ValueError, RecursionError):
                    found.setdefault(name, {})[ast.unparse(node)] = None
    return {name: tuple(calls) for name, calls in found.items()}


def real_cases(text: str, qualname: str, test_calls: Sequence[str] = ()) -> list[str]:
    """Argument lists of real calls of ``qualname``: its doctests, then ``test_calls``
    (calls of its name in tests, as source), those that fit its signature."""
    project = {"tests/test_calls.py": "\n".join(test_calls)} if test_calls else {}
    try:
        found = candidate_inputs(text, qualname, project, limit=12)
    except (ValueError, SyntaxError, RecursionError):
        return []
    return [item.case.text for item in found if item.source in REAL_SOURCES]


def cases_for(file: CorpusFile, text: str, qualname: str, node_text: str) -> list[str]:
    """:func:`real_cases` of a corpus function, with the tests of its corpus entry (not
    looked for when neither its text has a doctest nor a test calls its name)."""
    calls = _test_calls(file.entry).get(qualname.rsplit(".", 1)[-1], ())
    if not calls and ">>>" not in node_text:
        return []
    return real_cases(text, qualname, calls)


def host_shown(text: str, qualname: str, shown: int = 4) -> list[str]:
    """The argument lists the agents' ``analyze_signature`` will show as found (the host's
    first candidates, from the module alone): proposing them again adds nothing."""
    try:
        found = candidate_inputs(text, qualname, {}, limit=12)
    except (ValueError, SyntaxError, RecursionError):
        return []
    return [item.case.text for item in found[:shown]]


# --- lint defects -------------------------------------------------------------------------


def lint_issue_count(text: str, rules: Sequence[str] = DEFAULT_RULES) -> int | None:
    """How many issues ruff reports in ``text`` with the lint agent's pinned rules (None
    when ruff cannot tell): a file with more than the agent has turns for cannot be
    finished, and its episode would cost minutes."""
    argv = [*ruff_command(), "check", "--isolated", "--no-cache", "--output-format=json"]
    argv += [f"--select={','.join(rules)}", "--stdin-filename=module.py", "-"]
    try:
        done = subprocess.run(
            argv, input=text, capture_output=True, text=True, timeout=60, check=False
        )
        found = json.loads(done.stdout or "[]")
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return len(found) if isinstance(found, list) else None


def inject_defects(text: str, source: str, seed: int, count: int = 3) -> tuple[str, list[str]]:
    """``text`` with up to ``count`` defects of the lint evaluation's catalogue (an unused
    import, ``== None``, a bare ``except``, ...) at seeded sites that touch no line twice,
    and the catalogue keys applied. The same (text, source, seed) gives the same result."""
    rng = random.Random(f"{seed}:{source}")
    order = list(CATALOGUE)
    rng.shuffle(order)
    applied: list[str] = []
    touched: set[int] = set()
    for injection in order:
        if len(applied) >= count:
            break
        try:
            src = Source(text)
        except (SyntaxError, ValueError):
            break
        edits = [
            edit
            for edit in injection.find(src)
            if not touched & set(range(src.line_of(edit.start) - 1, src.line_of(edit.end) + 2))
        ]
        if not edits:
            continue
        edit = rng.choice(edits)
        changed = text[: edit.start] + edit.new + text[edit.end :]
        try:
            pyast.parse(changed)
        except SyntaxError:
            continue
        first, last = src.line_of(edit.start), src.line_of(edit.end)
        delta = edit.new.count("\n") - text[edit.start : edit.end].count("\n")
        touched = {line + delta if line > last else line for line in touched}
        touched.update(range(first, last + delta + 1))
        applied.append(injection.key)
        text = changed
    return text, applied
