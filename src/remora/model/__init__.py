"""Model backends behind one protocol.

``create_client(config)`` builds the configured backend: llama.cpp in-process
(``LlamaCppBackend``, the default, on the embedded Gemma 3 270M) or an OpenAI-compatible
server (``OpenAIBackend``). Prompts use FunctionGemma's format
(``remora.model.functiongemma``) and calls are constrained by GBNF grammars
(``remora.model.grammar``). Backends are imported lazily so that importing this package
needs neither llama-cpp-python nor openai.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from remora.model.base import (
    Message,
    ModelClient,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
    Usage,
)
from remora.model.factory import create_client

if TYPE_CHECKING:
    from remora.model.llama_cpp import LlamaCppBackend
    from remora.model.openai_http import OpenAIBackend

__all__ = [
    "LlamaCppBackend",
    "Message",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "OpenAIBackend",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "create_client",
]


def __getattr__(name: str) -> Any:
    if name == "LlamaCppBackend":
        from remora.model.llama_cpp import LlamaCppBackend

        return LlamaCppBackend
    if name == "OpenAIBackend":
        from remora.model.openai_http import OpenAIBackend

        return OpenAIBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
