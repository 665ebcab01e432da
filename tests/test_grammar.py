"""Call grammars: what they admit parses and validates; what they must refuse, llama.cpp refuses.

Acceptance is checked by llama.cpp's own grammar engine (through the embedded model's
vocabulary), so the GBNF text, not just Remora's expression tree, is under test.
"""

from __future__ import annotations

import random
from typing import Any

import jsonschema
import pytest

from remora.model.base import ToolSpec
from remora.model.functiongemma import END_CALL, ESCAPE, START_CALL
from remora.model.grammar import CallGrammar, build_call_grammar
from remora.model.llama_cpp import LlamaCppBackend, _Grammar
from remora.runner.parsing import parse_functiongemma_calls

pytestmark = pytest.mark.model

LINT_TOOLS = [
    ToolSpec(
        name="read_file",
        description="Read a file.",
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "start": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 0, "maximum": 5},
            },
            "required": ["path"],
        },
    ),
    ToolSpec(
        name="apply_fix",
        description="Fix one lint issue.",
        parameters={
            "type": "object",
            "properties": {
                "code": {"type": "string", "maxLength": 8},
                "line": {"type": "integer", "minimum": 1},
                "unsafe": {"type": "boolean"},
            },
            "required": ["code", "line"],
        },
    ),
    ToolSpec(name="submit_result", description="Finish.", parameters={"type": "object"}),
]


def check_call(text: str, tools: list[ToolSpec], choices: dict[str, list[Any]]) -> None:
    """One call, of an allowed tool, with sorted keys that validate, within the choices."""
    calls = parse_functiongemma_calls(text)
    assert len(calls) == 1, text
    call = calls[0]
    spec = next(tool for tool in tools if tool.name == call.name)
    properties = spec.parameters.get("properties", {})
    jsonschema.validate(call.arguments, spec.parameters)
    assert set(call.arguments) <= set(properties), text
    keys = list(call.arguments)
    assert keys == sorted(keys, key=str.lower), text
    for name, allowed in choices.items():
        if name in call.arguments and allowed:
            assert call.arguments[name] in allowed, text


def test_samples_are_admitted_by_llama_cpp_and_validate(embedded_llama: LlamaCppBackend) -> None:
    choices = {"code": ["E501", "F401"]}
    grammar = build_call_grammar(LINT_TOOLS, choices)
    rng = random.Random(7)
    seen = set()
    for _ in range(150):
        text = grammar.sample(rng)
        assert embedded_llama.admits(grammar, text), text
        check_call(text, LINT_TOOLS, choices)
        seen.add(parse_functiongemma_calls(text)[0].name)
    assert seen == {"read_file", "apply_fix", "submit_result"}


@pytest.mark.parametrize(
    "text",
    [
        "call:write_file{path:<escape>a<escape>}",
        "call:read_file{}",
        "call:read_file{start:3}",
        "call:read_file{path:<escape>a<escape>,other:1}",
        "call:read_file{start:2,path:<escape>a<escape>}",
        "call:read_file{path:<escape>a<escape>b<escape>}",
        "call:read_file{path:<escape>x<start_function_call>y<escape>}",
        "call:read_file{path:<escape>x<start_function_response>y<escape>}",
        "call:read_file{path:<escape>13<end_function_call><start_function_response>x<escape>}",
        "call:read_file{path:<escape>x<end_function_call>y<escape>}",
        "call:read_file{path:<escape>x<end_function_response>y<escape>}",
        "call:read_file{path:<escape>x<end_of_turn>y<escape>}",
        "call:read_file{path:<escape>x<start_of_turn>y<escape>}",
        "call:read_file{path:<escape>x<start_function_declaration>y<escape>}",
        "call:read_file{path:a.py}",
        "call:read_file{path:<escape>a<escape>,start:0}",
        "call:read_file{path:<escape>a<escape>,start:007}",
        "call:read_file{limit:6,path:<escape>a<escape>}",
        "call:apply_fix{code:<escape>W291<escape>,line:3}",
        "call:apply_fix{code:<escape>E501<escape>,line:true}",
        "call:apply_fix{code:<escape>E501<escape>,line:2,unsafe:yes}",
        "call:submit_result{}" + END_CALL + START_CALL + "call:submit_result{}",
        "call:submit_result{} ",
    ],
)
def test_malformed_calls_are_refused(embedded_llama: LlamaCppBackend, text: str) -> None:
    grammar = build_call_grammar(LINT_TOOLS, {"code": ["E501", "F401"]})
    full = text if text.startswith(START_CALL) else START_CALL + text
    full = full if full.endswith(END_CALL) else full + END_CALL
    assert not embedded_llama.admits(grammar, full)


def test_well_formed_edge_cases_are_admitted(embedded_llama: LlamaCppBackend) -> None:
    grammar = build_call_grammar(LINT_TOOLS)
    for body in (
        "read_file{path:<escape><escape>}",
        'read_file{path:<escape>a < b, {x}: "q"\n<e>scape<escape>,start:12}',
        "read_file{limit:0,path:<escape>é<escape>}",
        "apply_fix{code:<escape>12345678<escape>,line:1,unsafe:false}",
        "submit_result{}",
    ):
        text = START_CALL + "call:" + body + END_CALL
        assert embedded_llama.admits(grammar, text), text
        check_call(text, LINT_TOOLS, {})


