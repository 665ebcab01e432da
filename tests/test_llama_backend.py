"""The llama.cpp backend on the embedded Gemma 3 270M: calls, KV reuse, adapters, errors."""

from __future__ import annotations

import asyncio
import itertools
import json
import struct
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from remora.errors import ModelError
from remora.model.base import Message, ModelRequest, ToolCall, ToolSpec
from remora.model.functiongemma import END_CALL, END_OF_TURN, START_CALL, START_RESPONSE
from remora.model.llama_cpp import LlamaCppBackend, _Engine
from remora.runner.parsing import parse_functiongemma_calls

pytestmark = pytest.mark.model

SYSTEM = (
    "You are a model that can do function calling with the following functions\n"
    "<task_description>Fix the lint problems of one Python file.</task_description>\n"
    "Always answer with exactly one function call."
)
TOOLS = [
    ToolSpec(
        name="run_linter",
        description="Run the linter on the file and list the problems.",
        parameters={"type": "object", "properties": {}, "required": []},
    ),
    ToolSpec(
        name="apply_fix",
        description="Apply the automatic fix for one lint code.",
        parameters={
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "Lint code such as F401"},
                "line": {"type": "integer", "minimum": 1},
            },
            "required": ["code"],
        },
    ),
    ToolSpec(
        name="submit_result",
        description="Finish and report what changed.",
        parameters={
            "type": "object",
            "properties": {"summary": {"type": "string", "maxLength": 200}},
            "required": ["summary"],
        },
    ),
]


def start(user: str = "Fix the lint problems in inventory/pricing.py.") -> list[Message]:
    return [Message(role="system", content=SYSTEM), Message(role="user", content=user)]


def request(messages: list[Message], conversation: str, **extra: Any) -> ModelRequest:
    fields: dict[str, Any] = {"max_tokens": 48, **extra}
    return ModelRequest(messages=messages, tools=TOOLS, conversation_id=conversation, **fields)


def one_valid_call(text: str, allowed: list[str]) -> ToolCall:
    calls = parse_functiongemma_calls(text)
    assert len(calls) == 1, text
    call = calls[0]
    assert call.name in allowed, text
    spec = next(tool for tool in TOOLS if tool.name == call.name)
    jsonschema.validate(call.arguments, spec.parameters)
    return call


def answer(messages: list[Message], call: ToolCall, turn: int, response: dict[str, Any]) -> None:
    call = call.model_copy(update={"id": f"call_{turn}"})
    messages.append(Message(role="assistant", tool_calls=[call]))
    payload = {"name": call.name, "response": response}
    messages.append(
        Message(role="tool", name=call.name, tool_call_id=call.id, content=json.dumps(payload))
    )


def test_three_turn_episode_makes_only_valid_calls(embedded_llama: LlamaCppBackend) -> None:
    messages = start()
    choices: dict[str, list[Any]] = {}
    names = [tool.name for tool in TOOLS]

    async def episode() -> list[Any]:
        usages = []
        for turn in range(3):
            response = await embedded_llama.complete(request(messages, "episode", choices=choices))
            assert response.finish_reason == "stop"
            call = one_valid_call(response.raw_text, names)
            if "code" in call.arguments and choices:
                assert call.arguments["code"] in choices["code"]
            usages.append(response.usage)
            result = {"outcome": "success", "summary": "2 problems: F401, E501"}
            answer(messages, call, turn, result)
            choices.clear()
            choices["code"] = ["F401", "E501"]
        return usages

    usages = asyncio.run(episode())
    assert usages[0].cached_prompt_tokens < usages[0].prompt_tokens
    for previous, usage in itertools.pairwise(usages):
        assert usage.prompt_tokens > previous.prompt_tokens
        # the previous prompt and the evaluated part of the call are reused as they are;
        # the last sampled token and the text the grammar forced after it never were
        assert previous.prompt_tokens < usage.cached_prompt_tokens
        assert usage.cached_prompt_tokens <= previous.prompt_tokens + previous.completion_tokens - 1
        assert usage.cached_prompt_tokens < usage.prompt_tokens
        assert usage.completion_tokens > 0


def test_named_choice_and_reported_choices_constrain_the_call(
    embedded_llama: LlamaCppBackend,
) -> None:
    generation = embedded_llama.generate(
        request(start(), "named", tool_choice="apply_fix", choices={"code": ["E501"]})
    )
    call = one_valid_call(generation.text, ["apply_fix"])
    assert call.arguments["code"] == "E501"


