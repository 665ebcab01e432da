"""The ``.pym`` tool-script format: parse declarations, check them, derive the input schema.

A ``.pym`` file is valid Python in three parts::

    '''What the tool does (optional module docstring).'''
    from typing import Literal
    from remora.pym import Input, external

    text: str = Input("text", description="What to echo.")         # model-facing input
    node_name: str = Input("node_name")                             # system input (hidden)
    mode: Literal["a", "b"] = Input("mode", default="a")            # optional: has a default

    @external
    def read_file(path: str) -> str:
        '''Host capability stub: signature + docstring, body ``...``.'''
        ...

    content = read_file(text)
    {"outcome": "success", "summary": f"read {text}", "result": content}   # last expression

Declarations (the docstring, imports, ``Input`` assignments and ``@external`` stubs) come
first; the body follows and its last statement must be an expression, whose value is the
tool's result. Remora blanks the declaration lines (so line numbers in sandbox errors
still match the file), binds inputs as globals and capabilities as host functions, and
runs the rest in the Monty sandbox.

Inputs named in :data:`SYSTEM_INPUTS` are filled by the runner from the job (node text,
file path, operation options, ...) and never shown to the model; every other input is
model-facing and appears in the JSON schema from :meth:`PymScript.parameters_schema`.

Checker codes (stable; reported as ``path:line: CODE message``):

- PYM001 not valid Python (syntax error)
- PYM002 ``Input(...)`` assigned without a type annotation
- PYM003 ``Input("y")`` assigned to a variable with another name
- PYM004 malformed ``Input(...)`` call (name not a string literal, default or description
  not a literal, unknown argument, ``Input`` used outside a top-level declaration)
- PYM005 import not allowed (only ``from remora.pym import Input, external`` and the
  modules in :data:`ALLOWED_IMPORTS`)
- PYM006 ``@external`` stub names no known capability
- PYM007 ``@external`` stub parameters differ from the capability's signature
- PYM008 ``@external`` stub body is more than a docstring and ``...``
- PYM009 input annotation has no JSON-schema equivalent (supported: str, int, float, bool,
  list[...], dict[str, ...], Optional[...] / ``X | None``, Literal[...])
- PYM010 declaration after body code, or sharing a line with other code
- PYM011 the script does not end with an expression (it has no result)
- PYM012 a name declared twice (inputs, capabilities)
- PYM013 syntax the sandbox cannot run (yield, del, class inheritance, except*, import *)
- PYM014 forbidden builtin or dunder access (eval, exec, open, getattr, ``__class__``, ...);
  any reference to a forbidden name is refused, not only a call, so ``e = eval`` or
  ``[open][0]`` cannot alias one past the checker
- PYM015 a capability called without an ``@external`` stub
- PYM016 a system input declared with the wrong type
- PYM017 ``@external`` on something other than a plain top-level ``def``
- PYM018 an input's default does not match its annotation
"""

from __future__ import annotations

import ast
import inspect
import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from remora import pyast
from remora.contracts import SYSTEM_INPUTS
from remora.errors import AgentDefinitionError
from remora.regular_files import read_regular_file
from remora.tools.capabilities import Capability

MAX_SCRIPT_BYTES = 1024 * 1024
"""Largest .pym script read (a FIFO or device named like one is refused, not read)."""

__all__ = [
    "ALLOWED_IMPORTS",
    "DECLARATION_MODULE",
    "SYSTEM_INPUTS",
    "Diagnostic",
    "ExternalDecl",
    "ExternalParam",
    "InputDecl",
    "PymScript",
    "check_pym",
    "check_script_file",
    "load_pym",
    "merge_override",
    "override_problems",
    "parse_pym",
    "render_diagnostics",
    "validate_value",
]

DECLARATION_MODULE: Final = "remora.pym"
DECLARATION_NAMES: Final = frozenset({"Input", "external"})
ALLOWED_IMPORTS: Final = frozenset({"typing", "__future__", "json", "re", "math"})
"""Modules a script may import besides the declaration module; all run inside Monty."""


