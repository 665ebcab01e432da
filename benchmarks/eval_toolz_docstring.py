"""Remora's docstring agent against a name-based baseline, on toolz 1.0.0 functions whose
docstrings were removed.

Setup. The pinned toolz sdist is fetched (``_toolz.py``). ``--functions N`` public top-level
functions (name not starting with ``_``, a docstring, at least one other statement, the
docstring on lines of its own) are chosen, seeded, from toolz's modules outside
``toolz/tests``. The first line of each original docstring is kept as the reference
summary; then the docstrings are removed (with the blank lines right after them, so the
new docstring does not inherit a D202), and every touched module must still import.

Variants, each on its own copy of the stripped project:

* toolz original: the docstrings as toolz ships them (a reference row, no tool);
* name summary: the summary made from the name (``merge_with`` -> "Merge with."), the
  Args/Returns/Raises sections from Remora's own host builder: the ``docstring_set``
  capability called directly (google style) on an overlay workspace, whose result is then
  written to the copy;
* remora: ``remora analyze <files> --ops docstring --auto-accept --format json`` with
  ``operations.docstring.options.missing_only=true`` (only nodes without a docstring are
  worked on) and ``discovery.node_types=[function]`` (no jobs for methods and classes,
  which are not measured), plus any ``--remora-set``.

Measured on the chosen functions (a function without a docstring counts as failing every
check but ROUGE, where it scores 0):

* coverage: the function has a docstring;
* pydoclint clean: ``pydoclint --style=google`` reports nothing for it; type hints are not
  required anywhere (toolz has no annotations), and docstrings without sections are
  checked too (pydoclint skips them by default, which would pass a bare summary, and
  toolz's own docstrings, which have none);
* ruff-D clean: ``ruff check --select D`` with the google convention reports nothing on its
  lines (D100/D104 and diagnostics of nested definitions are not counted);
* params consistent: the names of its Args section are exactly its parameters (``*args``
  and ``**kwargs`` by name), each once; a function without parameters has no entries;
* ROUGE-L F1 of the docstring's first line against the original first line: longest common
  subsequence of lowercase alphanumeric word tokens (``merge_with`` is two), mean over the
  functions.

For Remora, from the run manifest: jobs per minute (all jobs / wall time of the whole
command, model start included), and on the chosen functions' jobs the mean turns,
tool-call validity (``_toolz.jobs_summary``) and the share of jobs that ran (turns > 0; a
job skipped by the precheck has 0 turns) whose tool sequence (``telemetry.timeline``) is not
ideal. Ideal: ``read_current_docstring`` (optional: with missing_only there is nothing to
read, and the agent's prompt starts at read_signature), ``read_signature``,
``write_docstring``, ``check_docstring``, ``submit_result``, each once, in that order.

    python benchmarks/eval_toolz_docstring.py [--functions 12] [--seed 0] [--module PATH ...]
        [--skip-remora] [--json PATH] [--keep DIR] [--remora-set KEY=VALUE ...]
        [--remora-timeout S]
"""

from __future__ import annotations

import argparse
import ast
import inspect
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from _toolz import (
    TOOLZ,
    Stopwatch,
    check_import,
    copy_project,
    fetch_timed,
    fmt,
    in_workdir,
    jobs_summary,
    mean,
    module_name,
    package_modules,
    pct,
    pick,
    ruff_json,
    run_command,
    run_remora,
    save_raw,
    seeded,
    table,
    tool_sequence,
)

REMORA_SETS = ("operations.docstring.options.missing_only=true", "discovery.node_types=[function]")
PYDOCLINT_OPTIONS = (
    "--style=google",
    "--quiet",
    "--arg-type-hints-in-docstring=False",
    "--arg-type-hints-in-signature=False",
    "--check-return-types=False",
    "--check-yield-types=False",
    "--skip-checking-short-docstrings=False",
)
RUFF_D = ("--select", "D", "--config", "lint.pydocstyle.convention='google'")
MODULE_CODES = frozenset({"D100", "D104"})
IDEAL = ("read_signature", "write_docstring", "check_docstring", "submit_result")
OPTIONAL_FIRST = "read_current_docstring"
ARGS_SECTION = re.compile(
    r"(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters):"
)
ARG_ENTRY = re.compile(r"(\*{0,2}[A-Za-z_]\w*)\s*(\([^)]*\))?\s*:")
VIOLATION = re.compile(r"^\s+(\d+): (DOC\d+): (.*)$")
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Chosen:
    """One selected function: where it is, its parameters and its original summary."""

    path: str
    name: str
    params: tuple[str, ...]
    original_summary: str

    @property
    def key(self) -> str:
        return f"{self.path}::{self.name}"


