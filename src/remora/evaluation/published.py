"""``remora eval --as-published``: does an operation harm a package as its authors published it?

Every operation must do no harm: what the authors wrote stays byte for byte, and nothing
it adds breaks or repeats what is there. This mode measures that for any installed
operation, with no injected mistakes and no operation-specific knowledge: ``limit``
seeded modules of the untouched package (of those defining a function or class), the
operation run on them on a scratch copy,
every proposed change accepted, then the copy compared with the original.

Value: jobs, changes accepted, docstrings added, generated test functions added and how many
of them pass, and what the jobs counted of their own work (``counts`` in a job's details,
summed per row in a note: the lint agent's manual issues, issues the model was asked about
and rewrites kept). Harm (each should be 0): the package's tests and doctests that passed
before and fail after, ``>>>`` examples and literal blocks altered, sentences and words of
the authors' docstrings lost, summaries replaced, generated tests that only repeat calls the
package's own tests or examples make, generated tests that fail, modules that no longer
parse. A summary changed only in the mood of its first word or by a final period is a
mechanical fix, counted apart.

:func:`compare_docstrings` is the pure comparison of one source before and after, usable
on its own (a test that every author's sentence and example is still there).
"""

from __future__ import annotations

import ast
import copy
import hashlib
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, Field

from remora import pyast
from remora.evaluation.context import EvalContext, Evaluator
from remora.evaluation.package import Project, is_test_path
from remora.evaluation.report import (
    ADAPTER_ROW,
    HOST_ONLY_ROW,
    Column,
    OperationReport,
    RemoraFigures,
    Score,
    Value,
)
from remora.orchestration import JobRecord

MODULE = "<module>"
"""The qualname of a module's own docstring."""

LossKind = Literal[
    "example", "literal_block", "sentence", "summary", "words", "removed", "mechanical"
]

_DIRECTIVE = re.compile(r"^\s*\.\.\s+[\w:.-]+::")
_UNDERLINE = re.compile(r"^\s*([-=~^*+#])\1{2,}\s*$")
_HEADER = re.compile(r"^\s*(?:[\w .*]+:|[\w.*]+\s+:\s.*)$")
"""A docstring line that is a unit of its own: a section (``Args:``) or a numpy entry
(``x : int``)."""
_ENTRY = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+|:[^:\s][^:]*:\s+|[\w.*]+\s*(?:\([^)]*\))?\s*:\s+)")
"""A line that starts a new unit, its marker not prose: a bullet, a numbered item, a field
(``:param x:``), a Google entry (``x (int):``)."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


# --- docstrings: what a change did to the authors' words ------------------------------------


class DocstringLoss(BaseModel):
    """One thing of an author's docstring that is gone or altered (or, ``mechanical``, a
    summary fix that is not a harm), with where and what, for a person to read."""

    qualname: str
    kind: LossKind
    text: str

    @property
    def harm(self) -> bool:
        return self.kind != "mechanical"


class DocstringHarm(BaseModel):
    """What the change from one source to another did to its docstrings, node by node
    (matched by qualname). :attr:`harms` is 0 exactly when every author's example, literal
    block, sentence, word and summary is still there."""

    docstrings_before: int = 0
    added: int = Field(default=0, description="Nodes that had no docstring and have one.")
    changed: int = Field(default=0, description="Docstrings whose text changed.")
    removed: int = Field(default=0, description="Docstrings (or their nodes) that are gone.")
    examples_altered: int = 0
    literal_blocks_altered: int = 0
    sentences_lost: int = 0
    words_lost: int = 0
    summaries_replaced: int = 0
    mechanical_fixes: int = Field(
        default=0, description="Summaries changed only in the first word's mood or final period."
    )
    details: list[DocstringLoss] = Field(default_factory=list)

    @property
    def harms(self) -> int:
        """Every harm counted once per item (words one by one); mechanical fixes excluded."""
        return (
            self.examples_altered
            + self.literal_blocks_altered
            + self.sentences_lost
            + self.words_lost
            + self.summaries_replaced
        )

    def add(self, other: DocstringHarm) -> None:
        """Add ``other``'s counts and details to these (a package is a sum of modules)."""
        for name in type(self).model_fields:
            if name != "details":
                setattr(self, name, getattr(self, name) + getattr(other, name))
        self.details += other.details


