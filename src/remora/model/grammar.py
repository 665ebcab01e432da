"""GBNF grammars that admit exactly one well-formed FunctionGemma call.

With the grammar applied, llama.cpp cannot sample an invalid call: the tool name is one
of the tools allowed this turn, the keys are that tool's own (sorted the way the
renderer sorts them, optional ones omittable, required ones present), strings are
``<escape>``-wrapped with a length cap and cannot contain ``<escape>`` or any control
tag of the format (every one starts ``<start_`` or ``<end_``), integers, numbers,
booleans, enums, consts, unions and nested objects/arrays follow the JSON schema, and
the ``choices`` the last tool results reported replace the schema of the arguments they
name. Not enforced (the runner's validator still checks them): ``pattern``/``format``,
and integer bounds other than small ranges and minimum 0 or 1.

The grammar is built as a small expression tree first, so the same tree renders GBNF
for llama.cpp (with repetitions rewritten to stay under llama.cpp's parser limits) and
samples example calls for tests and synthetic traces.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from remora.model.base import ToolSpec
from remora.model.functiongemma import (
    END_CALL,
    ESCAPE,
    START_CALL,
    format_argument,
)

DEFAULT_STRING_CAP = 1000
"""Units a string may hold without ``maxLength`` (a ``<`` counts with the next character)."""
MAX_REPETITION = 2000
"""The largest cap honoured, llama.cpp's own limit on a single repetition."""
DEFAULT_ARRAY_CAP = 32
DEFAULT_ANY_ITEMS = 16
SAMPLE_DEPTH = 3
CHUNK = 64

ROOT = "root"
_STRING_CHAR = "str-char"
_PLAIN_CHAR = "plain-char"
_ANY = "any-value"
_ANY_OBJECT = "any-object"
_INTEGER = "integer"
_NUMBER = "number"
_KEY = "any-key"


@dataclass(frozen=True)
class Lit:
    """A literal string."""

    text: str


@dataclass(frozen=True)
class Chars:
    """One character from ``ranges`` (or, negated, any character outside them)."""

    ranges: tuple[tuple[str, str], ...]
    negated: bool = False


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    item: Node
    min: int
    max: int | None


@dataclass(frozen=True)
class Ref:
    name: str


Node = Lit | Chars | Seq | Alt | Repeat | Ref

_SAMPLE_POOL = (
    [chr(code) for code in range(32, 127)]
    + ["\n", "\t", "é", "→", "中"]
    + ["<"] * 4
    + ["e", "s"] * 2
)


def _chars(spec: str, negated: bool = False) -> Chars:
    """``Chars`` from a compact spec such as ``"a-zA-Z_"``."""
    ranges: list[tuple[str, str]] = []
    index = 0
    while index < len(spec):
        if index + 2 < len(spec) and spec[index + 1] == "-":
            ranges.append((spec[index], spec[index + 2]))
            index += 3
        else:
            ranges.append((spec[index], spec[index]))
            index += 1
    return Chars(tuple(ranges), negated)


def _seq(*items: Node) -> Node:
    flat: list[Node] = []
    for item in items:
        if isinstance(item, Seq):
            flat.extend(item.items)
        elif not (isinstance(item, Lit) and not item.text):
            flat.append(item)
    merged: list[Node] = []
    for item in flat:
        if merged and isinstance(item, Lit) and isinstance(merged[-1], Lit):
            previous = merged.pop()
            assert isinstance(previous, Lit)
            merged.append(Lit(previous.text + item.text))
        else:
            merged.append(item)
    if not merged:
        return Lit("")
    return merged[0] if len(merged) == 1 else Seq(tuple(merged))


def _alt(options: Sequence[Node]) -> Node:
    unique: list[Node] = []
    for option in options:
        if option not in unique:
            unique.append(option)
    return unique[0] if len(unique) == 1 else Alt(tuple(unique))


def _optional(item: Node) -> Node:
    return Repeat(item, 0, 1)


def _escape_literal(text: str) -> str:
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 32:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _escape_class_char(char: str) -> str:
    if char in "]\\-^[":
        return "\\" + char
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\t":
        return "\\t"
    return char


