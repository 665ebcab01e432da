"""The OpenAI-compatible backend: vLLM, llama.cpp's server, Ollama, or any such server.

Requests go through ``AsyncOpenAI`` chat completions with native tools; calls the server
parsed come back as ``tool_calls`` (parse path ``native``) and everything else stays in
the text for the runner's parsing chain, which also reads FunctionGemma tags. Servers
differ, so the backend adapts:

- only the tools allowed this turn are sent; a single required tool is requested by
  name, which servers without ``"required"`` support (llama-cpp-python's) honour;
- a server that rejects ``tool_choice: "required"`` is asked with ``"auto"`` from then
  on, and the runner's parsing chain picks the call out of the text;
- assistant messages carrying tool calls are sent with ``content: ""``, never null;
- the model id is per request (an operation's LoRA adapter name on vLLM) and is checked
  once against ``/models``, because some servers silently answer with another model;
- connection errors, timeouts, 429 and 5xx are retried with exponential backoff.

``timeout`` (``model.request_timeout``) is a wall-clock deadline for each attempt as a
whole: connecting, sending and reading the entire reply. The HTTP client's own timeouts
only bound each read, so a server trickling a byte a second would never hit them. With
``max_retries`` retries and ``backoff`` seconds, one request takes at most
``(max_retries + 1) * timeout + 1.5 * backoff * (2**max_retries - 1)`` seconds (defaults:
4 x 120 s + 5.25 s); the one-time ``/models`` check of a model id has the same bound.

llama-cpp-python's server has no FunctionGemma chat template for the base GGUF and
falls back to a generic chat format: with one allowed tool it constrains the JSON
arguments to the tool's schema and returns native calls; with several it answers in
text, which the runner's parsing chain reads (FunctionGemma tags, JSON, ...). vLLM with
its ``functiongemma`` tool parser and template returns native calls for any choice.

Error codes (stable): MODEL_030 the server cannot be reached (connection refused or
failed); MODEL_031 the model is not served; MODEL_032 the server kept failing (429, 5xx);
MODEL_033 the server rejected the request (bad request, authentication); MODEL_034 the
server's reply is not a chat completion or model list (invalid JSON, a web page, missing
fields): the server's fault, not the model's; MODEL_035 no attempt finished within
``model.request_timeout`` (a slow or stuck server).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Sequence
from typing import Any

import openai
from openai import AsyncOpenAI

from remora.errors import ModelError
from remora.model.base import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec, Usage

_NO_KEY = "not-needed"


class OpenAIBackend:
    """A ``ModelClient`` for an OpenAI-compatible chat completions endpoint."""

    def __init__(
        self,
        *,
        base_url: str,
        model_id: str,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        check_model: bool = True,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model_id = model_id
        self.max_retries = max(0, max_retries)
        self.backoff = backoff
        self.check_model = check_model
        self.timeout = timeout
        self._client = AsyncOpenAI(
            base_url=self.base_url, api_key=api_key or _NO_KEY, timeout=timeout, max_retries=0
        )
        self._required_supported = True
        self._served: list[str] | None = None
        self._checked: set[str] = set()
        self._rng = random.Random()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        model = request.model_id or self.model_id
        if self.check_model and model not in self._checked:
            await self._check_served(model)
        started = time.perf_counter()
        payload = self.payload(request, model)
        try:
            completion = await self._with_retries(payload)
        except openai.BadRequestError as exc:
            if payload.get("tool_choice") == "required" and _mentions_tool_choice(exc):
                self._required_supported = False
                payload["tool_choice"] = "auto"
                completion = await self._with_retries(payload)
            else:
                raise _rejected(exc, self.base_url) from None
        except (ValueError, openai.APIResponseValidationError) as exc:
            raise _garbled(self.base_url, exc) from None
        try:
            response = _response(completion)
        except (AttributeError, TypeError, ValueError, IndexError) as exc:
            raise _garbled(self.base_url, exc) from None
        response.latency_s = time.perf_counter() - started
        return response

    def payload(self, request: ModelRequest, model: str) -> dict[str, Any]:
        """The chat completions arguments for one request."""
        payload: dict[str, Any] = {
            "model": model,
            "messages": to_openai_messages(request.messages),
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        specs = request.allowed_specs()
        if specs:
            payload["tools"] = [_tool(spec) for spec in specs]
            payload["tool_choice"] = self._tool_choice(request.tool_choice, specs)
        return payload

    def _tool_choice(self, choice: str, specs: Sequence[ToolSpec]) -> Any:
        if choice == "auto":
            return "auto"
        if len(specs) == 1:
            return {"type": "function", "function": {"name": specs[0].name}}
        return "required" if self._required_supported else "auto"

    async def _with_retries(self, payload: dict[str, Any]) -> Any:
        attempt = 0
        while True:
            try:
                async with asyncio.timeout(self.timeout):
                    return await self._client.chat.completions.create(**payload)
            except openai.BadRequestError:
                raise
            except (openai.APITimeoutError, TimeoutError):
                if attempt >= self.max_retries:
                    raise self._timed_out("a chat completion", attempt + 1) from None
            except openai.APIConnectionError:
                if attempt >= self.max_retries:
                    raise _unreachable(self.base_url) from None
            except openai.NotFoundError as exc:
                raise await self._not_found(str(payload["model"]), exc) from None
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                raise ModelError(
                    "MODEL_033",
                    f"the model server at {self.base_url} rejected the credentials: "
                    f"{_message(exc)}",
                    "set the API key in the environment variable named by model.api_key_env",
                ) from None
            except openai.APIStatusError as exc:
                retryable = exc.status_code == 429 or exc.status_code >= 500
                if not retryable:
                    raise _rejected(exc, self.base_url) from None
                if attempt >= self.max_retries:
                    raise ModelError(
                        "MODEL_032",
                        f"the model server at {self.base_url} kept failing "
                        f"(HTTP {exc.status_code} after {attempt + 1} attempts): {_message(exc)}",
                        "check the server's log; it may be out of memory or overloaded",
                    ) from None
            await asyncio.sleep(self._delay(attempt))
            attempt += 1

    def _timed_out(self, what: str, attempts: int) -> ModelError:
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        return ModelError(
            "MODEL_035",
            f"the model server at {self.base_url} did not finish {what} within "
            f"{self.timeout:g} s ({tries})",
            f"raise model.request_timeout (now {self.timeout:g}) if the server is only slow, "
            "or check the server: it may be stuck or overloaded",
        )

    def _delay(self, attempt: int) -> float:
        base = self.backoff * (2**attempt)
        return float(base + self._rng.uniform(0, base / 2))

    async def served_models(self) -> list[str]:
        """Model ids the server lists (``/models``), retried and bounded like completions;
        a reply that is not a model list is MODEL_034, like a garbled completion."""
        attempt = 0
        while True:
            try:
                async with asyncio.timeout(self.timeout):
                    page = await self._client.models.list()
                return [str(model.id) for model in page.data]
            except (
                ValueError,
                TypeError,
                AttributeError,
                openai.APIResponseValidationError,
            ) as exc:
                raise _garbled(self.base_url, exc, "a model list") from None
            except (openai.APITimeoutError, TimeoutError):
                if attempt >= self.max_retries:
                    raise self._timed_out("listing its models", attempt + 1) from None
            except openai.APIConnectionError:
                if attempt >= self.max_retries:
                    raise _unreachable(self.base_url) from None
            except openai.APIStatusError as exc:
                if exc.status_code < 500 or attempt >= self.max_retries:
                    raise
            await asyncio.sleep(self._delay(attempt))
            attempt += 1

    async def _check_served(self, model: str) -> None:
        if self._served is None:
            try:
                self._served = await self.served_models()
            except openai.APIStatusError:
                self._served = []
        if self._served and model not in self._served:
            raise _not_served(model, self.base_url, self._served)
        self._checked.add(model)

    async def _not_found(self, model: str, exc: openai.NotFoundError) -> ModelError:
        try:
            served = await self.served_models()
        except (openai.APIError, ModelError):
            served = []
        if served and model not in served:
            return _not_served(model, self.base_url, served)
        return ModelError(
            "MODEL_031",
            f"the model server at {self.base_url} answered 404 for model {model!r}: "
            f"{_message(exc)}",
            "check model.base_url (it usually ends in /v1) and model.model_id",
        )

    async def aclose(self) -> None:
        await self._client.close()


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages as chat completions messages, with stable ids linking calls and results.

    Calls without an id get ``call_<turn>_<n>``; a tool message without ``tool_call_id``
    answers the next unanswered call of the latest assistant turn.
    """
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for index, message in enumerate(messages):
        if message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
            if message.tool_calls:
                ids = [call.id or f"call_{index}_{n}" for n, call in enumerate(message.tool_calls)]
                entry["tool_calls"] = [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": json.dumps(call.arguments, ensure_ascii=False),
                        },
                    }
                    for call_id, call in zip(ids, message.tool_calls, strict=True)
                ]
                pending = ids
            out.append(entry)
        elif message.role == "tool":
            call_id = message.tool_call_id
            if call_id in pending:
                pending.remove(call_id)
            elif call_id is None:
                call_id = pending.pop(0) if pending else f"call_{index}"
            out.append({"role": "tool", "tool_call_id": call_id, "content": message.content})
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def _garbled(base_url: str, exc: Exception, expected: str = "a chat completion") -> ModelError:
    what = " ".join(str(exc).split())[:200] or type(exc).__name__
    return ModelError(
        "MODEL_034",
        f"the model server at {base_url} sent a reply that is not {expected} ({what})",
        "check that model.base_url is an OpenAI-compatible endpoint (it usually ends in /v1), "
        "not a web page or a proxy's error page",
    )


