"""Host-side rewrites for ruff rules that ruff cannot fix, or cannot fix safely.

``rewrite(source, code, line)`` edits only the spans that ``ast`` positions name, so comments,
quotes and layout elsewhere stay byte for byte, and the result must parse. Where safety cannot
be shown from the module's source the rewrite is refused with a reason (``RewriteRefused``):
a model is told why rather than handed a plausible but wrong edit. Every occurrence of the
code on the line is rewritten, or none is.

The rewrites and why each is safe:

E722  ``except:`` -> ``except Exception:``. They differ only for exceptions deriving from
      BaseException alone, so ``except BaseException:`` (exactly a bare except) is written
      wherever the handler may expect one: the try body yields or awaits (GeneratorExit,
      CancelledError), names SystemExit, KeyboardInterrupt, GeneratorExit, CancelledError or
      BaseException, calls exit/quit/sys.exit, or the handler re-raises with a bare ``raise``
      or names one of them. What is left is Ctrl-C at an arbitrary point; not swallowing it
      is the change the rule asks for.
B006  ``def f(x=[])`` -> ``def f(x=None)`` with ``if x is None: x = []`` first in the body.
      Each call then gets a fresh, equal value instead of one shared object, which differs
      only if that object is mutated: refused when the body mutates it (mutating methods,
      item or attribute assignment, ``del``, ``+=``, heapq/bisect/random helpers), a nested
      function or class refers to it, the body reads locals()/vars()/eval()/exec(), the body
      compares it with None (None is then a meaningful argument), or the name reads like a
      cache (``cache``, ``memo``, a leading underscore). The default must be built only from
      literals, comprehension variables and builtins the module never rebinds, so building it
      per call gives an equal value. Annotated parameters (the annotation would have to admit
      None) and bodies on the ``def`` line are refused. Not visible in the source: mutation
      through an alias or by a caller of a returned default, which is the sharing bug the
      rule reports; and ``f.__defaults__`` shows None.
E711  ``x == None`` -> ``x is None``, ``x != None`` -> ``x is not None``. They agree unless an
      operand's ``__eq__`` answers None specially, so refused when the module imports a
      library whose objects do (numpy, pandas, SQLAlchemy, ...) or defines ``__eq__`` or
      ``__ne__`` itself, and inside a chained comparison.
B007  unused loop variable ``i`` -> ``_i``: a rename of a binding nothing reads. Refused when
      ``i`` or ``_i`` occurs anywhere else in the function (the whole module for a
      module-level loop, strings such as ``__all__`` included), when the scope calls
      locals(), vars(), dir(), eval(), exec() or globals(), and in a class body (the name is
      a class attribute there).
E721  ``type(x) == T`` -> ``type(x) is T`` (``!=`` -> ``is not``) for a builtin type name T.
      Comparing classes with ``==`` is identity unless a metaclass overrides ``__eq__``, so
      refused when the module defines ``__eq__``/``__ne__``, rebinds ``type`` or T (or has a
      star import), T is anything else, or inside a chain. ``isinstance`` is not written even
      for bool, range, slice and memoryview: it also trusts ``__class__``, so
      ``isinstance(Mock(spec=bool), bool)`` is true where ``type(...) == bool`` is false.
B904  ``raise X(...)`` in ``except E as err:`` -> ``raise X(...) from err``. This only sets
      ``__cause__`` (the traceback says "direct cause" instead of "during handling").
      The name is the nearest handler's. Refused without an ``as`` name, for a bare or
      already chained raise, for raising the caught exception itself, inside a nested
      function or class or a nested try's body/else/finally, and when the handler rebinds
      the name.
E701  ``if x: y`` -> the body on its own indented line, and
E702  ``a; b`` -> one statement per line. Pure layout: kept only when the new module's AST
      equals the old one (positions aside).
"""

from __future__ import annotations

import ast
import bisect
import io
import itertools
import re
import sys
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from remora import pyast
from remora.source_edits import OverlappingEditsError, PythonSource, TextEdit, apply_edits


@dataclass(frozen=True)
class Rewrite:
    """The whole new source and one sentence saying what changed."""

    text: str
    description: str


class RewriteRefused(Exception):
    """The rewrite does not apply here; ``str(exc)`` says why, for a user or a small model."""


