"""Candidate argument sets for calling one function of an untyped project.

A characterization agent runs these calls and records what it sees, and writes the ones worth
keeping into a test, so every argument is Python source the host can prove is data (see
:mod:`.arguments`): literals, and for parameters the function calls, small lambdas or
builtins; a candidate that is not (a call site passing ``os.environ``) is left out. The code
analysed is only parsed, never imported. Sources, most trusted first:

1. ``doctest``: ``>>> name(...)`` examples in the function's own docstring;
2. ``call_site`` / ``test``: literal calls in other project files (tests labelled ``test``);
3. ``default``: parameters at their literal defaults, required ones filled from 4-7;
4. ``literal``: values the body compares a parameter with (and boundaries), keys it reads,
   the keys or items of a module-level table it looks the parameter up in, None where it
   compares the parameter with a sentinel name;
5. ``shape``: containers whose items have the shape the body takes them apart in (lists of
   lists for ``for x in seqs: for y in x`` or ``zip(*seqs)``, pairs for ``dict(pairs)``,
   dicts for ``row['id']``);
6. ``annotation``: typical values of the annotated type (a class of the module: a call
   that builds one, from its ``__init__`` or its dataclass fields);
7. ``name``: typical values guessed from the parameter's name (a plural: a list of what it
   names, ``prices`` numbers, ``names`` words, ``rows`` lists; and, for a parameter the body
   calls, callables of the arity it is called with).

Steps 3-7 combine one factor at a time: two base sets (the defaults, then values that say
something), then one parameter varied per candidate. ``*args`` and ``**kwargs`` are left out
of the bases and varied like the others (extra arguments shaped by 5 or 7, keywords the body
reads or two made up). The calls of 1 and 2 are varied one parameter at a time through 4
before the bases, and the first two through 5-7 after them, where a value has the shape of
the one people passed: people's calls have values of the right shape.
"""

from __future__ import annotations

import ast
import copy
import itertools
import keyword
import math
import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from remora import pyast
from remora.tools.capabilities.arguments import (
    Case,
    CaseError,
    Scope,
    check_expression,
    module_scope,
    parse_case,
)
from remora.tools.capabilities.project import is_test_file
from remora.tools.capabilities.pysource import find_definition

_FuncDef = ast.FunctionDef | ast.AsyncFunctionDef
_MISSING = object()
_TIERS = ("literal", "shape", "annotation", "name")
_CALLABLE_NAMES = {
    "func", "f", "fn", "fun", "function", "predicate", "pred", "callback", "mapper",
    "transform", "keyfunc",
}  # fmt: skip
_POSITIONAL = ("posonly", "positional")
_STARS = ("var", "varkw")


@dataclass(frozen=True)
class Candidate:
    """One way to call the function, as argument source, and where the values came from."""

    args: tuple[str, ...]
    kwargs: dict[str, str]
    source: str

    @property
    def case(self) -> Case:
        return Case(self.args, tuple(self.kwargs.items()))

    @property
    def telling(self) -> int:
        """How many of its arguments say something (not zero, empty, None or False)."""
        return sum(a not in EMPTY_VALUES for a in (*self.args, *self.kwargs.values()))

    def to_json(self) -> dict[str, Any]:
        """The candidate as plain JSON data, ready for a sandboxed script."""
        return {"text": self.case.text, "source": self.source}


class _Expr(str):
    """Source text among literal values: its repr is the text itself."""

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True)
class _Param:
    name: str
    kind: str  # "posonly" | "positional" | "var" (*args) | "kwonly" | "varkw" (**kwargs)
    default: Any  # _MISSING when required or when the default is not a JSON literal
    has_default: bool
    annotation: ast.expr | None


@dataclass(frozen=True)
class _Target:
    func: _FuncDef
    name: str
    class_name: str | None
    is_instance_method: bool
    params: tuple[_Param, ...]
    vararg: bool
    varkw: bool
    constants: Mapping[str, list[Any]] = field(default_factory=dict)
    """Module-level names bound to a literal container: its keys or items (a parameter
    tested with ``in NAME`` or used as ``NAME[p]`` takes them)."""
    constructors: Mapping[str, str] = field(default_factory=dict)
    """The module's classes, each with a call that builds one (``Item('abc', 1, 3)``), for
    parameters annotated with them."""
    members: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """The names each of the module's classes has (attributes it sets, methods, fields):
    a parameter whose attributes the body reads gets an instance of a class that has them."""
    module_doc: str = ""
    """The module's docstring: its ``>>>`` examples of the function are examples too."""
    files: tuple[str, ...] = ()
    """The project's data files whose extension the module names, for path parameters."""
    siblings: Mapping[str, list[tuple[str, Any]]] = field(default_factory=dict)
    """Values the ``>>>`` examples of the module (its docstring, its functions') pass to
    a parameter of each name, whatever the function: ``is_valid(number)`` takes what
    ``validate(number)``'s examples show."""
    patterns: Mapping[str, str] = field(default_factory=dict)
    """Module-level regexes (``SKU = re.compile(r'...')``) by name: a parameter the body
    matches against one gets a string it matches."""


def candidate_inputs(
    source: str,
    qualname: str,
    project: Mapping[str, str] | None = None,
    limit: int = 12,
    files: Sequence[str] = (),
) -> list[Candidate]:
    """Candidates for ``qualname`` in ``source``, most trusted first, deduplicated.

    ``files``: the project's data files (relative paths); a parameter named like a path
    takes those whose extension the module names (``'.csv'``)."""
    target = _find(source, qualname)
    if files:
        target = replace(target, files=_named_files(source, files))
    allowed = module_scope(source)
    found: list[Candidate] = []
    people: list[Candidate] = []
    seen: set[str] = set()

    def add(candidates: Iterator[Candidate]) -> bool:
        for candidate in candidates:
            if len(found) >= limit:
                return False
            key = candidate.case.text
            if key not in seen and _is_data(candidate, allowed):
                seen.add(key)
                found.append(candidate)
        return len(found) < limit

    def kept(candidates: Iterator[Candidate]) -> Iterator[Candidate]:
        for candidate in candidates:
            people.append(candidate)
            yield candidate

    if not add(kept(_doctests(target, allowed))):
        return found
    if not add(kept(_call_sites(target, project or {}, allowed))):
        return found
    add(_varied(target, people, ("literal",)))
    bases, variations = _synthesis(target)
    add(iter(bases))
    add(_varied(target, people[:2], ("default", *_TIERS[1:])))
    add(variations)
    return found


def _is_data(candidate: Candidate, scope: Scope) -> bool:
    """Whether the candidate passes the same check as a model's case (no dunder strings, no
    oversized values), so every candidate can be written into a test."""
    if not candidate.case.text:
        return True
    try:
        parse_case(candidate.case.text, scope)
    except CaseError:
        return False
    return True


def callable_params(source: str, qualname: str) -> list[str]:
    """Parameters the function calls or that are named like functions."""
    return list(_callables(_find(source, qualname)))


# --- locating the function -------------------------------------------------------------------


def _find(source: str, qualname: str) -> _Target:
    """The definition of ``qualname``: a function or ``Class.method`` (nested classes too)."""
    tree = pyast.parse(source)
    located = find_definition(tree, qualname)
    if located is None and qualname.endswith(".__init__"):
        owner = find_definition(tree, qualname.rsplit(".", 1)[0])
        init = _fields_init(owner.node) if owner and isinstance(owner.node, ast.ClassDef) else None
        if owner is not None and init is not None:
            target = _target(init, owner.node.name)
            return replace(
                target,
                constants=_constants(tree),
                constructors=_constructors(tree),
                members=_members(tree),
                patterns=_patterns(tree),
            )
    if located is None:
        raise ValueError(f"{qualname!r} is not defined in this module")
    node = located.node
    if isinstance(node, ast.ClassDef):
        raise ValueError(f"{qualname!r} names a class, not a function")
    if not all(isinstance(parent, ast.ClassDef) for parent in located.parents):
        raise ValueError(f"{qualname!r} is local to a function, not callable from the module")
    target = _target(node, located.parents[-1].name if located.parents else None)
    return replace(
        target,
        constants=_constants(tree),
        constructors=_constructors(tree),
        members=_members(tree),
        patterns=_patterns(tree),
        module_doc=ast.get_docstring(tree) or "",
        siblings=_sibling_values(tree),
    )


