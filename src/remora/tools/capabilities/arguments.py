"""Argument lists and expected values as Python source the host can prove is data.

A *case* is the text between the parentheses of a call, ``2, [1, 2, 3], key=len``. Cases run
in the sandbox, but they are then written into generated tests and fixtures, which run on the
user's machine with no sandbox; so the host accepts only what it can see is data, resolved
from the module's source (never by importing it): literals and containers, arithmetic and
comparisons on them, comprehensions and lambdas computing data from their own variables,
references to safe builtins, a project's own functions and constants and a few pure standard
functions (``operator.add``), and calls of data constructors: builtins such as ``frozenset``,
:data:`STDLIB_CONSTRUCTORS` such as ``datetime.date``, and classes the module defines.
Names the module merely imports, other attribute chains, subscripts of names, dunder names
and dunder strings are refused with a reason a small model can act on. Values the observation
child reports back (a repr taken for an expected value, an exception's class) are re-checked
here before they are written: the child runs project code, which can forge them.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType

from remora import pyast

MAX_CASE_CHARS = 400
MAX_VALUE_CHARS = 2000
MAX_REPEAT = 10_000
DATA_BUILTINS = frozenset(
    {
        "bool", "bytearray", "bytes", "complex", "dict", "float", "frozenset", "int", "list",
        "range", "set", "slice", "str", "tuple",
    }
)  # fmt: skip
SAFE_BUILTINS = DATA_BUILTINS | frozenset(
    {
        "abs", "all", "any", "callable", "chr", "divmod", "enumerate", "filter", "hex",
        "isinstance", "iter", "len", "map", "max", "min", "next", "object", "oct", "ord",
        "repr", "reversed", "round", "sorted", "sum", "zip",
    }
)  # fmt: skip
STDLIB_CONSTRUCTORS = frozenset(
    {
        "datetime.date", "datetime.datetime", "datetime.time", "datetime.timedelta",
        "datetime.timezone", "decimal.Decimal", "fractions.Fraction", "collections.Counter",
        "collections.OrderedDict", "collections.deque",
    }
)  # fmt: skip
_OPERATOR = (
    "add sub mul truediv floordiv mod neg pos abs not_ truth eq ne lt le gt ge and_ or_ xor "
    "invert concat contains is_ is_not lshift rshift"
)
_MATH = (
    "pi e tau inf nan sqrt floor ceil fabs exp log log2 log10 sin cos tan isclose isfinite "
    "isinf isnan gcd hypot trunc"
)
STDLIB_VALUES = frozenset(
    {"datetime.timezone.utc"}
    | {f"operator.{name}" for name in _OPERATOR.split()}
    | {f"math.{name}" for name in _MATH.split()}
)
_STDLIB_DATA = frozenset(
    {"datetime.timezone.utc", "math.pi", "math.e", "math.tau", "math.inf", "math.nan"}
)
# Callees that never call what they are given: a passed-only callable may be an argument of
# these (``list([scale])``), but of no other call (``map(scale, ...)`` calls it).
_NEVER_CALL = frozenset(
    {
        "abs", "all", "any", "callable", "chr", "divmod", "enumerate", "hex", "isinstance", "len",
        "next", "object", "oct", "ord", "repr", "reversed", "round", "sum", "zip",
    }
)  # fmt: skip
_NON_CALLING = DATA_BUILTINS | STDLIB_CONSTRUCTORS | _NEVER_CALL
_CALLS_ONLY_KEYWORDS = frozenset({"min", "max", "sorted"})
"""Builtins that call only their ``key=`` (``max(LIMIT, 3)`` compares, ``max(xs, key=run)``
calls)."""
HELPER_MODULES = frozenset(name.split(".")[0] for name in STDLIB_CONSTRUCTORS | STDLIB_VALUES)
_SIZED = frozenset({"range", "bytes", "bytearray"})
_DUNDER = re.compile(r"__\w+__")
_EXCEPTIONS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)
_PLAIN_NODES = (
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Slice,
    ast.Load,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
)
_STANDARD = (
    "use literals, lambdas, builtins such as len or str, datetime.date(...), decimal.Decimal(...)"
    ", or classes defined in the module"
)
_TOO_DEEP = "the expression is nested too deeply; use simpler values"


class CaseError(ValueError):
    """A case that cannot be run or written into a test; the message says why."""


@dataclass(frozen=True)
class Scope:
    """What a case may name in one module, resolved from its source.

    ``classes`` (bound once, by a top-level ``class``) may be called and have a member read
    but not called (``Color.RED``, not ``Shell.execute(...)``); ``defined`` names (functions,
    constants) may be passed but not called, and the same holds for passing them to a call
    that may call them (``map(run, ...)``, ``sorted(..., key=run)``, ``Task(run)``), see
    :func:`check_expression`;
    ``aliases`` are names bound once by ``from datetime import date``-style imports of the
    standard allowlist; ``imported`` names are refused. ``bound`` is every name the module
    binds (a builtin it rebinds is its own name, not the builtin) and ``shadowed`` those not
    bound by ``import name`` (a ``datetime`` that is not the module makes ``datetime.date``
    mean something else, so it is refused).
    """

    classes: frozenset[str] = frozenset()
    defined: frozenset[str] = frozenset()
    aliases: Mapping[str, str] = field(default_factory=dict)
    imported: frozenset[str] = frozenset()
    bound: frozenset[str] = frozenset()
    shadowed: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Case:
    """One argument list, as source: positional expressions, then keyword ones."""

    args: tuple[str, ...]
    kwargs: tuple[tuple[str, str], ...] = ()

    @property
    def text(self) -> str:
        """The argument list as written between a call's parentheses."""
        return ", ".join([*self.args, *(f"{name}={value}" for name, value in self.kwargs)])

    def call(self, callee: str) -> str:
        return f"{callee}({self.text})"

    def names(self) -> set[str]:
        """The free names the case uses (for the imports of a generated test)."""
        found: set[str] = set()
        for expression in [*self.args, *(value for _, value in self.kwargs)]:
            found |= free_names(pyast.parse(expression, mode="eval").body)
        return found