def _render(node: Node) -> str:
    if isinstance(node, Lit):
        return _escape_literal(node.text)
    if isinstance(node, Chars):
        body = "".join(
            _escape_class_char(lo)
            if lo == hi
            else _escape_class_char(lo) + "-" + _escape_class_char(hi)
            for lo, hi in node.ranges
        )
        return "[" + ("^" if node.negated else "") + body + "]"
    if isinstance(node, Ref):
        return node.name
    if isinstance(node, Seq):
        return " ".join(_render_grouped(item) for item in node.items)
    if isinstance(node, Alt):
        return " | ".join(_render(option) for option in node.options)
    inner = _render_grouped(node.item, group_seq=True)
    if (node.min, node.max) == (0, 1):
        return inner + "?"
    if node.max is None:
        return inner + ("*" if node.min == 0 else "+" if node.min == 1 else f"{{{node.min},}}")
    return inner + f"{{{node.min},{node.max}}}"


def _render_grouped(node: Node, group_seq: bool = False) -> str:
    text = _render(node)
    if isinstance(node, Alt) or (group_seq and isinstance(node, Seq | Repeat)):
        return "(" + text + ")"
    return text


@dataclass
class CallGrammar:
    """A GBNF grammar for one call, with the tree it was rendered from."""

    rules: dict[str, Node]
    tools: tuple[str, ...]
    root: str = ROOT
    _gbnf: str = field(default="", init=False, repr=False)

    @property
    def gbnf(self) -> str:
        """The grammar in llama.cpp's GBNF syntax."""
        if not self._gbnf:
            lowered = _Lowering(self.rules).run()
            self._gbnf = "\n".join(f"{name} ::= {_render(node)}" for name, node in lowered.items())
        return self._gbnf

    def sample(self, rng: random.Random, *, max_repeat: int = 4) -> str:
        """One random string the grammar admits (repetitions kept short)."""
        return _Sampler(self.rules, rng, max_repeat).run(Ref(self.root), 0)


class _Lowering:
    """Rewrite repetitions into a shape llama.cpp's grammar parser accepts.

    llama.cpp expands ``x{m,n}`` into one rule per optional repetition and refuses a
    sequence whose repetition counts multiply past 2000. So every repetition gets a
    rule of its own, over a single symbol, and counts above ``CHUNK`` become
    ``chunk{0,q} tail`` with ``chunk ::= x{CHUNK}`` and ``tail ::= x{0,r}``: the same
    language with no count above 64 anywhere.
    """

    def __init__(self, rules: Mapping[str, Node]) -> None:
        self.source = rules
        self.out: dict[str, Node] = {}
        self.names: dict[Node, str] = {}

    def run(self) -> dict[str, Node]:
        for name, node in self.source.items():
            self.out[name] = Lit("")
            self.out[name] = self.lower(node)
        return self.out

    def rule(self, prefix: str, node: Node) -> Ref:
        if node in self.names:
            return Ref(self.names[node])
        name = f"{prefix}-{len(self.names) + 1}"
        self.names[node] = name
        self.out[name] = node
        return Ref(name)

    def symbol(self, node: Node) -> Node:
        """``node`` as a single grammar symbol (a literal, class or rule reference)."""
        lowered = self.lower(node)
        return lowered if isinstance(lowered, Lit | Chars | Ref) else self.rule("item", lowered)

    def lower(self, node: Node) -> Node:
        if isinstance(node, Seq):
            return Seq(tuple(self.lower(item) for item in node.items))
        if isinstance(node, Alt):
            return Alt(tuple(self.lower(option) for option in node.options))
        if not isinstance(node, Repeat):
            return node
        if (node.min, node.max) == (0, 1):
            return Repeat(self.lower(node.item), 0, 1)
        item = self.symbol(node.item)
        if node.max == 0:
            return Lit("")
        return self.repeat(item, node.min, node.max)

    def repeat(self, item: Node, low: int, high: int | None) -> Node:
        if high is None or high <= CHUNK:
            return self.rule("rep", Repeat(item, low, high))
        parts: list[Node] = []
        if low:
            parts.append(self.repeat(item, low, low))
        rest = high - low
        chunk = self.rule("rep", Repeat(item, CHUNK, CHUNK))
        count, tail = divmod(rest, CHUNK)
        parts.append(self.rule("rep", Repeat(chunk, 0, count)))
        if tail:
            parts.append(self.rule("rep", Repeat(item, 0, tail)))
        return self.rule("rep", Seq(tuple(parts)))


