"""What the code does, as the docstring agent's evidence and as the test of its claims.

A docstring is written from what the host can show: the project's own calls of the function
(its tests and call sites, and the docstring's examples) run in the sandbox, with the values
and types of their arguments and results; and the summaries of the project functions it
calls. The same observations check the model's words: a summary that says the function
returns a string when it was seen to return an int is refused (:func:`contradiction`).
Where nothing was observed, the kinds every ``return`` statement states are used; where the
code does not say either, the host calls the function with values it chooses itself
(:func:`observe_chosen`) and judges by what those returned; where nothing returns, nothing
is claimed for it and nothing is refused (:func:`judged_kinds`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from remora.errors import ToolError
from remora.tools.capabilities.arguments import Case
from remora.tools.capabilities.candidates import candidate_inputs
from remora.tools.capabilities.observe import observe_calls, observe_request
from remora.tools.capabilities.project import is_test_file
from remora.tools.capabilities.pysource import find_definition
from remora.tools.capabilities.registry import CapabilityContext
from remora.tools.capabilities.store_io import scan_text, walk_files

MAX_OBSERVED = 6
"""At most this many of the project's calls are run."""
MAX_CALLEES = 6
MAX_CALL_LINES = 6
"""At most this many call lines from the project are shown as evidence."""
MAX_CALL_CHARS = 160
_MAX_FILES = 200
"""Files read when looking for call lines (tests first), so a large project stays quick."""
_SHOWN = 70
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


@dataclass
class Observed:
    """The project's calls of one function as run: ``lines`` for the model, the observed
    result ``kinds`` (see :data:`KINDS`), a type per argument name (``param_types``) and
    of the result (``return_type``) where every observation agrees."""

    lines: list[str] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)
    item_kinds: set[str] = field(default_factory=set)
    """The kinds of the items of the sequences it returned (every item seen)."""
    param_types: dict[str, str] = field(default_factory=dict)
    return_type: str | None = None


KINDS: dict[str, tuple[str, ...]] = {
    "text": ("string", "strings", "str", "text"),
    "number": (
        "integer",
        "integers",
        "int",
        "ints",
        "number",
        "numbers",
        "float",
        "floats",
        "count",
    ),
    "boolean": ("boolean", "booleans", "bool", "true", "false", "whether"),
    "mapping": ("dict", "dictionary", "dictionaries", "mapping", "dicts"),
    "sequence": ("list", "lists", "tuple", "tuples", "sequence", "set", "iterator", "generator"),
    "date": ("date", "datetime", "dates", "timestamp"),
    "timedelta": ("timedelta", "timedeltas"),
    "none": ("none", "nothing"),
    "callable": ("function", "callable", "decorator"),
}
"""Kinds of result a summary can claim, with the words that claim them."""
_WORD_KIND = {word: kind for kind, words in KINDS.items() for word in words}
_TYPE_KIND = {
    "str": "text",
    "int": "number",
    "float": "number",
    "decimal.Decimal": "number",
    "fractions.Fraction": "number",
    "complex": "number",
    "bool": "boolean",
    "dict": "mapping",
    "list": "sequence",
    "tuple": "sequence",
    "set": "sequence",
    "frozenset": "sequence",
    "datetime.date": "date",
    "datetime.datetime": "date",
    "datetime.timedelta": "timedelta",
    "NoneType": "none",
    "function": "callable",
    "functools.partial": "callable",
    "builtin_function_or_method": "callable",
}
_RESULT_VERB = r"returns?|returning|gives?|produces?|yields?|creates?|builds?|makes?"
_CONVERT_VERB = r"converts?|turns?|casts?|coerces?|changes?|formats?|renders?|parses?|maps?"
_CLAIM = re.compile(
    rf"\b(?:{_RESULT_VERB})\s+(?=([^.;:!?]*))|\binto\s+(?=([^.;:!?]*))", re.IGNORECASE
)
_AS_TO = re.compile(r"\b(as|to)\s+(?=([^.;:!?]*))", re.IGNORECASE)
_VERB_BEFORE = {
    "as": re.compile(rf"\b(?:{_RESULT_VERB}|{_CONVERT_VERB})\b[^.;:!?]*$", re.IGNORECASE),
    "to": re.compile(rf"\b(?:{_CONVERT_VERB})\b[^.;:!?]*$", re.IGNORECASE),
}
"""Where a summary states its result: the words after a verb of returning, after ``into``,
after ``to`` following a verb of converting, and after ``as`` following either ("Return
the days as a string.")."""
_HEAD_ENDS = frozenset(
    [
        *("of", "from", "for", "with", "in", "on", "that", "which", "and", "or", "if"),
        *("when", "where", "by", "to", "as", "containing", "built", "made", "whose", "per"),
        *("used", "given", "representing", "describing", "denoting", "suitable", "ready"),
    ]
)
_SKIPPED = frozenset({"a", "an", "the", "new", "its", "their", "single", "one"})