def compare_docstrings(before: str, after: str) -> DocstringHarm:
    """Compare the docstrings of one Python source ``before`` and ``after`` a change.

    Raises SyntaxError (or ValueError) when either does not parse.
    """
    old, new = docstrings_of(before), docstrings_of(after)
    harm = DocstringHarm()
    for qualname, text in old.items():
        now = new.get(qualname)
        if text is None:
            harm.added += now is not None
            continue
        harm.docstrings_before += 1
        if now == text:
            continue
        if now is None:
            harm.removed += 1
            harm.details.append(DocstringLoss(qualname=qualname, kind="removed", text=text))
        else:
            harm.changed += 1
        _compare_one(qualname, text, now or "", harm)
    return harm


def docstrings_of(source: str) -> dict[str, str | None]:
    """Every module, class and function docstring of ``source`` (cleaned as ``inspect``
    does) by qualname (``Outer.method``; a repeated name gets ``#2``, ``#3``), None for a
    node without one."""
    tree = pyast.parse(source)
    found: dict[str, str | None] = {MODULE: ast.get_docstring(tree)}
    seen: Counter[str] = Counter()

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = prefix + child.name
                seen[name] += 1
                found[name if seen[name] == 1 else f"{name}#{seen[name]}"] = ast.get_docstring(
                    child
                )
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def example_blocks(docstring: str) -> list[str]:
    """Each ``>>>`` example: its ``>>>``/``...`` lines and expected output up to a blank
    line or the next ``>>>``, dedented, trailing spaces dropped."""
    return [text for text, _ in _examples(docstring.splitlines())]


def literal_blocks(docstring: str) -> list[str]:
    """Each literal block (the indented block after a paragraph ending ``::``) and each
    directive (``.. code-block:: python``: its line and its indented block), indented as
    against their paragraph's line: a block re-indented within its docstring is altered."""
    return [text for text, _ in _literals(docstring.splitlines())]


def prose_sentences(docstring: str) -> list[str]:
    """The sentences of the docstring's prose (examples and literal blocks left out),
    whitespace-normalized. A section header, an entry (its name and type left out: words
    count those) or a list item is a unit of its own, so inserting one between two
    others loses no sentence."""
    lines = docstring.splitlines()
    taken = {i for _, span in [*_examples(lines), *_literals(lines)] for i in span}
    units: list[list[str]] = []
    indent = 0
    for index, line in enumerate(lines):
        entry = _ENTRY.match(line)
        if index in taken or not line.strip() or _UNDERLINE.match(line):
            units.append([])
        elif _HEADER.match(line):
            units += [[line.strip()], []]
        elif entry:
            units.append([line[entry.end() :].strip()])
            indent = _indent(line)
        elif units and units[-1] and _indent(line) >= indent:
            units[-1].append(line.strip())
        else:
            units.append([line.strip()])
            indent = _indent(line)
    sentences = []
    for unit in units:
        text = " ".join(" ".join(unit).split())
        sentences += [s for s in _SENTENCE_END.split(text) if _WORD.search(s)]
    return sentences


def first_paragraph(docstring: str) -> str:
    """The summary: the lines up to the first blank one, whitespace-normalized."""
    return _normal(_PARAGRAPH_BREAK.split(docstring, maxsplit=1)[0])


def is_mechanical_fix(before: str, after: str) -> bool:
    """Whether summary ``after`` differs from ``before`` only by the mood of its first word
    (``Returns`` -> ``Return``) and/or an added final period."""
    old, new = before.split(), after.split()
    if not old or len(old) != len(new) or old == new:
        return False
    if new[-1].endswith(".") and not old[-1].endswith("."):
        new[-1] = new[-1][:-1]
    if old[1:] != new[1:]:
        return False
    return new[0].lower() in _moods(old[0].lower())


def _moods(word: str) -> set[str]:
    """``word`` and the imperatives it may be the third person of."""
    found = {word}
    if word.endswith("ies"):
        found.add(word[:-3] + "y")
    if word.endswith("es"):
        found.add(word[:-2])
    if word.endswith("s"):
        found.add(word[:-1])
    return found