def _response(completion: Any) -> ModelResponse:
    if not completion.choices:
        raise ValueError("no choices in the reply")
    choice = completion.choices[0]
    message = choice.message if choice is not None else None
    content = (message.content if message is not None else None) or ""
    calls: list[ToolCall] = []
    leftovers: list[str] = []
    for raw in (message.tool_calls if message is not None else None) or []:
        function = getattr(raw, "function", None)
        if function is None:
            continue
        arguments = _arguments(function.arguments)
        if arguments is None:
            leftovers.append(json.dumps({"name": function.name, "arguments": function.arguments}))
            continue
        calls.append(
            ToolCall(id=raw.id or "", name=function.name, arguments=arguments, parse_path="native")
        )
    usage = completion.usage
    cached = 0
    details = getattr(usage, "prompt_tokens_details", None) if usage is not None else None
    if details is not None and getattr(details, "cached_tokens", None):
        cached = int(details.cached_tokens)
    raw_text = "\n".join(part for part in (content, *leftovers) if part)
    return ModelResponse(
        content=content,
        tool_calls=calls,
        raw_text=raw_text,
        finish_reason=choice.finish_reason if choice is not None else None,
        usage=Usage(
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cached_prompt_tokens=cached,
        ),
    )


def _arguments(text: str | None) -> dict[str, Any] | None:
    """Arguments of a native call; None when the server sent something that is not an object."""
    if not text or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _message(exc: openai.APIError) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return str(getattr(exc, "message", exc))


def _mentions_tool_choice(exc: openai.APIError) -> bool:
    text = (_message(exc) + " " + str(getattr(exc, "body", ""))).lower()
    return "tool_choice" in text or "required" in text


def _unreachable(base_url: str) -> ModelError:
    return ModelError(
        "MODEL_030",
        f"cannot reach the model server at {base_url}",
        "start the server (vLLM, llama.cpp server or Ollama) or fix model.base_url",
    )


def _not_served(model: str, base_url: str, served: Sequence[str]) -> ModelError:
    listed = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "")
    return ModelError(
        "MODEL_031",
        f"model {model!r} is not served by {base_url} (it serves: {listed})",
        "set model.model_id (or operations.<name>.model_id) to a served model, "
        "or load the model/adapter on the server",
    )


def _rejected(exc: openai.APIStatusError, base_url: str) -> ModelError:
    return ModelError(
        "MODEL_033",
        f"the model server at {base_url} rejected the request "
        f"(HTTP {exc.status_code}): {_message(exc)}",
        "check the server's supported features (tools, tool_choice) and its log",
    )