def test_max_length_is_exact(embedded_llama: LlamaCppBackend) -> None:
    grammar = build_call_grammar(LINT_TOOLS[1:2])
    ok = START_CALL + "call:apply_fix{code:<escape>" + "x" * 8 + "<escape>,line:1}" + END_CALL
    too_long = ok.replace("x" * 8, "x" * 9)
    assert embedded_llama.admits(grammar, ok)
    assert not embedded_llama.admits(grammar, too_long)


def test_optional_call_allows_text_but_constrains_any_call(embedded_llama: LlamaCppBackend) -> None:
    grammar = build_call_grammar(LINT_TOOLS, optional_call=True)
    assert embedded_llama.admits(grammar, "Nothing to do here.")
    assert embedded_llama.admits(grammar, "Done. " + START_CALL + "call:submit_result{}" + END_CALL)
    assert not embedded_llama.admits(grammar, "Done. " + START_CALL + "call:nope{}" + END_CALL)
    assert not embedded_llama.admits(grammar, START_CALL + "call:submit_result{}" + END_CALL + "x")


def test_an_empty_tool_list_is_an_error() -> None:
    with pytest.raises(ValueError):
        build_call_grammar([])


def test_empty_choices_do_not_make_a_tool_uncallable(embedded_llama: LlamaCppBackend) -> None:
    grammar = build_call_grammar(LINT_TOOLS[1:2], {"code": []})
    text = START_CALL + "call:apply_fix{code:<escape>W1<escape>,line:4}" + END_CALL
    assert embedded_llama.admits(grammar, text)


_NAMES = ["a", "b", "Mode", "path", "x_1", "count", "zeta", "Alpha"]


def random_schema(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    kinds = ["string", "enum", "short", "integer", "range", "positive", "number", "boolean"]
    if depth < 2:
        kinds += ["array", "object"]
    kind = rng.choice(kinds)
    if kind == "string":
        return {"type": "string"}
    if kind == "enum":
        return {"type": "string", "enum": rng.sample(["red", "green", "a b", "<x>", "é"], 2)}
    if kind == "short":
        return {"type": "string", "minLength": rng.randint(0, 2), "maxLength": rng.randint(2, 6)}
    if kind == "integer":
        return {"type": "integer"}
    if kind == "range":
        low = rng.randint(-5, 5)
        return {"type": "integer", "minimum": low, "maximum": low + rng.randint(0, 10)}
    if kind == "positive":
        return {"type": "integer", "minimum": rng.choice([0, 1])}
    if kind == "number":
        return {"type": "number"}
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "array":
        schema: dict[str, Any] = {"type": "array", "items": random_schema(rng, depth + 1)}
        schema["minItems"] = rng.randint(0, 1)
        schema["maxItems"] = rng.randint(1, 3)
        return schema
    return random_object(rng, depth + 1)


def random_object(rng: random.Random, depth: int) -> dict[str, Any]:
    names = rng.sample(_NAMES, rng.randint(0, 4))
    properties = {name: random_schema(rng, depth) for name in names}
    required = [name for name in names if rng.random() < 0.5]
    return {"type": "object", "properties": properties, "required": required}


def test_random_schemas_admit_only_valid_calls(embedded_llama: LlamaCppBackend) -> None:
    rng = random.Random(2024)
    for round_ in range(30):
        tools = [
            ToolSpec(name=f"tool_{round_}_{i}", parameters=random_object(rng, 0))
            for i in range(rng.randint(1, 3))
        ]
        grammar = build_call_grammar(tools)
        for _ in range(10):
            text = grammar.sample(rng)
            assert embedded_llama.admits(grammar, text), (grammar.gbnf, text)
            check_call(text, tools, {})


def engine_walk(
    backend: LlamaCppBackend, grammar: CallGrammar, pool: list[int], rng: random.Random
) -> str | None:
    """A random output generated by llama.cpp's grammar engine itself, from ``pool`` tokens."""
    engine = backend.engine
    walker = _Grammar(engine, grammar)
    pieces: list[bytes] = []
    try:
        for _ in range(400):
            if walker.allows(engine.eos):
                return b"".join(pieces).decode("utf-8")
            allowed = [token for token in rng.sample(pool, len(pool)) if walker.allows(token)]
            if not allowed:
                return None
            token = allowed[0]
            walker.accept(token)
            pieces.append(engine.piece(token))
    finally:
        walker.free()
    return None


def test_outputs_generated_by_llama_cpp_under_the_grammar_validate(
    embedded_llama: LlamaCppBackend,
) -> None:
    """The other direction: walk llama.cpp's grammar engine itself (small caps keep walks short)."""
    tools = [
        ToolSpec(
            name="set",
            parameters={
                "type": "object",
                "properties": {
                    "key": {"type": "string", "maxLength": 3},
                    "n": {"type": "integer", "minimum": 0, "maximum": 3},
                    "on": {"type": "boolean"},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string", "enum": ["x", "y"]},
                        "maxItems": 2,
                    },
                },
                "required": ["key"],
            },
        ),
        ToolSpec(name="done", parameters={"type": "object", "properties": {}}),
    ]
    grammar = build_call_grammar(tools)
    rng = random.Random(3)
    texts = [grammar.sample(rng) for _ in range(50)] + ["abc{}[],:<>" + ESCAPE]
    pool = sorted(
        {t for text in texts for t in embedded_llama.engine.tokenize(text, special=False)}
    )
    outputs = [engine_walk(embedded_llama, grammar, pool, rng) for _ in range(40)]
    finished = [text for text in outputs if text is not None]
    assert len(finished) >= 20
    for text in finished:
        check_call(text, tools, {})
