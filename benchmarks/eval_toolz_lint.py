"""Remora's lint agent against ruff's own fixer, on lint mistakes injected into toolz 1.0.0.

Setup. The pinned toolz sdist is fetched (``_toolz.py``). ``--modules N`` of its modules
(seeded; modules of at least 40 lines, outside ``toolz/tests``) each get ``--per-module K``
injections (default 8, so that a file's fixes fit the lint agent's 12 turns; 0 = one of
every catalogue entry that fits), each from a different entry of a fixed catalogue
(``--list-injections`` prints it), tried in a seeded order, each at a seeded eligible
site. An injection is a small, semantics-preserving source rewrite that ruff flags with a
code of the lint agent's pinned rule set (``DEFAULT_RULES``, explicit codes). Sites are
found with ``ast`` and the edit is applied to the text; an injection is kept only when the
module still parses, still imports (``python -c "import toolz.<mod>"``) and ruff reports
the intended code on the edited lines; otherwise it is dropped and counted. No two
injections touch the same lines. toolz's test suite is run on the injected project; if a
module's injections break it, that module is injected again one injection at a time,
dropping those that make the suite fail.

Measured. Diagnostics are ``ruff check --isolated --select <DEFAULT_RULES> --output-format
json`` on the chosen modules, compared as multisets of (file, code, message) with line
numbers ignored (also inside messages):

* injected = diagnostics of the injected project that the clean one does not have;
* host-fixable = injected diagnostics Remora's own ``lint_issues`` (default options) marks
  with a fix kind other than manual: what the agent could fix at best;
* fixed / fix rate = injected diagnostics no longer present after the tool;
* new = diagnostics after the tool that the injected project did not have;
* pre-existing fixed = diagnostics of the clean toolz that the tool removed too;
* noqa added = ``# noqa`` and ``ruff: noqa`` comments added (must be 0);
* parses = chosen modules that still parse; tests = toolz's own suite still passes.

Three copies of the injected project are given to: (a) ``ruff check --select <rules>
--fix``, (b) the same with ``--unsafe-fixes``, (c) ``remora analyze <modules> --ops lint
--auto-accept --format json``. For Remora, from the run manifest: jobs per minute (jobs /
wall time of the whole command, model start included), mean turns per job, tool-call
validity (valid / (valid + rejected) calls, see ``_toolz.jobs_summary``) and the share of
jobs whose tool sequence (``telemetry.timeline`` tool names in order) is not ideal. Ideal:
``run_linter`` first, then only ``apply_fix`` calls, then ``submit_result`` last, where
(one fix per issue, none failed) the number of ``apply_fix`` calls is at most the number
of fixable issues ``lint_issues`` lists for the file before the run, and the job's
``details.fixable_left`` is 0 when present. A failed ``apply_fix`` is not visible in the
manifest itself; it shows as an extra call or as fixable issues left. Jobs the precheck
skipped (0 turns) have no sequence and are left out of that share.

    python benchmarks/eval_toolz_lint.py [--modules 4] [--per-module 8] [--seed 0]
        [--module PATH ...] [--skip-remora] [--json PATH] [--keep DIR]
        [--remora-set KEY=VALUE ...] [--remora-timeout S] [--list-injections]
"""

from __future__ import annotations

import argparse
import ast
import bisect
import contextlib
import io
import itertools
import re
import sys
import time
import tokenize
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
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
    module_name,
    package_modules,
    pct,
    pick,
    ruff_json,
    run_command,
    run_package_tests,
    run_remora,
    save_raw,
    seeded,
    table,
    tool_sequence,
)
from remora.tools.capabilities._lint_rules import DEFAULT_RULES
from remora.tools.capabilities.ruff import ruff_command

SELECT = "--select=" + ",".join(DEFAULT_RULES)
MIN_MODULE_LINES = 40
LINE_NUMBER = re.compile(r"\bline \d+")
NOQA = re.compile(r"#\s*noqa\b|ruff\s*:\s*noqa", re.IGNORECASE)
SIMPLE = (
    ast.Return,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.Expr,
    ast.Pass,
    ast.Break,
    ast.Continue,
    ast.Raise,
    ast.Delete,
    ast.Import,
    ast.ImportFrom,
    ast.Global,
    ast.Nonlocal,
    ast.Assert,
)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
BOOL_CALLS = ("isinstance", "issubclass", "callable", "hasattr")
BUILTIN_TYPES = ("list", "tuple", "dict", "set", "frozenset", "str", "bytes", "int", "float")
SPARE_IMPORTS = ("string", "textwrap", "copy", "types", "math", "json", "numbers", "abc")
SPARE_NAMES = ("count", "size", "limit", "label", "marker", "extra", "spare", "seen")
MAPPING_METHODS = ("items", "keys", "values", "get", "setdefault")

Diagnostic = tuple[str, str, str]  # (file, code, message)


# --- source positions ---------------------------------------------------------------------


class Source:
    """A module's text and tree, with ast positions turned into text offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tree = ast.parse(text)
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.parents: dict[ast.AST, ast.AST] = {}
        self._bound: set[str] | None = None
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node

    def offset(self, line: int, col: int) -> int:
        """Text offset of ast's (1-based line, UTF-8 byte column)."""
        if line > len(self.lines):
            return len(self.text)
        prefix = self.lines[line - 1].encode("utf-8")[:col].decode("utf-8", "replace")
        return self.starts[line - 1] + len(prefix)

    def start(self, node: ast.AST) -> int:
        line, col, _, _ = span(node)
        return self.offset(line, col)

    def end(self, node: ast.AST) -> int:
        _, _, line, col = span(node)
        return self.offset(line, col)

    def segment(self, node: ast.AST) -> str:
        return self.text[self.start(node) : self.end(node)]

    def line_of(self, offset: int) -> int:
        return min(bisect.bisect_right(self.starts, offset), len(self.lines) + 1)

    def line_start(self, line: int) -> int:
        return self.starts[min(line, len(self.lines) + 1) - 1] if line >= 1 else 0

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def in_fstring(self, node: ast.AST) -> bool:
        """Inside an f-string (whose inner positions Python 3.11 reports unreliably)."""
        return any(isinstance(up, ast.JoinedStr) for up in self.ancestors(node))

    def function_of(self, node: ast.AST) -> ast.AST | None:
        return next((up for up in self.ancestors(node) if isinstance(up, FUNCTIONS)), None)

    def shadowed(self, name: str) -> bool:
        """Whether the module binds ``name`` anywhere (so it may not be the builtin)."""
        if self._bound is None:
            self._bound = {
                node.id
                for node in ast.walk(self.tree)
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
            }
            self._bound |= bound_names(self.tree) - {
                node.id for node in ast.walk(self.tree) if isinstance(node, ast.Name)
            }
        return name in self._bound

    def single_line(self, node: ast.AST) -> bool:
        line, _, end_line, _ = span(node)
        return line == end_line

    def own_line(self, node: ast.AST) -> bool:
        """Only whitespace before the node on its first line."""
        line = span(node)[0]
        return self.text[self.starts[line - 1] : self.start(node)].strip() == ""

    def rest_of_line(self, offset: int) -> str:
        """Text from ``offset`` to the end of its line, newline excluded."""
        end = self.text.find("\n", offset)
        return self.text[offset : len(self.text) if end < 0 else end]