FORBIDDEN_NAMES: Final = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "open",
        "__import__",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "input",
        "getattr",
        "setattr",
        "delattr",
        "exit",
        "quit",
        "help",
    }
)
"""Builtins a script may not name at all (PYM014): a bare reference could be aliased and called."""

_SCALARS: Final[Mapping[str, str]] = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
}
_NO_LITERAL: Final = object()


class Diagnostic(BaseModel):
    """One checker finding, located in a file."""

    model_config = ConfigDict(frozen=True)

    code: str
    message: str
    path: str
    line: int

    def render(self) -> str:
        return f"{self.path}:{self.line}: {self.code} {self.message}"


@dataclass(frozen=True)
class InputDecl:
    """One ``name: T = Input("name", ...)`` declaration."""

    name: str
    annotation: str
    schema: dict[str, Any]
    required: bool
    default: Any
    description: str | None
    line: int

    @property
    def system(self) -> bool:
        return self.name in SYSTEM_INPUTS

    def property_schema(self) -> dict[str, Any]:
        """The JSON schema of this input as the model sees it."""
        prop = dict(self.schema)
        if self.description:
            prop["description"] = self.description
        if not self.required:
            prop["default"] = self.default
        return prop


@dataclass(frozen=True)
class ExternalParam:
    """One parameter of an ``@external`` stub; ``kind`` uses :class:`inspect.Parameter` names."""

    name: str
    kind: str
    has_default: bool
    default: Any = _NO_LITERAL


@dataclass(frozen=True)
class ExternalDecl:
    """One ``@external`` capability stub."""

    name: str
    params: tuple[ExternalParam, ...]
    doc: str
    line: int


@dataclass(frozen=True)
class PymScript:
    """A parsed script: declarations, the runnable body and registry-independent problems."""

    path: Path
    source: str
    doc: str
    inputs: tuple[InputDecl, ...]
    externals: tuple[ExternalDecl, ...]
    body: str
    problems: tuple[Diagnostic, ...]
    called_names: frozenset[str] = field(default_factory=frozenset)
    bound_names: frozenset[str] = field(default_factory=frozenset)

    @property
    def model_inputs(self) -> tuple[InputDecl, ...]:
        return tuple(decl for decl in self.inputs if not decl.system)

    @property
    def system_inputs(self) -> tuple[InputDecl, ...]:
        return tuple(decl for decl in self.inputs if decl.system)

    def input(self, name: str) -> InputDecl | None:
        return next((decl for decl in self.inputs if decl.name == name), None)

    def parameters_schema(
        self, overrides: Mapping[str, Mapping[str, Any]] | None = None
    ) -> dict[str, Any]:
        """JSON schema of the model-facing inputs, with ``inputs_override`` merged in."""
        overrides = overrides or {}
        properties: dict[str, Any] = {}
        required: list[str] = []
        for decl in self.model_inputs:
            prop = decl.property_schema()
            if decl.name in overrides:
                prop = merge_override(prop, overrides[decl.name])
            properties[decl.name] = prop
            if decl.required:
                required.append(decl.name)
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }


class _Unsupported(Exception):
    """An annotation with no JSON-schema equivalent."""


# --- parsing ---------------------------------------------------------------------------


def parse_pym(source: str, path: Path | str) -> PymScript:
    """Parse ``source``; never raises: problems become PYM diagnostics on the result."""
    path = Path(path)
    label = str(path)
    try:
        tree = pyast.parse(source, filename=label)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc) or type(exc).__name__
        problem = Diagnostic(
            code="PYM001",
            message=f"not valid Python: {reason}",
            path=label,
            line=getattr(exc, "lineno", None) or 1,
        )
        return PymScript(path, source, "", (), (), "", (problem,))
    return _Parser(tree, source, path).parse()