def _compare_one(qualname: str, old: str, new: str, harm: DocstringHarm) -> None:
    """Add what changing docstring ``old`` into ``new`` lost to ``harm``."""

    def lost(kind: LossKind, text: str) -> None:
        harm.details.append(DocstringLoss(qualname=qualname, kind=kind, text=text))

    for kind, extract in (("example", example_blocks), ("literal_block", literal_blocks)):
        missing = Counter(extract(old)) - Counter(extract(new))
        for text in missing.elements():
            lost(kind, text)  # type: ignore[arg-type]
        count = sum(missing.values())
        if kind == "example":
            harm.examples_altered += count
        else:
            harm.literal_blocks_altered += count
    summary, summary_now = first_paragraph(old), first_paragraph(new)
    compared = old
    if summary and summary not in summary_now:
        if is_mechanical_fix(summary, summary_now):
            harm.mechanical_fixes += 1
            lost("mechanical", f"{summary} -> {summary_now}")
            rest = _PARAGRAPH_BREAK.split(old, maxsplit=1)
            compared = summary_now + ("\n\n" + rest[1] if len(rest) > 1 else "")
        else:
            harm.summaries_replaced += 1
            lost("summary", summary)
    everything = _normal(new)
    for sentence in prose_sentences(compared):
        if sentence not in everything:
            harm.sentences_lost += 1
            lost("sentence", sentence)
    words = Counter(_WORD.findall(compared)) - Counter(_WORD.findall(new))
    if words:
        harm.words_lost += sum(words.values())
        lost("words", " ".join(words.elements()))


def _examples(lines: list[str]) -> list[tuple[str, range]]:
    found = []
    index = 0
    while index < len(lines):
        if not lines[index].lstrip().startswith(">>>"):
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].strip() and not _is_prompt(lines[end]):
            end += 1
        found.append((_block(lines[index:end]), range(index, end)))
        index = end
    return found


def _is_prompt(line: str) -> bool:
    return line.lstrip().startswith(">>>")


def _literals(lines: list[str]) -> list[tuple[str, range]]:
    found = []
    index = 0
    while index < len(lines):
        line = lines[index]
        directive = _DIRECTIVE.match(line)
        if not directive and not line.rstrip().endswith("::"):
            index += 1
            continue
        end = index + 1
        while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > _indent(line)):
            end += 1
        while end > index + 1 and not lines[end - 1].strip():
            end -= 1
        base = _indent(line)
        body = "\n".join(text[base:].rstrip() for text in lines[index + 1 : end]).strip("\n")
        if directive:
            found.append(("\n".join(filter(None, [line.strip(), body])), range(index, end)))
        elif body:
            found.append((body, range(index + 1, end)))
        index = max(end, index + 1)
    return found


def _block(lines: Sequence[str]) -> str:
    return textwrap.dedent("\n".join(line.rstrip() for line in lines)).strip("\n")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _normal(text: str) -> str:
    return " ".join(text.split())


# --- pytest, item by item ---------------------------------------------------------------------

Outcome = Literal["passed", "failed", "error", "xfailed", "xpassed"]
_OUTCOMES: dict[str, Outcome] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "XFAIL": "xfailed",
    "XPASS": "xpassed",
}
_RANK = {"passed": 0, "xfailed": 0, "xpassed": 1, "failed": 2, "error": 3}
_OUTCOME_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S.*?)(?: - .*)?$")
PYTEST = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir=."]
PYTEST_REPORT = ["--continue-on-collection-errors", "-rfEpxX"]
PYTEST_OUTPUT_LIMIT = 8_000_000
"""Enough for the summary line of every item: a cut report would read as tests gone."""
SUMMARY_HEADER = "short test summary info"