def span(node: ast.AST) -> tuple[int, int, int, int]:
    """(line, column, end line, end column) of a node that has a position."""
    located = cast(ast.expr, node)
    line, col = located.lineno, located.col_offset
    return line, col, located.end_lineno or line, located.end_col_offset or col


def bound_names(tree: ast.AST) -> set[str]:
    """Every name bound or used in ``tree``: variables, parameters, defs, imports."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


def docstring_node(node: ast.AST) -> ast.Expr | None:
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
        value = body[0].value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return body[0]
    return None


def is_docstring(src: Source, stmt: ast.AST) -> bool:
    parent = src.parents.get(stmt)
    return parent is not None and docstring_node(parent) is stmt


def mangled(attr: str) -> bool:
    return attr.startswith("__") and not attr.endswith("__")


def fresh_name(node: ast.AST, rng_names: Sequence[str]) -> str | None:
    used = bound_names(node)
    return next((name for name in rng_names if name not in used), None)


def parameters(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = func.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    if args.vararg:
        names.append(args.vararg.arg)
    names.extend(a.arg for a in args.kwonlyargs)
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


def body_start(src: Source, func: ast.AST) -> tuple[int, str, int] | None:
    """(offset, indentation, line) where a statement can go before the body's first
    statement after the docstring; None when the body has no such statement on its own line."""
    body = list(getattr(func, "body", []))
    if docstring_node(func) is not None:
        body = body[1:]
    if not body:
        return None
    first = body[0]
    decorators = getattr(first, "decorator_list", [])
    line = min([first.lineno, *(d.lineno for d in decorators)])
    if line <= span(func)[0]:
        return None
    text = src.lines[line - 1]
    indent = text[: len(text) - len(text.lstrip())]
    if not indent or not text.strip():
        return None
    if not decorators and not src.own_line(first):
        return None
    return src.line_start(line), indent, line


def bool_context(src: Source, node: ast.AST) -> bool:
    """Whether ``node``'s value is only used for its truth (so ``== True`` changes nothing
    for a bool) and it may be followed by ``== ...`` without parentheses."""
    parent = src.parents.get(node)
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return parent.test is node
    if isinstance(parent, ast.comprehension):
        return node in parent.ifs
    if isinstance(parent, ast.BoolOp):
        return bool_context(src, parent) or isinstance(src.parents.get(parent), ast.Return)
    if isinstance(parent, ast.UnaryOp):
        return isinstance(parent.op, ast.Not)
    return isinstance(parent, ast.Return)


def is_builtin_call(src: Source, node: ast.AST, names: Sequence[str]) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in names
        and not src.shadowed(node.func.id)
        and not node.keywords
    )


# --- the catalogue ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` by ``new``; ruff should then report the injection's code
    on a line from ``anchor`` (a line at or before the edit) to the edit's last new line."""

    start: int
    end: int
    new: str
    anchor: int


Finder = Callable[[Source], list[Edit]]


@dataclass(frozen=True)
class Injection:
    key: str
    code: str
    description: str
    find: Finder


def replace(src: Source, node: ast.AST, new: str) -> Edit:
    return Edit(src.start(node), src.end(node), new, span(node)[0])


def insert(src: Source, offset: int, new: str) -> Edit:
    return Edit(offset, offset, new, src.line_of(offset))


def nodes(src: Source, kind: type[ast.AST] | tuple[type[ast.AST], ...]) -> Iterator[Any]:
    for node in ast.walk(src.tree):
        if isinstance(node, kind) and not src.in_fstring(node):
            yield node


def compare_sites(src: Source, op: type[ast.cmpop], between: str) -> Iterator[ast.Compare]:
    """Single-operator comparisons with ``op`` written exactly as the regex ``between``."""
    for node in nodes(src, ast.Compare):
        if len(node.ops) == 1 and isinstance(node.ops[0], op):
            gap = src.text[src.end(node.left) : src.start(node.comparators[0])]
            if re.fullmatch(between, gap):
                yield node


def find_is_none(src: Source) -> list[Edit]:
    return [
        Edit(src.end(c.left), src.start(c.comparators[0]), " == ", c.lineno)
        for c in compare_sites(src, ast.Is, r"[ \t]+is[ \t]+")
        if isinstance(c.comparators[0], ast.Constant) and c.comparators[0].value is None
    ]


def find_is_not_none(src: Source) -> list[Edit]:
    return [
        Edit(src.end(c.left), src.start(c.comparators[0]), " != ", c.lineno)
        for c in compare_sites(src, ast.IsNot, r"[ \t]+is[ \t]+not[ \t]+")
        if isinstance(c.comparators[0], ast.Constant) and c.comparators[0].value is None
    ]


def find_true_compare(src: Source) -> list[Edit]:
    return [
        insert(src, src.end(call), " == True")
        for call in nodes(src, ast.Call)
        if is_builtin_call(src, call, BOOL_CALLS) and bool_context(src, call)
    ]


def _negated(src: Source, op: type[ast.cmpop], between: str, word: str) -> list[Edit]:
    edits = []
    for c in compare_sites(src, op, between):
        left = src.text[src.start(c) : src.end(c.left)]
        right = src.text[src.start(c.comparators[0]) : src.end(c)]
        edits.append(replace(src, c, f"not {left} {word} {right}"))
    return edits


