"""ScriptTool: what the tool runtime needs to run one tool, and nothing about agents.

Agent definitions (a layer above) extend it with the description and effect the model and
the runner use; the runtime only ever sees this, so ``tools`` never imports ``definitions``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ScriptTool(BaseModel):
    """A named ``.pym`` script with its input-schema overrides and context providers."""

    model_config = ConfigDict(extra="forbid")

    name: str
    pym: Path
    inputs_override: dict[str, Any] = Field(default_factory=dict)
    context_providers: list[Path] = Field(default_factory=list)