def observe(
    ctx: CapabilityContext, relative: str, qualname: str, node: ast.AST, calls: Iterable[str]
) -> Observed:
    """Run the calls of ``qualname`` (whose definition is ``node``) among the source lines
    ``calls`` whose arguments can be evaluated in its module (literals and the module's own
    names) and record what they did. Methods and classes are not called: a call needs an
    instance or builds one."""
    if "." in qualname:
        return Observed()
    cases: list[dict[str, Any]] = []
    shown: list[str] = []
    for line in calls:
        for call in _calls_of(line, qualname):
            text = ast.unparse(call)
            if text in shown:
                continue
            shown.append(text)
            case = Case(
                tuple(ast.unparse(arg) for arg in call.args),
                tuple((str(kw.arg), ast.unparse(kw.value)) for kw in call.keywords),
            )
            cases.append(observe_request(len(cases), case))
            if len(cases) >= MAX_OBSERVED:
                break
        if len(cases) >= MAX_OBSERVED:
            break
    return _run(ctx, relative, qualname, node, cases, shown)


def observe_chosen(
    ctx: CapabilityContext, relative: str, qualname: str, node: ast.AST, source: str
) -> Observed:
    """Where the project's own calls showed nothing: run argument lists the host chooses
    from the module alone (the test agent's candidates: defaults, values the body compares
    a parameter with, values typical of a parameter's name; :func:`candidate_inputs`) and
    keep the calls that returned. A chosen value that raises says more of the choice than
    of the function, so those are left out; so are the argument types, which say what the
    host chose, not what the function takes. Only plain functions are called so: a method
    needs an instance, a class call builds one, a coroutine function returns a coroutine."""
    if "." in qualname or not isinstance(node, ast.FunctionDef):
        return Observed()
    try:
        found = candidate_inputs(source, qualname, {}, limit=MAX_OBSERVED)
    except (ValueError, SyntaxError, RecursionError):
        return Observed()
    cases = [observe_request(number, candidate.case) for number, candidate in enumerate(found)]
    shown = [f"{qualname}({candidate.case.text})" for candidate in found]
    observed = _run(ctx, relative, qualname, node, cases, shown, returned_only=True)
    observed.param_types = {}
    observed.return_type = None
    return observed


