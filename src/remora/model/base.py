"""The contract between the agent loop and any model backend.

The runner builds a ModelRequest holding the *whole* conversation, the tool catalog
and what is allowed this turn; a backend answers with a ModelResponse holding the raw
text, any tool calls it parsed natively, and token usage. Backends never decide what
a turn means: parsing fallbacks, validation and guards belong to the runner.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class ToolCall(BaseModel):
    """One call of a tool by name with JSON-like arguments."""

    model_config = ConfigDict(extra="forbid")

    id: str = ""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    parse_path: str | None = Field(
        default=None, description="How the call was recovered: native, functiongemma, json, ..."
    )


class Message(BaseModel):
    """One conversation message.

    ``assistant`` messages carry the calls the model made (``tool_calls``) and any text;
    ``tool`` messages carry one tool's response as JSON text in ``content`` with the
    tool ``name`` and the ``tool_call_id`` they answer.
    """

    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    name: str | None = None
    tool_call_id: str | None = None


class ToolSpec(BaseModel):
    """A tool as the model sees it: name, description and a JSON schema of its inputs."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}, "required": []}
    )


ToolChoice = Literal["auto", "required"] | str


class ModelRequest(BaseModel):
    """Everything a backend needs for one turn."""

    model_config = ConfigDict(extra="forbid")

    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    allowed_tools: list[str] | None = Field(
        default=None, description="Names the model may call this turn; None means all of tools."
    )
    tool_choice: ToolChoice = "required"
    temperature: float = 0.0
    max_tokens: int = 384
    choices: dict[str, list[Any]] = Field(
        default_factory=dict,
        description="Argument name -> allowed values, reported by the last tool results.",
    )
    conversation_id: str | None = Field(
        default=None, description="Stable per agent run, so a backend can reuse its KV cache."
    )
    adapter: str | None = Field(default=None, description="LoRA adapter path (llama.cpp).")
    samples: int = Field(
        default=1,
        ge=1,
        description="Answers wanted: the first at ``temperature``, the rest sampled at "
        "``sample_temperature`` (``ModelResponse.alternatives``).",
    )
    sample_temperature: float = Field(default=0.8, ge=0.0, le=2.0)
    model_id: str | None = Field(default=None, description="Model id (OpenAI-compatible).")

    def allowed_specs(self) -> list[ToolSpec]:
        """The tools the model may call this turn: ``allowed_tools`` (None: all of
        ``tools``), narrowed to the one a named ``tool_choice`` picks when it is among them.
        """
        specs = self.tools
        if self.allowed_tools is not None:
            allowed = set(self.allowed_tools)
            specs = [tool for tool in specs if tool.name in allowed]
        if self.tool_choice not in ("auto", "required"):
            named = [tool for tool in specs if tool.name == self.tool_choice]
            return named or list(specs)
        return list(specs)


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0


class ModelResponse(BaseModel):
    """What came back: text, natively parsed calls, why generation stopped, usage."""

    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    raw_text: str = ""
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    alternatives: list[ModelResponse] = Field(
        default_factory=list,
        description="The sampled answers beyond this one, when the request asked for samples "
        "and the backend produced them in the same call.",
    )


def sure_of(response: ModelResponse, samples: int) -> ModelResponse:
    """``response`` standing for all ``samples`` answers of a request, as a model sure of its
    answer samples it (a deterministic expert, a scripted double, greedy evaluation); usage
    is counted once."""
    if samples <= 1 or response.alternatives:
        return response
    same = response.model_copy(update={"usage": Usage()})
    return response.model_copy(update={"alternatives": [same] * (samples - 1)})


@runtime_checkable
class ModelClient(Protocol):
    """Any backend: llama.cpp in-process, an OpenAI-compatible server, a scripted double."""

    async def complete(self, request: ModelRequest) -> ModelResponse: ...

    async def aclose(self) -> None: ...
