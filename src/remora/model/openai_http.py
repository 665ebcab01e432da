"""The OpenAI-compatible backend: vLLM, llama.cpp's server, Ollama, or any such server.

Two modes (``model.openai_mode``):

- ``completions`` (the default): the prompt is Remora's own FunctionGemma rendering, the
  very text the in-process backend completes, sent to ``/completions`` with the call
  grammar in the server's own grammar parameter (``model.server_grammar``: ``grammar``
  for llama.cpp's servers, ``structured_outputs.grammar`` for vLLM 0.11+,
  ``guided_grammar`` for older vLLM), the same stop sequences, the same token budget and
  greedy sampling without the server's repeat penalty. The reply is text, parsed by the
  runner exactly like the in-process backend's, so a server gives the calls the embedded
  backend gives. The leading ``<bos>`` of the rendering is left to the server, which adds
  it itself (sending it too would double it).
- ``chat``: chat completions with native tools, for servers that offer nothing else.
  Calls the server parsed come back as ``tool_calls`` (parse path ``native``) and
  everything else stays in the text for the runner's parsing chain. Servers differ, so
  the backend adapts: only the tools allowed this turn are sent; a single required tool
  is requested by name, which servers without ``"required"`` support (llama-cpp-python's)
  honour; a server that rejects ``tool_choice: "required"`` is asked with ``"auto"`` from
  then on; assistant messages carrying tool calls are sent with ``content: ""``, never
  null. llama-cpp-python's server has no FunctionGemma chat template for the base GGUF
  and falls back to a generic chat format: with one allowed tool it constrains the JSON
  arguments to the tool's schema and returns native calls; with several it answers in
  text, which the runner's parsing chain reads (FunctionGemma tags, JSON, ...). vLLM
  with its ``functiongemma`` tool parser and template returns native calls.

In both modes the model id is per request (an operation's LoRA adapter name on vLLM,
served with ``--lora-modules name=path``) and is checked once against ``/models``,
because some servers silently answer with another model.

``timeout`` (``model.request_timeout``) is a wall-clock deadline for each attempt as a
whole: connecting, sending and reading the entire reply. The HTTP client's own timeouts
only bound each read, so a server trickling a byte a second would never hit them.
Connection errors, 429 and 5xx are retried ``max_retries`` times with exponential
backoff; an attempt that timed out is retried at most once, because a server that let
one attempt run out its deadline is stuck or far too slow, and waiting for it again and
again only delays the error. So a server that never answers fails a request within
``2 * timeout + 1.5 * backoff`` seconds (defaults: 2 x 120 s + 0.75 s), and any request
ends within ``(max_retries + 1) * timeout + 1.5 * backoff * (2**max_retries - 1)``
seconds; the one-time ``/models`` check of a model id has the same bounds.

Error codes (stable): MODEL_030 the server cannot be reached (connection refused or
failed); MODEL_031 the model is not served; MODEL_032 the server kept failing (429, 5xx);
MODEL_033 the server rejected the request (bad request, authentication); MODEL_034 the
server's reply is not a completion, chat completion or model list (invalid JSON, a web
page, missing fields): the server's fault, not the model's; MODEL_035 no attempt finished
within ``model.request_timeout`` (a slow or stuck server); MODEL_036 the server has no
completions endpoint (``model.openai_mode: chat`` is for such servers).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar

import openai
from openai import AsyncOpenAI

from remora.errors import ModelError
from remora.model.base import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec, Usage
from remora.model.functiongemma import (
    BOS,
    END_CALL,
    START_CALL,
    STOP_SEQUENCES,
    neutralize,
    render_request,
)
from remora.model.grammar import CallGrammar, build_call_grammar

OpenAIMode = Literal["completions", "chat"]
ServerGrammar = Literal["llama_cpp", "vllm", "vllm_guided", "none"]

TIMEOUT_RETRIES = 1
"""Retries after an attempt that timed out (fewer when ``max_retries`` is lower)."""

_NO_KEY = "not-needed"
_STANDARD_FIELDS = frozenset({"model", "prompt", "max_tokens", "temperature", "top_p", "stop"})
"""Completions fields the openai client knows; the rest goes in its ``extra_body``."""
_T = TypeVar("_T")


def describe_mode(mode: OpenAIMode, server_grammar: ServerGrammar, grammar: bool = True) -> str:
    """How requests go to the server, for reports: e.g. ``openai (completions + llama_cpp
    grammar)``, ``openai (completions, no grammar)`` or ``openai (chat + native tools)``."""
    if mode == "chat":
        return "openai (chat + native tools)"
    if not grammar or server_grammar == "none":
        return "openai (completions, no grammar)"
    return f"openai (completions + {server_grammar} grammar)"


def completion_prompt(request: ModelRequest) -> str:
    """The text the server completes: the in-process backend's rendering, less the leading
    ``<bos>`` that llama.cpp's servers and vLLM add to every prompt themselves."""
    text = render_request(request)
    return text.removeprefix(BOS)