def _run(
    ctx: CapabilityContext,
    relative: str,
    qualname: str,
    node: ast.AST,
    cases: list[dict[str, Any]],
    shown: list[str],
    returned_only: bool = False,
) -> Observed:
    """Run ``cases`` (written ``shown``) in the sandbox and record what they did; with
    ``returned_only`` a call that raised is not recorded."""
    if not cases:
        return Observed()
    try:
        records = observe_calls(ctx, relative, qualname, cases)
    except ToolError:
        return Observed()
    observed = Observed()
    types: dict[str, set[str]] = {}
    returns: set[str] = set()
    params = _param_names(node)
    for case in cases:
        record = records.get(case["id"], {})
        if record.get("stage") in ("arguments", "import") or "crashed" in record:
            continue
        call_text = shown[case["id"]]
        if "returned" in record:
            returned = record["returned"]
            observed.kinds.add(_kind(returned))
            observed.item_kinds |= _item_kinds(returned)
            returns.add(_value_type(returned))
            what = "yields" if returned.get("kind") == "iterator" else "returns"
            observed.lines.append(f"{call_text} {what} {_short(returned['repr'])}")
        elif "raised" in record and not returned_only:
            raised = record["raised"]
            observed.lines.append(
                f"{call_text} raises {raised['type']}: {_short(raised['message'])}"
            )
        else:
            continue
        for param, source in _bound(params, case):
            types.setdefault(param, set()).add(_source_type(source) or "?")
    observed.param_types = {
        param: " | ".join(sorted(found))
        for param, found in types.items()
        if len(found) <= 2 and "?" not in found
    }
    if len(returns) == 1 and "?" not in returns:
        observed.return_type = next(iter(returns))
    return observed


def _calls_of(line: str, name: str) -> list[ast.Call]:
    """The calls of ``name`` (plain or as an attribute) on one source line, if it parses."""
    text = line.strip().rstrip(":").removeprefix("assert ").removeprefix(">>> ")
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        named = (isinstance(func, ast.Name) and func.id == name) or (
            isinstance(func, ast.Attribute) and func.attr == name
        )
        starred = any(isinstance(arg, ast.Starred) for arg in node.args) or any(
            kw.arg is None for kw in node.keywords
        )
        if named and not starred:
            found.append(node)
    return found