class _Sampler:
    def __init__(self, rules: Mapping[str, Node], rng: random.Random, max_repeat: int) -> None:
        self.rules = rules
        self.rng = rng
        self.max_repeat = max_repeat

    def run(self, node: Node, depth: int) -> str:
        rng = self.rng
        if isinstance(node, Lit):
            return node.text
        if isinstance(node, Chars):
            pool = [char for char in _SAMPLE_POOL if _in_class(char, node)]
            return rng.choice(pool)
        if isinstance(node, Ref):
            return self.run(self.rules[node.name], depth + 1)
        if isinstance(node, Seq):
            return "".join(self.run(item, depth) for item in node.items)
        if isinstance(node, Alt):
            if depth > SAMPLE_DEPTH * 4:
                return self.run(node.options[0], depth)
            return self.run(rng.choice(node.options), depth)
        high = (
            node.min + self.max_repeat
            if node.max is None
            else min(node.max, node.min + self.max_repeat)
        )
        count = node.min if depth > SAMPLE_DEPTH * 4 else rng.randint(node.min, max(node.min, high))
        return "".join(self.run(node.item, depth) for _ in range(count))


def _in_class(char: str, node: Chars) -> bool:
    inside = any(lo <= char <= hi for lo, hi in node.ranges)
    return inside != node.negated


def avoiding(patterns: Sequence[str]) -> Node:
    """One unit of text that can never complete any of ``patterns``.

    Every pattern starts with ``<`` and holds no other ``<``. A unit is a character
    other than ``<``, or ``<`` plus a partial match plus a character that breaks every
    pattern; so ``<`` must be followed by such a character (text cannot end with ``<``
    or hold ``<<``: a small price for an exact, unambiguous grammar).
    """
    options: list[Node] = [_chars("<", negated=True)]
    prefixes = sorted({p[:n] for p in patterns for n in range(1, len(p))})
    for prefix in prefixes:
        following = {
            p[len(prefix)] for p in patterns if p.startswith(prefix) and len(p) > len(prefix)
        }
        breaking = "".join(sorted(following)) + "<"
        options.append(_seq(Lit(prefix), _chars(breaking, negated=True)))
    return Alt(tuple(options))


STRING_FORBIDDEN = (ESCAPE, "<start_", "<end_")
"""What string content may not contain: its delimiter and the start of every control tag of
the format (call, response, declaration, turn), so a model cannot close a call or open a
response inside an argument. Short stems keep the rule to a dozen alternatives."""