# --- selection and stripping ------------------------------------------------------------------


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    if args.vararg:
        names.append(args.vararg.arg)
    names.extend(a.arg for a in args.kwonlyargs)
    if args.kwarg:
        names.append(args.kwarg.arg)
    return tuple(name for name in names if name not in ("self", "cls"))


def first_line(docstring: str | None) -> str:
    lines = [line.strip() for line in inspect.cleandoc(docstring or "").splitlines()]
    return next((line for line in lines if line), "")


def docstring_of(node: ast.AST) -> str | None:
    """``ast.get_docstring`` of a def or class, None for any other node."""
    if isinstance(node, (*DEFINITIONS, ast.Module)):
        return ast.get_docstring(node)
    return None


def docstring_lines(text: str, node: ast.AST) -> tuple[int, int] | None:
    """(first, last) line of the node's docstring statement when it stands on lines of its
    own and something else follows it in the body; else None."""
    body = getattr(node, "body", [])
    if len(body) < 2 or docstring_of(node) is None:
        return None
    doc = body[0]
    end_line = doc.end_lineno or doc.lineno
    lines = text.splitlines()
    before = lines[doc.lineno - 1][: doc.col_offset]
    after = lines[end_line - 1][doc.end_col_offset :]
    if before.strip() or after.strip() or doc.lineno <= cast(ast.stmt, node).lineno:
        return None
    return doc.lineno, end_line


def candidates(project: Path) -> list[Chosen]:
    """Every function the selection may take, in file and line order."""
    found = []
    for relative in package_modules(project):
        text = (project / relative).read_text(encoding="utf-8")
        for node in ast.parse(text).body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if node.name.startswith("_") or docstring_lines(text, node) is None:
                continue
            second = node.body[1]
            if isinstance(second, ast.Expr) and isinstance(second.value, ast.Constant):
                continue  # a string statement would become the docstring
            summary = first_line(ast.get_docstring(node))
            found.append(Chosen(relative, node.name, parameters(node), summary))
    return found


def strip_docstrings(project: Path, chosen: Sequence[Chosen]) -> None:
    """Remove the chosen functions' docstrings and the blank lines right after them."""
    for relative in sorted({item.path for item in chosen}):
        path = project / relative
        text = path.read_text(encoding="utf-8")
        names = {item.name for item in chosen if item.path == relative}
        spans = []
        for node in ast.parse(text).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
                span = docstring_lines(text, node)
                if span is not None:
                    spans.append(span)
        lines = text.splitlines(keepends=True)
        for first, last in sorted(spans, reverse=True):
            end = last
            while end < len(lines) and not lines[end].strip():
                end += 1
            del lines[first - 1 : end]
        path.write_text("".join(lines), encoding="utf-8")


# --- the baseline -----------------------------------------------------------------------------


def name_summary(name: str) -> str:
    """``merge_with`` -> ``Merge with.``"""
    words = " ".join(name.replace("_", " ").split())
    return (words[:1].upper() + words[1:] + ".") if words else "Function."


def write_name_summaries(project: Path, chosen: Sequence[Chosen], state: Path) -> dict[str, str]:
    """The baseline: ``docstring_set`` (google style) with the name summary on every chosen
    function, in an overlay workspace whose state lives outside the project; the changed
    files are then written to the project. Returns the errors by function key."""
    errors: dict[str, str] = {}
    try:
        from remora.config import ToolsConfig
        from remora.tools.capabilities import CapabilityContext
        from remora.tools.capabilities.docstrings import docstring_set
        from remora.workspace import WorkspaceManager

        manager = WorkspaceManager(project, state_dir=state)
        with manager.create("bench", "docstring-baseline") as store:
            system = {"options": {"style": "google"}}
            ctx = CapabilityContext(store=store, config=ToolsConfig(), system=system)
            for item in chosen:
                try:
                    docstring_set(ctx, item.path, item.name, name_summary(item.name))
                except Exception as exc:  # reported per function
                    errors[item.key] = f"{type(exc).__name__}: {exc}"
            for relative in store.changed_paths():
                (project / relative).write_bytes(store.read(relative))
    except Exception as exc:  # the whole baseline could not run
        errors["*"] = f"{type(exc).__name__}: {exc}"
    return errors