def public_names(source: str) -> frozenset[str]:
    """Public names a module defines or imports at top level (what a test may import)."""
    names: set[str] = set()
    for node in pyast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    return frozenset(name for name in names if not name.startswith("_"))


@lru_cache(maxsize=64)
def module_scope(source: str) -> Scope:
    """The :class:`Scope` of a module's source: every binding at module level is counted, so a
    class or an import rebound elsewhere (``Point = os.system``) is not trusted as one."""
    kinds: dict[str, list[str]] = {}
    for node in _module_level(pyast.parse(source)):
        for name, kind in _bindings(node):
            kinds.setdefault(name, []).append(kind)
    classes: set[str] = set()
    defined: set[str] = set()
    imported: set[str] = set()
    aliases: dict[str, str] = {}
    for name, found in kinds.items():
        if name.startswith("_"):
            continue
        dotted = found[0].removeprefix("from:")
        if found == ["class"]:
            classes.add(name)
        elif len(found) == 1 and dotted in STDLIB_CONSTRUCTORS | STDLIB_VALUES:
            aliases[name] = dotted
        elif all(kind in ("class", "def", "assign") for kind in found):
            defined.add(name)
        else:
            imported.add(name)
    shadowed = {
        name for name, found in kinds.items() if any(kind != f"module:{name}" for kind in found)
    }
    return Scope(
        frozenset(classes),
        frozenset(defined),
        MappingProxyType(aliases),
        frozenset(imported),
        frozenset(kinds),
        frozenset(shadowed),
    )