class OpenAIBackend:
    """A ``ModelClient`` for an OpenAI-compatible server, in completions or chat mode.

    ``mode`` defaults to ``chat`` for direct use; ``create_client`` passes
    ``model.openai_mode`` (default ``completions``).
    """

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
        mode: OpenAIMode = "chat",
        server_grammar: ServerGrammar = "llama_cpp",
        grammar: bool = True,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model_id = model_id
        self.max_retries = max(0, max_retries)
        self.backoff = backoff
        self.check_model = check_model
        self.timeout = timeout
        self.mode: OpenAIMode = mode
        self.server_grammar: ServerGrammar = server_grammar
        self.grammar = grammar
        self._client = AsyncOpenAI(
            base_url=self.base_url, api_key=api_key or _NO_KEY, timeout=timeout, max_retries=0
        )
        self._required_supported = True
        self._served: list[str] | None = None
        self._checked: set[str] = set()
        self._rng = random.Random()

    @property
    def label(self) -> str:
        """Which mode runs, as reports name the backend."""
        return describe_mode(self.mode, self.server_grammar, self.grammar)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        model = request.model_id or self.model_id
        if self.check_model and model not in self._checked:
            await self._check_served(model)
        started = time.perf_counter()
        if self.mode == "completions":
            response = await self._complete_text(request, model)
        else:
            response = await self._complete_chat(request, model)
        response.latency_s = time.perf_counter() - started
        return response

    # completions mode -----------------------------------------------------------------

    def call_grammar(self, request: ModelRequest) -> tuple[CallGrammar | None, bool]:
        """The grammar sent with this turn (None: unconstrained) and whether a call is
        required: the in-process backend's choice, unless no grammar goes to the server."""
        specs = request.allowed_specs()
        required = request.tool_choice != "auto" and bool(specs)
        if not specs or not self.grammar or self.server_grammar == "none":
            return None, required
        return build_call_grammar(specs, request.choices, optional_call=not required), required

    def completion_payload(self, request: ModelRequest, model: str) -> dict[str, Any]:
        """The completions request for one turn.

        The budget is the in-process one: ``max_tokens``, extended once by as much again
        when a call is cut. A required call under the grammar is always extended there,
        so it is asked for in one go here; otherwise :meth:`_complete_text` asks again.
        Sampling is plain greedy (or temperature over the 64 best tokens) as in-process,
        so the server's repeat penalty, top-p and min-p are turned off where it has them.
        """
        grammar, required = self.call_grammar(request)
        budget = request.max_tokens * (2 if grammar is not None and required else 1)
        payload: dict[str, Any] = {
            "model": model,
            "prompt": completion_prompt(request),
            "max_tokens": budget,
            "temperature": request.temperature,
            "top_p": 1.0,
            "stop": list(STOP_SEQUENCES),
        }
        flavour = self.server_grammar
        if flavour == "llama_cpp":
            payload |= {"top_k": 64, "min_p": 0.0, "repeat_penalty": 1.0}
        elif flavour in ("vllm", "vllm_guided"):
            # vLLM drops special tokens from the text unless told; a GGUF or checkpoint
            # whose call tags are special tokens would lose them.
            payload |= {
                "top_k": 64,
                "min_p": 0.0,
                "skip_special_tokens": False,
                "spaces_between_special_tokens": False,
            }
        if grammar is not None:
            if flavour == "llama_cpp":
                payload["grammar"] = grammar.gbnf
            elif flavour == "vllm":
                payload["structured_outputs"] = {"grammar": grammar.gbnf}
            elif flavour == "vllm_guided":
                payload["guided_grammar"] = grammar.gbnf
        return payload

    async def _complete_text(self, request: ModelRequest, model: str) -> ModelResponse:
        payload = self.completion_payload(request, model)
        response = await self._text_completion(payload)
        if (
            response.finish_reason == "length"
            and payload["max_tokens"] == request.max_tokens
            and _open_call(response.raw_text)
        ):
            # The in-process backend extends a call cut by max_tokens once; a completion
            # cannot be resumed under a grammar, so the turn is asked again with the
            # extended budget (greedy decoding repeats the same text up to the cut).
            first = response.usage
            response = await self._text_completion(
                {**payload, "max_tokens": 2 * request.max_tokens}
            )
            response.usage = Usage(
                prompt_tokens=first.prompt_tokens + response.usage.prompt_tokens,
                completion_tokens=first.completion_tokens + response.usage.completion_tokens,
                cached_prompt_tokens=(
                    first.cached_prompt_tokens + response.usage.cached_prompt_tokens
                ),
            )
        return response

    async def _text_completion(self, payload: dict[str, Any]) -> ModelResponse:
        standard = {key: value for key, value in payload.items() if key in _STANDARD_FIELDS}
        extra = {key: value for key, value in payload.items() if key not in _STANDARD_FIELDS}
        try:
            completion = await self._with_retries(
                lambda: self._client.completions.create(**standard, extra_body=extra or None),
                "a completion",
                str(payload["model"]),
            )
        except openai.BadRequestError as exc:
            raise _rejected(exc, self.base_url) from None
        except (ValueError, openai.APIResponseValidationError) as exc:
            raise _garbled(self.base_url, exc, "a completion") from None
        try:
            return _text_response(completion)
        except (AttributeError, TypeError, ValueError, IndexError) as exc:
            raise _garbled(self.base_url, exc, "a completion") from None

    # chat mode ------------------------------------------------------------------------

    async def _complete_chat(self, request: ModelRequest, model: str) -> ModelResponse:
        payload = self.payload(request, model)
        try:
            completion = await self._chat(payload)
        except openai.BadRequestError as exc:
            if payload.get("tool_choice") == "required" and _mentions_tool_choice(exc):
                self._required_supported = False
                payload["tool_choice"] = "auto"
                completion = await self._chat(payload)
            else:
                raise _rejected(exc, self.base_url) from None
        except (ValueError, openai.APIResponseValidationError) as exc:
            raise _garbled(self.base_url, exc) from None
        try:
            return _response(completion)
        except (AttributeError, TypeError, ValueError, IndexError) as exc:
            raise _garbled(self.base_url, exc) from None

    async def _chat(self, payload: dict[str, Any]) -> Any:
        return await self._with_retries(
            lambda: self._client.chat.completions.create(**payload),
            "a chat completion",
            str(payload["model"]),
        )

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

    # retries --------------------------------------------------------------------------

    def _gives_up(self, attempt: int, timeouts: int) -> bool:
        """Whether the failed ``attempt`` (0-based) was the last; ``timeouts`` counts the
        attempts that timed out so far, including this one."""
        return attempt >= self.max_retries or timeouts > TIMEOUT_RETRIES

    async def _with_retries(self, send: Callable[[], Awaitable[_T]], what: str, model: str) -> _T:
        attempt = timeouts = 0
        while True:
            try:
                async with asyncio.timeout(self.timeout):
                    return await send()
            except openai.BadRequestError:
                raise
            except (openai.APITimeoutError, TimeoutError):
                timeouts += 1
                if self._gives_up(attempt, timeouts):
                    raise self._timed_out(what, attempt + 1) from None
            except openai.APIConnectionError:
                if self._gives_up(attempt, timeouts):
                    raise _unreachable(self.base_url) from None
            except openai.NotFoundError as exc:
                raise await self._not_found(model, exc) from None
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
                if self._gives_up(attempt, timeouts):
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
        attempt = timeouts = 0
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
                timeouts += 1
                if self._gives_up(attempt, timeouts):
                    raise self._timed_out("listing its models", attempt + 1) from None
            except openai.APIConnectionError:
                if self._gives_up(attempt, timeouts):
                    raise _unreachable(self.base_url) from None
            except openai.APIStatusError as exc:
                if exc.status_code < 500 or self._gives_up(attempt, timeouts):
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
        if self.mode == "completions":
            return ModelError(
                "MODEL_036",
                f"the model server at {self.base_url} has no completions endpoint "
                f"(404 for model {model!r}: {_message(exc)})",
                "set model.openai_mode: chat for a server that offers only chat completions, "
                "or check model.base_url (it usually ends in /v1)",
            )
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
    answers the next unanswered call of the latest assistant turn. Control tags in the
    contents and arguments are neutralized: the server's chat template would otherwise
    read them as its own.
    """
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for index, message in enumerate(messages):
        if message.role == "assistant":
            entry: dict[str, Any] = {
                "role": "assistant",
                "content": neutralize(message.content or ""),
            }
            if message.tool_calls:
                ids = [call.id or f"call_{index}_{n}" for n, call in enumerate(message.tool_calls)]
                entry["tool_calls"] = [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": neutralize(json.dumps(call.arguments, ensure_ascii=False)),
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
            out.append(
                {"role": "tool", "tool_call_id": call_id, "content": neutralize(message.content)}
            )
        else:
            out.append({"role": message.role, "content": neutralize(message.content)})
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
    raw_text = "\n".join(part for part in (content, *leftovers) if part)
    return ModelResponse(
        content=content,
        tool_calls=calls,
        raw_text=raw_text,
        finish_reason=choice.finish_reason if choice is not None else None,
        usage=_usage(completion.usage),
    )


def _text_response(completion: Any) -> ModelResponse:
    """A completion as the in-process backend answers: the text as content and raw text,
    no native calls (the runner parses the FunctionGemma call out of the text)."""
    if not completion.choices:
        raise ValueError("no choices in the reply")
    choice = completion.choices[0]
    text = getattr(choice, "text", None)
    if not isinstance(text, str):
        raise ValueError("the first choice has no text")
    reason = getattr(choice, "finish_reason", None)
    return ModelResponse(
        content=text,
        raw_text=text,
        finish_reason=reason if isinstance(reason, str) else None,
        usage=_usage(completion.usage),
    )


def _usage(usage: Any) -> Usage:
    cached = 0
    details = getattr(usage, "prompt_tokens_details", None) if usage is not None else None
    if details is not None and getattr(details, "cached_tokens", None):
        cached = int(details.cached_tokens)
    return Usage(
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cached_prompt_tokens=cached,
    )


def _open_call(text: str) -> bool:
    """Whether ``text`` stops inside a FunctionGemma call."""
    start = text.rfind(START_CALL)
    return start >= 0 and END_CALL not in text[start:]


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