def find_not_in(src: Source) -> list[Edit]:
    return _negated(src, ast.NotIn, r"[ \t]+not[ \t]+in[ \t]+", "in")


def find_not_is(src: Source) -> list[Edit]:
    return _negated(src, ast.IsNot, r"[ \t]+is[ \t]+not[ \t]+", "is")


def find_type_compare(src: Source) -> list[Edit]:
    edits = []
    for call in nodes(src, ast.Call):
        if not (is_builtin_call(src, call, ("isinstance",)) and bool_context(src, call)):
            continue
        if len(call.args) != 2 or not isinstance(call.args[1], ast.Name):
            continue
        kind = call.args[1].id
        if kind in BUILTIN_TYPES and not src.shadowed(kind) and not src.shadowed("type"):
            edits.append(replace(src, call, f"type({src.segment(call.args[0])}) == {kind}"))
    return edits


def find_bare_except(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, ast.Try):
        handler = node.handlers[-1] if node.handlers else None
        if handler is None or handler.type is None or handler.name is not None:
            continue
        colon = re.match(r"[ \t)]*:", src.text[src.end(handler.type) :])
        start = src.start(handler)
        if colon and src.text.startswith("except", start):
            end = src.end(handler.type) + colon.end() - 1
            edits.append(Edit(start, end, "except", handler.lineno))
    return edits


def find_lambda_assign(src: Source) -> list[Edit]:
    edits = []
    for func in nodes(src, ast.FunctionDef):
        nested = src.function_of(func) is not None
        if not nested or isinstance(src.parents.get(func), ast.ClassDef) or func.decorator_list:
            continue
        if func.returns or len(func.body) != 1 or not isinstance(func.body[0], ast.Return):
            continue
        value = func.body[0].value
        args = func.args
        annotated = any(
            a.annotation
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
            if a is not None
        )
        if value is None or annotated or not src.single_line(value):
            continue
        signature = ast.unparse(args)
        head = f"lambda {signature}" if signature else "lambda"
        edits.append(replace(src, func, f"{func.name} = {head}: {src.segment(value)}"))
    return edits


def find_two_imports(src: Source) -> list[Edit]:
    edits = []
    body = src.tree.body
    for first, second in itertools.pairwise(body):
        if not (isinstance(first, ast.Import) and isinstance(second, ast.Import)):
            continue
        if len(first.names) != 1 or len(second.names) != 1:
            continue
        if second.lineno != span(first)[2] + 1 or not src.single_line(second):
            continue
        names = ", ".join(ast.unparse(n) for n in (*first.names, *second.names))
        edits.append(Edit(src.start(first), src.end(second), f"import {names}", first.lineno))
    return edits


def find_inline_if(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, ast.If):
        if node.orelse or len(node.body) != 1 or not isinstance(node.body[0], SIMPLE):
            continue
        stmt = node.body[0]
        if not src.single_line(stmt) or not src.single_line(node.test):
            continue
        gap_start, gap_end = src.end(node.test), src.start(stmt)
        if re.fullmatch(r"[ \t]*:[ \t]*\n[ \t]*", src.text[gap_start:gap_end]):
            edits.append(Edit(gap_start, gap_end, ": ", node.lineno))
    return edits


def statement_lists(src: Source) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(src.tree):
        if src.in_fstring(node):
            continue
        for name in ("body", "orelse", "finalbody"):
            value = getattr(node, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield value


def find_two_statements(src: Source) -> list[Edit]:
    edits = []
    for body in statement_lists(src):
        for first, second in itertools.pairwise(body):
            if not (isinstance(first, SIMPLE) and isinstance(second, SIMPLE)):
                continue
            one_line = src.single_line(first) and src.single_line(second)
            if is_docstring(src, first) or not one_line:
                continue
            gap_start, gap_end = src.end(first), src.start(second)
            if re.fullmatch(r"[ \t]*\n[ \t]*", src.text[gap_start:gap_end]):
                edits.append(Edit(gap_start, gap_end, "; ", first.lineno))
    return edits


def find_semicolon(src: Source) -> list[Edit]:
    edits = []
    for body in statement_lists(src):
        for stmt in body:
            if not isinstance(stmt, SIMPLE) or is_docstring(src, stmt):
                continue
            if not src.single_line(stmt) or not src.own_line(stmt):
                continue
            if src.rest_of_line(src.end(stmt)).strip() == "":
                edits.append(insert(src, src.end(stmt), ";"))
    return edits


def find_unused_import(src: Source) -> list[Edit]:
    body = src.tree.body[1:] if docstring_node(src.tree) else src.tree.body
    imports = []
    for statement in body:
        if not isinstance(statement, (ast.Import, ast.ImportFrom)):
            break
        imports.append(statement)
    if not imports:
        return []
    line = span(imports[-1])[2] + 1
    offset = src.line_start(line)
    prefix = "" if src.text.endswith("\n") or offset < len(src.text) else "\n"
    used = bound_names(src.tree)
    return [insert(src, offset, f"{prefix}import {m}\n") for m in SPARE_IMPORTS if m not in used]


def _single_string(segment: str) -> bool:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(segment).readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    return sum(token.type == tokenize.STRING for token in tokens) == 1


def _assigns_all(node: ast.AST) -> bool:
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
    )


def find_empty_fstring(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, ast.Constant):
        if not isinstance(node.value, str) or isinstance(src.parents.get(node), ast.Expr):
            continue
        if any(_assigns_all(up) for up in src.ancestors(node)):
            continue
        segment = src.segment(node)
        plain = segment[:1] in ("'", '"') and "{" not in segment and "}" not in segment
        if plain and _single_string(segment):
            edits.append(insert(src, src.start(node), "f"))
    return edits


def find_unused_local(src: Source) -> list[Edit]:
    edits = []
    for func in nodes(src, FUNCTIONS):
        params = [p for p in parameters(func) if p not in ("self", "cls")] or parameters(func)
        where = body_start(src, func)
        name = fresh_name(func, SPARE_NAMES)
        if params and where and name:
            offset, indent, _ = where
            edits.append(insert(src, offset, f"{indent}{name} = {params[0]}\n"))
    return edits