@dataclass
class PytestItems:
    """Each collected item's outcome by node id, the files that could not be collected
    (with pytest's reason), or why pytest could not run at all."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    uncollected: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    @property
    def passed(self) -> list[str]:
        return sorted(item for item, outcome in self.outcomes.items() if outcome == "passed")

    def broken_in(self, after: PytestItems) -> list[str]:
        """The items that passed here and do not pass (or are gone) in ``after``."""
        return [item for item in self.passed if after.outcomes.get(item) != "passed"]


def parse_pytest_items(stdout: str) -> PytestItems:
    """The outcomes pytest's short summary (``-rfEpxX``) lists; a collection error names
    a file, not an item."""
    items = PytestItems()
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if SUMMARY_HEADER in line), None)
    for line in lines[start + 1 :] if start is not None else []:
        match = _OUTCOME_LINE.match(line.rstrip())
        if match is None:
            continue
        outcome, node = _OUTCOMES[match.group(1)], match.group(2).strip()
        if "::" not in node and outcome == "error":
            items.uncollected[node] = line.partition(" - ")[2].strip() or "collection error"
            continue
        earlier = items.outcomes.get(node)
        if earlier is None or _RANK[outcome] > _RANK[earlier]:
            items.outcomes[node] = outcome
    return items


def pytest_items(project: Project, args: Sequence[str], timeout: float, what: str) -> PytestItems:
    """pytest on ``args`` in ``project``'s sandbox, item by item (exit 5, nothing collected,
    is an empty result; a run that cannot finish is the result's error)."""
    if not args:
        return PytestItems()
    result = project.run(
        [sys.executable, *PYTEST, *PYTEST_REPORT, *args],
        timeout,
        what=f"{what} ({project.root})",
        output_limit=PYTEST_OUTPUT_LIMIT,
    )
    items = parse_pytest_items(result.stdout)
    if result.timed_out or result.returncode not in (0, 1, 5):
        items.error = f"{what} could not run: {result.tail()}"
    elif result.returncode in (0, 1) and SUMMARY_HEADER not in result.stdout:
        items.error = f"{what}: pytest's short test summary is missing from its output"
    return items


def doctest_items(project: Project, modules: Sequence[str], timeout: float) -> PytestItems:
    """The doctests of ``modules`` (pytest ``--doctest-modules``, under the package's own
    pytest settings)."""
    return pytest_items(project, ["--doctest-modules", *modules], timeout, "the doctests")


# --- generated tests ----------------------------------------------------------------------------

TestDef = ast.FunctionDef | ast.AsyncFunctionDef


class GeneratedTest(BaseModel):
    """One test function a run added: its file, its name (``Class::test`` in a class), the
    calls it makes to the package, whether it passes and whether it duplicates."""

    path: str
    name: str
    calls: list[str]
    passed: bool | None = None
    duplicate: bool = False

    @property
    def node_id(self) -> str:
        return f"{self.path}::{self.name}"


def collected_tests(source: str) -> dict[str, TestDef]:
    """The test functions pytest collects by default, by name (``Class::name`` in a
    ``Test`` class)."""
    found: dict[str, TestDef] = {}
    for node in pyast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    item.name.startswith("test")
                ):
                    found[f"{node.name}::{item.name}"] = item
    return found


def call_text(call: ast.Call) -> str:
    """A call's source, normalized: as ``ast.unparse`` writes it (spacing, quotes), with
    every dotted callee reduced to its last name (``toolz.merge(a)`` -> ``merge(a)``), so
    the same call written through another import compares equal."""
    normalized = _ShortCallees().visit(copy.deepcopy(call))
    return ast.unparse(normalized)


class _ShortCallees(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = _dotted_last(node.func)
        if name is not None:
            node.func = ast.Name(id=name, ctx=ast.Load())
        return node


def _dotted_last(node: ast.expr) -> str | None:
    """The last name of a dotted name (``a.b.c`` -> ``c``), None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and _dotted_last(node.value) is not None:
        return node.attr
    return None


def _root_name(node: ast.expr) -> str | None:
    """The name an expression such as ``mod.Cls(1).method`` starts from."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


def package_names(tree: ast.Module, packages: Iterable[str]) -> set[str]:
    """The names a module binds by importing from ``packages`` (top-level import names)."""
    tops = set(packages)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in tops:
                    names.add(alias.asname or top)
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module.split(".")[0] in tops
        ):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def package_calls(function: ast.AST, names: set[str]) -> list[str]:
    """The calls in ``function`` to what ``names`` (the package's imports) bind, as
    :func:`call_text` writes them, in order."""
    return [
        call_text(node)
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and _root_name(node.func) in names
    ]


def known_calls(sources: Iterable[str], docstrings: Iterable[str]) -> set[str]:
    """Every call the package's own tests (``sources``) and docstring examples make, as
    :func:`call_text` writes them: what a generated test must not merely repeat."""
    found: set[str] = set()
    trees: list[ast.AST] = []
    for source in sources:
        try:
            trees.append(pyast.parse(source))
        except (SyntaxError, ValueError):
            continue
    for docstring in docstrings:
        for block in example_blocks(docstring):
            code = [
                line[4:] if len(line) > 3 else ""
                for line in block.splitlines()
                if line.startswith((">>>", "..."))
            ]
            try:
                trees.append(pyast.parse("\n".join(code)))
            except (SyntaxError, ValueError):
                continue
    for tree in trees:
        found.update(call_text(node) for node in ast.walk(tree) if isinstance(node, ast.Call))
    return found