class _Parser:
    def __init__(self, tree: ast.Module, source: str, path: Path) -> None:
        self.tree = tree
        self.source = source
        self.path = path
        self.label = str(path)
        self.problems: list[Diagnostic] = []
        self.inputs: list[InputDecl] = []
        self.externals: list[ExternalDecl] = []
        self.blank: set[int] = set()
        self.declaration_nodes: set[int] = set()

    def report(self, code: str, line: int, message: str) -> None:
        self.problems.append(Diagnostic(code=code, message=message, path=self.label, line=line))

    def parse(self) -> PymScript:
        statements = list(self.tree.body)
        # A lone string is the script's result, not its docstring.
        doc = ast.get_docstring(self.tree) if len(statements) > 1 else None
        if doc is not None:
            self._blank_node(statements[0])
            statements = statements[1:]
        in_header = True
        body_statements: list[ast.stmt] = []
        for stmt in statements:
            kind = self._statement_kind(stmt)
            if kind == "body":
                in_header = False
                body_statements.append(stmt)
                continue
            if kind == "import":
                body_statements.append(stmt)
                continue
            if not in_header:
                self.report(
                    "PYM010",
                    stmt.lineno,
                    "declarations (Input, @external, remora.pym imports) must come before "
                    "the body; move this one up",
                )
            self.declaration_nodes.add(id(stmt))
            self._blank_node(stmt)
        self._check_shared_lines(statements)
        self._check_result(body_statements)
        self._walk_body(statements)
        self._check_duplicates()
        called, bound = _names(self.tree)
        return PymScript(
            path=self.path,
            source=self.source,
            doc=doc or "",
            inputs=tuple(self.inputs),
            externals=tuple(self.externals),
            body=self._body_text(),
            problems=tuple(sorted(self.problems, key=lambda d: (d.line, d.code))),
            called_names=called,
            bound_names=bound,
        )

    # Declarations -------------------------------------------------------------------

    def _statement_kind(self, stmt: ast.stmt) -> str:
        """``declaration``, ``import`` (kept in the body, allowed anywhere) or ``body``."""
        if isinstance(stmt, ast.ImportFrom):
            return self._import_from(stmt)
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == DECLARATION_MODULE:
                    self.report(
                        "PYM005",
                        stmt.lineno,
                        "import the declarations by name: 'from remora.pym import Input, external'",
                    )
                elif alias.name not in ALLOWED_IMPORTS:
                    self._bad_import(stmt.lineno, alias.name)
            return "import"
        if isinstance(stmt, ast.AnnAssign) and _is_input_call(stmt.value):
            self._input(stmt)
            return "declaration"
        if isinstance(stmt, ast.Assign) and _is_input_call(stmt.value):
            self.report(
                "PYM002",
                stmt.lineno,
                "Input(...) needs a type annotation, e.g. 'text: str = Input(\"text\")'",
            )
            return "declaration"
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and any(
            _is_external(dec) for dec in stmt.decorator_list
        ):
            self._external(stmt)
            return "declaration"
        return "body"

    def _import_from(self, stmt: ast.ImportFrom) -> str:
        module = stmt.module or ""
        if stmt.level:
            self.report("PYM005", stmt.lineno, "relative imports are not allowed in a .pym script")
            return "import"
        if any(alias.name == "*" for alias in stmt.names):
            self.report("PYM013", stmt.lineno, f"'from {module} import *' is not supported")
            return "import"
        if module == DECLARATION_MODULE:
            unknown = [alias.name for alias in stmt.names if alias.name not in DECLARATION_NAMES]
            if unknown:
                self.report(
                    "PYM005",
                    stmt.lineno,
                    f"remora.pym provides only Input and external, not {', '.join(unknown)}",
                )
            return "declaration"
        if module == "__future__":
            return "declaration"
        if module.split(".")[0] not in ALLOWED_IMPORTS:
            self._bad_import(stmt.lineno, module)
        return "import"

    def _bad_import(self, line: int, module: str) -> None:
        allowed = ", ".join(sorted(ALLOWED_IMPORTS - {"__future__"}))
        self.report(
            "PYM005",
            line,
            f"import of '{module}' is not allowed; scripts may import {allowed} and "
            "remora.pym, and reach everything else through @external capabilities",
        )

    def _input(self, stmt: ast.AnnAssign) -> None:
        assert isinstance(stmt.value, ast.Call)
        call = stmt.value
        line = stmt.lineno
        if not isinstance(stmt.target, ast.Name):
            self.report("PYM004", line, "assign Input(...) to a plain name, e.g. 'x: str = ...'")
            return
        var = stmt.target.id
        args = _input_arguments(call)
        if isinstance(args, str):
            self.report("PYM004", line, args)
            return
        name = args.get("name", _NO_LITERAL)
        if not isinstance(name, str):
            self.report("PYM004", line, f"Input's first argument must be the string {var!r}")
            return
        if name != var:
            self.report(
                "PYM003",
                line,
                f"Input({name!r}) is assigned to '{var}'; the names must match: "
                f"'{var}: ... = Input({var!r})'",
            )
            return
        description = args.get("description")
        if description is not None and not isinstance(description, str):
            self.report("PYM004", line, "Input's description must be a string literal")
            return
        annotation = ast.unparse(stmt.annotation)
        try:
            schema = annotation_schema(stmt.annotation)
        except _Unsupported as exc:
            self.report(
                "PYM009",
                line,
                f"input '{var}' has annotation '{annotation}': {exc}; use str, int, float, "
                "bool, list[...], dict[str, ...], Optional[...] or Literal[...]",
            )
            return
        required = "default" not in args
        default = args.get("default")
        if not required:
            problem = validate_value(schema, default, f"default of '{var}'")
            if problem:
                self.report("PYM018", line, problem)
        if var in SYSTEM_INPUTS:
            expected = SYSTEM_INPUTS[var]
            if schema.get("type") != expected:
                want = "str" if expected == "string" else "dict"
                self.report(
                    "PYM016",
                    line,
                    f"system input '{var}' is filled by the runner as {want}; "
                    f"annotate it '{var}: {want}'",
                )
        self.inputs.append(
            InputDecl(
                name=var,
                annotation=annotation,
                schema=schema,
                required=required,
                default=default,
                description=description,
                line=line,
            )
        )

    def _external(self, stmt: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        line = stmt.decorator_list[0].lineno if stmt.decorator_list else stmt.lineno
        if isinstance(stmt, ast.AsyncFunctionDef) or len(stmt.decorator_list) != 1:
            self.report(
                "PYM017",
                line,
                f"'{stmt.name}': @external goes alone on a plain 'def' stub (no async, "
                "no other decorators)",
            )
            return
        doc = ast.get_docstring(stmt)
        body = stmt.body[1:] if doc is not None else stmt.body
        if len(body) > 1 or (
            body
            and not (
                isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and body[0].value.value is Ellipsis
            )
        ):
            self.report(
                "PYM008",
                stmt.lineno,
                f"the @external stub '{stmt.name}' runs on the host; its body must be only "
                "a docstring and '...'",
            )
        self.externals.append(
            ExternalDecl(name=stmt.name, params=_stub_params(stmt.args), doc=doc or "", line=line)
        )

    # Whole-script rules ---------------------------------------------------------------

    def _check_shared_lines(self, statements: list[ast.stmt]) -> None:
        lines: dict[int, list[ast.stmt]] = {}
        for stmt in statements:
            lines.setdefault(stmt.lineno, []).append(stmt)
            if stmt.end_lineno is not None and stmt.end_lineno != stmt.lineno:
                lines.setdefault(stmt.end_lineno, []).append(stmt)
        for line, group in lines.items():
            if len(group) > 1 and any(id(stmt) in self.declaration_nodes for stmt in group):
                self.report("PYM010", line, "put each declaration on its own line")

    def _check_result(self, body: list[ast.stmt]) -> None:
        if not body or not isinstance(body[-1], ast.Expr):
            line = body[-1].lineno if body else max(len(self.source.splitlines()), 1)
            self.report(
                "PYM011",
                line,
                "the script must end with an expression whose value is the tool result, "
                'e.g. \'result\' or \'{"outcome": "success", "summary": ...}\'',
            )

    def _walk_body(self, statements: list[ast.stmt]) -> None:
        for stmt in statements:
            if id(stmt) in self.declaration_nodes:
                continue
            for node in ast.walk(stmt):
                self._check_node(node)

    def _check_node(self, node: ast.AST) -> None:
        line = getattr(node, "lineno", 1)
        if isinstance(node, ast.Yield | ast.YieldFrom):
            self.report("PYM013", line, "generators (yield) are not supported; build a list")
        elif isinstance(node, ast.Delete):
            self.report("PYM013", line, "'del' is not supported; rebind or pop instead")
        elif isinstance(node, ast.TryStar):
            self.report("PYM013", line, "'except*' is not supported; use 'except'")
        elif isinstance(node, ast.ClassDef) and (node.bases or node.keywords):
            self.report("PYM013", line, "class inheritance is not supported; use dicts")
        elif isinstance(node, ast.Call) and _is_input_call(node):
            self.report(
                "PYM004", line, "Input(...) is only allowed as a top-level 'name: T = Input(...)'"
            )
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
            _is_external(dec) for dec in node.decorator_list
        ):
            line = min(dec.lineno for dec in node.decorator_list)
            self.report("PYM017", line, "@external stubs belong at the top level of the script")
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            # Any reference, not only a call: 'e = eval' or '[open][0]' would alias it.
            self.report(
                "PYM014",
                line,
                f"'{node.id}' is not allowed in a tool script, not even as a name to pass "
                "around or rebind; reach files and the host through @external capabilities",
            )
        elif isinstance(node, ast.Attribute) and _is_dunder(node.attr):
            self.report("PYM014", line, f"dunder attribute '{node.attr}' is not allowed")
        elif isinstance(node, ast.Name) and _is_dunder(node.id):
            self.report("PYM014", line, f"dunder name '{node.id}' is not allowed")

    def _check_duplicates(self) -> None:
        seen: dict[str, str] = {}
        for kind, name, line in [
            *(("input", decl.name, decl.line) for decl in self.inputs),
            *(("capability", ext.name, ext.line) for ext in self.externals),
        ]:
            if name in seen:
                self.report("PYM012", line, f"'{name}' is declared twice (already as {seen[name]})")
            else:
                seen[name] = kind

    # Body text --------------------------------------------------------------------------

    def _blank_node(self, stmt: ast.stmt) -> None:
        first = stmt.lineno
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.decorator_list:
            first = min(dec.lineno for dec in stmt.decorator_list)
        last = stmt.end_lineno or stmt.lineno
        self.blank.update(range(first, last + 1))

    def _body_text(self) -> str:
        lines = self.source.splitlines()
        kept = ["" if number in self.blank else text for number, text in enumerate(lines, 1)]
        return "\n".join(kept) + "\n"