def find_mutable_default(src: Source) -> list[Edit]:
    edits = []
    for func in nodes(src, FUNCTIONS):
        args = func.args
        if func.decorator_list or args.posonlyargs or args.kwonlyargs:
            continue
        if args.vararg or args.kwarg or not args.args:
            continue
        name = fresh_name(func, SPARE_NAMES)
        if name is None:
            continue
        end = max([src.end(args.args[-1]), *(src.end(d) for d in args.defaults)])
        edits.append(insert(src, end, f", {name}=[]"))
    return edits


def find_unused_loop_var(src: Source) -> list[Edit]:
    edits = []
    for func in nodes(src, FUNCTIONS):
        where = body_start(src, func)
        name = fresh_name(func, SPARE_NAMES)
        if where and name and not src.shadowed("range"):
            offset, indent, _ = where
            loop = f"{indent}for {name} in range(2):\n{indent}    pass\n"
            edits.append(insert(src, offset, loop))
    return edits


def find_getattr(src: Source) -> list[Edit]:
    edits = []
    in_decorators = {
        id(inner)
        for func in nodes(src, (*FUNCTIONS, ast.ClassDef))
        for decorator in func.decorator_list
        for inner in ast.walk(decorator)
    }
    for node in nodes(src, ast.Attribute):
        if not isinstance(node.ctx, ast.Load) or mangled(node.attr) or id(node) in in_decorators:
            continue
        if src.shadowed("getattr"):
            continue
        edits.append(replace(src, node, f'getattr({src.segment(node.value)}, "{node.attr}")'))
    return edits


def find_setattr(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, ast.Assign):
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Attribute):
            continue
        target = node.targets[0]
        if mangled(target.attr) or src.shadowed("setattr") or not src.own_line(node):
            continue
        obj, value = src.segment(target.value), src.segment(node.value)
        edits.append(replace(src, node, f'setattr({obj}, "{target.attr}", {value})'))
    return edits


def find_raise_without_from(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, ast.Raise):
        inside = any(isinstance(up, ast.ExceptHandler) for up in src.ancestors(node))
        if inside and node.cause is not None and isinstance(node.exc, ast.Call):
            edits.append(Edit(src.end(node.exc), src.end(node), "", node.lineno))
    return edits


def _mapping_names(func: ast.AST) -> set[str]:
    """Names the function treats as mappings: it calls ``.items()``/``.keys()``/``.values()``/
    ``.get()``/``.setdefault()`` on them, or assigns them a dict display or comprehension, or
    the result of ``dict()``, ``defaultdict()`` or ``factory()`` (toolz's mapping factory)."""
    names = set()
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.attr in MAPPING_METHODS
        ):
            names.add(node.func.value.id)
        elif isinstance(node, ast.Assign) and _makes_mapping(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _makes_mapping(value: ast.AST) -> bool:
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return name in ("dict", "defaultdict", "OrderedDict", "factory")
    return False


def find_dict_keys(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, (ast.Compare, ast.For)):
        func = src.function_of(node)
        if func is None:
            continue
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.In, ast.NotIn)):
                continue
            target = node.comparators[0]
        else:
            target = node.iter
        if isinstance(target, ast.Name) and target.id in _mapping_names(func):
            edits.append(Edit(src.end(target), src.end(target), ".keys()", node.lineno))
    return edits


def _comprehension_rest(src: Source, node: ast.AST, last: ast.AST) -> str | None:
    """The `` for x in y ...`` part of a braced comprehension, after its element ``last``."""
    rest = src.text[src.end(last) : src.end(node) - 1]
    return rest if re.match(r"\s*(async\s+)?for\b", rest) else None


def _set_comp(src: Source, opening: str, closing: str) -> list[Edit]:
    if src.shadowed("set"):
        return []
    edits = []
    for node in nodes(src, ast.SetComp):
        inner = src.segment(node)[1:-1]
        edits.append(replace(src, node, f"{opening}{inner}{closing}"))
    return edits


def find_set_genexp(src: Source) -> list[Edit]:
    return _set_comp(src, "set(", ")")


def find_set_listcomp(src: Source) -> list[Edit]:
    return _set_comp(src, "set([", "])")


def _dict_comp(src: Source, opening: str, closing: str) -> list[Edit]:
    if src.shadowed("dict"):
        return []
    edits = []
    for node in nodes(src, ast.DictComp):
        rest = _comprehension_rest(src, node, node.value)
        if rest is None:
            continue
        pair = f"({src.segment(node.key)}, {src.segment(node.value)})"
        edits.append(replace(src, node, f"{opening}{pair}{rest}{closing}"))
    return edits


def find_dict_genexp(src: Source) -> list[Edit]:
    return _dict_comp(src, "dict(", ")")


def find_dict_listcomp(src: Source) -> list[Edit]:
    return _dict_comp(src, "dict([", "])")


def find_set_literal(src: Source) -> list[Edit]:
    if src.shadowed("set"):
        return []
    return [replace(src, n, f"set([{src.segment(n)[1:-1]}])") for n in nodes(src, ast.Set)]


def find_empty_call(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, (ast.Dict, ast.List, ast.Tuple)):
        if isinstance(node, ast.Dict):
            name = "dict" if not node.keys else ""
        else:
            loads = isinstance(node.ctx, ast.Load)
            name = ("list" if isinstance(node, ast.List) else "tuple") if loads else ""
            name = "" if node.elts else name
        if name and not src.shadowed(name) and src.segment(node) in ("{}", "[]", "()"):
            edits.append(replace(src, node, f"{name}()"))
    return edits


def find_identity_comp(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, ast.Call):
        if not is_builtin_call(src, node, ("list", "set")) or len(node.args) != 1:
            continue
        arg = node.args[0]
        if not isinstance(arg, ast.Name):
            continue
        var = "item" if arg.id != "item" else "element"
        body = f"{var} for {var} in {arg.id}"
        edits.append(replace(src, node, f"[{body}]" if node.func.id == "list" else f"{{{body}}}"))
    return edits


def find_useless_pass(src: Source) -> list[Edit]:
    edits = []
    for func in nodes(src, FUNCTIONS):
        where = body_start(src, func)
        if where:
            offset, indent, _ = where
            edits.append(insert(src, offset, f"{indent}pass\n"))
    return edits


