"""The lint operation's options: one model, the one source of their defaults (capabilities
read them through ``ctx.options(LintOptions)``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class LintOptions(BaseModel):
    """``operations.lint.options``."""

    model_config = ConfigDict(extra="forbid")

    select: list[str] | str | None = None  # None: rules.DEFAULT_RULES
    unsafe_fixes: bool = True
    # The embedded model's rewrites of the residue are refused by the checks (measured on
    # nine packages as published with remora eval --as-published, docs/evaluation.md: none
    # kept), so by default the residue is left for the person; a larger model on a server
    # may be asked.
    use_model: bool = False