def _is_input_call(node: ast.expr | None) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Input"
    )


def _is_external(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "external"


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _input_arguments(call: ast.Call) -> dict[str, Any] | str:
    """The literal arguments of an ``Input(...)`` call, or a PYM004 message."""
    positional = ("name", "default", "description")
    if len(call.args) > len(positional):
        return "Input takes at most (name, default, description)"
    values: dict[str, Any] = {}
    pairs = list(zip(positional, call.args, strict=False))
    for keyword in call.keywords:
        if keyword.arg not in positional:
            return f"Input has no argument '{keyword.arg}'; use name, default, description"
        if any(name == keyword.arg for name, _ in pairs):
            return f"Input got '{keyword.arg}' twice"
        pairs.append((keyword.arg, keyword.value))
    for name, node in pairs:
        if isinstance(node, ast.Starred):
            return "Input arguments must be written out, not unpacked"
        try:
            values[name] = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return f"Input's {name} must be a literal value (string, number, list, ...)"
    if "name" not in values:
        return "Input needs the input name as its first argument"
    return values


def _stub_params(args: ast.arguments) -> tuple[ExternalParam, ...]:
    params: list[ExternalParam] = []
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    for index, arg in enumerate(positional):
        kind = "POSITIONAL_ONLY" if index < len(args.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        default_node = args.defaults[index - first_default] if index >= first_default else None
        params.append(_param(arg.arg, kind, default_node))
    if args.vararg:
        params.append(ExternalParam(args.vararg.arg, "VAR_POSITIONAL", False))
    for arg, default_node in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        params.append(_param(arg.arg, "KEYWORD_ONLY", default_node))
    if args.kwarg:
        params.append(ExternalParam(args.kwarg.arg, "VAR_KEYWORD", False))
    return tuple(params)


def _param(name: str, kind: str, default_node: ast.expr | None) -> ExternalParam:
    if default_node is None:
        return ExternalParam(name, kind, False)
    try:
        value = ast.literal_eval(default_node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = _NO_LITERAL
    return ExternalParam(name, kind, True, value)


def _names(tree: ast.Module) -> tuple[frozenset[str], frozenset[str]]:
    """Names called as functions, and names the script binds itself."""
    called: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(node.func.id)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    return frozenset(called), frozenset(bound)


# --- annotations → JSON schema -----------------------------------------------------------


def annotation_schema(node: ast.expr) -> dict[str, Any]:
    """The JSON schema of an input annotation; raises ``_Unsupported`` for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            inner = pyast.parse(node.value, mode="eval").body
        except SyntaxError:
            raise _Unsupported("the string annotation is not valid Python") from None
        return annotation_schema(inner)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([*_flatten_union(node.left), *_flatten_union(node.right)])
    name = _type_name(node)
    if name is not None:
        if name in _SCALARS:
            return {"type": _SCALARS[name]}
        if name in ("list", "List"):
            return {"type": "array"}
        if name in ("dict", "Dict"):
            return {"type": "object"}
        raise _Unsupported(f"'{name}' is not a supported input type")
    if isinstance(node, ast.Subscript):
        base = _type_name(node.value)
        args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base in ("list", "List"):
            if len(args) != 1:
                raise _Unsupported("list takes exactly one item type")
            return {"type": "array", "items": annotation_schema(args[0])}
        if base in ("dict", "Dict"):
            if len(args) != 2 or _type_name(args[0]) != "str":
                raise _Unsupported("dict inputs need string keys: dict[str, T]")
            return {"type": "object", "additionalProperties": annotation_schema(args[1])}
        if base == "Optional":
            if len(args) != 1:
                raise _Unsupported("Optional takes exactly one type")
            return _nullable(annotation_schema(args[0]))
        if base == "Union":
            return _union(args)
        if base == "Literal":
            return _literal(args)
    raise _Unsupported("this annotation is not supported")


def _type_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "typing"
    ):
        return node.attr
    return None


def _flatten_union(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_flatten_union(node.left), *_flatten_union(node.right)]
    return [node]


def _is_none(node: ast.expr) -> bool:
    return (isinstance(node, ast.Constant) and node.value is None) or _type_name(node) == "None"


def _union(members: list[ast.expr]) -> dict[str, Any]:
    others = [member for member in members if not _is_none(member)]
    if len(others) != 1 or len(others) == len(members):
        raise _Unsupported("unions are supported only as 'T | None' (Optional[T])")
    return _nullable(annotation_schema(others[0]))


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    result = dict(schema)
    kind = result.get("type")
    if isinstance(kind, str):
        result["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        result["type"] = [*kind, "null"]
    if "enum" in result and None not in result["enum"]:
        result["enum"] = [*result["enum"], None]
    return result


def _literal(args: list[ast.expr]) -> dict[str, Any]:
    values: list[Any] = []
    for arg in args:
        if not isinstance(arg, ast.Constant) or not isinstance(arg.value, str | int | float | bool):
            raise _Unsupported("Literal values must be strings, numbers or booleans")
        values.append(arg.value)
    if not values:
        raise _Unsupported("Literal needs at least one value")
    kinds = {_json_type(value) for value in values}
    schema: dict[str, Any] = {"enum": values}
    if len(kinds) == 1:
        schema = {"type": kinds.pop(), "enum": values}
    return schema


# --- values against schemas ------------------------------------------------------------


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _matches(kind: str, value: Any) -> bool:
    actual = _json_type(value)
    return actual == kind or (kind == "number" and actual == "integer")


def validate_value(schema: Mapping[str, Any], value: Any, where: str) -> str | None:
    """Check ``value`` against the schema subset Remora derives; the first problem or None.

    Understands ``type`` (one or a list), ``enum``, ``items`` and ``additionalProperties``;
    the runner validates full JSON Schema (including override keywords) before this.
    """
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind) if isinstance(kind, list) else []
    if kinds and not any(_matches(k, value) for k in kinds):
        wanted = " or ".join("null" if k == "null" else _article(k) for k in kinds)
        return f"{where} must be {wanted}, got {_json_type(value)}"
    enum = schema.get("enum")
    if isinstance(enum, list) and not any(
        value == option and _json_type(value) == _json_type(option) for option in enum
    ):
        options = ", ".join(json.dumps(option) for option in enum)
        return f"{where} must be one of {options}, got {json.dumps(value, default=str)}"
    items = schema.get("items")
    if isinstance(items, Mapping) and isinstance(value, list | tuple):
        for index, item in enumerate(value):
            problem = validate_value(items, item, f"{where}[{index}]")
            if problem:
                return problem
    extra = schema.get("additionalProperties")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} must have string keys, got {key!r}"
            if isinstance(extra, Mapping):
                problem = validate_value(extra, item, f"{where}[{key!r}]")
                if problem:
                    return problem
    return None


def _article(kind: str) -> str:
    return {"integer": "an integer", "array": "an array", "object": "an object"}.get(
        kind, f"a {kind}"
    )


# --- inputs_override ----------------------------------------------------------------------


def override_problems(script: PymScript, overrides: Mapping[str, Any]) -> list[str]:
    """Why ``inputs_override`` does not fit the script (empty when it does)."""
    problems: list[str] = []
    names = {decl.name for decl in script.model_inputs}
    for name, override in overrides.items():
        decl = script.input(name)
        if decl is None or name not in names:
            what = "a system input" if decl is not None else "not an input of the script"
            known = ", ".join(sorted(names)) or "none"
            problems.append(f"'{name}' is {what} (model-facing inputs: {known})")
            continue
        if not isinstance(override, Mapping):
            problems.append(
                f"'{name}' must map to a partial JSON schema, e.g. {{description: ...}}"
            )
            continue
        if "type" in override and override["type"] != decl.schema.get("type"):
            problems.append(
                f"'{name}' cannot change the type the script declares ({decl.annotation})"
            )
        enum = override.get("enum")
        if enum is not None:
            if not isinstance(enum, list) or not enum:
                problems.append(f"'{name}': enum must be a non-empty list")
            else:
                for option in enum:
                    problem = validate_value(decl.schema, option, f"'{name}' enum value")
                    if problem:
                        problems.append(problem)
        if "default" in override:
            problem = validate_value(decl.schema, override["default"], f"'{name}' default")
            if problem:
                problems.append(problem)
    return problems


def merge_override(prop: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """One input's schema with its override applied: override keys win, and nested schemas
    (``items``, ``properties``) merge the same way, so ``items: {maxLength: 80}`` keeps the
    items' declared type."""
    merged = dict(prop)
    for key, value in override.items():
        current = merged.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            merged[key] = merge_override(current, value)
        else:
            merged[key] = value
    return merged


# --- checking against the capability registry --------------------------------------------


def check_pym(script: PymScript, registry: Mapping[str, Capability]) -> list[Diagnostic]:
    """Every problem of ``script``: parse-time rules plus the capability stubs vs ``registry``.

    ``registry`` is what the script's agent may call (toolkit plus its operation's own).
    """
    label = str(script.path)
    problems = list(script.problems)
    declared = {ext.name for ext in script.externals}
    for ext in script.externals:
        cap = registry.get(ext.name)
        if cap is None:
            known = ", ".join(sorted(registry)) or "none"
            problems.append(
                Diagnostic(
                    code="PYM006",
                    message=f"unknown capability '{ext.name}' (known: {known})",
                    path=label,
                    line=ext.line,
                )
            )
            continue
        mismatch = _signature_mismatch(ext, cap.signature)
        if mismatch:
            problems.append(
                Diagnostic(
                    code="PYM007",
                    message=f"stub '{ext.name}' does not match the capability: {mismatch}; "
                    f"the capability is '{ext.name}{_plain_signature(cap.signature)}'",
                    path=label,
                    line=ext.line,
                )
            )
    input_names = {decl.name for decl in script.inputs}
    for name in sorted(script.called_names):
        if (
            name in registry
            and name not in declared
            and name not in input_names
            and name not in script.bound_names
        ):
            problems.append(
                Diagnostic(
                    code="PYM015",
                    message=f"'{name}' is a capability; declare it with an @external stub "
                    "before calling it",
                    path=label,
                    line=_first_call_line(script.source, name),
                )
            )
    return sorted(problems, key=lambda d: (d.line, d.code))


def _first_call_line(source: str, name: str) -> int:
    for node in ast.walk(pyast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
            return node.lineno
    return 1


def _signature_mismatch(ext: ExternalDecl, signature: inspect.Signature) -> str | None:
    expected = list(signature.parameters.values())
    if [p.name for p in ext.params] != [p.name for p in expected]:
        return (
            f"parameters ({', '.join(p.name for p in ext.params) or 'none'}) should be "
            f"({', '.join(p.name for p in expected) or 'none'})"
        )
    for stub, real in zip(ext.params, expected, strict=True):
        if stub.kind != real.kind.name:
            return f"'{stub.name}' is {_kind(stub.kind)} in the stub but {_kind(real.kind.name)}"
        real_has_default = real.default is not inspect.Parameter.empty
        if stub.has_default != real_has_default:
            state = "optional" if real_has_default else "required"
            return f"'{stub.name}' is {state} in the capability"
        if (
            stub.has_default
            and stub.default is not _NO_LITERAL
            and _literal_default(real.default) is not _NO_LITERAL
            and stub.default != real.default
        ):
            return f"'{stub.name}' defaults to {real.default!r} in the capability"
    return None


def _literal_default(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool | type(None)) else _NO_LITERAL


def _kind(kind: str) -> str:
    return kind.lower().replace("_", "-")


def _plain_signature(signature: inspect.Signature) -> str:
    parts: list[str] = []
    for param in signature.parameters.values():
        text = param.name
        if param.annotation is not inspect.Parameter.empty:
            annotation = param.annotation
            text += ": " + (
                annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
            )
        if param.default is not inspect.Parameter.empty:
            text += f" = {param.default!r}"
        parts.append(text)
    return f"({', '.join(parts)})"


# --- files and the cache --------------------------------------------------------------------


_Stamp = tuple[int, int]
_parsed: dict[Path, tuple[_Stamp, PymScript]] = {}
_checked: dict[tuple[Path, _Stamp, int], tuple[Mapping[str, Capability], list[Diagnostic]]] = {}
_lock = threading.Lock()


def _stamp(path: Path) -> _Stamp:
    try:
        info = path.stat()
    except OSError:
        raise AgentDefinitionError(
            "AGENT_006",
            f"tool script {path} does not exist",
            "check the 'pym' and 'context_providers' paths; they are relative to the agent folder",
        ) from None
    return (info.st_mtime_ns, info.st_size)


def load_pym(path: Path) -> PymScript:
    """Parse the script at ``path``, cached until the file's mtime or size changes."""
    return _load(path)[1]


def _load(path: Path) -> tuple[_Stamp, PymScript]:
    resolved = path.resolve()
    stamp = _stamp(resolved)
    with _lock:
        cached = _parsed.get(resolved)
    if cached is not None and cached[0] == stamp:
        return cached
    try:
        source = read_regular_file(resolved, MAX_SCRIPT_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentDefinitionError(
            "AGENT_006", f"cannot read tool script {resolved}: {exc}", "save it as UTF-8 text"
        ) from None
    entry = (stamp, parse_pym(source, resolved))
    with _lock:
        _parsed[resolved] = entry
    return entry


def check_script_file(
    path: Path, registry: Mapping[str, Capability]
) -> tuple[PymScript, list[Diagnostic]]:
    """:func:`load_pym` plus :func:`check_pym`, both cached per file version and registry."""
    stamp, script = _load(path)
    key = (script.path, stamp, id(registry))
    with _lock:
        cached = _checked.get(key)
    if cached is not None and cached[0] is registry:
        return script, list(cached[1])
    problems = check_pym(script, registry)
    with _lock:
        _checked[key] = (registry, problems)
    return script, list(problems)


def render_diagnostics(problems: Iterable[Diagnostic]) -> str:
    return "; ".join(problem.render() for problem in problems)