CATALOGUE: tuple[Injection, ...] = (
    Injection("is-none-eq", "E711", "`x is None` -> `x == None`", find_is_none),
    Injection("is-not-none-ne", "E711", "`x is not None` -> `x != None`", find_is_not_none),
    Injection(
        "true-compare",
        "E712",
        "`isinstance/issubclass/callable/hasattr(...)` used as a condition -> `... == True`",
        find_true_compare,
    ),
    Injection("not-in", "E713", "`a not in b` -> `not a in b`", find_not_in),
    Injection("not-is", "E714", "`a is not b` -> `not a is b`", find_not_is),
    Injection(
        "type-compare",
        "E721",
        "`isinstance(x, T)` (T a builtin type) as a condition -> `type(x) == T`; NOT "
        "equivalent for subclasses of T (dropped if toolz's tests fail)",
        find_type_compare,
    ),
    Injection(
        "bare-except",
        "E722",
        "last handler `except E:` (no `as`) -> `except:`; now also catches BaseException",
        find_bare_except,
    ),
    Injection(
        "lambda-assign",
        "E731",
        "nested `def f(a): return e` -> `f = lambda a: e`; f.__name__ becomes '<lambda>'",
        find_lambda_assign,
    ),
    Injection(
        "two-imports",
        "E401",
        "consecutive top-level `import a` / `import b` -> `import a, b`",
        find_two_imports,
    ),
    Injection(
        "inline-if", "E701", "`if c:` + one simple statement -> `if c: stmt`", find_inline_if
    ),
    Injection(
        "two-statements",
        "E702",
        "two consecutive one-line simple statements -> `a; b`",
        find_two_statements,
    ),
    Injection("semicolon", "E703", "one-line simple statement -> `stmt;`", find_semicolon),
    Injection(
        "unused-import",
        "F401",
        "new `import <stdlib module>` after the module's top-level imports",
        find_unused_import,
    ),
    Injection(
        "empty-fstring",
        "F541",
        "string literal without braces or prefix (not a docstring, not in __all__) -> f-string",
        find_empty_fstring,
    ),
    Injection(
        "unused-local",
        "F841",
        "new `<name> = <first parameter>` as a function's first statement",
        find_unused_local,
    ),
    Injection(
        "mutable-default",
        "B006",
        "new last parameter `<name>=[]` the body never uses (undecorated functions with "
        "plain parameters only)",
        find_mutable_default,
    ),
    Injection(
        "unused-loop-var",
        "B007",
        "new `for <name> in range(2): pass` as a function's first statement",
        find_unused_loop_var,
    ),
    Injection("getattr-const", "B009", '`o.attr` (a load) -> `getattr(o, "attr")`', find_getattr),
    Injection("setattr-const", "B010", '`o.attr = v` -> `setattr(o, "attr", v)`', find_setattr),
    Injection(
        "raise-without-from",
        "B904",
        "`raise X(...) from e` inside `except` -> `raise X(...)` (only where toolz has one)",
        find_raise_without_from,
    ),
    Injection(
        "dict-keys",
        "SIM118",
        "`k in d` / `for k in d` -> `d.keys()`, where the function calls .items/.keys/"
        ".values/.get/.setdefault on d or assigns it {}, a dict comprehension, dict(), "
        "defaultdict() or factory()",
        find_dict_keys,
    ),
    Injection("set-genexp", "C401", "`{e for x in y}` -> `set(e for x in y)`", find_set_genexp),
    Injection(
        "dict-genexp", "C402", "`{k: v for x in y}` -> `dict((k, v) for x in y)`", find_dict_genexp
    ),
    Injection(
        "set-listcomp", "C403", "`{e for x in y}` -> `set([e for x in y])`", find_set_listcomp
    ),
    Injection(
        "dict-listcomp",
        "C404",
        "`{k: v for x in y}` -> `dict([(k, v) for x in y])`",
        find_dict_listcomp,
    ),
    Injection("set-literal", "C405", "`{a, b}` -> `set([a, b])`", find_set_literal),
    Injection(
        "empty-call",
        "C408",
        "`{}` / `[]` / `()` -> `dict()` / `list()` / `tuple()`",
        find_empty_call,
    ),
    Injection(
        "identity-comp",
        "C416",
        "`list(y)` / `set(y)` (y a name) -> `[v for v in y]` / `{v for v in y}`",
        find_identity_comp,
    ),
    Injection(
        "useless-pass",
        "PIE790",
        "new `pass` before the first statement of a function body (after any docstring)",
        find_useless_pass,
    ),
)


# --- injecting ----------------------------------------------------------------------------------


@dataclass
class Applied:
    key: str
    code: str
    line: int


@dataclass
class ModuleInjection:
    path: str
    applied: list[Applied] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)
    retried_with_tests: bool = False


def diagnostics(project: Path, files: Sequence[str]) -> list[dict[str, Any]]:
    return ruff_json(project, files, [SELECT])


def keys(items: Sequence[dict[str, Any]]) -> Counter[Diagnostic]:
    """Diagnostics without positions ("line N" in messages too, as F811 names a line)."""
    return Counter(
        (item["filename"], item["code"], LINE_NUMBER.sub("line N", item["message"]))
        for item in items
    )


def inject_module(
    project: Path, relative: str, seed: int, limit: int, with_tests: bool
) -> ModuleInjection:
    """Apply catalogue entries once each to ``relative`` (see the module docstring): all of
    them in catalogue order, or with ``limit`` > 0, in a seeded order until ``limit`` hold."""
    path = project / relative
    text = path.read_text(encoding="utf-8")
    result = ModuleInjection(relative, retried_with_tests=with_tests)
    protected: set[int] = set()
    current = keys(diagnostics(project, [relative]))
    order = list(CATALOGUE)
    if limit > 0:
        seeded(seed, relative, "order").shuffle(order)
    for injection in order:
        if limit > 0 and len(result.applied) >= limit:
            break
        src = Source(text)
        candidates = [
            edit
            for edit in injection.find(src)
            if not protected & set(range(src.line_of(edit.start), src.line_of(edit.end) + 1))
        ]
        if not candidates:
            result.dropped[injection.key] = "no eligible site"
            continue
        edit = seeded(seed, relative, injection.key).choice(candidates)
        new_text = text[: edit.start] + edit.new + text[edit.end :]
        why, found = _check(project, relative, new_text, edit, src, injection, current, with_tests)
        if why:
            path.write_text(text, encoding="utf-8")
            result.dropped[injection.key] = why
            continue
        first = src.line_of(edit.start)
        last = src.line_of(edit.end)
        delta = edit.new.count("\n") - text[edit.start : edit.end].count("\n")
        protected = {line + delta if line > last else line for line in protected}
        protected.update(range(first, max(first, last + delta) + 1))
        for item in result.applied:
            if item.line > last:
                item.line += delta
        result.applied.append(Applied(injection.key, injection.code, edit.anchor))
        text = new_text
        current = found
    path.write_text(text, encoding="utf-8")
    return result