@dataclass(frozen=True)
class _Token:
    kind: int
    string: str
    start: int
    end: int


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_Rule = Callable[["_Source", int], tuple[list[TextEdit], list[str]]]
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LINE_BREAK = re.compile(r"\r\n|\n")
_INSIGNIFICANT = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING}


def rewrite(source: str, code: str, line: int) -> Rewrite:
    """Rewrite every occurrence of ``code`` whose diagnostic starts on ``line`` (1-based).

    Raises RewriteRefused when the rule has no rewrite, nothing matching is on that line,
    or the rewrite would not be provably safe.
    """
    rule = _RULES.get(code)
    if rule is None:
        raise RewriteRefused(f"Remora has no rewrite for {code}")
    src = _Source(source)
    edits, descriptions = rule(src, line)
    text = _apply(source, edits)
    try:
        new_tree = pyast.parse(text)
    except (SyntaxError, ValueError) as exc:
        raise RewriteRefused(f"the rewritten source would not parse ({exc})") from None
    if code in _LAYOUT_ONLY and ast.dump(new_tree) != ast.dump(src.tree):
        raise RewriteRefused("splitting the line would change the program, not just its layout")
    unique = list(dict.fromkeys(descriptions))
    description = "; ".join(unique)
    if len(descriptions) > 1 and len(unique) == 1:
        description += f" ({len(descriptions)} occurrences)"
    return Rewrite(text, description)


class _Source(PythonSource):
    """The source with its tree, parents, tokens and ast-position-to-index conversion."""

    def __init__(self, text: str) -> None:
        if re.search(r"\r(?!\n)", text):
            raise RewriteRefused("the file has bare \\r line endings, which are not rewritten")
        try:
            super().__init__(text)
        except (SyntaxError, ValueError) as exc:
            raise RewriteRefused(f"the source does not parse ({exc})") from None
        first_break = _LINE_BREAK.search(text)
        self.newline = first_break.group() if first_break else "\n"
        self._tokens: list[_Token] | None = None
        self._token_starts: list[int] = []

    def indent(self, lineno: int) -> str:
        match = re.match(r"[ \t\f]*", self.line_text(lineno))
        return match.group() if match else ""

    def indent_unit(self, outer: str) -> str:
        """One more level of indentation than ``outer``, in the file's own style."""
        if "\t" in outer:
            return "\t"
        first = next((tok for tok in self.tokens() if tok.kind == tokenize.INDENT), None)
        if first is not None and first.string and set(first.string) == {" "}:
            return first.string
        return "    "

    # Tokens: positions are str columns within a physical line.

    def tokens(self) -> list[_Token]:
        if self._tokens is None:
            try:
                raw = list(tokenize.generate_tokens(io.StringIO(self.text).readline))
            except (tokenize.TokenError, SyntaxError) as exc:
                raise RewriteRefused(f"the source cannot be tokenized ({exc})") from None
            self._tokens = [
                _Token(
                    tok.type,
                    tok.string,
                    self.line_start(tok.start[0]) + tok.start[1],
                    self.line_start(tok.end[0]) + tok.end[1],
                )
                for tok in raw
                if tok.type not in _INSIGNIFICANT
            ]
            self._token_starts = [tok.start for tok in self._tokens]
        return self._tokens

    def token_before(self, index: int) -> _Token | None:
        """The last significant token starting before ``index``."""
        tokens = self.tokens()
        position = bisect.bisect_left(self._token_starts, index)
        return tokens[position - 1] if position else None

    def tokens_between(self, start: int, end: int) -> list[_Token]:
        tokens = self.tokens()
        low = bisect.bisect_left(self._token_starts, start)
        high = bisect.bisect_left(self._token_starts, end)
        return tokens[low:high]

    def logical_line_start(self, token: _Token) -> _Token:
        """The first token of the logical line holding ``token``."""
        tokens = self.tokens()
        position = bisect.bisect_left(self._token_starts, token.start)
        while position > 0 and tokens[position - 1].kind not in (
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
        ):
            position -= 1
        return tokens[position]

    # Tree helpers.

    def ancestors(self, node: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
        """(parent, child on the path) pairs from ``node`` up to the module."""
        child = node
        while child in self.parents:
            parent = self.parents[child]
            yield parent, child
            child = parent

    def in_fstring(self, node: ast.AST) -> bool:
        return any(isinstance(parent, ast.JoinedStr) for parent, _ in self.ancestors(node))

    def bindings(self) -> set[str]:
        return {name for name, _ in _bound_names(self.tree)}

    def star_import(self) -> bool:
        nodes = ast.walk(self.tree)
        return any(isinstance(node, ast.alias) and node.name == "*" for node in nodes)

    def defines_eq(self) -> bool:
        return any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name in ("__eq__", "__ne__")
            for node in ast.walk(self.tree)
        )


