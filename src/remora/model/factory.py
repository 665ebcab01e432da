"""Build the configured ``ModelClient``: one per run, shared by every agent.

The llama.cpp backend holds one loaded model and schedules all agents' requests on it,
so callers must build a client once and pass it around rather than build one per agent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from remora.config import ModelConfig
from remora.errors import ModelError
from remora.model.base import ModelClient
from remora.model.defaults import resolve_model_path


def create_client(config: ModelConfig, environ: Mapping[str, str] | None = None) -> ModelClient:
    """The backend ``config`` asks for; the model file is resolved (and assembled) now.

    Raises ``ModelError`` for problems the user can fix (missing GGUF, missing package).
    The llama.cpp model itself loads lazily, on the first request or ``load()``.
    """
    env = os.environ if environ is None else environ
    if config.backend == "llama_cpp":
        path = resolve_model_path(config, env)
        try:
            from remora.model.llama_cpp import LlamaCppBackend
        except ImportError as exc:
            raise ModelError(
                "MODEL_023",
                f"the llama.cpp backend cannot be imported ({exc})",
                "pip install llama-cpp-python, or use model.backend: openai",
            ) from None
        return LlamaCppBackend(
            path,
            context_size=config.context_size,
            threads=config.threads,
            lanes=config.lanes,
            batch_size=config.batch_size,
            extra_buffers=config.extra_buffers,
            grammar=config.grammar,
            jump_forward=config.jump_forward,
            use_adapters=config.use_adapters,
        )
    from remora.model.openai_http import OpenAIBackend

    return OpenAIBackend(
        base_url=config.base_url,
        model_id=config.model_id,
        api_key=env.get(config.api_key_env) or None,
        timeout=config.request_timeout,
        max_retries=config.max_retries,
        mode=config.openai_mode,
        server_grammar=config.server_grammar,
        grammar=config.grammar,
    )


def describe_backend(config: ModelConfig) -> str:
    """The backend as reports name it, saying which OpenAI mode runs: ``llama_cpp``,
    ``openai (completions + llama_cpp grammar)``, ``openai (chat + native tools)``, ..."""
    if config.backend == "llama_cpp":
        return "llama_cpp"
    from remora.model.openai_http import describe_mode

    return describe_mode(config.openai_mode, config.server_grammar, config.grammar)