def _check(
    project: Path,
    relative: str,
    new_text: str,
    edit: Edit,
    src: Source,
    injection: Injection,
    current: Counter[Diagnostic],
    with_tests: bool,
) -> tuple[str, Counter[Diagnostic]]:
    """Why the injected text is not kept ('' when it is), and its diagnostics."""
    try:
        ast.parse(new_text)
    except SyntaxError as exc:
        return f"does not parse: {exc.msg}", current
    (project / relative).write_text(new_text, encoding="utf-8")
    imports, error = check_import(project, module_name(relative))
    if not imports:
        return f"does not import: {error}", current
    try:
        items = diagnostics(project, [relative])
    except RuntimeError as exc:
        return str(exc), current
    first = src.line_of(edit.start)
    last = first + edit.new.count("\n")
    lines = range(min(edit.anchor, first), last + 1)
    found = keys(items)
    added = found - current
    rows = [item["location"]["row"] for item in items if item["code"] == injection.code]
    hit = any(row in lines for row in rows)
    if not hit or not any(code == injection.code for _, code, _ in added):
        return f"ruff does not report {injection.code} on lines {lines.start}-{last}", current
    if with_tests:
        passed, summary = run_package_tests(project)
        if not passed:
            return f"toolz tests fail: {summary}", current
    return "", found


# --- tools ------------------------------------------------------------------------------------


@dataclass
class ToolOutcome:
    name: str
    wall_s: float = 0.0
    error: str | None = None
    injected: int = 0
    fixed: int | None = None
    new: int | None = None
    new_examples: list[str] = field(default_factory=list)
    preexisting_fixed: int | None = None
    noqa_added: int | None = None
    parses: int | None = None
    tests_pass: bool | None = None
    tests_summary: str = ""
    injected_by_code: dict[str, int] = field(default_factory=dict)
    fixed_by_code: dict[str, int] = field(default_factory=dict)
    remora: dict[str, Any] | None = None


def noqa_count(project: Path, files: Sequence[str]) -> int:
    total = 0
    for relative in files:
        with contextlib.suppress(OSError):
            total += len(NOQA.findall((project / relative).read_text(encoding="utf-8")))
    return total


def parse_count(project: Path, files: Sequence[str]) -> int:
    count = 0
    for relative in files:
        try:
            ast.parse((project / relative).read_text(encoding="utf-8"))
            count += 1
        except (OSError, SyntaxError, ValueError):
            pass
    return count


def evaluate(
    outcome: ToolOutcome,
    project: Path,
    files: Sequence[str],
    clean: Counter[Diagnostic],
    injected: Counter[Diagnostic],
    injected_noqa: int,
) -> None:
    """Fill ``outcome`` from the project as the tool left it."""
    wanted = injected - clean
    outcome.injected = sum(wanted.values())
    outcome.parses = parse_count(project, files)
    outcome.noqa_added = max(0, noqa_count(project, files) - injected_noqa)
    outcome.tests_pass, outcome.tests_summary = run_package_tests(project)
    try:
        after = keys(diagnostics(project, files))
    except RuntimeError as exc:
        outcome.error = outcome.error or str(exc)
        return
    remaining = (after - clean) & wanted
    outcome.fixed = outcome.injected - sum(remaining.values())
    new = after - injected
    outcome.new = sum(new.values())
    outcome.new_examples = [f"{f}: {c} {m}" for (f, c, m) in list(new)[:5]]
    outcome.preexisting_fixed = sum((clean - after).values())
    for (_, code, _), count in wanted.items():
        outcome.injected_by_code[code] = outcome.injected_by_code.get(code, 0) + count
        outcome.fixed_by_code[code] = outcome.fixed_by_code.get(code, 0) + count
    for (_, code, _), count in remaining.items():
        outcome.fixed_by_code[code] -= count


def run_ruff_fix(project: Path, files: Sequence[str], unsafe: bool) -> tuple[float, str | None]:
    argv = [*ruff_command(), "check", "--isolated", "--no-cache", SELECT, "--fix"]
    if unsafe:
        argv.append("--unsafe-fixes")
    result = run_command([*argv, *files], project, 600)
    error = None if result.returncode in (0, 1) and not result.timed_out else result.tail()
    return result.wall_s, error


def ideal_lint(job: dict[str, Any], fixable_at_start: dict[str, int]) -> bool:
    """The ideal sequence of the module docstring."""
    sequence = tool_sequence(job)
    if len(sequence) < 2 or sequence[0] != "run_linter" or sequence[-1] != "submit_result":
        return False
    fixes = sequence[1:-1]
    if any(name != "apply_fix" for name in fixes):
        return False
    limit = fixable_at_start.get(str(job.get("file_path")))
    if limit is not None and len(fixes) > limit:
        return False
    left = (job.get("details") or {}).get("fixable_left")
    return not (isinstance(left, int) and left > 0)


def remora_metrics(
    jobs: list[dict[str, Any]], wall_s: float, fixable_at_start: dict[str, int]
) -> dict[str, Any]:
    metrics = jobs_summary(jobs, wall_s)
    ran = [job for job in jobs if (job.get("telemetry") or {}).get("turns", 0) > 0]
    off = [job for job in ran if not ideal_lint(job, fixable_at_start)]
    metrics["off_ideal"] = len(off)
    metrics["with_sequence"] = len(ran)
    sequences = Counter(_compact(tool_sequence(job)) for job in ran)
    metrics["sequences"] = sequences.most_common(8)
    metrics["per_job"] = [
        {
            "file": job.get("file_path"),
            "status": job.get("status"),
            "turns": (job.get("telemetry") or {}).get("turns"),
            "fixable_at_start": fixable_at_start.get(str(job.get("file_path"))),
            "details": job.get("details"),
            "summary": job.get("summary"),
        }
        for job in jobs
    ]
    detail_keys: Counter[str] = Counter(k for job in jobs for k in (job.get("details") or {}))
    metrics["details_keys"] = dict(detail_keys)
    metrics["errors"] = Counter(
        str(job.get("error"))[:120] for job in jobs if job.get("status") == "failed"
    ).most_common(5)
    return metrics