class _Builder:
    """Turns JSON schemas into grammar nodes, sharing helper rules."""

    def __init__(self, string_cap: int) -> None:
        self.string_cap = max(0, min(string_cap, MAX_REPETITION))
        self.rules: dict[str, Node] = {}

    def helper(self, name: str) -> Ref:
        if name in self.rules:
            return Ref(name)
        if name == _STRING_CHAR:
            self.rules[name] = avoiding(STRING_FORBIDDEN)
        elif name == _PLAIN_CHAR:
            self.rules[name] = _chars("<", negated=True)
        elif name == _INTEGER:
            self.rules[name] = _seq(
                _optional(Lit("-")),
                _alt([Lit("0"), _seq(_chars("1-9"), Repeat(_chars("0-9"), 0, 17))]),
            )
        elif name == _NUMBER:
            self.rules[name] = _seq(
                self.helper(_INTEGER),
                _optional(_seq(Lit("."), Repeat(_chars("0-9"), 1, 16))),
                _optional(_seq(_chars("eE"), _optional(_chars("-+")), Repeat(_chars("0-9"), 1, 2))),
            )
        elif name == _KEY:
            self.rules[name] = _seq(_chars("a-zA-Z_"), Repeat(_chars("a-zA-Z0-9_"), 0, 63))
        elif name == _ANY:
            self.rules[name] = Lit("")
            value = Ref(_ANY)
            self.rules[name] = _alt(
                [
                    self.string(0, None),
                    self.helper(_NUMBER),
                    Lit("true"),
                    Lit("false"),
                    _seq(Lit("["), _optional(self._list_of(value, DEFAULT_ANY_ITEMS)), Lit("]")),
                    self.helper(_ANY_OBJECT),
                ]
            )
        elif name == _ANY_OBJECT:
            self.rules[name] = Lit("")
            entry = _seq(self.helper(_KEY), Lit(":"), self.helper(_ANY))
            self.rules[name] = _seq(
                Lit("{"), _optional(self._list_of(entry, DEFAULT_ANY_ITEMS)), Lit("}")
            )
        return Ref(name)

    def named(self, name: str, node: Node) -> Ref:
        """Register ``node`` as its own rule (keeps the GBNF readable)."""
        self.rules[name] = node
        return Ref(name)

    @staticmethod
    def _list_of(item: Node, cap: int, minimum: int = 0) -> Node:
        if cap <= 0:
            return Lit("")
        rest = Repeat(_seq(Lit(","), item), max(0, minimum - 1), cap - 1)
        return _seq(item, rest)

    def string(self, min_length: int, max_length: int | None) -> Node:
        """An escaped string; an explicit ``maxLength`` is exact (content then has no ``<``)."""
        if max_length is None:
            cap, unit = self.string_cap, self.helper(_STRING_CHAR)
        else:
            cap, unit = min(max_length, MAX_REPETITION), self.helper(_PLAIN_CHAR)
        low = min(max(0, min_length), cap)
        return _seq(Lit(ESCAPE), Repeat(unit, low, cap), Lit(ESCAPE))

    def integer(self, schema: Mapping[str, Any]) -> Node:
        """Integers; bounds are exact for small ranges and for minimum 0 or 1 only."""
        minimum, maximum = schema.get("minimum"), schema.get("maximum")
        if isinstance(minimum, int) and isinstance(maximum, int) and 0 <= maximum - minimum < 64:
            return _alt([Lit(str(value)) for value in range(minimum, maximum + 1)])
        positive = _seq(_chars("1-9"), Repeat(_chars("0-9"), 0, 17))
        if isinstance(minimum, int | float) and minimum >= 1:
            return positive
        if isinstance(minimum, int | float) and minimum >= 0:
            return _alt([Lit("0"), positive])
        return self.helper(_INTEGER)

    def literals(self, values: Sequence[Any]) -> Node | None:
        options = [Lit(_literal(value)) for value in values]
        return _alt(options) if options else None

    def value(self, schema: Any, depth: int = 0) -> Node:
        """Grammar for one value of ``schema``."""
        if not isinstance(schema, Mapping) or depth > 8:
            return self.helper(_ANY)
        if "const" in schema:
            return Lit(_literal(schema["const"]))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            node = self.literals(schema["enum"])
            if node is not None:
                return node
        for key in ("anyOf", "oneOf"):
            subschemas = schema.get(key)
            if isinstance(subschemas, list) and subschemas:
                return _alt([self.value(sub, depth + 1) for sub in subschemas])
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"] or ["null"]
            return _alt([self.value({**schema, "type": k}, depth) for k in kinds])
        if kind is None and isinstance(schema.get("properties"), Mapping):
            kind = "object"
        if kind == "string":
            return self.string(int(schema.get("minLength", 0)), _opt_int(schema.get("maxLength")))
        if kind == "integer":
            return self.integer(schema)
        if kind == "number":
            return self.helper(_NUMBER)
        if kind == "boolean":
            return Alt((Lit("true"), Lit("false")))
        if kind == "null":
            return Lit("None")
        if kind == "array":
            item = self.value(schema.get("items"), depth + 1)
            minimum = int(schema.get("minItems", 0))
            cap = _opt_int(schema.get("maxItems"))
            cap = DEFAULT_ARRAY_CAP if cap is None else min(cap, MAX_REPETITION)
            body = self._list_of(item, cap, minimum)
            return _seq(Lit("["), body if minimum > 0 else _optional(body), Lit("]"))
        if kind == "object":
            properties = schema.get("properties")
            if isinstance(properties, Mapping) and properties:
                return self.object(properties, schema.get("required") or [], {}, depth)
            return self.helper(_ANY_OBJECT)
        return self.helper(_ANY)

    def object(
        self,
        properties: Mapping[str, Any],
        required: Sequence[str],
        overrides: Mapping[str, Node],
        depth: int,
    ) -> Node:
        """``{k:v,...}`` with keys in sorted order, required ones mandatory."""
        keys = sorted(properties, key=lambda name: str(name).lower())
        entries = [
            _seq(
                Lit(key + ":"),
                overrides[key] if key in overrides else self.value(properties[key], depth + 1),
            )
            for key in keys
        ]
        mandatory = [key in set(required) for key in keys]

        def tail(start: int) -> Node:
            parts = [
                _seq(Lit(","), entries[i])
                if mandatory[i]
                else _optional(_seq(Lit(","), entries[i]))
                for i in range(start, len(keys))
            ]
            return _seq(*parts)

        first_required = next((i for i, needed in enumerate(mandatory) if needed), len(keys))
        heads = [_seq(entries[i], tail(i + 1)) for i in range(min(first_required + 1, len(keys)))]
        body: Node = Lit("")
        if heads:
            body = _alt(heads)
            if first_required == len(keys):
                body = _optional(body)
        return _seq(Lit("{"), body, Lit("}"))


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _literal(value: Any) -> str:
    """A value as it appears in a call; JSON text that is not a plain value is kept as is."""
    return format_argument(value, escape_keys=False)