def is_duplicate(calls: Sequence[str], known: set[str]) -> bool:
    """A generated test duplicates the package's own when it calls the package and every
    such call is one the package's tests or examples already make."""
    return bool(calls) and all(call in known for call in calls)


def generated_tests(
    before: dict[str, str], after: dict[str, str], packages: Iterable[str], known: set[str]
) -> list[GeneratedTest]:
    """The test functions in ``after``'s test files (texts by relative path) that
    ``before`` does not have, with their package calls and whether they duplicate."""
    found = []
    for path, text in sorted(after.items()):
        if not path.endswith(".py") or not is_test_path(path) or before.get(path) == text:
            continue
        try:
            tree = pyast.parse(text)
            earlier = collected_tests(before[path]) if path in before else {}
        except (SyntaxError, ValueError):
            continue
        names = package_names(tree, packages)
        for name, node in collected_tests(text).items():
            if name in earlier:
                continue
            calls = package_calls(node, names)
            found.append(
                GeneratedTest(
                    path=path, name=name, calls=calls, duplicate=is_duplicate(calls, known)
                )
            )
    return found


# --- the evaluation --------------------------------------------------------------------------

HOST_ONLY_SET = "operations.{operation}.options.use_model=false"
FOLDERS = {ADAPTER_ROW: "as-published", HOST_ONLY_ROW: "as-published-host-only"}
NOTED = 6
"""How many harms the notes quote per row (``details`` has them all)."""

VALUE_COLUMNS = [
    Column(key="jobs", label="jobs", kind="count", help="jobs run on the chosen modules"),
    Column(
        key="changes",
        label="changes",
        kind="count",
        help="jobs that proposed a change (every one accepted)",
    ),
    Column(
        key="files_added",
        label="files added",
        kind="count",
        help="files the run added (test modules, fixtures, ...)",
    ),
    Column(
        key="docstrings_added",
        label="docstrings added",
        kind="count",
        help="nodes of the chosen modules that had no docstring and have one",
    ),
    Column(key="tests_added", label="tests added", kind="count", help="test functions added"),
    Column(
        key="tests_added_passing",
        label="tests added passing",
        kind="count",
        help="test functions added that pass (pytest on their files after the run)",
    ),
    Column(
        key="doctests_before",
        label="doctests before",
        kind="count",
        help="doctests of the chosen modules passing before (pytest --doctest-modules)",
    ),
    Column(
        key="doctests_after",
        label="doctests after",
        kind="count",
        help="doctests of the chosen modules passing after",
    ),
]
HARM_COLUMNS = [
    Column(
        key="tests_broken",
        label="tests broken",
        kind="count",
        help="the package's own tests that passed before and fail after (must be 0)",
    ),
    Column(
        key="doctests_broken",
        label="doctests broken",
        kind="count",
        help="doctests that passed before and fail after (must be 0)",
    ),
    Column(
        key="examples_altered",
        label="examples altered",
        kind="count",
        help="`>>>` examples of the authors' docstrings no longer there verbatim (must be 0)",
    ),
    Column(
        key="literal_blocks_altered",
        label="literal blocks altered",
        kind="count",
        help="`::` and directive blocks no longer there verbatim (must be 0)",
    ),
    Column(
        key="sentences_lost",
        label="sentences lost",
        kind="count",
        help="sentences of the authors' docstrings no longer in them (must be 0)",
    ),
    Column(
        key="words_lost",
        label="words lost",
        kind="count",
        help="words of the authors' docstrings gone, counted one by one (must be 0)",
    ),
    Column(
        key="summaries_replaced",
        label="summaries replaced",
        kind="count",
        help="first paragraphs of docstrings replaced, not only fixed (must be 0)",
    ),
    Column(
        key="tests_duplicate",
        label="duplicate tests",
        kind="count",
        help="tests added whose every call to the package its own tests or examples "
        "already make (must be 0)",
    ),
    Column(
        key="tests_added_failing",
        label="failing tests added",
        kind="count",
        help="tests added that fail (must be 0)",
    ),
    Column(
        key="modules_unparsable",
        label="modules broken",
        kind="count",
        help="modules that parsed before and do not after (must be 0)",
    ),
]
COLUMNS = [
    *VALUE_COLUMNS,
    *HARM_COLUMNS,
    Column(
        key="mechanical_fixes",
        label="mechanical fixes",
        kind="count",
        help="summaries changed only in the first word's mood or by a final period (no harm)",
    ),
    Column(key="harm", label="harm", kind="count", help="the sum of the harm columns (must be 0)"),
]
HARM_KEYS = [column.key for column in HARM_COLUMNS]