# --- main ------------------------------------------------------------------------------------


def _compact(sequence: list[str]) -> str:
    """``a > b > b > b > c`` as ``a > b x3 > c``."""
    if not sequence:
        return "(none)"
    parts: list[str] = []
    for name, group in itertools.groupby(sequence):
        count = len(list(group))
        parts.append(f"{name} x{count}" if count > 1 else name)
    return " > ".join(parts)


def host_issues(project: Path, files: Sequence[str], state: Path) -> dict[str, Any]:
    """Remora's own classification of every diagnostic (``lint_issues`` with the default
    options, on a throwaway overlay workspace whose state lives outside the project): per
    file the issues, or ``{"error": ...}`` when it cannot run."""
    try:
        from remora.config import ToolsConfig
        from remora.tools.capabilities import CapabilityContext
        from remora.tools.capabilities.lint import lint_issues
        from remora.workspace import WorkspaceManager

        manager = WorkspaceManager(project, state_dir=state)
        with manager.create("bench", "lint-host") as store:
            ctx = CapabilityContext(store=store, config=ToolsConfig(), system={"options": {}})
            return {relative: lint_issues(ctx, relative)["issues"] for relative in files}
    except Exception as exc:  # a benchmark reports what failed and goes on
        return {"error": f"{type(exc).__name__}: {exc}"}


def host_fixable(issues: dict[str, Any]) -> Counter[Diagnostic]:
    """The diagnostics Remora may fix (any fix kind but manual), as ``keys`` counts them."""
    items = [
        {"filename": relative, "code": issue["code"], "message": issue["message"]}
        for relative, found in issues.items()
        if relative != "error"
        for issue in found
        if issue.get("fix") != "manual"
    ]
    return keys(items)


def list_injections() -> None:
    rows = [(i.key, i.code, i.description) for i in CATALOGUE]
    print(table(["injection", "code", "rewrite"], rows))
    print(f"\nrule set (DEFAULT_RULES): {', '.join(DEFAULT_RULES)}")


def choose_modules(project: Path, count: int, seed: int, wanted: Sequence[str]) -> list[str]:
    candidates = [
        relative
        for relative in package_modules(project)
        if len((project / relative).read_text(encoding="utf-8").splitlines()) >= MIN_MODULE_LINES
    ]
    if wanted:
        return [relative for relative in wanted if (project / relative).is_file()]
    return pick(seeded(seed, "modules"), candidates, count)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--modules", type=int, default=4, help="how many toolz modules")
    parser.add_argument("--module", action="append", default=[], help="this module (repeat)")
    parser.add_argument(
        "--per-module",
        type=int,
        default=8,
        help="injections per module (0: one of every catalogue entry that fits)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-remora", action="store_true", help="run only the baselines")
    parser.add_argument("--json", type=Path, default=None, help="save the raw numbers here")
    parser.add_argument("--keep", type=Path, default=None, help="work (and keep files) here")
    parser.add_argument(
        "--remora-set", action="append", default=[], metavar="KEY=VALUE", help="remora --set"
    )
    parser.add_argument("--remora-timeout", type=float, default=4 * 3600.0, help="seconds")
    parser.add_argument("--list-injections", action="store_true")
    args = parser.parse_args()
    if args.list_injections:
        list_injections()
        return 0

    return in_workdir(args.keep, "eval-toolz-lint-", lambda work: run(args, work))


@dataclass
class Setup:
    """What the tools start from."""

    modules: list[str]
    clean: Counter[Diagnostic]
    injected: Counter[Diagnostic]
    injections: list[ModuleInjection]
    clean_tests: tuple[bool, str]
    injected_tests: tuple[bool, str]
    host_fixable: Counter[str]
    host_error: str | None
    fixable_at_start: dict[str, int]


def run(args: argparse.Namespace, work: Path) -> int:
    clock = Stopwatch()
    sdist = fetch_timed(work, clock)
    if sdist is None:
        return 2
    clean_project = copy_project(sdist, work / "clean")
    modules = choose_modules(clean_project, args.modules, args.seed, args.module)
    if not modules:
        print("no module to inject")
        return 2
    try:
        setup = prepare(args, work, clean_project, modules, clock)
    except RuntimeError as exc:
        print(f"ruff does not run: {exc}")
        return 2
    project = work / "injected"
    injected_noqa = noqa_count(project, modules)

    outcomes = []
    for name, unsafe in (("ruff --fix", False), ("ruff --fix --unsafe-fixes", True)):
        copy = copy_project(project, work / name.replace(" ", "").replace("-", "_"))
        wall, error = run_ruff_fix(copy, modules, unsafe)
        outcome = ToolOutcome(name, wall_s=wall, error=error)
        evaluate(outcome, copy, modules, setup.clean, setup.injected, injected_noqa)
        outcomes.append(outcome)
        clock.add(name, wall)
    if not args.skip_remora:
        copy = copy_project(project, work / "remora")
        remora = run_remora(copy, modules, "lint", args.remora_set, args.remora_timeout)
        outcome = ToolOutcome("remora lint", wall_s=remora.wall_s, error=remora.error)
        if remora.manifest is not None:
            evaluate(outcome, copy, modules, setup.clean, setup.injected, injected_noqa)
            jobs = remora.jobs("lint")
            outcome.remora = remora_metrics(jobs, remora.wall_s, setup.fixable_at_start)
        outcomes.append(outcome)
        clock.add("remora", remora.wall_s)

    report(args, setup, outcomes, clock)
    save_raw(
        args.json,
        {
            "package": TOOLZ,
            "seed": args.seed,
            "per_module": args.per_module,
            "rules": list(DEFAULT_RULES),
            "modules": modules,
            "clean_tests": setup.clean_tests,
            "injected_tests": setup.injected_tests,
            "clean_diagnostics": [[*k, n] for k, n in setup.clean.items()],
            "injected_diagnostics": [[*k, n] for k, n in (setup.injected - setup.clean).items()],
            "host_fixable_by_code": dict(setup.host_fixable),
            "host_error": setup.host_error,
            "injections": [asdict(item) for item in setup.injections],
            "tools": [asdict(outcome) for outcome in outcomes],
            "times_s": clock.parts,
        },
    )
    return 0


