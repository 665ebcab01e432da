"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from remora.config import ModelConfig
from remora.model.defaults import resolve_model_path
from remora.model.llama_cpp import LlamaCppBackend

# Packages the tests run tools on; their own tests are data, not part of this suite.
collect_ignore = ["data"]


@pytest.fixture(scope="session")
def embedded_llama() -> Iterator[LlamaCppBackend]:
    """The embedded default model (assembled into the user cache on first use), loaded once."""
    backend = LlamaCppBackend(resolve_model_path(ModelConfig()), context_size=4096)
    backend.load()
    yield backend
    backend.close()