@dataclass
class Before:
    """The untouched package, measured once for every row."""

    modules: list[str]
    files: dict[str, str]
    doctests: PytestItems
    tests: PytestItems | None
    known: set[str]
    packages: list[str]


@dataclass
class Measured:
    """One row: its values, what ``details`` keeps, the harms worth quoting."""

    values: dict[str, Value]
    details: dict[str, Any]
    harms: list[str]
    error: str | None = None


def as_published(operation: str) -> Evaluator:
    """The evaluator that runs ``operation`` on the package as published (see the module)."""

    def evaluate(ctx: EvalContext) -> OperationReport:
        return evaluate_as_published(ctx, operation)

    return evaluate


def evaluate_as_published(ctx: EvalContext, operation: str) -> OperationReport:
    """``operation`` on ``ctx.limit`` seeded modules of the untouched package (of those
    with a function or class), every change accepted: one row for Remora as configured
    and, when the operation asks the model (``options.use_model``), one for the host
    alone."""
    modules = ctx.pick(choose_modules(ctx.original), "as-published")
    report = OperationReport(
        operation=operation, unit="modules", selection=modules, columns=COLUMNS, scores=[]
    )
    if not modules:
        report.error = "the package has no module outside its tests"
        return report
    rows: list[tuple[str, list[str]]] = [(ADAPTER_ROW, [])]
    options = ctx.session.config(ctx.original).operations.get(operation)
    if options is not None and options.options.get("use_model") is True:
        rows.append((HOST_ONLY_ROW, [HOST_ONLY_SET.format(operation=operation)]))
    rows = [(name, sets) for name, sets in rows if ctx.measures(name)]
    ctx.progress.expect(1 + len(rows))
    before = measure_before(ctx, modules)
    ctx.progress.done()
    notes = _before_notes(ctx, before)
    details: dict[str, Any] = {"doctests_uncollected": before.doctests.uncollected}
    for name, sets in rows:
        score, figures, measured = _row(ctx, operation, before, name, sets, len(rows))
        report.scores.append(score)
        report.remora.append(figures)
        details[name] = measured.details
        counted = measured.details["job_counts"]
        if counted:
            said = ", ".join(f"{key} {count}" for key, count in sorted(counted.items()))
            notes.append(f"{name}: the jobs counted {said}")
        shown = measured.harms[:NOTED]
        notes += [f"{name}: {harm}" for harm in shown]
        if len(measured.harms) > len(shown):
            notes.append(f"{name}: {len(measured.harms) - len(shown)} more harms in details")
    report.notes = notes
    report.details = details
    return report