def prepare(
    args: argparse.Namespace,
    work: Path,
    clean_project: Path,
    modules: list[str],
    clock: Stopwatch,
) -> Setup:
    """The clean and the injected project, their diagnostics and test results."""
    started = time.perf_counter()
    clean_tests = run_package_tests(clean_project)
    clock.since("tests (clean)", started)
    clean = keys(diagnostics(clean_project, modules))
    started = time.perf_counter()
    project = copy_project(clean_project, work / "injected")
    injections: list[ModuleInjection] = []
    for relative in modules:
        result = inject_module(project, relative, args.seed, args.per_module, with_tests=False)
        passed, _ = run_package_tests(project)
        if not passed:
            original = (clean_project / relative).read_text(encoding="utf-8")
            (project / relative).write_text(original, encoding="utf-8")
            result = inject_module(project, relative, args.seed, args.per_module, with_tests=True)
        injections.append(result)
    injected = keys(diagnostics(project, modules))
    injected_tests = run_package_tests(project)
    clock.since("inject", started)

    started = time.perf_counter()
    host_clean = host_issues(clean_project, modules, work / "host-state-clean")
    host_injected = host_issues(project, modules, work / "host-state-injected")
    host_error = host_clean.get("error") or host_injected.get("error")
    fixable = (host_fixable(host_injected) - host_fixable(host_clean)) & (injected - clean)
    by_code: Counter[str] = Counter()
    for (_, code, _), count in fixable.items():
        by_code[code] += count
    fixable_at_start = {
        relative: sum(issue.get("fix") != "manual" for issue in issues)
        for relative, issues in host_injected.items()
        if relative != "error"
    }
    clock.since("host classification", started)
    return Setup(
        modules,
        clean,
        injected,
        injections,
        clean_tests,
        injected_tests,
        by_code,
        host_error,
        fixable_at_start,
    )


def report(
    args: argparse.Namespace, setup: Setup, outcomes: list[ToolOutcome], clock: Stopwatch
) -> None:
    modules = setup.modules
    print(f"{TOOLZ}, seed {args.seed}, modules: {', '.join(modules)}")
    print(f"toolz tests: clean {setup.clean_tests[1]}; injected {setup.injected_tests[1]}")
    rows: list[Sequence[object]] = []
    for item in setup.injections:
        reasons = Counter(why.split(":")[0] for why in item.dropped.values())
        dropped = ", ".join(f"{why} {n}" for why, n in reasons.most_common())
        retried = " (retried with tests)" if item.retried_with_tests else ""
        fixable = setup.fixable_at_start.get(item.path)
        rows.append((item.path + retried, len(item.applied), fixable, dropped or "-"))
    print()
    print(table(["module", "injected", "host-fixable issues", "dropped"], rows))
    for item in setup.injections:
        for key, why in item.dropped.items():
            if why != "no eligible site":
                print(f"  dropped {item.path} {key}: {why}")
    if setup.host_error:
        print(f"  Remora's lint_issues could not run: {setup.host_error}")

    print()
    headers = [
        "tool",
        "wall s",
        "injected",
        "fixed",
        "fix rate",
        "new",
        "pre-existing fixed",
        "noqa added",
        "parses",
        "toolz tests",
    ]
    rows = []
    for o in outcomes:
        if o.fixed is None:
            rows.append((o.name, o.wall_s, "-", "-", "-", "-", "-", "-", "-", "-"))
            continue
        tests = "pass" if o.tests_pass else f"FAIL ({o.tests_summary[:40]})"
        parses = f"{o.parses}/{len(modules)}"
        fixed = (o.injected, o.fixed, pct(o.fixed, o.injected), o.new, o.preexisting_fixed)
        rows.append((o.name, o.wall_s, *fixed, o.noqa_added, parses, tests))
    print(table(headers, rows))
    for o in outcomes:
        if o.error:
            print(f"  {o.name}: {o.error}")
        for example in o.new_examples:
            print(f"  new after {o.name}: {example}")

    measured = [o for o in outcomes if o.fixed is not None]
    codes = sorted({code for o in measured for code in o.injected_by_code})
    if codes:
        print()
        rows = [
            (
                code,
                measured[0].injected_by_code.get(code, 0),
                setup.host_fixable.get(code, 0),
                *(o.fixed_by_code.get(code, 0) for o in measured),
            )
            for code in codes
        ]
        fixed_by = [f"fixed: {o.name}" for o in measured]
        print(table(["code", "injected", "host-fixable", *fixed_by], rows))

    for o in outcomes:
        if o.remora is not None:
            print()
            print_remora(o.remora)
    print(f"\ntimes: {clock.render()}")


def print_remora(m: dict[str, Any]) -> None:
    calls = m["valid_calls"] + m["invalid_calls"]
    print(
        f"remora: {m['jobs']} jobs {m['statuses']}, {fmt(m['jobs_per_min'])} jobs/min, "
        f"mean turns {fmt(m['mean_turns'])}, mean job {fmt(m['mean_job_wall_s'])}s, "
        f"tool-call validity {fmt(m['call_validity'])} ({m['invalid_calls']} invalid of "
        f"{calls}), off-ideal sequence {pct(m['off_ideal'], m['with_sequence'])} "
        f"({m['off_ideal']}/{m['with_sequence']} jobs that ran)"
    )
    for sequence, count in m["sequences"]:
        print(f"  {count:3d}x {sequence}")
    print(f"  details keys: {m['details_keys'] or '-'}")
    for error, count in m["errors"]:
        print(f"  failed {count}x: {error}")
    for job in m["per_job"]:
        print(
            f"  {job['file']}: {job['status']}, {job['turns']} turns, "
            f"{fmt(job['fixable_at_start'])} fixable at start, details {job['details']}"
        )
        if job["summary"]:
            print(f"      {str(job['summary'])[:150]}")


if __name__ == "__main__":
    sys.exit(main())