def _constructors(tree: ast.Module) -> dict[str, str]:
    """A call building each top-level class of the module from its ``__init__`` (or its
    fields): the synthesized arguments that say most."""
    constants, patterns = _constants(tree), _patterns(tree)
    found: dict[str, str] = {}
    # a second pass builds a class whose fields hold the module's other classes
    # (``Order(lines=[OrderLine(...)])``) with the calls of the first
    for _ in range(2):
        known, found = found, {}
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            init = next(
                (n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"),
                None,
            ) or _fields_init(node)
            if init is None:
                continue
            others = {name: call for name, call in known.items() if name != node.name}
            target = replace(
                _target(init, node.name),
                constants=constants,
                constructors=others,
                patterns=patterns,
            )
            made = list(itertools.islice(_synthesized(target), 4))
            if made:
                best = max(made, key=lambda c: c.telling)
                found[node.name] = f"{node.name}({best.case.text})"
    return found


def _members(tree: ast.Module) -> dict[str, frozenset[str]]:
    """Each top-level class's names: what its methods assign to ``self.NAME``, its methods,
    and its class-level names and fields."""
    found: dict[str, frozenset[str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        names: set[str] = set()
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(item.name)
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                names.add(item.target.id)
            elif isinstance(item, ast.Assign):
                names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
        for inner in ast.walk(node):
            if (
                isinstance(inner, ast.Attribute)
                and isinstance(inner.ctx, ast.Store)
                and _is_name(inner.value, "self")
            ):
                names.add(inner.attr)
        found[node.name] = frozenset(names)
    return found


def _read_members(name: str, func: _FuncDef) -> set[str]:
    """The attributes the body reads from parameter ``name`` (``start.x``, ``order.total()``)."""
    return {
        node.attr
        for node in ast.walk(func)
        if isinstance(node, ast.Attribute) and _is_name(node.value, name)
    }


def _instances(name: str, target: _Target) -> list[Any]:
    """Instances of the module's classes that have every attribute the body reads from
    ``name``: the calls that build them."""
    read = _read_members(name, target.func)
    if not read:
        return []
    return [
        _Expr(target.constructors[cls])
        for cls, members in target.members.items()
        if read <= members and cls in target.constructors
    ]


EMPTY_VALUES = frozenset(
    {"0", "0.0", "None", "False", "''", '""', "[]", "{}", "()", "set()", "b''"}
)
"""Argument or result source that says nothing in a test: zero, empty, None, False."""


def _fields_init(cls: ast.ClassDef) -> ast.FunctionDef | None:
    """The ``__init__`` a class without one gets from its annotated fields (dataclasses,
    NamedTuple, attrs): ``sku: str`` a required parameter, ``quantity: int = 0`` one with
    its default; ClassVar and ``field(init=False)`` fields left out. None without fields."""
    params: list[str] = []
    for node in cls.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        annotation = ast.unparse(node.annotation)
        if "ClassVar" in annotation or "InitVar" in annotation:
            continue
        value = node.value
        if isinstance(value, ast.Call) and any(
            k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in value.keywords
        ):
            continue
        default = "" if value is None else f" = {ast.unparse(value)}"
        params.append(f"{node.target.id}: {annotation}{default}")
    if not params:
        return None
    try:
        module = pyast.parse(f"def __init__(self, {', '.join(params)}):\n    pass\n")
    except SyntaxError:  # a required field after one with a default
        return None
    init = module.body[0]
    return init if isinstance(init, ast.FunctionDef) else None


def _constants(tree: ast.Module) -> dict[str, list[Any]]:
    """Module-level ``NAME = {...}`` / ``[...]`` / ``(...)`` / ``{..., ...}``: up to four of
    its keys or items, those that are plain data."""
    found: dict[str, list[Any]] = {}
    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if value is None or len(targets) != 1 or not isinstance(targets[0], ast.Name):
            continue
        if isinstance(value, ast.Dict):
            items = [_literal(k) for k in value.keys if k is not None]
        elif isinstance(value, ast.List | ast.Tuple | ast.Set):
            items = [_literal(e) for e in value.elts]
        else:
            continue
        plain = [item for item in items if _is_plain_key(item)]
        if plain:
            found[targets[0].id] = plain[:4]
    return found


def _target(func: _FuncDef, class_name: str | None) -> _Target:
    """Parameters as the caller sees them: ``self``/``cls`` dropped, JSON defaults kept."""
    decorators = {d.id for d in func.decorator_list if isinstance(d, ast.Name)}
    drop_first = class_name is not None and "staticmethod" not in decorators
    a = func.args
    positional = [(p, "posonly") for p in a.posonlyargs] + [(p, "positional") for p in a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults))
    defaults += a.defaults
    pairs = list(zip(positional, defaults, strict=True))
    pairs += [((p, "kwonly"), d) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if drop_first and positional:
        pairs = pairs[1:]
    params = [
        _Param(
            arg.arg,
            kind,
            _literal(d) if d is not None else _MISSING,
            d is not None,
            arg.annotation,
        )
        for (arg, kind), d in pairs
    ]
    # ``*args`` goes between the positional and keyword-only parameters, as a call fills it;
    # both star parameters may be left out, like a parameter with a default.
    if a.vararg is not None:
        at = sum(p.kind != "kwonly" for p in params)
        params.insert(at, _Param(a.vararg.arg, "var", _MISSING, True, a.vararg.annotation))
    if a.kwarg is not None:
        params.append(_Param(a.kwarg.arg, "varkw", _MISSING, True, a.kwarg.annotation))
    return _Target(
        func=func,
        name=func.name,
        class_name=class_name,
        is_instance_method=drop_first and "classmethod" not in decorators,
        params=tuple(params),
        vararg=a.vararg is not None,
        varkw=a.kwarg is not None,
    )


# --- values ------------------------------------------------------------------------------------


def _literal(node: ast.expr) -> Any:
    """The node's literal value, or ``_MISSING`` (names, calls, infinities)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING
    return value if _is_plain(value) else _MISSING


def _is_plain(value: Any) -> bool:
    """Whether ``repr(value)`` is a literal that evaluates back to ``value``."""
    if value is None or isinstance(value, bool | int | str | bytes):
        return True
    if isinstance(value, float | complex):
        return all(math.isfinite(part) for part in (complex(value).real, complex(value).imag))
    if isinstance(value, list | tuple | set | frozenset):
        return not isinstance(value, frozenset) and all(_is_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_is_plain(k) and _is_plain(v) for k, v in value.items())
    return False


def _argument(node: ast.expr, allowed: Scope) -> str | None:
    """The argument as case source: a literal's canonical repr, or an allowed expression."""
    value = _literal(node)
    if value is not _MISSING:
        return repr(value)
    try:
        check_expression(node, allowed)
    except CaseError:
        return None
    return ast.unparse(node)


# --- 1 and 2: examples written by people -------------------------------------------------------


def _doctests(target: _Target, allowed: Scope) -> Iterator[Candidate]:
    """Calls in ``>>>`` examples (with ``...`` continuations) of the function's docstring,
    then of the module's (``validate('BE31435411161155')`` at the top of ``iban.py``); a
    name an earlier example bound to data is read as that data."""
    doc = ast.get_docstring(target.func) or ""
    lines = doc.splitlines()
    if target.module_doc:
        lines += ["", *target.module_doc.splitlines()]
    bound: dict[str, ast.expr] = {}
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith(">>>"):
            continue
        text = stripped[3:].strip()
        for more in lines[index + 1 :]:
            if not more.strip().startswith("..."):
                break
            text += "\n" + more.strip()[3:].strip()
        try:
            tree = pyast.parse(text)
        except SyntaxError:
            continue
        tree = _Substitute(bound).visit(tree)
        yield from _literal_calls(tree, target, "doctest", allowed, in_own_module=True)
        for statement in tree.body:
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and _argument(statement.value, allowed) is not None
            ):
                bound[statement.targets[0].id] = statement.value


class _Substitute(ast.NodeTransformer):
    """Names an earlier example bound to data, replaced by that data: ``>>> friends = [...]``
    then ``>>> join(second, friends, ...)`` is a call with the list itself."""

    def __init__(self, bound: Mapping[str, ast.expr]) -> None:
        self.bound = bound

    def visit_Name(self, node: ast.Name) -> ast.expr:
        value = self.bound.get(node.id)
        if value is None or not isinstance(node.ctx, ast.Load):
            return node
        return copy.deepcopy(value)


def _call_sites(target: _Target, project: Mapping[str, str], allowed: Scope) -> Iterator[Candidate]:
    """Calls in the other files whose arguments a case may contain; files named like tests
    give source ``test``."""
    for path in sorted(project):
        try:
            tree = pyast.parse(project[path])
        except (SyntaxError, ValueError):
            continue
        kind = "test" if is_test_file(path.replace("\\", "/")) else "call_site"
        yield from _literal_calls(tree, target, kind, allowed, in_own_module=False)


def _literal_calls(
    tree: ast.AST, target: _Target, source: str, allowed: Scope, *, in_own_module: bool
) -> Iterator[Candidate]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not _calls_target(node.func, target, in_own_module):
            continue
        if any(isinstance(a, ast.Starred) for a in node.args):
            continue
        if any(k.arg is None for k in node.keywords):
            continue
        args = [_argument(a, allowed) for a in node.args]
        kwargs = {k.arg: _argument(k.value, allowed) for k in node.keywords if k.arg is not None}
        if None in args or None in kwargs.values():
            continue
        checked_args = [a for a in args if a is not None]
        checked_kwargs = {k: v for k, v in kwargs.items() if v is not None}
        if _fits(target, checked_args, checked_kwargs):
            yield Candidate(tuple(checked_args), checked_kwargs, source)


def _calls_target(func: ast.expr, target: _Target, in_own_module: bool) -> bool:
    """``name(...)`` / ``module.name(...)`` for functions, ``obj.name(...)`` for methods,
    ``Class(...)`` / ``module.Class(...)`` for ``__init__``."""
    if target.name == "__init__" and target.class_name is not None:
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        return called == target.class_name
    if target.class_name is None:
        if isinstance(func, ast.Name):
            return func.id == target.name
        return (
            isinstance(func, ast.Attribute)
            and func.attr == target.name
            and isinstance(func.value, ast.Name | ast.Attribute)
        )
    if not isinstance(func, ast.Attribute) or func.attr != target.name:
        return in_own_module and isinstance(func, ast.Name) and func.id == target.name
    # ``Class.method(obj, ...)`` passes self explicitly: its arguments do not line up.
    owner = func.value
    return not (
        target.is_instance_method and isinstance(owner, ast.Name) and owner.id == target.class_name
    )


def _fits(target: _Target, args: list[Any], kwargs: dict[str, Any]) -> bool:
    """Whether the call could bind to this signature (a same-named other function may not)."""
    positional = [p for p in target.params if p.kind in _POSITIONAL]
    if len(args) > len(positional) and not target.vararg:
        return False
    names = {p.name for p in target.params if p.kind in ("positional", "kwonly")}
    if any(k not in names for k in kwargs) and not target.varkw:
        return False
    bound = {p.name for p in positional[: len(args)]} | set(kwargs)
    return all(p.has_default or p.name in bound for p in target.params)


# --- 3 to 6: synthesized -----------------------------------------------------------------------


def _synthesized(target: _Target) -> Iterator[Candidate]:
    """A base set, then each parameter varied through its pools, tier by tier."""
    bases, variations = _synthesis(target)
    yield from bases
    yield from variations


def _synthesis(target: _Target) -> tuple[list[Candidate], Iterator[Candidate]]:
    """The base sets, and the one-parameter variations of them: apart, so that people's calls
    varied through the guessed tiers can come between them. Star parameters stay out of the
    bases (the call without them) and are varied like the others."""
    callables = _callables(target)
    params = [p for p in target.params if p.name not in callables or not p.has_default]
    pools = {
        p.name: _callable_pools(callables[p.name]) if p.name in callables else _pools(p, target)
        for p in params
    }
    base: dict[str, Any] = {}
    for p in params:
        if p.kind in _STARS:
            continue
        if p.default is not _MISSING:
            base[p.name] = p.default
        elif not p.has_default:
            first = next((pools[p.name][t] for t in _TIERS if pools[p.name].get(t)), [1])
            base[p.name] = first[0]
    # A second base of telling values (not zero, empty or None) for every parameter at
    # once: guards such as ``if days <= 0 or balance <= 0: return 0`` are passed only when
    # all of them are, which varying one parameter of the first base never does.
    # An int another parameter already has is moved on (``flip(f, 1, 3)``, not
    # ``flip(f, 1, 1)``): equal arguments hide which one went where.
    telling = dict(base)
    used: set[str] = set()
    for p in params:
        values = [v for t in _TIERS for v in pools[p.name].get(t, []) if _telling(v)]
        if p.kind in _STARS:
            continue
        if values and (p.default is _MISSING or not _telling(p.default)):
            value = values[-1] if p.has_default else values[0]
            built = [v for v in values if isinstance(v, list) and v and isinstance(v[0], _Expr)]
            value = built[0] if built else value
            while repr(value) in used and isinstance(value, int) and not isinstance(value, bool):
                value += 2
            telling[p.name] = value
            used.add(repr(value))
    bases = [base] if telling == base else [base, telling]

    def variations() -> Iterator[Candidate]:
        for tier in ("default", *_TIERS):
            for p in params:
                for value in pools[p.name].get(tier, []):
                    for start in bases:
                        yield _build(params, {**start, p.name: value}, tier)

    return [_build(params, start, "default") for start in bases], variations()


def _varied(
    target: _Target, examples: list[Candidate], tiers: tuple[str, ...]
) -> Iterator[Candidate]:
    """Each doctest or call-site call with one parameter changed through ``tiers``: people's
    calls carry values of the right shape, the body's literals the branches they leave
    (``pluck``'s ``default=``). Outside the ``literal`` tier a value replaces one people
    passed only where it has that value's shape (a list of numbers for ``[1, 2]``)."""
    params = list(target.params)
    callables = _callables(target)
    pools = {p.name: _pools(p, target) for p in params}
    positional = [p for p in params if p.kind in _POSITIONAL]
    star = next((p for p in params if p.kind == "var"), None)
    starkw = next((p for p in params if p.kind == "varkw"), None)
    named = {p.name for p in params if p.kind in ("positional", "kwonly")}
    for example in examples:
        values: dict[str, Any] = {
            p.name: _Expr(text) for p, text in zip(positional, example.args, strict=False)
        }
        if star is not None and len(example.args) > len(positional):
            values[star.name] = tuple(_Expr(a) for a in example.args[len(positional) :])
        values |= {k: _Expr(v) for k, v in example.kwargs.items() if k in named}
        extra = {k: _Expr(v) for k, v in example.kwargs.items() if k not in named}
        if starkw is not None and extra:
            values[starkw.name] = extra
        for tier in tiers:
            for p in params:
                if tier != "literal" and p.name in callables:
                    continue
                for value in pools[p.name].get(tier, []):
                    if tier == "literal" or _alike(_plain(values.get(p.name, _MISSING)), value):
                        yield _build(params, {**values, p.name: value}, tier)


_UNKNOWN = object()


def _plain(value: Any) -> Any:
    """The value people passed (``_Expr`` text evaluated back), ``_UNKNOWN`` where it is not
    a literal, ``_MISSING`` where they passed none."""
    if value is _MISSING or not isinstance(value, _Expr | tuple | dict):
        return value
    if isinstance(value, tuple):
        items = [_plain(v) for v in value]
        return _UNKNOWN if _UNKNOWN in items else tuple(items)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    try:
        return ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNKNOWN


def _shape(value: Any) -> Any:
    """A value's kind, with a container's item kinds: ``[1, 2]`` and ``[3.5]`` are alike,
    ``[[1]]`` and ``['a']`` are not."""
    if value is None or isinstance(value, bool):
        return type(value).__name__
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list | tuple | set):
        return (type(value).__name__, frozenset(_shape(v) for v in value))
    return type(value).__name__


def _alike(example: Any, value: Any) -> bool:
    """Whether ``value`` may stand in for the one people passed: the same shape, an empty
    container fitting any of its type; any value where they passed none."""
    if example is _MISSING:
        return True
    if example is _UNKNOWN:
        return False
    mine, theirs = _shape(value), _shape(example)
    if isinstance(mine, tuple) and isinstance(theirs, tuple):
        return mine[0] == theirs[0] and (not mine[1] or not theirs[1] or bool(mine[1] & theirs[1]))
    return bool(mine == theirs)


def _telling(value: Any) -> bool:
    """Whether a value says something in a test: not zero, empty, None or a boolean."""
    if isinstance(value, _Expr):
        return True
    return value is not None and not isinstance(value, bool) and bool(value)


def _build(params: list[_Param], values: dict[str, Any], source: str) -> Candidate:
    """Positional until a parameter is left at a non-literal default, then keywords; a star
    parameter's tuple or dict spread into the call (``*args`` only where no gap is before
    it)."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    gap = False
    for p in params:
        if p.kind == "var":
            if not gap:
                args.extend(values.get(p.name, ()))
        elif p.kind == "varkw":
            kwargs.update(values.get(p.name, {}))
        elif p.name not in values:
            gap = True
        elif p.kind == "kwonly" or (gap and p.kind == "positional"):
            kwargs[p.name] = values[p.name]
        elif not gap:
            args.append(values[p.name])
    return Candidate(tuple(repr(a) for a in args), {k: repr(v) for k, v in kwargs.items()}, source)


_CALLABLES_BY_ARITY: dict[int, list[str]] = {
    0: ["lambda: 1"],
    1: ["lambda x: x * 2", "str", "bool"],
    2: ["operator.add", "lambda a, b: (a, b)"],
}
"""Callables by the number of arguments they are called with. Not the identity first: a test
of ``memoize(lambda x: x)`` or ``complement(lambda x: x)`` cannot tell what went where."""
_FUNCTION_LISTS = (
    (_Expr("lambda x: x * 2"), _Expr("lambda x: x + 1")),
    (_Expr("lambda x: x + 1"),),
)
"""Star callables (``*funcs``): two that give another result in either order, and one."""
_FUNCTION_NAMES = {"funcs", "functions", "fns", "callbacks", "transforms", "preds", "predicates"}


def _callable_pools(arity: int) -> dict[str, list[Any]]:
    """Callables taking ``arity`` positional arguments (-1: unknown, any number)."""
    exprs = _CALLABLES_BY_ARITY.get(arity, ["lambda *args: args"])
    return {
        "default": [],
        "literal": [],
        "shape": [],
        "annotation": [],
        "name": [_Expr(t) for t in exprs],
    }


def _pools(param: _Param, target: _Target) -> dict[str, list[Any]]:
    if param.kind in _STARS:
        return _star_pools(param, target)
    built = target.constructors.get(_type_name(param.annotation) if param.annotation else "")
    person = _unique(_named_constants(param.name, target.constants) + _person_values(param.name))
    written = _docstring_strings(target).get(param.name, [])
    if _numeric_name(param.name):
        # ``format_price(amount)`` quotes what it returns ('£1,234.50'), ``to_money``
        # what it takes ('12.345')
        written = [w for w in written if _is_numeral(w)]
    elif _holds_items(param.name):
        written = []  # ``unique(seq)``: a quoted word is one of its items
    others = [v for f, v in target.siblings.get(param.name, []) if f != target.name]
    written = _unique(written + others[:3])
    if _is_path_name(param.name):
        written += list(target.files[:2])
    pools: dict[str, list[Any]] = {
        "default": [not param.default] if isinstance(param.default, bool) else [],
        "literal": _body_literals(
            param.name,
            target.func,
            {**_constants(ast.Module(target.func.body, [])), **target.constants},
        )
        + ([_Expr(_CALLABLES_BY_ARITY[1][0])] if _tested_callable(param.name, target.func) else [])
        + written
        + _formatted_strings(param.name, target.func, target.patterns),
        "shape": _item_shapes(param.name, target.func)
        or _instances(param.name, target)
        or _class_lists(param.name, target),
        "annotation": _person_annotation(
            _annotation_values(param.annotation) or ([_Expr(built)] if built else []),
            person,
        )
        or _listed_class(param.annotation, target),
    }
    if person and all(isinstance(v, str) for v in person):
        # ``'@' in email`` reads a substring, not a key
        pools["literal"] = [v for v in pools["literal"] if not isinstance(v, dict)]
    named, known = _name_values(param.name)
    if person:
        named, known = person, True
    elif _string_dates(param.name):
        named = _unique((named if known else []) + _string_dates(param.name))
        known = True
    guessed = not pools["annotation"] and not pools["shape"]
    pools["name"] = named if guessed and (known or not param.has_default) else []
    return pools


def _person_annotation(values: list[Any], person: list[Any]) -> list[Any]:
    """A ``str`` annotation's typical values with the generic ``'abc'`` replaced by the
    strings people pass for the parameter's name (``email: str``: ``'ada@example.com'``)."""
    strings = [v for v in person if isinstance(v, str)]
    if "abc" not in values or not strings:
        return values
    at = values.index("abc")
    return _unique([*values[:at], *strings, *values[at + 1 :]])


def _listed_class(node: ast.expr | None, target: _Target) -> list[Any]:
    """``list[OrderLine]`` (``List``, ``Sequence``, ``Iterable``) of a class of the module:
    a list of one built instance, and the empty list."""
    if not isinstance(node, ast.Subscript):
        return []
    head = _TYPE_ALIASES.get(_type_name(node.value), _type_name(node.value))
    built = target.constructors.get(_type_name(node.slice))
    return [[_Expr(built)], []] if head == "list" and built else []


def _star_pools(param: _Param, target: _Target) -> dict[str, list[Any]]:
    """``*args``: tuples of extra arguments, shaped by how the body takes its items apart
    (``zip(*seqs)``: lists) or else by its name; ``**kwargs``: the keys the body reads, or
    two keywords no parameter has."""
    pools: dict[str, list[Any]] = {"default": [], "literal": [], "shape": [], "annotation": []}
    if param.kind == "varkw":
        taken = {p.name for p in target.params}
        keys = [k for k in _read_keys(param.name, target.func) if _is_keyword(k, taken)]
        free = [k for k in ("a", "b", "c", "d", "x", "y") if k not in taken][:2]
        pools["literal"] = [dict.fromkeys(keys, 1)] if keys else []
        pools["name"] = [dict(zip(free, (1, 2), strict=False))]
        return pools
    if param.name in _FUNCTION_NAMES or _calls_its_items(param.name, target.func):
        pools["name"] = list(_FUNCTION_LISTS)
        return pools
    pools["shape"] = [tuple(v) for v in _item_shapes(param.name, target.func) if v]
    named, known = _name_values(param.name)
    lists = [tuple(v) for v in named if isinstance(v, list) and v]
    guessed = lists if known and lists else [(1, 2, 3), ("a", "b")]
    if _plural_values(param.name) is None:
        # a name that says nothing of what it holds may hold functions too
        # (thread_first(val, *forms))
        guessed.append(_FUNCTION_LISTS[0])
    pools["name"] = [] if pools["shape"] else guessed
    return pools


def _tested_callable(name: str, func: _FuncDef) -> bool:
    """Whether the body asks ``callable(name)``: the parameter may be given a function (a
    decorator used bare or with arguments, ``fifo_cache`` or ``fifo_cache(128)``)."""
    return any(
        isinstance(node, ast.Call)
        and _is_name(node.func, "callable")
        and len(node.args) == 1
        and _is_name(node.args[0], name)
        for node in ast.walk(func)
    )


def _calls_its_items(name: str, func: _FuncDef) -> bool:
    """Whether the body calls the items of ``name`` (``for f in funcs: value = f(value)``)."""
    for node in ast.walk(func):
        if (
            isinstance(node, ast.For | ast.comprehension)
            and _is_name(node.iter, name)
            and isinstance(node.target, ast.Name)
        ):
            item = node.target.id
            if any(
                isinstance(call, ast.Call) and _is_name(call.func, item) for call in ast.walk(func)
            ):
                return True
    return False


def _is_keyword(key: str, taken: set[str]) -> bool:
    return (
        key.isidentifier()
        and not keyword.iskeyword(key)
        and key not in taken
        and not (key.startswith("__") and key.endswith("__"))
    )


def _body_literals(name: str, func: _FuncDef, constants: Mapping[str, list[Any]]) -> list[Any]:
    """Values the body compares ``name`` with, numeric boundaries, keys it subscripts, and
    the keys or items of a module constant it looks ``name`` up in."""
    values: list[Any] = []
    keys: list[str] = []
    params = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)}
    for node in ast.walk(func):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for left, op, right in zip(operands, node.ops, operands[1:], strict=False):
                if {_name_of(left), _name_of(right)} <= params:
                    continue  # ``from_currency == to_currency``: no sentinel, no literal
                if _is_name(left, name):
                    values += _compared(op, right, mirrored=False)
                    if isinstance(right, ast.Name) and isinstance(op, ast.In | ast.NotIn):
                        values += constants.get(right.id, [])
                elif _is_name(right, name):
                    values += _compared(op, left, mirrored=True)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and _is_name(node.slice, name)
        ):
            values += constants.get(node.value.id, [])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and node.args
            and _is_name(node.args[0], name)
        ):
            values += constants.get(node.func.value.id, [])
        elif isinstance(node, ast.Subscript) and _is_name(node.value, name):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.append(key.value)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Dict)
            and _is_name(node.slice, name)
        ):
            keys_seen = [_literal(k) for k in node.value.keys if k is not None]
            values += [v for v in keys_seen if _is_plain_key(v)]
    keys += _read_keys(name, func)
    if keys:
        values.append(_record(list(dict.fromkeys(keys)), 1))
    return _unique(values)