# --- measuring --------------------------------------------------------------------------------


def documented_params(docstring: str) -> list[str]:
    """The names of the entries of the Google-style Args sections (stars removed)."""
    names: list[str] = []
    lines = inspect.cleandoc(docstring).splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if line.startswith((" ", "\t")) or not ARGS_SECTION.fullmatch(line.strip()):
            continue
        indent = None
        while index < len(lines):
            entry = lines[index]
            width = len(entry) - len(entry.lstrip())
            if entry.strip() and width == 0:
                break
            index += 1
            if not entry.strip():
                continue
            indent = width if indent is None else indent
            match = ARG_ENTRY.match(entry.strip())
            if width == indent and match:
                names.append(match.group(1).lstrip("*"))
    return names


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 on lowercase word tokens (longest common subsequence, by dynamic
    programming over one row)."""
    cand, ref = tokens(candidate), tokens(reference)
    if not cand or not ref:
        return 0.0
    row = [0] * (len(ref) + 1)
    for word in cand:
        previous = 0
        for j, other in enumerate(ref, start=1):
            saved = row[j]
            row[j] = previous + 1 if word == other else max(row[j], row[j - 1])
            previous = saved
    lcs = row[-1]
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(cand), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


def pydoclint_command() -> list[str]:
    binary = Path(sys.executable).parent / "pydoclint"
    return [str(binary)] if binary.is_file() else ["pydoclint"]


def run_pydoclint(project: Path, files: Sequence[str]) -> dict[str, list[tuple[int, str, str]]]:
    """Violations per file, (line, code, message); raises RuntimeError when pydoclint fails."""
    result = run_command([*pydoclint_command(), *PYDOCLINT_OPTIONS, *files], project, 300)
    if result.returncode not in (0, 1) or result.timed_out:
        raise RuntimeError(f"pydoclint failed: {result.tail()}")
    found: dict[str, list[tuple[int, str, str]]] = {relative: [] for relative in files}
    current = None
    for line in (result.stdout + "\n" + result.stderr).splitlines():
        match = VIOLATION.match(line)
        if match and current is not None:
            found.setdefault(current, []).append((int(match[1]), match[2], match[3]))
        elif line.strip() and not line[0].isspace():
            name = line.strip()
            current = next((f for f in files if name == f or name.endswith("/" + f)), name)
    return found


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


@dataclass
class FunctionResult:
    key: str
    has_docstring: bool = False
    summary: str = ""
    pydoclint: list[str] = field(default_factory=list)
    ruff_d: list[str] = field(default_factory=list)
    documented: list[str] = field(default_factory=list)
    params_consistent: bool = False
    rouge_l: float = 0.0

    @property
    def pydoclint_clean(self) -> bool:
        return self.has_docstring and not self.pydoclint

    @property
    def ruff_clean(self) -> bool:
        return self.has_docstring and not self.ruff_d


@dataclass
class Variant:
    name: str
    wall_s: float | None = None
    error: str | None = None
    imports: str = ""
    functions: list[FunctionResult] = field(default_factory=list)
    remora: dict[str, Any] | None = None

    def share(self, attribute: str) -> str:
        hits = sum(bool(getattr(item, attribute)) for item in self.functions)
        return f"{hits}/{len(self.functions)}" if self.functions else "-"

    def rouge(self) -> float | None:
        return mean(item.rouge_l for item in self.functions) if self.functions else None


def measure(variant: Variant, project: Path, chosen: Sequence[Chosen]) -> None:
    """Fill ``variant.functions`` from the project as the variant left it."""
    files = sorted({item.path for item in chosen})
    failed = [m for m in files if not check_import(project, module_name(m))[0]]
    variant.imports = f"{len(files) - len(failed)}/{len(files)}"
    try:
        doclint = run_pydoclint(project, files)
        ruff_items = ruff_json(project, files, RUFF_D)
    except RuntimeError as exc:
        variant.error = str(exc)
        return
    trees: dict[str, ast.Module] = {}
    for relative in files:
        try:
            trees[relative] = ast.parse((project / relative).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError) as exc:
            variant.error = f"{relative} does not parse: {exc}"
    for item in chosen:
        result = FunctionResult(item.key)
        variant.functions.append(result)
        tree = trees.get(item.path)
        node = next(
            (
                n
                for n in (tree.body if tree else [])
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == item.name
            ),
            None,
        )
        if tree is None or node is None:
            continue
        docstring = ast.get_docstring(node)
        result.has_docstring = docstring is not None
        result.pydoclint = [
            f"{code} {message}"
            for line, code, message in doclint.get(item.path, [])
            if owner(tree, line) is node
        ]
        result.ruff_d = [
            f"{d['code']} {d['message']}"
            for d in ruff_items
            if d["filename"] == item.path
            and d["code"] not in MODULE_CODES
            and owner(tree, d["location"]["row"]) is node
        ]
        if docstring is None:
            continue
        result.summary = first_line(docstring)
        result.documented = documented_params(docstring)
        result.params_consistent = sorted(result.documented) == sorted(item.params)
        result.rouge_l = rouge_l(result.summary, item.original_summary)


# --- Remora -----------------------------------------------------------------------------------


def ideal_docstring(job: dict[str, Any]) -> bool:
    """The ideal sequence of the module docstring."""
    sequence = tool_sequence(job)
    if sequence[:1] == [OPTIONAL_FIRST]:
        sequence = sequence[1:]
    return tuple(sequence) == IDEAL


def remora_metrics(
    jobs: list[dict[str, Any]], wall_s: float, chosen: Sequence[Chosen]
) -> dict[str, Any]:
    wanted = {(item.path, item.name) for item in chosen}
    mine = [job for job in jobs if (job.get("file_path"), job.get("qualname")) in wanted]
    ran = [job for job in mine if (job.get("telemetry") or {}).get("turns", 0) > 0]
    off = [job for job in ran if not ideal_docstring(job)]
    sequences = Counter(" > ".join(tool_sequence(job)) or "(none)" for job in ran)
    return {
        "all": jobs_summary(jobs, wall_s),
        "chosen": jobs_summary(mine, wall_s),
        "chosen_jobs": len(mine),
        "off_ideal": len(off),
        "ran": len(ran),
        "sequences": sequences.most_common(8),
        "errors": Counter(
            str(job.get("error"))[:120] for job in mine if job.get("status") == "failed"
        ).most_common(5),
        "skipped_reasons": Counter(
            str(job.get("summary"))[:80] for job in jobs if job.get("status") == "skipped"
        ).most_common(5),
    }


# --- main ---------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--functions", type=int, default=12, help="how many functions")
    parser.add_argument(
        "--module", action="append", default=[], help="choose only from this module (repeat)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-remora", action="store_true", help="run only the baselines")
    parser.add_argument("--json", type=Path, default=None, help="save the raw numbers here")
    parser.add_argument("--keep", type=Path, default=None, help="work (and keep files) here")
    parser.add_argument(
        "--remora-set", action="append", default=[], metavar="KEY=VALUE", help="remora --set"
    )
    parser.add_argument("--remora-timeout", type=float, default=4 * 3600.0, help="seconds")
    args = parser.parse_args()
    return in_workdir(args.keep, "eval-toolz-docstring-", lambda work: run(args, work))


def run(args: argparse.Namespace, work: Path) -> int:
    clock = Stopwatch()
    sdist = fetch_timed(work, clock)
    if sdist is None:
        return 2

    started = time.perf_counter()
    original = copy_project(sdist, work / "original")
    pool = [item for item in candidates(original) if not args.module or item.path in args.module]
    chosen = pick(seeded(args.seed, "functions"), pool, args.functions)
    if not chosen:
        print("no function to choose from")
        return 2
    stripped = copy_project(original, work / "stripped")
    strip_docstrings(stripped, chosen)
    files = sorted({item.path for item in chosen})
    broken = [m for m in files if not check_import(stripped, module_name(m))[0]]
    if broken:
        print(f"stripping the docstrings broke the import of {', '.join(broken)}")
        return 2
    clock.since("select+strip", started)

    variants = []
    started = time.perf_counter()
    reference = Variant("toolz original")
    measure(reference, original, chosen)
    variants.append(reference)

    baseline_dir = copy_project(stripped, work / "name-summary")
    begun = time.perf_counter()
    errors = write_name_summaries(baseline_dir, chosen, work / "baseline-state")
    baseline = Variant("name summary", wall_s=time.perf_counter() - begun)
    if errors:
        baseline.error = "; ".join(f"{key}: {why}" for key, why in list(errors.items())[:3])
    measure(baseline, baseline_dir, chosen)
    variants.append(baseline)
    clock.since("baseline+measure", started)

    if not args.skip_remora:
        remora_dir = copy_project(stripped, work / "remora")
        sets = [*REMORA_SETS, *args.remora_set]
        remora = run_remora(remora_dir, files, "docstring", sets, args.remora_timeout)
        variant = Variant("remora", wall_s=remora.wall_s, error=remora.error)
        if remora.manifest is not None:
            measure(variant, remora_dir, chosen)
            variant.remora = remora_metrics(remora.jobs("docstring"), remora.wall_s, chosen)
        variants.append(variant)
        clock.add("remora", remora.wall_s)

    report(args, pool, chosen, variants, clock)
    save_raw(
        args.json,
        {
            "package": TOOLZ,
            "seed": args.seed,
            "candidates": len(pool),
            "chosen": [asdict(item) for item in chosen],
            "variants": [asdict(variant) for variant in variants],
            "times_s": clock.parts,
        },
    )
    return 0


def report(
    args: argparse.Namespace,
    pool: list[Chosen],
    chosen: list[Chosen],
    variants: list[Variant],
    clock: Stopwatch,
) -> None:
    print(f"{TOOLZ}, seed {args.seed}: {len(chosen)} of {len(pool)} candidate functions")
    print()
    headers = [
        "variant",
        "wall s",
        "coverage",
        "pydoclint clean",
        "ruff-D clean",
        "params consistent",
        "ROUGE-L F1",
        "imports",
    ]
    rows: list[Sequence[object]] = []
    for v in variants:
        if not v.functions:
            rows.append((v.name, v.wall_s, "-", "-", "-", "-", "-", "-"))
            continue
        rows.append(
            (
                v.name,
                v.wall_s,
                v.share("has_docstring"),
                v.share("pydoclint_clean"),
                v.share("ruff_clean"),
                v.share("params_consistent"),
                v.rouge(),
                v.imports,
            )
        )
    print(table(headers, rows))
    for v in variants:
        if v.error:
            print(f"  {v.name}: {v.error}")

    print()
    measured = [v for v in variants if v.functions]
    rows = []
    for index, item in enumerate(chosen):
        cells = [item.key]
        for v in measured:
            result = v.functions[index]
            flags = "".join(
                mark if ok else "."
                for mark, ok in (
                    ("P", result.pydoclint_clean),
                    ("D", result.ruff_clean),
                    ("A", result.params_consistent),
                )
            )
            summary = result.summary if result.has_docstring else "(none)"
            cells.append(f"{flags} {summary[:48]}")
        rows.append(cells)
    print(table(["function", *(v.name for v in measured)], rows))
    print("  P pydoclint clean, D ruff-D clean, A params consistent")
    for v in measured[1:]:
        for result in v.functions:
            for problem in (result.pydoclint + result.ruff_d)[:2]:
                print(f"  {v.name} {result.key}: {problem[:110]}")

    for v in variants:
        if v.remora is not None:
            print_remora(v.remora)
    print(f"\ntimes: {clock.render()}")


def print_remora(m: dict[str, Any]) -> None:
    every, mine = m["all"], m["chosen"]
    calls = mine["valid_calls"] + mine["invalid_calls"]
    print()
    print(
        f"remora: {every['jobs']} jobs {every['statuses']}, {fmt(every['jobs_per_min'])} "
        f"jobs/min; the {m['chosen_jobs']} chosen functions' jobs {mine['statuses']}: "
        f"mean turns {fmt(mine['mean_turns'])}, mean job {fmt(mine['mean_job_wall_s'])}s, "
        f"tool-call validity {fmt(mine['call_validity'])} ({mine['invalid_calls']} invalid "
        f"of {calls}), off-ideal sequence {pct(m['off_ideal'], m['ran'])} "
        f"({m['off_ideal']}/{m['ran']} jobs that ran)"
    )
    for sequence, count in m["sequences"]:
        print(f"  {count:3d}x {sequence}")
    for error, count in m["errors"]:
        print(f"  failed {count}x: {error}")
    for reason, count in m["skipped_reasons"]:
        print(f"  skipped {count}x: {reason}")


if __name__ == "__main__":
    sys.exit(main())