def _module_level(tree: ast.Module) -> Iterator[ast.AST]:
    """Nodes that run in the module's namespace: function and class bodies are not entered."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stack += [*node.decorator_list, *getattr(node, "bases", [])]
        elif not isinstance(node, ast.Lambda):
            stack += ast.iter_child_nodes(node)


def _bindings(node: ast.AST) -> Iterator[tuple[str, str]]:
    """(name, how it is bound) for the names ``node`` binds in the module namespace."""
    if isinstance(node, ast.ClassDef):
        yield node.name, "class"
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        yield node.name, "def"
    elif isinstance(node, ast.Import):
        for alias in node.names:
            root = alias.name.split(".")[0]
            plain = alias.asname is None or alias.asname == alias.name
            yield (alias.asname or root), f"module:{root}" if plain else "import"
    elif isinstance(node, ast.ImportFrom):
        for alias in node.names:
            origin = f"from:{node.module}.{alias.name}" if node.level == 0 else "import"
            yield (alias.asname or alias.name), origin
    elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        yield node.id, "assign"
    elif isinstance(node, ast.Global | ast.Nonlocal):
        yield from ((name, "assign") for name in node.names)


def parse_case(text: str, scope: Scope) -> Case:
    """``text`` (``1, [2], key=len``) as a :class:`Case`, or CaseError saying what is wrong.

    The case's text is re-emitted from the checked syntax tree (``ast.unparse``), so what is
    run and written is exactly what was checked.
    """
    if not isinstance(text, str) or not text.strip():
        raise CaseError("the case is empty; write the arguments, e.g. 2, [1, 2, 3]")
    if len(text) > MAX_CASE_CHARS:
        raise CaseError(f"the case is longer than {MAX_CASE_CHARS} characters; use smaller values")
    try:
        call = pyast.parse(f"f({text.strip()})", mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise CaseError(
            f"{text.strip()!r} is not a Python argument list; write e.g. 2, 'a', items=[1]"
        ) from None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise CaseError(f"{text.strip()!r} is not a Python argument list")
    _check_keywords(call.keywords)
    try:
        for node in [*call.args, *(k.value for k in call.keywords)]:
            check_expression(node, scope)
        return Case(
            tuple(ast.unparse(node) for node in call.args),
            tuple((str(k.arg), ast.unparse(k.value)) for k in call.keywords),
        )
    except RecursionError:
        raise CaseError(_TOO_DEEP) from None


def check_value(text: str, scope: Scope, limit: int = MAX_VALUE_CHARS) -> str:
    """``text`` (an expected value, a receiver) re-emitted from its checked syntax tree, or
    CaseError: the same rules as a case's arguments."""
    if not isinstance(text, str) or not text.strip():
        raise CaseError("the value is empty")
    if len(text) > limit:
        raise CaseError(f"the value is longer than {limit} characters")
    try:
        node = pyast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise CaseError(f"{text.strip()[:80]!r} is not a Python expression") from None
    try:
        check_expression(node, scope)
        return ast.unparse(_as_the_module_names_it(node, scope))
    except RecursionError:
        raise CaseError(_TOO_DEEP) from None


class _ToAliases(ast.NodeTransformer):
    """``datetime.date`` as ``date`` where the module imports it by that name and does
    not bind ``datetime``: a repr names the class by its module, the module by its alias."""

    def __init__(self, scope: Scope) -> None:
        self.names = {dotted: name for name, dotted in scope.aliases.items()}
        self.bound = scope.bound

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        dotted = _dotted(node)
        name = self.names.get(dotted or "")
        if name is not None and dotted is not None and dotted.split(".")[0] not in self.bound:
            return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
        return self.generic_visit(node)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _as_the_module_names_it(node: ast.expr, scope: Scope) -> ast.expr:
    """``node`` naming the standard classes as the module does (see :class:`_ToAliases`)."""
    if not scope.aliases:
        return node
    changed = _ToAliases(scope).visit(node)
    return changed if isinstance(changed, ast.expr) else node


def exception_name(text: object, scope: Scope) -> str:
    """``text`` when it names an exception class a test may write in ``pytest.raises``: a
    builtin exception, or a class the module defines or imports, by plain name."""
    if (
        not isinstance(text, str)
        or not text.isidentifier()
        or keyword.iskeyword(text)
        or text.startswith("_")
    ):
        raise CaseError(f"{str(text)[:80]!r} is not a plain exception class name")
    if text in _EXCEPTIONS and text not in scope.bound:
        return text
    if text in scope.classes | scope.defined | scope.imported:
        return text
    raise CaseError(f"{text!r} is neither a builtin exception nor a name of the module")


