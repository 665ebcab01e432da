"""The adapters Remora ships: each one an agent declares loads in llama.cpp on the
embedded model, changes what it writes, stays within 10 MB and has its model card."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.model.base import Message, ModelRequest
from remora.model.llama_cpp import LlamaCppBackend
from remora.operations import load_agents

MAX_BYTES = 10 * 1024 * 1024
PROMPTS = (
    "Write a one-line summary of: def area(width, height): return width * height",
    "Count: one two three",
)


@pytest.mark.model
def test_every_bundled_adapter_loads_changes_the_output_and_has_a_card(
    embedded_llama: LlamaCppBackend,
) -> None:
    adapters = {a.model for a in load_agents().values() if a.model is not None}
    assert adapters, "the bundled agents ship at least one adapter"
    backend = LlamaCppBackend(embedded_llama.model_path, context_size=512, sequences=1)

    def answers(adapter: Path | None) -> list[str]:
        return [
            backend.generate(
                ModelRequest(
                    messages=[Message(role="user", content=prompt)],
                    max_tokens=16,
                    adapter=str(adapter) if adapter else None,
                )
            ).text
            for prompt in PROMPTS
        ]

    try:
        base = answers(None)
        for adapter in sorted(adapters):
            assert adapter.stat().st_size <= MAX_BYTES
            card = adapter.with_suffix(".md").read_text(encoding="utf-8")
            assert "## Training" in card and "minutes of training" in card
            assert answers(adapter) != base, f"{adapter.name} changes nothing"
    finally:
        backend.close()