def choose_modules(project: Project) -> list[str]:
    """The modules an operation has nodes to work on: those defining a function or class
    (a package's re-exporting ``__init__`` has none); all of them when none does."""
    modules = project.modules()
    found = []
    for relative in modules:
        try:
            tree = pyast.parse((project.root / relative).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        if any(isinstance(node, _DEFINITIONS) for node in ast.walk(tree)):
            found.append(relative)
    return found or modules


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def measure_before(ctx: EvalContext, modules: list[str]) -> Before:
    """The untouched package's files, doctests, tests and known calls."""
    original = ctx.original
    ctx.progress.doing("the package's doctests as published")
    doctests = doctest_items(original, modules, ctx.test_timeout)
    tests = None
    if ctx.suite.status != "cannot_run":
        ctx.progress.doing("the package's tests as published, test by test")
        tests = pytest_items(original, original.test_paths(), ctx.test_timeout, "the tests")
    texts = _texts(original.root)
    docstrings = []
    for relative in original.modules():
        try:
            docstrings += [d for d in docstrings_of(texts.get(relative, "")).values() if d]
        except (SyntaxError, ValueError):
            continue
    own_tests = [
        text for path, text in texts.items() if path.endswith(".py") and is_test_path(path)
    ]
    return Before(
        modules=modules,
        files=texts,
        doctests=doctests,
        tests=tests,
        known=known_calls(own_tests, docstrings),
        packages=[entry.removesuffix(".py") for entry in original.source.entries],
    )


def _row(
    ctx: EvalContext,
    operation: str,
    before: Before,
    name: str,
    sets: Sequence[str],
    rows: int,
) -> tuple[Score, RemoraFigures, Measured]:
    copy_ = ctx.scratch(FOLDERS[name])

    def planned(jobs: int) -> None:
        ctx.progress.expect(1 + rows + jobs * rows)
        ctx.progress.doing(f"{name}: {jobs} {operation} job(s)")

    def finished(job: JobRecord) -> None:
        ctx.progress.doing(f"{name}: {job.label} {job.status}")
        ctx.progress.done()

    ctx.progress.doing(f"{name}: planning")
    run = ctx.session.run(
        copy_, before.modules, [operation], sets=sets, on_planned=planned, on_job=finished
    )
    ctx.progress.doing(f"{name}: measuring")
    measured = measure_after(ctx, before, copy_, run.of(operation))
    ctx.progress.done()
    score = Score(
        tool=name,
        kind="remora",
        values=measured.values,
        wall_s=run.wall_s,
        error=run.error or measured.error,
    )
    return score, run.figures(name, operation), measured


def measure_after(
    ctx: EvalContext, before: Before, project: Project, jobs: Sequence[JobRecord]
) -> Measured:
    """What the run left in ``project``, against the untouched package."""
    after = _texts(project.root)
    added = sorted(set(after) - set(before.files))
    changed = sorted(p for p in before.files if p in after and after[p] != before.files[p])
    removed = sorted(set(before.files) - set(after))
    harms: list[str] = []
    errors: list[str] = []

    docstrings, unparsable = DocstringHarm(), []
    compared = set(before.modules) | {
        p for p in [*changed, *removed] if p.endswith(".py") and not is_test_path(p)
    }
    for path in sorted(compared):
        try:
            found = compare_docstrings(before.files.get(path, ""), after.get(path, ""))
        except (SyntaxError, ValueError):
            if _parses(before.files.get(path, "")):
                unparsable.append(path)
                harms.append(f"module broken: {path} no longer parses")
            continue
        for loss in found.details:
            loss.qualname = f"{path}:{loss.qualname}"
            if loss.harm:
                harms.append(f"{_HARM_WORDS[loss.kind]} at {loss.qualname}: {_quote(loss.text)}")
        docstrings.add(found)

    touched = bool(added or changed or removed)
    doctests_after = doctest_items(project, before.modules, ctx.test_timeout) if touched else None
    doctests_broken = before.doctests.broken_in(doctests_after or before.doctests)
    harms += [f"doctest broken: {item}" for item in doctests_broken]
    if doctests_after is not None and doctests_after.error:
        errors.append(doctests_after.error)

    tests_broken: list[str] | None = None
    if before.tests is not None:
        tests_after = before.tests
        if touched:
            paths = ctx.original.test_paths()
            tests_after = pytest_items(project, paths, ctx.test_timeout, "the tests")
            if tests_after.error:
                errors.append(tests_after.error)
        tests_broken = before.tests.broken_in(tests_after)
        harms += [f"test broken: {item}" for item in tests_broken]

    generated = generated_tests(before.files, after, before.packages, before.known)
    if generated:
        files = sorted({test.path for test in generated})
        run = pytest_items(project, files, ctx.test_timeout, "the generated tests")
        for test in generated:
            test.passed = _function_passed(run, test.node_id)
    failing = [test for test in generated if not test.passed]
    duplicates = [test for test in generated if test.duplicate]
    harms += [f"generated test fails: {test.node_id}" for test in failing]
    harms += [
        f"generated test repeats the package's own calls: {test.node_id}: "
        f"{_quote('; '.join(test.calls))}"
        for test in duplicates
    ]

    values: dict[str, Value] = {
        "jobs": len(jobs),
        "changes": sum(job.review == "pending" for job in jobs),
        "files_added": len(added),
        "docstrings_added": docstrings.added,
        "tests_added": len(generated),
        "tests_added_passing": len(generated) - len(failing),
        "doctests_before": len(before.doctests.passed),
        "doctests_after": len((doctests_after or before.doctests).passed),
        "tests_broken": len(tests_broken) if tests_broken is not None else None,
        "doctests_broken": len(doctests_broken),
        "examples_altered": docstrings.examples_altered,
        "literal_blocks_altered": docstrings.literal_blocks_altered,
        "sentences_lost": docstrings.sentences_lost,
        "words_lost": docstrings.words_lost,
        "summaries_replaced": docstrings.summaries_replaced,
        "tests_duplicate": len(duplicates),
        "tests_added_failing": len(failing),
        "modules_unparsable": len(unparsable),
        "mechanical_fixes": docstrings.mechanical_fixes,
    }
    values["harm"] = sum(int(values[key] or 0) for key in HARM_KEYS)
    counts = job_counts(jobs)
    details = {
        "job_counts": dict(counts),
        "files_added": added,
        "files_changed": changed,
        "files_removed": removed,
        "docstrings": docstrings.model_dump(),
        "doctests_broken": doctests_broken,
        "tests_broken": tests_broken,
        "generated_tests": [test.model_dump() for test in generated],
        "modules_unparsable": unparsable,
        "jobs": [
            {
                "job": job.label,
                "status": job.status,
                "review": job.review,
                "summary": job.summary,
                "details": job.details,
            }
            for job in jobs
        ],
    }
    return Measured(values, details, harms, "; ".join(errors) or None)


def job_counts(jobs: Iterable[JobRecord]) -> Counter[str]:
    """What the jobs counted of their own work (``details["counts"]``, a mapping of names
    to integers an operation may report, such as the lint agent's issues asked about and
    rewrites kept), summed."""
    total: Counter[str] = Counter()
    for job in jobs:
        counts = job.details.get("counts")
        if not isinstance(counts, dict):
            continue
        for name, count in counts.items():
            if isinstance(count, int) and not isinstance(count, bool):
                total[str(name)] += count
    return total


def _before_notes(ctx: EvalContext, before: Before) -> list[str]:
    notes = [
        "every proposed change is accepted on a scratch copy of the package as published; "
        "each harm column should be 0"
    ]
    for path, why in sorted(before.doctests.uncollected.items()):
        notes.append(f"doctests of {path} cannot be collected as published ({why}): not counted")
    if before.doctests.error:
        notes.append(f"as published: {before.doctests.error}")
    if before.tests is None:
        notes.append(f"tests broken: not measured, the package's own tests {ctx.suite.describe()}")
    elif before.tests.error:
        notes.append(f"as published: {before.tests.error}")
    return notes


def _function_passed(items: PytestItems, node_id: str) -> bool:
    """Whether every item of a test function (one per parameter set) passed."""
    outcomes = [
        outcome
        for item, outcome in items.outcomes.items()
        if item == node_id or item.startswith(node_id + "[")
    ]
    return bool(outcomes) and all(outcome == "passed" for outcome in outcomes)


_HARM_WORDS: dict[LossKind, str] = {
    "example": "example altered",
    "literal_block": "literal block altered",
    "sentence": "sentence lost",
    "summary": "summary replaced",
    "words": "words lost",
    "removed": "docstring removed",
    "mechanical": "mechanical fix",
}
_SKIPPED_PARTS = frozenset({".remora", "__pycache__"})


def _texts(root: Path) -> dict[str, str]:
    """Every file of a scratch copy by relative posix path: its text, or its digest when it
    is not UTF-8 (Remora's own state and bytecode left out)."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        relative = PurePosixPath(path.relative_to(root).as_posix())
        if _SKIPPED_PARTS.intersection(relative.parts) or not path.is_file():
            continue
        data = path.read_bytes()
        try:
            found[str(relative)] = data.decode("utf-8")
        except UnicodeDecodeError:
            found[str(relative)] = "sha256:" + hashlib.sha256(data).hexdigest()
    return found


def _parses(source: str) -> bool:
    try:
        pyast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _quote(text: str, width: int = 80) -> str:
    """A short quote of ``text`` on one line."""
    return repr(textwrap.shorten(" ".join(text.split()), width, placeholder=" ..."))