def _choice_values(values: Sequence[Any]) -> list[Any]:
    unique: list[Any] = []
    seen: set[str] = set()
    for value in values:
        key = json.dumps(value, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            unique.append(value)
    return unique


def _rule_name(tool: str, index: int) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", tool).strip("-").lower() or "tool"
    return f"call-{index}-{slug}"


def build_call_grammar(
    tools: Sequence[ToolSpec],
    choices: Mapping[str, Sequence[Any]] | None = None,
    *,
    optional_call: bool = False,
    string_cap: int = DEFAULT_STRING_CAP,
) -> CallGrammar:
    """A grammar admitting one call ``<start_function_call>call:NAME{...}<end_function_call>``.

    ``choices`` maps argument names to the only values allowed this turn; it applies to
    every tool that has that argument (an empty list is ignored, since it would make
    the tool uncallable). With ``optional_call`` (``tool_choice="auto"``) free text may
    come first and the call may be left out, but any call the text starts is still
    constrained: the free text can never spell ``<start_function_call>`` itself.
    Raises ``ValueError`` when ``tools`` is empty.
    """
    if not tools:
        raise ValueError("a call grammar needs at least one tool")
    builder = _Builder(string_cap)
    alternatives: list[Node] = []
    names: list[str] = []
    for index, tool in enumerate(tools, start=1):
        params = tool.parameters if isinstance(tool.parameters, Mapping) else {}
        properties = params.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        overrides: dict[str, Node] = {}
        for name, values in (choices or {}).items():
            if name in properties and values:
                node = builder.literals(_choice_values(values))
                if node is not None:
                    overrides[name] = node
        args = builder.object(properties, params.get("required") or [], overrides, 0)
        alternatives.append(builder.named(_rule_name(tool.name, index), _seq(Lit(tool.name), args)))
        names.append(tool.name)
    call = _seq(Lit(START_CALL + "call:"), _alt(alternatives), Lit(END_CALL))
    if optional_call:
        prelude = builder.named("free-text", avoiding((START_CALL,)))
        root = _seq(Repeat(prelude, 0, builder.string_cap), _optional(call))
    else:
        root = call
    rules = {ROOT: root, **builder.rules}
    return CallGrammar(rules=rules, tools=tuple(names))