def check_expression(
    node: ast.AST,
    scope: Scope,
    bound: frozenset[str] = frozenset(),
    caller: str | None = None,
    carried: frozenset[str] = frozenset(),
) -> None:
    """CaseError unless every part of ``node`` is data a test may contain (see the module).

    What a case may pass but not call (a module's functions and constants, ``Class.member``,
    ``operator.add``) it may pass only where nothing but the function under test can call it:
    ``caller`` names the innermost call around ``node`` that may call its arguments (``map``,
    ``sorted``, a class of the module; anything but data constructors and the builtins in
    ``_NON_CALLING``), and inside one such a name is refused as if it were called. The
    ``carried`` names, bound by a lambda default or a comprehension over such a name
    (``[map(f, ...) for f in [run]]``), count as that name.
    """
    if isinstance(node, ast.Starred):
        raise CaseError("'*' unpacking is not allowed; write each argument")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str) and _DUNDER.search(node.value):
            raise CaseError(
                f"the string {node.value[:40]!r} contains a special (dunder) name; "
                "use ordinary text"
            )
        return
    if isinstance(node, ast.Name):
        _check_name(node.id, scope, bound, called=False)
        if caller is not None and _passed_only(node, scope, bound, carried):
            _refuse_passing(node.id, caller)
        return
    if isinstance(node, ast.Attribute):
        _check_dotted(node, scope, bound, called=False)
        if caller is not None and _passed_only(node, scope, bound, carried):
            _refuse_passing(ast.unparse(node), caller)
        return
    if isinstance(node, ast.Call):
        _check_call(node, scope, bound, caller, carried)
        return
    if isinstance(node, ast.Lambda):
        _check_lambda(node, scope, bound, caller, carried)
        return
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        _check_comprehension(node, scope, bound, caller, carried)
        return
    if isinstance(node, ast.Subscript):
        owner = node.value
        if not (
            isinstance(owner, ast.List | ast.Tuple | ast.Dict | ast.Constant)
            or (isinstance(owner, ast.Name) and owner.id in bound)
        ):
            raise CaseError(
                "only a literal or a lambda's own parameter can be subscripted in a case"
            )
    elif isinstance(node, ast.Dict) and any(key is None for key in node.keys):
        raise CaseError("'**' unpacking is not allowed in a dict; write each key")
    elif isinstance(node, ast.BinOp):
        _check_size(node)
    elif not isinstance(node, _PLAIN_NODES):
        raise CaseError(f"{type(node).__name__} expressions are not allowed in a case")
    for child in ast.iter_child_nodes(node):
        check_expression(child, scope, bound, caller, carried)


def _passed_only(
    node: ast.Name | ast.Attribute, scope: Scope, bound: frozenset[str], carried: frozenset[str]
) -> bool:
    """Whether ``node`` (already checked) names what a case may pass but not call."""
    if isinstance(node, ast.Name):
        if node.id in bound:
            return node.id in carried
        if node.id in scope.classes:
            return False
        if node.id in SAFE_BUILTINS and node.id not in scope.bound:
            return False
        dotted = scope.aliases.get(node.id)
        if dotted is not None:
            return dotted not in STDLIB_CONSTRUCTORS | _STDLIB_DATA
        return True
    text = _dotted(node) or ""
    return text not in STDLIB_CONSTRUCTORS | _STDLIB_DATA


def _carries(node: ast.AST, scope: Scope, bound: frozenset[str], carried: frozenset[str]) -> bool:
    """Whether ``node`` (already checked) may evaluate to something a case may only pass."""
    for part in ast.walk(node):
        if isinstance(part, ast.Attribute) and _passed_only(part, scope, bound, carried):
            return True
    return any(
        name in carried if name in bound else _passed_only(ast.Name(id=name), scope, bound, carried)
        for name in free_names(node)
    )


def _refuse_passing(text: str, caller: str) -> None:
    raise CaseError(
        f"'{text}' can be passed but not called in a case, and {caller}(...) may call it; "
        f"pass '{text}' only to the function under test, or use a lambda or a builtin"
    )


def _callee(node: ast.Call, scope: Scope, caller: str | None) -> str | None:
    """The ``caller`` for the arguments of ``node``: unchanged where ``node`` calls a data
    constructor or a builtin that never calls its arguments, else ``node``'s callee."""
    text = _dotted(node.func) or "the call"
    if isinstance(node.func, ast.Name):
        name = node.func.id
        if name in scope.classes:
            return caller  # the module's own class, as trusted as the function under test
        if name in _NON_CALLING and name in DATA_BUILTINS | SAFE_BUILTINS:
            if name not in scope.bound:
                return caller
        elif scope.aliases.get(name) in STDLIB_CONSTRUCTORS:
            return caller
    elif text in STDLIB_CONSTRUCTORS:
        return caller
    return text


def _check_name(name: str, scope: Scope, bound: frozenset[str], *, called: bool) -> None:
    if _DUNDER.fullmatch(name):
        raise CaseError(f"the special name '{name}' is not allowed")
    if name in bound:
        if called:
            raise CaseError(
                f"'{name}(...)' calls a parameter; a lambda may only compute data from them"
            )
        return
    if (name in SAFE_BUILTINS and name not in scope.bound) or name in scope.classes:
        return
    if name in scope.aliases:
        if called and scope.aliases[name] not in STDLIB_CONSTRUCTORS:
            raise CaseError(f"'{name}' can be passed but not called in a case")
        return
    if name in scope.defined:
        if called:
            raise CaseError(
                f"only classes can be called in a case; pass '{name}' without calling it"
            )
        return
    if name in scope.imported:
        raise CaseError(
            f"the name '{name}' is imported by the module, not defined in it; " + _STANDARD
        )
    raise CaseError(f"the name '{name}' is not available; " + _STANDARD)


