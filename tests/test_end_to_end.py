"""End to end on the real embedded model: CLI → harness → agent loop → sandbox → llama.cpp."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

SAMPLE = Path(__file__).parent.parent / "examples" / "sample_project"


@pytest.mark.model
def test_harness_command_on_the_embedded_model(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(
        ["harness", str(SAMPLE / "inventory" / "pricing.py"), "-n", "2", "--format", "json"],
        capsys,
    )
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["backend"] == "llama_cpp"
    stats = report["variants"][0]
    assert stats["episodes"] == 2
    assert stats["valid_call_rate"] == 1.0, "the grammar must make every call valid"
    assert stats["tool_call_rate"] == 1.0
    for episode in report["episodes"]:
        assert episode["status"] == "success", episode
        assert episode["prompt_tokens"] > episode["cached_prompt_tokens"] > 0
        assert episode["completion_tokens"] > 0
