"""LoopSettings: the knobs of one agent run, resolved from RunnerConfig and ModelConfig."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from remora.config import ModelConfig, RunnerConfig, ToolsConfig
from remora.errors import RunnerError
from remora.runner.history import DEFAULT_MAX_RESULT_CHARS


@dataclass(frozen=True)
class LoopSettings:
    """Turn limit, sampling, guard thresholds and the context budget for one run.

    ``max_turns`` counts ordinary turns; when they are used up one more turn allows only
    ``submit_result`` (retried at most ``max_requeries`` times), so a run always ends
    with a structured result.
    """

    max_turns: int = 8
    temperature: float = 0.0
    tool_choice: Literal["auto", "required"] = "required"
    read_only_nudge_after: int = 2
    read_only_force_after: int = 3
    max_repeats: int = 2
    max_requeries: int = 2
    job_timeout: float = 600.0
    context_size: int = 8192
    max_tokens: int = 384
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
    candidates: int = 1
    candidate_temperature: float = 0.8

    def __post_init__(self) -> None:
        minimums = {
            "max_turns": 1,
            "read_only_nudge_after": 1,
            "read_only_force_after": 1,
            "max_repeats": 1,
            "max_requeries": 0,
            "context_size": 1,
            "max_tokens": 1,
            "max_result_chars": 100,
            "candidates": 1,
        }
        for field in fields(self):
            minimum = minimums.get(field.name)
            if minimum is not None and getattr(self, field.name) < minimum:
                raise RunnerError(
                    "RUN_001",
                    f"runner setting {field.name} must be at least {minimum}",
                    f"got {getattr(self, field.name)}",
                )
        if self.job_timeout <= 0:
            raise RunnerError("RUN_001", "runner setting job_timeout must be positive", None)
        if self.max_tokens >= self.context_size:
            raise RunnerError(
                "RUN_001",
                f"max_tokens ({self.max_tokens}) leaves no room in a context of "
                f"{self.context_size} tokens",
                "raise model.context_size or lower model.max_tokens",
            )

    @property
    def prompt_budget(self) -> int:
        """Tokens the prompt may use: the context minus room for the answer."""
        return self.context_size - self.max_tokens

    @classmethod
    def from_config(
        cls,
        runner: RunnerConfig,
        model: ModelConfig,
        *,
        agent_max_turns: int,
        tools: ToolsConfig | None = None,
    ) -> LoopSettings:
        """Settings for one agent: ``runner.max_turns`` overrides the agent's own limit."""
        return cls(
            max_turns=runner.max_turns if runner.max_turns is not None else agent_max_turns,
            temperature=runner.temperature,
            tool_choice=runner.tool_choice,
            read_only_nudge_after=runner.read_only_nudge_after,
            read_only_force_after=runner.read_only_force_after,
            max_repeats=runner.max_repeats,
            max_requeries=runner.max_requeries,
            job_timeout=runner.job_timeout,
            context_size=model.context_size,
            max_tokens=model.max_tokens,
            max_result_chars=(tools or ToolsConfig()).max_result_chars,
            candidates=runner.candidates,
            candidate_temperature=runner.candidate_temperature,
        )