def _check_dotted(
    node: ast.Attribute, scope: Scope, bound: frozenset[str], *, called: bool
) -> None:
    """``datetime.date``, ``operator.add`` or ``Class.member``, and nothing deeper."""
    if node.attr.startswith("_"):
        raise CaseError(f"the attribute '{node.attr}' is private")
    parts = [node.attr]
    owner: ast.expr = node.value
    while isinstance(owner, ast.Attribute):
        parts.append(owner.attr)
        owner = owner.value
    if not isinstance(owner, ast.Name):
        raise CaseError(
            f"the attribute '{node.attr}' is read from an expression; attributes can only be "
            "read from datetime, decimal, fractions, collections, operator, math or a class "
            "the module defines"
        )
    root = owner.id
    text = ".".join([root, *reversed(parts)])
    if root in bound:
        raise CaseError(
            f"'{text}' reads an attribute of a parameter; a lambda may only compute data"
        )
    if root in scope.classes and len(parts) == 1:
        if called:
            raise CaseError(
                f"'{text}' can be passed but not called in a case; call the class itself, "
                f"e.g. {root}(...)"
            )
        return
    if text in STDLIB_CONSTRUCTORS or text in STDLIB_VALUES:
        if root in scope.shadowed:
            raise CaseError(f"'{root}' is something else in the module, so '{text}' is not allowed")
        if called and text not in STDLIB_CONSTRUCTORS:
            raise CaseError(f"'{text}' can be passed but not called in a case")
        return
    raise CaseError(
        f"'{text}' is not allowed: a case may name only datetime.date/datetime/time/timedelta, "
        "decimal.Decimal, fractions.Fraction, collections.Counter/OrderedDict/deque, pure "
        "operator and math functions, or Class.member of a class the module defines"
    )


def _check_call(
    node: ast.Call,
    scope: Scope,
    bound: frozenset[str],
    caller: str | None = None,
    carried: frozenset[str] = frozenset(),
) -> None:
    if isinstance(node.func, ast.Name):
        _check_name(node.func.id, scope, bound, called=True)
        if node.func.id in _SIZED and node.func.id not in bound:
            _check_sized(node)
    elif isinstance(node.func, ast.Attribute):
        _check_dotted(node.func, scope, bound, called=True)
    else:
        raise CaseError("only named functions can be called in a case")
    _check_keywords(node.keywords)
    inner = _callee(node, scope, caller)
    key_only = (
        isinstance(node.func, ast.Name)
        and node.func.id in _CALLS_ONLY_KEYWORDS
        and node.func.id not in scope.bound
    )
    for argument in node.args:
        check_expression(argument, scope, bound, caller if key_only else inner, carried)
    for item in node.keywords:
        check_expression(item.value, scope, bound, inner, carried)


def _check_keywords(keywords: list[ast.keyword]) -> None:
    for item in keywords:
        if item.arg is None:
            raise CaseError("'**' unpacking is not allowed; write each keyword argument")
        if _DUNDER.fullmatch(item.arg):
            raise CaseError(f"the special keyword '{item.arg}' is not allowed")


def _check_sized(node: ast.Call) -> None:
    """``range``, ``bytes`` and ``bytearray`` take plain numbers no larger than MAX_REPEAT."""
    for argument in node.args:
        value = argument.operand if isinstance(argument, ast.UnaryOp) else argument
        if isinstance(value, ast.Constant) and isinstance(value.value, int):
            if abs(value.value) > MAX_REPEAT:
                raise CaseError(f"{value.value} is too large for a test value; use smaller numbers")
        elif isinstance(value, ast.BinOp | ast.Name | ast.Call):
            raise CaseError(f"give {ast.unparse(node.func)}() plain numbers, e.g. range(3)")


def _parameters(node: ast.Lambda) -> list[str]:
    params = node.args
    names = [a.arg for a in [*params.posonlyargs, *params.args, *params.kwonlyargs]]
    return names + [a.arg for a in (params.vararg, params.kwarg) if a is not None]