def test_allowed_tools_restrict_the_call(embedded_llama: LlamaCppBackend) -> None:
    generation = embedded_llama.generate(request(start(), "final", allowed_tools=["submit_result"]))
    one_valid_call(generation.text, ["submit_result"])


def test_interleaved_conversations_keep_their_caches(embedded_llama: LlamaCppBackend) -> None:
    first = embedded_llama.generate(request(start(), "conv-a"))
    other = embedded_llama.generate(request(start("Fix reports.py, please."), "conv-b"))
    assert other.cached_tokens > 200, "a new conversation shares the developer turn"
    messages = start()
    answer(
        messages, one_valid_call(first.text, ["run_linter", "apply_fix", "submit_result"]), 0, {}
    )
    again = embedded_llama.generate(request(messages, "conv-a"))
    # at least its own prompt and call (more when another sequence holds a longer prefix:
    # calls are tokenized apart, so conversations that made the same call share it too)
    assert again.cached_tokens >= first.prompt_tokens + first.evaluated_tokens
    assert 0 <= first.evaluated_tokens < first.completion_tokens
    assert again.prompt_tokens - again.cached_tokens < 0.3 * again.prompt_tokens


def test_earlier_calls_in_a_prompt_are_tokenized_apart(embedded_llama: LlamaCppBackend) -> None:
    # as the model wrote them: a fresh conversation evaluates the same tokens a cached one
    # holds, and training packs an episode's turns on the same tokens
    messages = start()
    answer(messages, ToolCall(name="run_linter", arguments={}), 0, {"outcome": "success"})
    before = embedded_llama.render(request(messages, "fresh"))
    answer(messages, ToolCall(name="apply_fix", arguments={"code": "F401"}), 1, {})
    prompt = embedded_llama.render(request(messages, "fresh"))
    engine = embedded_llama.engine
    pieces = engine.tokenize_prompt(prompt)
    assert pieces != engine.tokenize(prompt)  # one text merges '>' and '<' after a response
    assert pieces[: len(engine.tokenize_prompt(before))] == engine.tokenize_prompt(before)
    result = embedded_llama.generate(request(messages, "fresh"))
    assert result.prompt_tokens == len(pieces) == embedded_llama.count_tokens(prompt)


def test_a_call_cut_by_max_tokens_gets_one_more_budget(embedded_llama: LlamaCppBackend) -> None:
    generation = embedded_llama.generate(
        request(start(), "short", max_tokens=4, tool_choice="submit_result")
    )
    assert generation.extended
    assert generation.finish_reason == "length"
    assert generation.completion_tokens == 8
    assert generation.text.startswith(START_CALL[:3])


def test_concurrent_requests_are_scheduled_one_at_a_time(embedded_llama: LlamaCppBackend) -> None:
    async def both() -> list[Any]:
        return list(
            await asyncio.gather(
                embedded_llama.complete(request(start(), "together-1")),
                embedded_llama.complete(request(start("Lint models.py."), "together-2")),
            )
        )

    for response in asyncio.run(both()):
        one_valid_call(response.raw_text, [tool.name for tool in TOOLS])


def test_count_tokens_uses_the_model_tokenizer(embedded_llama: LlamaCppBackend) -> None:
    assert embedded_llama.count_tokens("<start_of_turn>") == 1
    text = "def add(a, b):\n    return a + b\n"
    assert embedded_llama.count_tokens(text) == len(embedded_llama.engine.tokenize(text))
    assert 5 < embedded_llama.count_tokens(text) < len(text)


def test_prompt_is_rendered_by_remora_not_a_chat_template(embedded_llama: LlamaCppBackend) -> None:
    prompt = embedded_llama.render(request(start(), "render"))
    assert prompt.startswith("<bos><start_of_turn>developer\n" + SYSTEM)
    assert prompt.endswith("<end_of_turn>\n<start_of_turn>model\n")
    assert "[INST]" not in prompt


def test_stop_sequences_end_free_text_but_not_calls() -> None:
    assert _Engine._stop_index("hello" + END_OF_TURN, None, False) == 5
    assert _Engine._stop_index("x" + START_RESPONSE + "res", None, False) == 1
    inside = START_CALL + "call:f{a:<escape>" + END_OF_TURN
    assert _Engine._stop_index(inside, object(), True) is None  # type: ignore[arg-type]
    assert _Engine._inside_call(START_CALL + "call:f{", None, _job(False))
    assert not _Engine._inside_call(START_CALL + "call:f{}" + END_CALL, None, _job(False))


def _job(required: bool) -> Any:
    class Job:
        call_required = required

    return Job()