def _param_names(node: ast.AST) -> list[tuple[str, str]]:
    """(name, kind) of each named parameter of a function: ``positional`` or ``keyword``."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return []
    args = node.args
    named = [(arg.arg, "positional") for arg in [*args.posonlyargs, *args.args]]
    named += [(arg.arg, "keyword") for arg in args.kwonlyargs]
    return named


def _bound(params: list[tuple[str, str]], case: dict[str, Any]) -> list[tuple[str, str]]:
    """(parameter, argument source) for the arguments of ``case`` that bind by position or
    name."""
    positional = [name for name, kind in params if kind == "positional"]
    bound = list(zip(positional, case["args"], strict=False))
    names = {name for name, _ in params}
    bound += [(key, source) for key, source in case["kwargs"] if key in names]
    return bound


_NOT_A_LITERAL = object()


def _literal(source: str) -> Any:
    """The value of a Python literal written as ``source``, else :data:`_NOT_A_LITERAL`."""
    try:
        return ast.literal_eval(source)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_A_LITERAL


def _source_type(source: str) -> str | None:
    """The type of a literal argument, with its items' type for a uniform collection
    (``[1, 2]`` -> ``list[int]``); None for anything that is not a literal."""
    value = _literal(source)
    return None if value is _NOT_A_LITERAL else _type_of(value)


def _type_of(value: Any) -> str:
    kind = type(value).__name__
    if isinstance(value, list | set | frozenset | tuple) and value:
        items = {type(item).__name__ for item in value}
        if isinstance(value, tuple):
            return f"tuple[{', '.join(type(item).__name__ for item in value)}]"
        return f"{kind}[{items.pop()}]" if len(items) == 1 else kind
    if isinstance(value, dict) and value:
        keys = {type(key).__name__ for key in value}
        values = {type(item).__name__ for item in value.values()}
        if len(keys) == 1 and len(values) == 1:
            return f"dict[{keys.pop()}, {values.pop()}]"
    return "None" if value is None else kind


def _value_type(returned: dict[str, Any]) -> str:
    """The type a docstring names for an observed result: its items' type where the value
    came back as JSON (``list[int]``), ``Iterator`` for a consumed iterator."""
    if returned.get("kind") == "iterator":
        return "Iterator"
    if "json" in returned and not isinstance(returned["json"], dict):
        return _type_of(returned["json"])
    kind = str(returned.get("type", "?"))
    return "None" if kind == "NoneType" else kind


def _kind(returned: dict[str, Any]) -> str:
    if returned.get("kind") == "iterator":
        return "sequence"
    return _TYPE_KIND.get(str(returned.get("type")), str(returned.get("type")))


def _item_kinds(returned: dict[str, Any]) -> set[str]:
    """The kinds of the items of a returned list, tuple, set or consumed iterator, read from
    its JSON or, failing that, its repr as a literal; empty when neither says."""
    value = returned["json"] if "json" in returned else _literal(str(returned.get("repr", "")))
    if not isinstance(value, list | tuple | set | frozenset):
        return set()
    return {_TYPE_KIND.get(type(item).__name__, type(item).__name__) for item in value}


def _short(text: str) -> str:
    """One line of at most :data:`_SHOWN` characters, without memory addresses (``<function
    identity at 0x7f...>``), which differ from run to run and mean nothing to the reader."""
    flat = _ADDRESS.sub("", " ".join(str(text).split()))
    return flat if len(flat) <= _SHOWN else flat[:_SHOWN] + "..."


def static_kinds(node: ast.AST) -> set[str] | None:
    """The kinds of result every ``return`` of a function states (a literal, an f-string, a
    comparison, a call of a builtin type), or None where one does not say or the function
    yields."""
    kinds: set[str] = set()
    stack = list(ast.iter_child_nodes(node))
    returned_nothing = True
    while stack:
        child = stack.pop()
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(child, ast.Yield | ast.YieldFrom):
            return None
        if isinstance(child, ast.Return):
            kind = _expression_kind(child.value)
            if kind is None:
                return None
            kinds.add(kind)
            returned_nothing = False
        stack.extend(ast.iter_child_nodes(child))
    return None if returned_nothing else kinds


_CALL_KINDS = {
    "str": "text",
    "repr": "text",
    "int": "number",
    "float": "number",
    "len": "number",
    "sum": "number",
    "round": "number",
    "bool": "boolean",
    "isinstance": "boolean",
    "list": "sequence",
    "tuple": "sequence",
    "sorted": "sequence",
    "set": "sequence",
    "dict": "mapping",
}


def _expression_kind(value: ast.expr | None) -> str | None:
    if value is None:
        return "none"
    if isinstance(value, ast.Constant):
        return _TYPE_KIND.get(type(value.value).__name__)
    if isinstance(value, ast.JoinedStr):
        return "text"
    if isinstance(value, ast.Compare) or (
        isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)
    ):
        return "boolean"
    if isinstance(value, ast.List | ast.ListComp | ast.Tuple | ast.Set | ast.SetComp):
        return "sequence"
    if isinstance(value, ast.Dict | ast.DictComp):
        return "mapping"
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return _CALL_KINDS.get(value.func.id)
    text_methods = ("join", "format", "strip", "lower", "upper", "replace")
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in text_methods
    ):
        return "text"
    return None


def claimed_kinds(summary: str) -> set[str]:
    """The kinds of result a summary claims: the head noun of the phrase that states the
    result ("Parse a date into a string." claims text, "Return the number of days as a
    string." number and text). A kind word that modifies another noun claims nothing
    ("Return the string length."), nor does a phrase whose head is not a kind ("Return
    the suffix that should be added to a number.")."""
    claimed: set[str] = set()
    phrases = [
        next(group for group in found.groups() if group is not None)
        for found in _CLAIM.finditer(summary)
    ]
    phrases += [
        found.group(2)
        for found in _AS_TO.finditer(summary)
        if _VERB_BEFORE[found.group(1).lower()].search(summary[: found.start()])
    ]
    for phrase in phrases:
        words = re.findall(r"[a-z]+", phrase.lower())[:6]
        head: str | None = None
        adjectives = 0
        for word in words:
            if word in _SKIPPED and head is None:
                continue
            if word in _WORD_KIND:
                head = word
                continue
            if head is not None:
                if word not in _HEAD_ENDS:
                    head = None  # the kind word modified this noun
                break
            adjectives += 1
            if adjectives > 2 or word in _HEAD_ENDS:
                break
        if head is not None:
            claimed.add(_WORD_KIND[head])
    return claimed


_ITEMS_CLAIM = re.compile(
    r"\b(?:lists?|sequences?|tuples?|sets?|iterators?|generators?|iterables?)\s+of\s+"
    r"(?:\w+\s+){0,2}?(integers|ints|strings|numbers|floats|tuples|lists|dicts|dictionaries"
    r"|booleans|dates)\b",
    re.IGNORECASE,
)


def claimed_item_kinds(summary: str) -> set[str]:
    """The kinds a summary claims for the items of a sequence ("a list of integers")."""
    return {_WORD_KIND[found.group(1).lower()] for found in _ITEMS_CLAIM.finditer(summary)}


def contradiction(summary: str, kinds: set[str], item_kinds: set[str] | None = None) -> str | None:
    """Why ``summary`` contradicts the observed result ``kinds`` (it claims a kind never
    seen) or ``item_kinds`` (it claims items of a kind never seen in a returned sequence),
    or None. Numbers are not told apart, nor a set from a list; a bool is a number."""
    items = item_kinds or set()
    for claim in sorted(claimed_item_kinds(summary)) if items else []:
        if claim not in items and not (claim == "number" and "boolean" in items):
            said = ", ".join(sorted(items))
            return f"it says the items are {_PLURAL[claim]}, but they were seen to be {said}"
    if not kinds:
        return None
    seen = set(kinds) | ({"number"} if "boolean" in kinds else set())
    for claim in sorted(claimed_kinds(summary)):
        if claim in seen or (claim == "none" and "none" in kinds):
            continue
        if claim == "boolean" and kinds <= {"boolean"}:
            continue
        said = ", ".join(sorted(kinds))
        return f"it says the result is {_ARTICLE[claim]}, but the code was seen returning {said}"
    return None


_PLURAL = {
    "text": "strings",
    "number": "numbers",
    "boolean": "true or false",
    "mapping": "mappings",
    "sequence": "sequences",
    "date": "dates",
    "timedelta": "timedeltas",
    "none": "None",
    "callable": "functions",
}
_ARTICLE = {
    "text": "a string",
    "number": "a number",
    "boolean": "true or false",
    "mapping": "a mapping",
    "sequence": "a sequence",
    "date": "a date",
    "timedelta": "a timedelta",
    "none": "None",
    "callable": "a function",
}


def callee_summaries(
    ctx: CapabilityContext, relative: str, tree: ast.Module, node: ast.AST
) -> list[str]:
    """``name: summary`` for the project functions and classes ``node`` calls whose
    docstring has a summary: defined in the same module or imported from a project module."""
    called: list[str] = []
    for child in ast.walk(node):
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
            called.append(child.func.id)
    called = list(dict.fromkeys(called))
    if not called:
        return []
    imported = _imports(tree, relative)
    lines: list[str] = []
    for name in called:
        summary = _summary_in(tree, name)
        if summary is None and name in imported:
            module, original = imported[name]
            text = next(
                (
                    found
                    for path in (f"{module}.py", f"{module}/__init__.py", f"src/{module}.py")
                    if (found := scan_text(ctx, path)) is not None
                ),
                None,
            )
            if text is not None:
                try:
                    summary = _summary_in(ast.parse(text), original)
                except SyntaxError:
                    summary = None
        if summary:
            lines.append(f"{name}: {summary}")
        if len(lines) >= MAX_CALLEES:
            break
    return lines


def _summary_in(tree: ast.Module, name: str) -> str | None:
    for statement in tree.body:
        if (
            isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and statement.name == name
        ):
            docstring = ast.get_docstring(statement)
            first = docstring.strip().splitlines()[0].strip() if docstring else ""
            return first or None
    return None


def _imports(tree: ast.Module, relative: str) -> dict[str, tuple[str, str]]:
    """Names imported with ``from X import name`` from a module file of the project, by
    the candidate path of that file (relative imports resolved against ``relative``)."""
    package = relative.rsplit("/", 1)[0] if "/" in relative else ""
    found: dict[str, tuple[str, str]] = {}
    for statement in tree.body:
        if not isinstance(statement, ast.ImportFrom):
            continue
        if statement.level:
            parts = package.split("/") if package else []
            base = parts[: len(parts) - (statement.level - 1)]
            module = "/".join([*base, *(statement.module or "").split(".")]).strip("/")
        else:
            module = (statement.module or "").replace(".", "/")
        for alias in statement.names:
            found[alias.asname or alias.name] = (module, alias.name)
    return found


def call_lines(ctx: CapabilityContext, relative: str, name: str) -> list[tuple[str, int, str]]:
    """(path, line number, text) of lines of other project files that call ``name``, tests
    first."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\(|\.{re.escape(name)}\(")
    files = [path for path in walk_files(ctx, "", (".py",)) if path != relative]
    files.sort(key=lambda path: not is_test_file(path))
    found: list[tuple[str, int, str]] = []
    for path in files[:_MAX_FILES]:
        text = scan_text(ctx, path)
        if text is None or name not in text:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if pattern.search(stripped) and not stripped.startswith(("def ", "#", "class ")):
                shown = stripped if len(stripped) <= MAX_CALL_CHARS else stripped[:MAX_CALL_CHARS]
                found.append((path, number, shown))
                if len(found) >= MAX_CALL_LINES:
                    return found
    return found


def examples(node: ast.AST) -> list[str]:
    """The calls the current docstring of the definition ``node`` shows as examples
    (``>>>`` lines)."""
    docstring = (
        ast.get_docstring(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        else None
    )
    return [
        line.strip()[4:]
        for line in (docstring or "").splitlines()
        if line.strip().startswith(">>> ")
    ]


def result_kinds(ctx: CapabilityContext, relative: str, qualname: str) -> tuple[set[str], set[str]]:
    """The kinds of result ``qualname`` returns, and of the items of the sequences it
    returns: as its examples and the project's calls showed, else (results only) as every
    ``return`` states, else as calls with values the host chose showed
    (:func:`judged_kinds`, as the docstring host judges a summary); empty when none says."""
    text = scan_text(ctx, relative) or ""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set(), set()
    located = find_definition(tree, qualname)
    if located is None:
        return set(), set()
    name = qualname.rsplit(".", 1)[-1]
    calls = [line for _, _, line in call_lines(ctx, relative, name)]
    observed = observe(ctx, relative, qualname, located.node, [*examples(located.node), *calls])
    return judged_kinds(ctx, relative, qualname, located.node, text, observed)


def judged_kinds(
    ctx: CapabilityContext,
    relative: str,
    qualname: str,
    node: ast.AST,
    source: str,
    observed: Observed,
) -> tuple[set[str], set[str]]:
    """The kinds of result (and of the items of returned sequences) a summary is judged
    against, most trusted first: what the project's calls were seen returning
    (``observed``), else what every ``return`` states, else what calls with values the
    host chose returned (:func:`observe_chosen`, run only then); empty when none says."""
    if observed.kinds:
        return observed.kinds, observed.item_kinds
    stated = static_kinds(node)
    if stated:
        return stated, set()
    chosen = observe_chosen(ctx, relative, qualname, node, source)
    return chosen.kinds, chosen.item_kinds