def _check_lambda(
    node: ast.Lambda,
    scope: Scope,
    bound: frozenset[str],
    caller: str | None = None,
    carried: frozenset[str] = frozenset(),
) -> None:
    """A lambda computes data from its own parameters; its defaults are checked outside it."""
    names = _parameters(node)
    if any(_DUNDER.fullmatch(name) for name in names):
        raise CaseError("special (dunder) parameter names are not allowed")
    params = node.args
    positional = [*params.posonlyargs, *params.args]
    pairs = [
        *zip(positional[len(positional) - len(params.defaults) :], params.defaults, strict=True),
        *((a, d) for a, d in zip(params.kwonlyargs, params.kw_defaults, strict=True) if d),
    ]
    inner = carried - frozenset(names)
    for argument, default in pairs:
        check_expression(default, scope, bound, caller, carried)
        if _carries(default, scope, bound, carried):
            inner |= {argument.arg}
    check_expression(node.body, scope, bound | frozenset(names), caller, inner)


def _check_comprehension(
    node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
    scope: Scope,
    bound: frozenset[str],
    caller: str | None = None,
    carried: frozenset[str] = frozenset(),
) -> None:
    """Each iterable is data, so every value the comprehension binds and builds is data."""
    inner = bound
    for generator in node.generators:
        if generator.is_async:
            raise CaseError("async comprehensions are not allowed in a case")
        check_expression(generator.iter, scope, inner, caller, carried)
        targets = [generator.target]
        if isinstance(generator.target, ast.Tuple):
            targets = list(generator.target.elts)
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if len(names) != len(targets) or any(_DUNDER.fullmatch(n) for n in names):
            raise CaseError("comprehension targets must be plain names")
        if _carries(generator.iter, scope, inner, carried):
            carried = carried | frozenset(names)
        else:
            carried = carried - frozenset(names)
        inner = inner | frozenset(names)
        for condition in generator.ifs:
            check_expression(condition, scope, inner, caller, carried)
    parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    for part in parts:
        check_expression(part, scope, inner, caller, carried)


def _check_size(node: ast.BinOp) -> None:
    """Refuse ``'a' * 10**9``, ``2 ** 10**6`` and ``[0] * 10000 * 10000``: values too big to
    print in a test."""
    sides = (node.left, node.right)
    if not isinstance(node.op, ast.Pow | ast.LShift | ast.Mult):
        return
    for side in sides:
        if isinstance(side, ast.Constant) and isinstance(side.value, int):
            if abs(side.value) > MAX_REPEAT:
                raise CaseError(f"{side.value} is too large for a test value; use smaller numbers")
        elif isinstance(side, ast.BinOp) and isinstance(side.op, ast.Pow | ast.LShift):
            raise CaseError("nested powers are too large for a test value")
    if not isinstance(node.op, ast.Mult):
        return
    for sequence, count in (sides, sides[::-1]):
        if _is_sequence(sequence):
            if isinstance(sequence, ast.BinOp):
                raise CaseError("a repeated sequence cannot be repeated again; use one number")
            if not (isinstance(count, ast.Constant) and isinstance(count.value, int)):
                raise CaseError("repeat a sequence by a plain number, e.g. [0] * 3")


def _is_sequence(node: ast.expr) -> bool:
    """Whether ``node`` is a string, bytes, list or tuple (or a repetition of one)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str | bytes)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _is_sequence(node.left) or _is_sequence(node.right)
    return isinstance(node, ast.List | ast.Tuple | ast.ListComp)


def free_names(node: ast.AST, bound: frozenset[str] = frozenset()) -> set[str]:
    """Names ``node`` reads that no lambda or comprehension inside it binds."""
    if isinstance(node, ast.Name):
        return set() if node.id in bound else {node.id}
    if isinstance(node, ast.Lambda):
        params = node.args
        names = set(_parameters(node))
        defaults = [*params.defaults, *(d for d in params.kw_defaults if d is not None)]
        inside = free_names(node.body, bound | names)
        return inside.union(*(free_names(default, bound) for default in defaults))
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        found: set[str] = set()
        inner = bound
        for generator in node.generators:
            found |= free_names(generator.iter, inner)
            inner = inner | {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
            for condition in generator.ifs:
                found |= free_names(condition, inner)
        parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        return found.union(*(free_names(part, inner) for part in parts))
    return set().union(*(free_names(child, bound) for child in ast.iter_child_nodes(node)))