def test_prompt_longer_than_the_context_is_a_clear_error(embedded_llama: LlamaCppBackend) -> None:
    long = start("word " * 5000)
    with pytest.raises(ModelError) as info:
        embedded_llama.generate(request(long, "long"))
    assert info.value.code == "MODEL_020"
    assert "context_size" in (info.value.hint or "")


def test_missing_and_corrupt_gguf_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as missing:
        LlamaCppBackend(tmp_path / "absent.gguf")
    assert missing.value.code == "MODEL_001"
    text = tmp_path / "notes.gguf"
    text.write_text("not a model")
    with pytest.raises(ModelError) as not_gguf:
        LlamaCppBackend(text)
    assert not_gguf.value.code == "MODEL_002"
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 64)
    backend = LlamaCppBackend(broken, context_size=512)
    with pytest.raises(ModelError) as corrupt:
        backend.load()
    assert corrupt.value.code == "MODEL_002"
    backend.close()


def test_bad_adapters_are_clear_errors(embedded_llama: LlamaCppBackend, tmp_path: Path) -> None:
    async def ask(adapter: str) -> None:
        await embedded_llama.complete(request(start(), f"adapter-{adapter}", adapter=adapter))

    with pytest.raises(ModelError) as missing:
        asyncio.run(ask(str(tmp_path / "missing.lora.gguf")))
    assert missing.value.code == "MODEL_010"
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"PK\x03\x04 not gguf")
    with pytest.raises(ModelError) as not_gguf:
        asyncio.run(ask(str(junk)))
    assert not_gguf.value.code == "MODEL_011"
    with pytest.raises(ModelError) as not_adapter:
        asyncio.run(ask(str(embedded_llama.model_path)))
    assert not_adapter.value.code == "MODEL_011"


def _gguf_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def write_lora(path: Path, tensors: dict[str, np.ndarray[Any, Any]], arch: str = "gemma3") -> None:
    """A minimal LoRA adapter in GGUF v3 (f32 tensors, 32-byte alignment)."""
    metadata = [
        ("general.architecture", 8, _gguf_string(arch)),
        ("general.type", 8, _gguf_string("adapter")),
        ("adapter.type", 8, _gguf_string("lora")),
        ("adapter.lora.alpha", 6, struct.pack("<f", 1.0)),
    ]
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata)))
    for key, kind, value in metadata:
        out += _gguf_string(key) + struct.pack("<I", kind) + value
    blobs = bytearray()
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        dims = list(reversed(array.shape))
        out += _gguf_string(name) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", dim) for dim in dims)
        out += struct.pack("<IQ", 0, len(blobs))
        blobs += data + b"\0" * (-len(data) % 32)
    out += b"\0" * (-len(out) % 32)
    path.write_bytes(bytes(out + blobs))


def test_a_lora_adapter_really_loads_and_applies(
    embedded_llama: LlamaCppBackend, tmp_path: Path
) -> None:
    """Rank-4 adapters on every FFN down projection: zero B changes nothing, random B does.

    A one-sequence backend evaluates every prompt in full, so outputs compare exactly
    (reusing a cached prefix changes llama.cpp's float rounding slightly).
    """
    rng = np.random.default_rng(0)
    layers = range(18)
    zero = {f"blk.{i}.ffn_down.weight.lora_a": rng.normal(size=(4, 2048)) for i in layers}
    zero |= {f"blk.{i}.ffn_down.weight.lora_b": np.zeros((640, 4)) for i in layers}
    strong = dict(zero)
    strong |= {f"blk.{i}.ffn_down.weight.lora_b": rng.normal(size=(640, 4)) * 2 for i in layers}
    write_lora(tmp_path / "zero.gguf", zero)
    write_lora(tmp_path / "strong.gguf", strong)
    wrong_arch = tmp_path / "llama.gguf"
    write_lora(wrong_arch, zero, arch="llama")
    backend = LlamaCppBackend(embedded_llama.model_path, context_size=512, sequences=1)
    plain = [Message(role="user", content="Count: one two three")]

    def run(adapter: Path | None) -> str:
        text_request = ModelRequest(
            messages=plain, max_tokens=10, adapter=str(adapter) if adapter else None
        )
        return backend.generate(text_request).text

    try:
        base = run(None)
        assert run(tmp_path / "zero.gguf") == base
        assert run(tmp_path / "strong.gguf") != base
        assert run(None) == base
        write_lora(tmp_path / "zero.gguf", strong)  # re-exported to the same path
        assert run(tmp_path / "zero.gguf") == run(tmp_path / "strong.gguf")
        with pytest.raises(ModelError) as info:
            run(wrong_arch)
        assert info.value.code == "MODEL_011"
    finally:
        backend.close()