def _apply(text: str, edits: list[TextEdit]) -> str:
    """Apply non-overlapping edits; insertions at one index keep their order."""
    try:
        return apply_edits(text, edits)
    except OverlappingEditsError:
        raise RewriteRefused("two rewrites on this line overlap; split the line first") from None


def _bound_names(tree: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Every name a binding form in ``tree`` binds (or deletes, or declares global)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            yield node.id, node
        elif isinstance(node, ast.arg):
            yield node.arg, node
        elif isinstance(node, ast.alias) and node.name != "*":
            yield node.asname or node.name.split(".")[0], node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name, node
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                yield name, node
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            yield node.name, node
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest, node


def _mentions(tree: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Every name ``tree`` reads or binds."""
    yield from _bound_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            yield node.id, node


def _called_names(tree: ast.AST) -> set[str]:
    return {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }


def _root_name(node: ast.AST) -> str | None:
    """The variable an attribute/subscript/call chain starts from (``a`` in ``a[0].b()``)."""
    while True:
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Starred):
            node = node.value
        else:
            return node.id if isinstance(node, ast.Name) else None


def _is_constant(node: ast.AST, value: object) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def _is_none(node: ast.AST) -> bool:
    return _is_constant(node, None)


def _before_after(src: _Source, node: ast.AST, edit: TextEdit, fallback: str) -> str:
    """``old -> new`` for one edited node when both fit a one-line description."""
    start, end = src.start(node), src.end(node)
    old = src.text[start:end]
    new = src.text[start : edit.start] + edit.new + src.text[edit.end : end]
    if max(len(old), len(new)) > 50 or any(mark in old for mark in "\r\n"):
        return fallback
    return f"{old} -> {new}"


def _short(code: str, fallback: str = "...") -> str:
    """``code`` when it is short enough for a one-line description."""
    return code if len(code) <= 40 and "\n" not in code and "\r" not in code else fallback


def _nothing_on(what: str, line: int) -> RewriteRefused:
    return RewriteRefused(f"there is no {what} on line {line}")


_IN_FSTRING = "the comparison is inside an f-string, whose positions Python 3.11 misreports"


def _operator_edit(src: _Source, left: ast.expr, right: ast.expr, new: str) -> TextEdit:
    """Replace the ``==``/``!=`` between two operands, keeping a space on each side."""
    found = [
        tok
        for tok in src.tokens_between(src.end(left), src.start(right))
        if tok.kind == tokenize.OP and tok.string in ("==", "!=")
    ]
    if len(found) != 1:
        raise RewriteRefused("the comparison operator could not be located")
    tok = found[0]
    before = "" if tok.start == 0 or src.text[tok.start - 1].isspace() else " "
    after = "" if src.text[tok.end : tok.end + 1].isspace() else " "
    return TextEdit(tok.start, tok.end, f"{before}{new}{after}")


# E722 ---------------------------------------------------------------------------------------

_BASE_ONLY = _names("SystemExit KeyboardInterrupt GeneratorExit CancelledError BaseException")
_EXITS = {"exit", "quit"}


def _needs_base_exception(handler: ast.ExceptHandler, statement: ast.AST) -> str | None:
    """Why the handler may expect a BaseException-only exception, or None."""
    body = ast.Module(body=getattr(statement, "body", []), type_ignores=[])
    for node in ast.walk(body):
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return "the try body yields (GeneratorExit)"
        if isinstance(node, ast.Await | ast.AsyncFor | ast.AsyncWith):
            return "the try body awaits (CancelledError)"
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in _EXITS:
                return f"the try body calls {func.id}() (SystemExit)"
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "exit"
                and _root_name(func) == "sys"
            ):
                return "the try body calls sys.exit() (SystemExit)"
    handler_body = ast.Module(body=handler.body, type_ignores=[])
    for where, tree in (("try body", body), ("handler", handler_body)):
        for node in ast.walk(tree):
            name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
            if name in _BASE_ONLY:
                return f"the {where} names {name}"
    if any(isinstance(node, ast.Raise) and node.exc is None for node in ast.walk(handler_body)):
        return "the handler re-raises with a bare raise"
    return None


def _e722(src: _Source, line: int) -> tuple[list[TextEdit], list[str]]:
    edits: list[TextEdit] = []
    descriptions: list[str] = []
    for node in ast.walk(src.tree):
        if not isinstance(node, ast.ExceptHandler) or node.type is not None:
            continue
        if node.lineno != line:
            continue
        start = src.start(node)
        if src.text[start : start + 6] != "except":
            raise RewriteRefused("the except keyword could not be located")
        reason = _needs_base_exception(node, src.parents[node])
        name = "BaseException" if reason else "Exception"
        edits.append(TextEdit(start, start + 6, f"except {name}"))
        why = f", which catches everything, as {reason}" if reason else ""
        descriptions.append(f"bare except: -> except {name}:{why}")
    if not edits:
        raise _nothing_on("bare except:", line)
    return edits, descriptions


# B006 ---------------------------------------------------------------------------------------

_MUTATING_METHODS = _names(
    "append extend insert pop remove clear update setdefault add discard sort reverse "
    "popitem difference_update intersection_update symmetric_difference_update "
    "__setitem__ __delitem__ __iadd__ __ior__ __iand__ __isub__ __ixor__ __imul__"
)
_MUTATING_FUNCTIONS = _names(
    "heappush heappop heapify heapreplace heappushpop insort insort_left insort_right shuffle"
)
_PURE_BUILTINS = _names(
    "list dict set tuple frozenset range str int float bool bytes len sorted zip "
    "enumerate min max sum abs"
)
_OTHER_MUTABLE_CALLS = {"deque", "defaultdict", "OrderedDict", "Counter", "bytearray"}
_INTROSPECTION = {"locals", "vars", "eval", "exec"}

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def _defaults(function: _Function) -> Iterator[tuple[ast.arg, ast.expr]]:
    positional = function.args.posonlyargs + function.args.args
    with_default = positional[len(positional) - len(function.args.defaults) :]
    yield from zip(with_default, function.args.defaults, strict=True)
    for arg, default in zip(function.args.kwonlyargs, function.args.kw_defaults, strict=True):
        if default is not None:
            yield arg, default


def _b006_kind(default: ast.expr) -> str | None:
    """'rewrite' for the defaults rewritten, 'other' for mutable ones that are not, else None."""
    if isinstance(
        default, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp
    ):
        return "rewrite"
    if isinstance(default, ast.Call):
        func = default.func
        if isinstance(func, ast.Name) and func.id in ("list", "dict", "set"):
            return "rewrite"
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name in _OTHER_MUTABLE_CALLS:
            return "other"
    return None


def _impure_part(node: ast.AST, local: frozenset[str], unsafe: set[str]) -> ast.AST | None:
    """The first part of a default whose value could differ when built at call time."""
    if isinstance(node, ast.Constant):
        return None
    if isinstance(node, ast.Name):
        if node.id in local or (node.id in _PURE_BUILTINS and node.id not in unsafe):
            return None
        return node
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or _impure_part(node.func, local, unsafe):
            return node.func
        parts: list[ast.AST] = [*node.args, *(keyword.value for keyword in node.keywords)]
    elif isinstance(node, ast.List | ast.Tuple | ast.Set):
        parts = list(node.elts)
    elif isinstance(node, ast.Dict):
        parts = [*(key for key in node.keys if key is not None), *node.values]
    elif isinstance(node, ast.Starred):
        parts = [node.value]
    elif isinstance(node, ast.UnaryOp):
        parts = [node.operand]
    elif isinstance(node, ast.BinOp):
        parts = [node.left, node.right]
    elif isinstance(node, ast.BoolOp):
        parts = list(node.values)
    elif isinstance(node, ast.Compare):
        parts = [node.left, *node.comparators]
    elif isinstance(node, ast.IfExp):
        parts = [node.test, node.body, node.orelse]
    elif isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
        return _impure_comprehension(node, local, unsafe)
    else:
        return node
    return next((bad for part in parts if (bad := _impure_part(part, local, unsafe))), None)


def _impure_comprehension(
    node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp,
    local: frozenset[str],
    unsafe: set[str],
) -> ast.AST | None:
    for generator in node.generators:
        if generator.is_async:
            return generator.iter
        if bad := _impure_part(generator.iter, local, unsafe):
            return bad
        targets = [generator.target]
        if isinstance(generator.target, ast.Tuple):
            targets = list(generator.target.elts)
        if not all(isinstance(target, ast.Name) for target in targets):
            return generator.target
        local = local | {target.id for target in targets if isinstance(target, ast.Name)}
        for condition in generator.ifs:
            if bad := _impure_part(condition, local, unsafe):
                return bad
    results = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    return next((bad for part in results if (bad := _impure_part(part, local, unsafe))), None)


def _mutation(node: ast.AST, name: str) -> str | None:
    """How ``node`` mutates the object ``name`` refers to in place, or None."""
    if isinstance(node, ast.Call):
        func = node.func
        first_arg = _root_name(node.args[0]) if node.args else None
        if isinstance(func, ast.Attribute) and func.attr in _MUTATING_METHODS:
            unbound = isinstance(func.value, ast.Name) and func.value.id in ("list", "dict", "set")
            if _root_name(func.value) == name or (unbound and first_arg == name):
                return func.attr
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if called in _MUTATING_FUNCTIONS and first_arg == name:
            return str(called)
    stored = isinstance(node, ast.Subscript | ast.Attribute) and not isinstance(node.ctx, ast.Load)
    if stored and _root_name(node) == name:
        deleted = isinstance(getattr(node, "ctx", None), ast.Del)
        return "del" if deleted else "item or attribute assignment"
    if isinstance(node, ast.AugAssign) and _root_name(node.target) == name:
        return "augmented assignment"
    return None


def _shared_default_reason(function: _Function, name: str) -> str | None:
    """Why the body might rely on one shared default object, or None."""
    lowered = name.lower()
    if "cache" in lowered or "memo" in lowered or name.startswith("_"):
        return f"the name {name} suggests a deliberate cache"
    body = ast.Module(body=function.body, type_ignores=[])
    if introspection := sorted(_called_names(body) & _INTROSPECTION):
        return f"the body calls {introspection[0]}(), which can reach the parameter by name"
    for node in ast.walk(body):
        if isinstance(node, _SCOPES) and any(mention == name for mention, _ in _mentions(node)):
            return f"a nested function or class refers to {name}"
        if how := _mutation(node, name):
            return f"the default is mutated in the body ({how}), so it may be a deliberate cache"
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_none(operand) for operand in operands) and any(
                isinstance(operand, ast.Name) and operand.id == name for operand in operands
            ):
                return f"the body compares {name} with None, so None is a meaningful argument"
    return None


def _b006_insertion(src: _Source, function: _Function, names: list[tuple[str, str]]) -> TextEdit:
    """``if NAME is None: NAME = <default>`` per name, first in the body after any docstring."""
    body = function.body
    colon = src.token_before(src.start(body[0]))
    if colon is not None and colon.string == ":":
        raise RewriteRefused("the function body is on the def line; put it on its own line first")
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        if len(body) > 1 and body[1].lineno == first.end_lineno:
            raise RewriteRefused("a statement follows the docstring on its line")
        indent = src.indent(first.lineno)
        position = src.line_start((first.end_lineno or first.lineno) + 1)
    else:
        top = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))])
        indent = src.indent(top)
        position = src.line_start(top)
    lead = "" if position == 0 or src.text[position - 1] in "\r\n" else src.newline
    inner = indent + src.indent_unit(indent)
    nl = src.newline
    text = "".join(
        f"{indent}if {name} is None:{nl}{inner}{name} = {value}{nl}" for name, value in names
    )
    return TextEdit(position, position, lead + text)


def _b006(src: _Source, line: int) -> tuple[list[TextEdit], list[str]]:
    edits: list[TextEdit] = []
    descriptions: list[str] = []
    unsafe = src.bindings() | set(_PURE_BUILTINS if src.star_import() else ())
    for function in ast.walk(src.tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        fresh: list[tuple[str, str]] = []
        for arg, default in _defaults(function):
            kind = _b006_kind(default)
            if kind is None or default.lineno != line:
                continue
            name = arg.arg
            if kind == "other":
                raise RewriteRefused(
                    f"only list, dict and set defaults are rewritten, not {src.segment(default)}"
                )
            if arg.annotation is not None:
                raise RewriteRefused(
                    f"{name} is annotated, and the annotation would have to admit None;"
                    " leave it to ruff's own fix"
                )
            if reason := _shared_default_reason(function, name):
                raise RewriteRefused(reason)
            if bad := _impure_part(default, frozenset(), unsafe):
                raise RewriteRefused(
                    f"the default reads {src.segment(bad)}, which may not be the same when"
                    " evaluated at call time"
                )
            fresh.append((name, src.segment(default)))
            edits.append(TextEdit(src.start(default), src.end(default), "None"))
            value = _short(src.segment(default))
            descriptions.append(f"{name}={value} -> {name}=None, with a fresh {value} per call")
        if fresh:
            edits.append(_b006_insertion(src, function, fresh))
    if not edits:
        raise _nothing_on("list, dict or set default", line)
    return edits, descriptions


# E711 ---------------------------------------------------------------------------------------

_EQ_OVERLOADERS = _names(
    "numpy pandas sqlalchemy sqlmodel torch polars jax tensorflow sympy peewee pyspark "
    "dask xarray cupy modin pyarrow ibis"
)


def _eq_overloaders(tree: ast.Module) -> list[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return sorted(found & _EQ_OVERLOADERS)


def _e711(src: _Source, line: int) -> tuple[list[TextEdit], list[str]]:
    matches: list[ast.Compare] = []
    for node in ast.walk(src.tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for index, op in enumerate(node.ops):
            pair = operands[index : index + 2]
            if isinstance(op, ast.Eq | ast.NotEq) and any(
                _is_none(side) and side.lineno == line for side in pair
            ):
                if len(node.ops) > 1:
                    raise RewriteRefused(
                        "the comparison with None is part of a chain; split the chain first"
                    )
                matches.append(node)
                break
    if not matches:
        raise _nothing_on("== None or != None comparison", line)
    if libraries := _eq_overloaders(src.tree):
        raise RewriteRefused(
            f"the module imports {libraries[0]}, whose objects can overload == with None"
            " (elementwise or query comparisons), so 'is None' could change the result"
        )
    if src.defines_eq():
        raise RewriteRefused("the module defines __eq__ or __ne__, which may treat None specially")
    edits: list[TextEdit] = []
    descriptions: list[str] = []
    for node in matches:
        if src.in_fstring(node) and sys.version_info < (3, 12):
            raise RewriteRefused(_IN_FSTRING)
        equal = isinstance(node.ops[0], ast.Eq)
        new = "is" if equal else "is not"
        edit = _operator_edit(src, node.left, node.comparators[0], new)
        edits.append(edit)
        old = "==" if equal else "!="
        descriptions.append(_before_after(src, node, edit, f"{old} None -> {new} None"))
    return edits, descriptions


# B007 ---------------------------------------------------------------------------------------


def _loop_targets(loop: ast.For | ast.AsyncFor) -> Iterator[ast.Name]:
    """Names the loop binds that its body never reads (what ruff reports)."""
    read = {name for name, _ in _mentions(ast.Module(body=loop.body, type_ignores=[]))}
    for node in ast.walk(loop.target):
        if isinstance(node, ast.Name) and not node.id.startswith("_") and node.id not in read:
            yield node


def _b007_reason(src: _Source, target: ast.Name) -> str | None:
    scope: ast.AST = src.tree
    for parent, _ in src.ancestors(target):
        if isinstance(parent, _SCOPES):
            scope = parent
            break
    if isinstance(scope, ast.ClassDef):
        return f"the loop is in a class body, where {target.id} is a class attribute"
    introspection = {"locals", "vars", "dir", "eval", "exec", "globals"}
    if found := sorted(_called_names(scope) & introspection):
        return f"the scope calls {found[0]}(), which can reach {target.id} by name"
    name, renamed = target.id, f"_{target.id}"
    for mention, node in _mentions(scope):
        where = f" (line {node.lineno})" if hasattr(node, "lineno") else ""
        if mention == name and node is not target:
            return f"{name} is also used elsewhere in the scope{where}"
        if mention == renamed:
            return f"{renamed} already exists in the scope{where}"
    if isinstance(scope, ast.Module):
        for node in ast.walk(scope):
            if isinstance(node, ast.Constant) and node.value == name:
                return f"the module names {name} in a string (e.g. __all__ or getattr)"
    return None


def _b007(src: _Source, line: int) -> tuple[list[TextEdit], list[str]]:
    edits: list[TextEdit] = []
    descriptions: list[str] = []
    for loop in ast.walk(src.tree):
        if not isinstance(loop, ast.For | ast.AsyncFor):
            continue
        for target in _loop_targets(loop):
            if target.lineno != line:
                continue
            if reason := _b007_reason(src, target):
                raise RewriteRefused(reason)
            edits.append(TextEdit(src.start(target), src.end(target), f"_{target.id}"))
            descriptions.append(f"unused loop variable {target.id} -> _{target.id}")
    if not edits:
        raise _nothing_on("unused loop variable", line)
    return edits, descriptions


# E721 ---------------------------------------------------------------------------------------

_BUILTIN_TYPES = _names(
    "bool range slice memoryview int float complex str bytes bytearray list tuple dict "
    "set frozenset type object"
)


def _is_type_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and len(node.args) == 1
        and not node.keywords
        and not isinstance(node.args[0], ast.Starred)
    )


def _e721(src: _Source, line: int) -> tuple[list[TextEdit], list[str]]:
    matches: list[tuple[ast.Compare, ast.Name]] = []
    for node in ast.walk(src.tree):
        if not isinstance(node, ast.Compare) or node.lineno != line:
            continue
        operands = [node.left, *node.comparators]
        compared = [
            operand
            for index, op in enumerate(node.ops)
            if isinstance(op, ast.Eq | ast.NotEq)
            for operand in operands[index : index + 2]
        ]
        if not any(_is_type_call(operand) for operand in compared):
            continue
        if len(node.ops) > 1:
            raise RewriteRefused("the type comparison is part of a chain; split the chain first")
        other = node.comparators[0] if _is_type_call(node.left) else node.left
        if not isinstance(other, ast.Name) or other.id not in _BUILTIN_TYPES:
            raise RewriteRefused(
                f"{src.segment(other)} is not a builtin type name, so 'is' may not be equivalent"
            )
        matches.append((node, other))
    if not matches:
        raise _nothing_on("type(...) == comparison", line)
    if src.star_import():
        raise RewriteRefused("a star import could rebind type or the builtin type name")
    if src.defines_eq():
        raise RewriteRefused("the module defines __eq__ or __ne__, possibly on a metaclass")
    bound = src.bindings()
    edits: list[TextEdit] = []
    descriptions: list[str] = []
    for node, other in matches:
        for name in ("type", other.id):
            if name in bound:
                raise RewriteRefused(f"the module rebinds {name}, so it may not be the builtin")
        if src.in_fstring(node) and sys.version_info < (3, 12):
            raise RewriteRefused(_IN_FSTRING)
        equal = isinstance(node.ops[0], ast.Eq)
        new = "is" if equal else "is not"
        edit = _operator_edit(src, node.left, node.comparators[0], new)
        edits.append(edit)
        old = "==" if equal else "!="
        descriptions.append(_before_after(src, node, edit, f"type(...) {old} T -> {new} T"))
    return edits, descriptions


# B904 ---------------------------------------------------------------------------------------


def _handler_of(src: _Source, node: ast.Raise) -> tuple[ast.ExceptHandler | None, str | None]:
    """The except handler a raise is in, and why chaining there is unsafe (or None)."""
    problem: str | None = None
    for parent, child in src.ancestors(node):
        if isinstance(parent, ast.ExceptHandler):
            return parent, problem
        if isinstance(parent, _SCOPES):
            problem = problem or "the raise is inside a nested function or class"
        if isinstance(parent, ast.Try | ast.TryStar) and not isinstance(child, ast.ExceptHandler):
            problem = problem or (
                "the raise is in a nested try, else or finally block, where the exception"
                " in flight may be another one (ruff does not report it there)"
            )
    return None, None


def _b904(src: _Source, line: int) -> tuple[list[TextEdit], list[str]]:
    edits: list[TextEdit] = []
    descriptions: list[str] = []
    for node in ast.walk(src.tree):
        if not isinstance(node, ast.Raise) or node.lineno != line:
            continue
        handler, problem = _handler_of(src, node)
        if handler is None:
            continue
        if problem:
            raise RewriteRefused(problem)
        if node.exc is None:
            raise RewriteRefused("a bare raise re-raises the caught exception unchanged")
        if node.cause is not None:
            raise RewriteRefused("the raise already has a from clause")
        name = handler.name
        if name is None:
            raise RewriteRefused(
                "the except clause has no 'as' name to chain from; add one or use 'from None'"
            )
        if _root_name(node.exc) == name:
            raise RewriteRefused(f"the raise re-raises the caught exception {name} itself")
        handler_body = ast.Module(body=handler.body, type_ignores=[])
        if any(bound == name for bound, _ in _bound_names(handler_body)):
            raise RewriteRefused(
                f"the handler rebinds {name}, so it may not be the caught exception"
            )
        edit = TextEdit(src.end(node), src.end(node), f" from {name}")
        edits.append(edit)
        descriptions.append(_before_after(src, node, edit, f"raise ... -> raise ... from {name}"))
    if not edits:
        raise _nothing_on("raise inside an except clause", line)
    return edits, descriptions


# E701 and E702 -------------------------------------------------------------------------------


def _statement_lists(node: ast.AST) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        value = getattr(node, field, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield value


def _e701(src: _Source, line: int) -> tuple[list[TextEdit], list[str]]:
    edits: list[TextEdit] = []
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef):
            continue  # a def one-liner is E704, which ruff reports separately
        for body in _statement_lists(node):
            first = body[0]
            colon = src.token_before(src.start(first))
            if colon is None or colon.string != ":" or src.line_of(colon.start) != line:
                continue
            only = first if len(body) == 1 else None
            if isinstance(only, ast.Expr) and _is_constant(only.value, Ellipsis):
                continue  # ruff accepts `class C: ...`
            header = src.logical_line_start(colon)
            indent = src.text[src.line_start(src.line_of(header.start)) : header.start]
            if indent.strip():
                raise RewriteRefused("the clause does not start its own line")
            body_indent = indent + src.indent_unit(indent)
            edits.append(TextEdit(colon.end, src.start(first), src.newline + body_indent))
    if not edits:
        raise _nothing_on("statement after a colon", line)
    return edits, ["the statement after the colon moved to its own indented line"] * len(edits)


def _e702(src: _Source, line: int) -> tuple[list[TextEdit], list[str]]:
    edits: list[TextEdit] = []
    for node in ast.walk(src.tree):
        for body in _statement_lists(node):
            run_start = body[0]
            for before, after in itertools.pairwise(body):
                if after.lineno != before.end_lineno:
                    run_start = after
                    continue
                semicolons = [
                    tok
                    for tok in src.tokens_between(src.end(before), src.start(after))
                    if tok.string == ";"
                ]
                if len(semicolons) != 1 or src.line_of(semicolons[0].start) != line:
                    continue
                indent = src.indent(run_start.lineno)
                if src.start(run_start) != src.line_start(run_start.lineno) + len(indent):
                    raise RewriteRefused(
                        "the statements follow a colon on the same line; fix E701 first"
                    )
                edits.append(TextEdit(src.end(before), src.start(after), src.newline + indent))
    if not edits:
        raise _nothing_on("semicolon between statements", line)
    return edits, ["statements separated by ; split onto their own lines"] * len(edits)


_RULES: dict[str, _Rule] = {
    "B006": _b006,
    "B007": _b007,
    "B904": _b904,
    "E701": _e701,
    "E702": _e702,
    "E711": _e711,
    "E721": _e721,
    "E722": _e722,
}
_LAYOUT_ONLY = {"E701", "E702"}
REWRITE_CODES: frozenset[str] = frozenset(_RULES)
"""The ruff codes :func:`rewrite` handles."""