def _read_keys(name: str, func: _FuncDef) -> list[str]:
    """String keys the body reads from ``name`` with ``.get``/``.pop`` or tests with ``in``."""
    keys: list[str] = []
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and _is_name(node.func.value, name)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            keys.append(node.args[0].value)
        elif (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], ast.In | ast.NotIn)
            and _is_name(node.comparators[0], name)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
        ):
            keys.append(node.left.value)
        elif (
            isinstance(node, ast.Subscript)
            and _is_name(node.value, name)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            keys.append(node.slice.value)
    return list(dict.fromkeys(keys))


# Builtins that take their argument apart as an iterable (``len`` is left out: a string has
# one too, and ``for word in words: len(word)`` says nothing about lists).
_TAKING_APART = {
    "list",
    "tuple",
    "set",
    "frozenset",
    "sorted",
    "sum",
    "max",
    "min",
    "iter",
    "reversed",
    "enumerate",
    "zip",
    "any",
    "all",
    "dict",
}
_STAR_TAKING_APART = {"zip", "chain", "product", "zip_longest", "map"}


def _item_shapes(name: str, func: _FuncDef) -> list[Any]:
    """Containers whose items have the shape the body uses them in: iterated
    (``for x in seqs: for y in x``, ``zip(*seqs)``, ``map(len, seqs)``) or indexed
    (``row[0]``): lists of lists; unpacked (``for k, v in pairs``, ``dict(pairs)``): tuples;
    read by key (``row['id']``): dicts with those keys. Empty when the body says nothing."""
    items: set[str] = set()
    width = 0
    unpacked: list[str] = []
    nested = False
    for node in ast.walk(func):
        if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            target, source = node.target, node.iter
            if (
                isinstance(source, ast.Call)
                and _called(source) == "enumerate"
                and source.args
                and _is_name(source.args[0], name)
                and isinstance(target, ast.Tuple)
                and len(target.elts) == 2
            ):
                target = target.elts[1]
            elif not _is_name(source, name):
                continue
            if isinstance(target, ast.Name):
                items.add(target.id)
            elif isinstance(target, ast.Tuple | ast.List):
                width = width or len(target.elts)
                unpacked = unpacked or [
                    e.id if isinstance(e, ast.Name) else "" for e in target.elts
                ]
        elif isinstance(node, ast.Call):
            called = _called(node)
            if called in _STAR_TAKING_APART and any(
                isinstance(a, ast.Starred) and _is_name(a.value, name) for a in node.args
            ):
                nested = True
            elif called == "map" and len(node.args) == 2 and _is_name(node.args[1], name):
                nested = nested or _type_name(node.args[0]) in (_TAKING_APART | {"len"})
            elif called == "from_iterable" and node.args and _is_name(node.args[0], name):
                nested = True
            elif called == "dict" and len(node.args) == 1 and _is_name(node.args[0], name):
                width = width or 2

    def is_item(node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in items
        return (
            isinstance(node, ast.Subscript)
            and _is_name(node.value, name)
            and not isinstance(node.slice, ast.Slice)
        )

    keys: list[str] = []
    mapping = False
    for node in ast.walk(func):
        if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            nested = nested or is_item(node.iter)
        elif isinstance(node, ast.YieldFrom):
            nested = nested or is_item(node.value)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and is_item(node.func.value):
                mapping = mapping or node.func.attr in ("items", "keys", "values", "get")
            elif _called(node) in _TAKING_APART and any(is_item(a) for a in node.args):
                nested = True
            nested = nested or any(
                isinstance(a, ast.Starred) and is_item(a.value) for a in node.args
            )
        elif isinstance(node, ast.Subscript) and is_item(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.append(key.value)
            else:
                nested = True
        elif (
            isinstance(node, ast.Assign)
            and is_item(node.value)
            and isinstance(node.targets[0], ast.Tuple | ast.List)
        ):
            width = width or len(node.targets[0].elts)
    for item in items:
        keys += _read_keys(item, func)
    if keys:
        keys = list(dict.fromkeys(keys))
        return [[_record(keys, 1), _record(keys, 2, second=True)], []]
    if mapping:
        return [[{"a": 1}, {"b": 2}], []]
    named = _named_tuples(unpacked)
    if width >= 2 and named:
        return [named, []]
    if width == 2:
        return [[(1, "a"), (2, "b")], []]
    if width > 2:
        return [[tuple(range(1, width + 1)), tuple(range(width + 1, 2 * width + 1))], []]
    if nested and _last_word(name) not in _WORD_PLURALS:
        return [[[1, 2, 3], [4, 5, 6]], [[1, 2], [3], []], []]
    return []


def _named_tuples(names: list[str]) -> list[tuple[Any, ...]]:
    """Two tuples for ``for sku, quantity, price in lines``, each item of the kind people
    pass for its name; empty unless a name is one of those."""
    values = [_person_values(n) or _string_dates(n) for n in names]
    if not any(values):
        return []
    for at, name in enumerate(names):
        named, known = _name_values(name) if name and not values[at] else ([], False)
        values[at] = values[at] or ([v for v in named if _telling(v)] if known else [])
    rows = []
    for row in range(2):
        rows.append(
            tuple(
                found[min(row, len(found) - 1)] if found else row * len(names) + index + 1
                for index, found in enumerate(values)
            )
        )
    return rows


def _called(node: ast.Call) -> str:
    """The called function's last name: ``zip``, ``itertools.chain`` -> ``chain``."""
    return _type_name(node.func)


def _is_plain_key(value: Any) -> bool:
    return value is not _MISSING and isinstance(value, str | int) and not isinstance(value, bool)


def _compared(op: ast.cmpop, other: ast.expr, mirrored: bool) -> list[Any]:
    if isinstance(op, ast.In | ast.NotIn):
        if mirrored:
            return []
        if isinstance(other, ast.Tuple | ast.List | ast.Set):
            items = [_literal(e) for e in other.elts]
            return [v for v in items if v is not _MISSING]
        return []
    value = _literal(other)
    if value is _MISSING:
        # ``default == no_default``, ``value is _MISSING``: a sentinel; None is not it
        sentinel = isinstance(other, ast.Name) and isinstance(
            op, ast.Eq | ast.Is | ast.NotEq | ast.IsNot
        )
        return [None] if sentinel else []
    if isinstance(op, ast.Eq | ast.NotEq | ast.Is | ast.IsNot):
        return [value]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return [value]
    # ``p < c`` and ``c > p`` fail at c and pass just below: give both sides of the edge.
    if mirrored:
        op = {ast.Lt: ast.Gt(), ast.Gt: ast.Lt(), ast.LtE: ast.GtE(), ast.GtE: ast.LtE()}.get(
            type(op), op
        )
    if isinstance(op, ast.Lt | ast.GtE):
        return [value - 1, value]
    if isinstance(op, ast.Gt | ast.LtE):
        return [value, value + 1]
    return [value]


def _name_of(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else ""


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


_TYPE_VALUES: dict[str, list[Any]] = {
    "int": [0, 1, 3],
    "float": [0.5],
    "str": ["", "abc"],
    "bool": [True, False],
    "list": [[], [1, 2, 3]],
    "dict": [{}, {"a": 1}],
}
_TYPE_ALIASES = {
    "List": "list",
    "Sequence": "list",
    "Iterable": "list",
    "Dict": "dict",
    "Mapping": "dict",
}


def _annotation_values(node: ast.expr | None) -> list[Any]:
    """Typical values of an annotation: ``Optional[X]`` and ``X | None`` add None."""
    if node is None:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = pyast.parse(node.value, mode="eval").body
        except SyntaxError:
            return []
    if isinstance(node, ast.Constant) and node.value is None:
        return [None]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _unique(_annotation_values(node.left) + _annotation_values(node.right))
    if isinstance(node, ast.Subscript):
        head = _type_name(node.value)
        if head in ("Optional", "Union"):
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            values = [v for part in parts for v in _annotation_values(part)]
            return _unique(values + ([None] if head == "Optional" else []))
        node = node.value
    name = _type_name(node)
    return list(_TYPE_VALUES.get(_TYPE_ALIASES.get(name, name), []))


def _type_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


_COUNT_PLURALS = {
    "times", "retries", "attempts", "tries", "digits", "places", "decimals", "seconds",
    "minutes", "hours", "days", "weeks", "months", "years", "steps", "levels",
}  # fmt: skip
"""Plural names of one number (``repeat(times)``, ``add_days(day, days)``), not of a list."""
_INT_NAMES = {"n", "k", "count", "size", "index", "i", *_COUNT_PLURALS}
_LIST_NAMES = {"items", "seq", "values", "xs", "lst", "iterable"}
_STR_NAMES = {"key", "name", "text", "s", "string", "word", "prefix"}


_DATE_NAMES = {"date", "day", "when", "issued", "deadline"}
_DATES = [_Expr("datetime.date(2024, 2, 29)"), _Expr("datetime.date(2023, 12, 31)")]
_DATETIMES = [_Expr("datetime.datetime(2024, 2, 29, 13, 45)")]


# Plurals, by what their items are (the last word of the name: ``unit_prices``).
_MAPPING_PLURALS = {"mappings", "dicts", "records", "entries", "documents", "docs"}
_NUMBER_PLURALS = {
    "prices",
    "amounts",
    "totals",
    "scores",
    "weights",
    "ages",
    "counts",
    "numbers",
    "nums",
    "costs",
    "sizes",
    "balances",
    "quantities",
    "rates",
    "grades",
    "ratings",
    "marks",
    "fees",
    "salaries",
    "durations",
    "distances",
    "heights",
    "widths",
    "lengths",
    "temperatures",
    "readings",
}
_WORD_PLURALS = {
    "names",
    "words",
    "tags",
    "lines",
    "emails",
    "labels",
    "keys",
    "strings",
    "texts",
    "titles",
    "tokens",
    "messages",
    "urls",
    "paths",
    "filenames",
    "letters",
    "sentences",
    "fields",
    "headers",
    "colors",
}
_NESTED_PLURALS = {
    "iterables",
    "seqs",
    "sequences",
    "rows",
    "lists",
    "matrix",
    "grid",
    "groups",
    "chunks",
    "batches",
    "iters",
    "iterators",
    "arrays",
    "columns",
    "tuples",
}


def _last_word(name: str) -> str:
    return name.lower().rsplit("_", 1)[-1]


def _plural_values(name: str) -> list[Any] | None:
    """Lists whose items fit a plural name: numbers not sorted and not all equal (a
    ``min`` or ``sorted`` shows what it did), words, lists, pairs; None for other names."""
    last = _last_word(name)
    if last in _COUNT_PLURALS:
        return None
    if last in _NUMBER_PLURALS:
        return [[3, 1, 2], [19.99, 5.0, 12.5], []]
    if last in _WORD_PLURALS:
        return [["b", "a", "c"], []]
    if last in _NESTED_PLURALS:
        return [[[1, 2, 3], [4, 5, 6]], [[1, 2], [3], []], []]
    if last == "pairs":
        return [[(1, "a"), (2, "b")], []]
    if last in _MAPPING_PLURALS:
        return [[{"a": 1, "b": 2}, {"a": 2, "b": 3}, {"b": 2}], []]
    return None


def _name_values(name: str) -> tuple[list[Any], bool]:
    """Values guessed from the parameter's name, and whether the name was recognized: dates
    and datetimes are written as the expressions that build them."""
    plural = _plural_values(name)
    if plural is not None:
        return plural, True
    amount = name.startswith(("price", "amount", "balance", "total")) or name.endswith("_price")
    rules: list[tuple[bool, list[Any]]] = [
        (name.endswith(("_at", "_time")) or name in ("timestamp", "moment"), _DATETIMES),
        (name in _DATE_NAMES or name.endswith(("_date", "_on", "_day")), _DATES),
        (amount, [0, 1000]),
        (name in ("flag",) or name.startswith("is_") or name.endswith("_enabled"), [True, False]),
        (name.startswith("percent"), [0, 50, 100]),
        (name.endswith("_cents"), [0, 1000]),
        (name == "year" or name.endswith("_year"), [2024, 1999]),
        (name == "month" or name.endswith("_month"), [2, 12]),
        (name in _INT_NAMES or name.startswith("num") or name.endswith("_count"), [0, 1, 3]),
        (name in ("path", "filename"), ["example.txt"]),
        (name in ("d", "mapping") or name.startswith("dict"), [{"a": 1}]),
        (name in _STR_NAMES, ["a", "abc"]),
        (
            name in _LIST_NAMES
            or name.endswith(("seq", "_list", "_items", "_values"))
            or re.fullmatch(r"\w+[^su]s", name) is not None,
            [[1, 2, 3], ["b", "a"], []],
        ),
    ]
    for matched, values in rules:
        if matched:
            return list(values), True
    return [1, "a"], False


def _callables(target: _Target) -> dict[str, int]:
    """Parameters called in the body or named like functions (``key`` only when called),
    with the number of positional arguments of the first call (-1 when starred, 1 unseen)."""
    arity: dict[str, int] = {}
    for node in ast.walk(target.func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            starred = any(isinstance(a, ast.Starred) for a in node.args)
            arity.setdefault(node.func.id, -1 if starred else len(node.args))
    return {
        p.name: arity.get(p.name, 1)
        for p in target.params
        if p.kind not in _STARS
        and (
            p.name in arity
            or p.name in _CALLABLE_NAMES
            or p.name.endswith(("_func", "_fn", "_callback", "_pred"))
        )
    }


def _unique(values: list[Any]) -> list[Any]:
    seen: set[str] = set()
    out: list[Any] = []
    for value in values:
        key = repr(value)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


# --- values a person would write -----------------------------------------------------------
#
# Business code takes emails, phone numbers, ISO date strings, country and currency codes,
# SKUs and postcodes; 'a' or 1 only reach its first guard. What follows from the state is a
# host step: a regex the body matches the parameter against gives a string that matches, a
# format ``strptime`` parses or ``fromisoformat`` gives a date written that way, the
# function's docstring quotes what people pass, the module's constants name the codes it
# knows, and a well-known name says what a value looks like.

_PERSON_VALUES: tuple[tuple[frozenset[str], tuple[Any, ...]], ...] = (
    (
        frozenset({"email", "mail", "email_address", "e_mail"}),
        ("ada@example.com", " Grace.Hopper+news@Gmail.com ", "no-at-sign.example.com"),
    ),
    (
        frozenset({"phone", "mobile", "tel", "telephone", "fax", "phone_number", "msisdn"}),
        ("+44 20 7946 0958", "020 7946 0958"),
    ),
    (frozenset({"country", "country_code", "country_iso"}), ("GB", "US")),
    (frozenset({"currency", "currency_code", "ccy"}), ("EUR", "USD")),
    (
        frozenset({"postcode", "post_code", "postal_code", "zip", "zip_code", "zipcode"}),
        ("SW1A 1AA", "90210"),
    ),
    (
        frozenset({"url", "website", "homepage", "link", "endpoint"}),
        ("https://example.com/orders/42",),
    ),
    (frozenset({"domain", "hostname", "host"}), ("example.com",)),
    (frozenset({"first_name", "firstname", "given_name", "forename"}), ("Ada",)),
    (frozenset({"last_name", "lastname", "surname", "family_name"}), ("Lovelace",)),
    (
        frozenset({"full_name", "customer_name", "contact_name", "display_name", "person"}),
        ("Ada Lovelace",),
    ),
    (
        frozenset({"company", "company_name", "business_name", "organisation", "organization"}),
        ("Acme Ltd.",),
    ),
    (frozenset({"address", "street", "address_line", "street_address"}), ("221B Baker Street",)),
    (frozenset({"city", "town"}), ("London",)),
    (frozenset({"sku", "product_code", "item_code"}), ("WID-0042",)),
    (frozenset({"tracking_number", "tracking_code", "tracking_id"}), ("JD014600006281234567",)),
    (frozenset({"iban"}), ("GB82 WEST 1234 5698 7654 32",)),
    (frozenset({"vat_number", "vat_id", "tax_id"}), ("GB123456789",)),
    (frozenset({"username", "login", "user_name"}), ("ada.lovelace",)),
    (frozenset({"quantity", "qty"}), (3, 12)),
    (frozenset({"weight", "weight_kg", "kg"}), (2.5, 0.4)),
    (frozenset({"discount", "discount_percent"}), (10, 25)),
    (frozenset({"vat_rate", "tax_rate"}), (0.2,)),
    (frozenset({"net", "gross", "subtotal"}), (19.99, 250)),
)
"""Parameter names (the whole name, or its last words: ``customer_email``,
``billing_postcode``) and values of the kind people pass for them."""
_ISO_DATE = "2024-03-15"
_LATER_ISO_DATE = "2024-04-30"
_SAMPLE_MOMENT = (2024, 3, 15, 9, 30, 0)
_DATE_STRING_NAMES = {"due", "dob", "birthday", "expiry", "expires"}


def _person_values(name: str) -> list[Any]:
    """Values of the kind people pass for a parameter with this name (empty when the name
    says nothing): the whole name first, then its last two words, then its last word."""
    lowered = name.lower().strip("_")
    words = lowered.split("_")
    for candidate in (lowered, "_".join(words[-2:]), words[-1]):
        for names, values in _PERSON_VALUES:
            if candidate in names:
                return list(values)
    if len(words) > 1 and words[-1] in _MONEY_WORDS:
        return [120.5, 2500]  # ``lifetime_total``, ``order_amount``
    if len(words) > 1 and words[0] in _COUNT_PLURALS:
        return [3, 45]  # ``days_late``, ``hours_worked``
    return []


_MONEY_WORDS = {"total", "amount", "balance", "cost", "subtotal", "spend", "net", "gross"}


def _string_dates(name: str) -> list[Any]:
    """An ISO date string, for names of dates (``due_date``, ``issued_on``)."""
    lowered = name.lower()
    dated = (
        lowered in _DATE_NAMES
        or lowered in _DATE_STRING_NAMES
        or lowered.endswith(("_date", "_on", "_day"))
    )
    return [_ISO_DATE, _LATER_ISO_DATE] if dated else []


def _aliases(name: str, func: _FuncDef) -> set[str]:
    """``name`` and the locals bound to it taken apart by its own methods
    (``compact = postcode.replace(' ', '').upper()``): what the body matches is the
    parameter, tidied."""
    found = {name}
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and _rooted_at(node.value, found)
        ):
            found.add(node.targets[0].id)
    return found


def _rooted_at(node: ast.expr, names: set[str]) -> bool:
    """Whether ``node`` is one of ``names``, or a chain of method calls and subscripts on it."""
    while True:
        if isinstance(node, ast.Name):
            return node.id in names
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        elif isinstance(node, ast.Subscript | ast.Attribute):
            node = node.value
        else:
            return False


def _patterns(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = re.compile(r'...')``: the pattern of each."""
    found: dict[str, str] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and _type_name(node.value.func) == "compile"
            and node.value.args
            and isinstance(node.value.args[0], ast.Constant)
            and isinstance(node.value.args[0].value, str)
        ):
            found[node.targets[0].id] = node.value.args[0].value
    return found


_MATCHING = {"match", "fullmatch", "search"}


def _formatted_strings(name: str, func: _FuncDef, patterns: Mapping[str, str]) -> list[Any]:
    """Strings the body shows the parameter's format of: one that a regex it matches the
    parameter against matches (``SKU.match(sku.strip())``, ``re.fullmatch(r'...', text)``),
    a date written in the format ``strptime`` parses it with, an ISO date for
    ``date.fromisoformat``."""
    names = _aliases(name, func)
    found: list[Any] = []
    for node in ast.walk(func):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        method, owner, args = node.func.attr, node.func.value, node.args
        pattern: str | None = None
        if method in _MATCHING and isinstance(owner, ast.Name) and owner.id in patterns:
            if args and _rooted_at(args[0], names):
                pattern = patterns[owner.id]
        elif method in _MATCHING and _is_name(owner, "re") and len(args) >= 2:
            first = args[0]
            if _rooted_at(args[1], names) and isinstance(first, ast.Constant):
                pattern = first.value if isinstance(first.value, str) else None
            elif _rooted_at(args[1], names) and isinstance(first, ast.Name):
                pattern = patterns.get(first.id)
        elif method == "fromisoformat" and args and _rooted_at(args[0], names):
            found.append(_ISO_DATE)
        elif (
            method == "strptime"
            and len(args) >= 2
            and _rooted_at(args[0], names)
            and isinstance(args[1], ast.Constant)
            and isinstance(args[1].value, str)
        ):
            written = _strftime(args[1].value)
            found += [written] if written is not None else []
        if pattern is not None:
            example = _written_match(pattern) or regex_example(pattern)
            found += [example] if example is not None else []
    return _unique(found)


def _written_match(pattern: str) -> str | None:
    """The first value people write (an email, a postcode, an ISO date) that ``pattern``
    matches: realer than one made up from the pattern."""
    written = [_ISO_DATE, *(v for _, values in _PERSON_VALUES for v in values)]
    for value in written:
        try:
            if isinstance(value, str) and re.fullmatch(pattern, value.strip()):
                return value.strip()
        except re.error:
            return None
    return None


def _strftime(fmt: str) -> str | None:
    import datetime

    try:
        return datetime.datetime(*_SAMPLE_MOMENT).strftime(fmt)
    except (ValueError, TypeError):
        return None


def _docstring_strings(target: _Target) -> dict[str, list[Any]]:
    """Strings the docstring quotes as what a one-parameter function takes: ``'sw1a1aa' ->
    'SW1A 1AA'`` gives ``'sw1a1aa'`` (what follows an arrow is a result)."""
    required = [p for p in target.params if not p.has_default and p.kind not in _STARS]
    if len(required) != 1 or required[0].kind not in _POSITIONAL:
        return {}
    doc = ast.get_docstring(target.func) or ""
    found: list[str] = []
    in_example = False
    for line in doc.splitlines():
        # an example and the output under it, up to a blank line, are the doctest's
        stripped = line.strip()
        in_example = stripped.startswith(">>>") or (in_example and bool(stripped))
        if in_example:
            continue
        for clause in line.split(";"):
            given = clause.split("->", 1)[0]
            for match in _QUOTED.finditer(given):
                text = match.group(2)
                if any(ch.isalnum() for ch in text) and text not in found:
                    found.append(text)
    return {required[0].name: list(found[:3])} if found else {}


_QUOTED = re.compile(r"""(?<![\w'"])(['"])([^'"\n]{1,60})\1(?!\w)""")


def _sibling_values(tree: ast.Module) -> dict[str, list[tuple[str, Any]]]:
    """Literal values the ``>>>`` examples in the module's docstring pass to the module's
    top-level functions, by parameter name (positional arguments bound in order), each
    with the function it was passed to."""
    functions = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    # the module's own examples only: a function's examples show that function's values
    docs = [ast.get_docstring(tree) or ""]
    found: dict[str, list[tuple[str, Any]]] = {}
    for doc in docs:
        for line in doc.splitlines():
            text = line.strip()
            if not text.startswith(">>>"):
                continue
            try:
                statement = pyast.parse(text[3:].strip())
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(statement):
                if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                    continue
                func = functions.get(node.func.id)
                if func is None:
                    continue
                names = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
                pairs = [*zip(names, node.args, strict=False)]
                pairs += [(k.arg, k.value) for k in node.keywords if k.arg is not None]
                for name, arg in pairs:
                    value = _literal(arg)
                    if value is not _MISSING and isinstance(value, str | int | float):
                        found.setdefault(name, [])
                        if (func.name, value) not in found[name]:
                            found[name].append((func.name, value))
    return found


DATA_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl", ".txt", ".xml", ".yaml", ".yml", ".ini", ".log")
"""Extensions of the data files a path parameter may be given."""
_PATH_NAMES = {"path", "filename", "file", "filepath", "fname", "source", "src"}


def _is_path_name(name: str) -> bool:
    lowered = name.lower()
    return lowered in _PATH_NAMES or lowered.endswith(("_path", "_file", "_filename"))


def _named_files(source: str, files: Sequence[str]) -> tuple[str, ...]:
    """The files whose extension a string in the module names (``r'\\.csv$'``,
    ``'.csv'``), shortest path first."""
    named = {f".{ext.lower()}" for ext in re.findall(r"\\?\.([A-Za-z]{2,5})\b", source)}
    wanted = [f for f in files if posixpath.splitext(f)[1].lower() in named & set(DATA_SUFFIXES)]
    return tuple(sorted(wanted, key=lambda f: (f.count("/"), len(f), f)))


def _numeric_name(name: str) -> bool:
    """Whether the name says the parameter holds a number (``amount``, ``order_total``)."""
    values, known = _name_values(name)
    values = _person_values(name) or values
    return known and bool(values) and all(_is_number(v) for v in values)


def _holds_items(name: str) -> bool:
    """Whether the name says the parameter holds items (``seq``, ``names``, ``rows``)."""
    values, known = _name_values(name)
    return known and any(isinstance(v, list | tuple | dict) for v in values)


def _is_numeral(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _named_constants(name: str, constants: Mapping[str, list[Any]]) -> list[Any]:
    """The string keys or items of a module constant named after the parameter
    (``COUNTRY_CODES`` for ``country``, ``STATUSES`` for ``status``)."""
    word = name.lower().rsplit("_", 1)[-1]
    if len(word) < 4:
        return []
    stems = {word.upper(), (word[:-1] + "IE" if word.endswith("y") else word).upper()}
    values: list[Any] = []
    for constant, items in constants.items():
        parts = constant.split("_")
        if any(part.startswith(stem) for part in parts for stem in stems):
            values += [item for item in items if isinstance(item, str)]
    return _unique(values)[:3]


def _record(keys: list[str], filler: Any, *, second: bool = False) -> dict[str, Any]:
    """A record with these keys: values people pass for the keys named like business fields
    (``{'email': 'ada@example.com', 'country': 'GB'}``), ``filler`` for the others; the
    ``second`` of two records takes the second such value where there is one."""
    record: dict[str, Any] = {}
    for key in keys:
        person = _person_values(key) or _string_dates(key)
        record[key] = person[min(int(second), len(person) - 1)] if person else filler
    return record


def _singular(name: str) -> str:
    last = _last_word(name)
    if last.endswith("ies"):
        return last[:-3] + "y"
    return last[:-1] if last.endswith("s") and not last.endswith("ss") else ""


def _class_lists(name: str, target: _Target) -> list[Any]:
    """For a plural named after one of the module's classes (``lines`` and ``OrderLine``,
    ``items`` and ``LineItem``): a list of one built instance, and the empty list."""
    singular = _singular(name)
    if not singular:
        return []
    for cls, built in target.constructors.items():
        if cls.lower() == singular or cls.lower().endswith(singular):
            return [[_Expr(built)], []]
    return []


def regex_example(pattern: str) -> str | None:
    """A string ``pattern`` matches (fullmatch), for the patterns of plain validation code:
    literals, classes, categories, repeats (each at least once), groups and alternatives (the
    first); None for what this does not write (backreferences, lookarounds)."""
    import importlib

    parser: Any = importlib.import_module("re._parser")
    consts: Any = importlib.import_module("re._constants")
    try:
        parsed = parser.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    counter = itertools.count()
    out: list[str] = []

    def emit(items: Any) -> bool:
        for op, arg in items:
            if op is consts.LITERAL:
                out.append(chr(arg))
            elif op is consts.NOT_LITERAL:
                out.append("x" if chr(arg) != "x" else "y")
            elif op is consts.ANY:
                out.append("a")
            elif op is consts.IN:
                char = in_class(arg)
                if char is None:
                    return False
                out.append(char)
            elif op in (consts.MAX_REPEAT, consts.MIN_REPEAT, consts.POSSESSIVE_REPEAT):
                low, high, sub = arg
                times = low or min(1, high)
                for _ in range(min(times, 40)):
                    if not emit(sub):
                        return False
            elif op is consts.SUBPATTERN:
                if not emit(arg[-1]):
                    return False
            elif op is consts.ATOMIC_GROUP:
                if not emit(arg):
                    return False
            elif op is consts.BRANCH:
                if not emit(arg[1][0]):
                    return False
            elif op is consts.AT:
                continue
            else:
                return False
        return True

    def in_class(items: Any) -> str | None:
        step = next(counter)
        if items and items[0][0] is consts.NEGATE:
            rest = items[1:]
            for char in "x_#Q7":
                if not any(covers(op, arg, char) for op, arg in rest):
                    return char
            return None
        op, arg = items[0]
        if op is consts.LITERAL:
            return str(chr(arg))
        if op is consts.RANGE:
            low, high = arg
            return chr(low + (step * 7 + 2) % (high - low + 1))
        if op is consts.CATEGORY:
            return category(arg, step)
        return None

    def category(arg: Any, step: int) -> str | None:
        if arg is consts.CATEGORY_DIGIT:
            return "4207135896"[step % 10]
        if arg is consts.CATEGORY_WORD:
            return "abcdefgh"[step % 8]
        if arg is consts.CATEGORY_SPACE:
            return " "
        if arg is consts.CATEGORY_NOT_DIGIT:
            return "x"
        return None

    def covers(op: Any, arg: Any, char: str) -> bool:
        if op is consts.LITERAL:
            return bool(arg == ord(char))
        if op is consts.RANGE:
            return bool(arg[0] <= ord(char) <= arg[1])
        if op is consts.CATEGORY:
            sample = {consts.CATEGORY_DIGIT: r"\d", consts.CATEGORY_WORD: r"\w"}.get(arg, r"\s")
            return re.fullmatch(sample, char) is not None
        return True

    if not emit(parsed) or not out:
        return None
    text = "".join(out)
    try:
        return text if re.fullmatch(pattern, text) else None
    except re.error:
        return None
