"""Errors a user can cause, each with a stable code, a message and a hint.

The CLI prints them as ``CODE: message (hint)`` and exits non-zero without a
traceback. Codes are part of the public contract: tests and scripts match on
them, so an existing code never changes meaning.
"""

from __future__ import annotations


class RemoraError(Exception):
    """Base of every error Remora raises on purpose."""

    prefix = "REMORA"
    exit_code = 1

    def __init__(self, code: str, message: str, hint: str | None = None) -> None:
        if not code.startswith(self.prefix + "_"):
            raise ValueError(f"{type(self).__name__} codes start with {self.prefix}_, got {code}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint

    def render(self) -> str:
        """The one-line form shown to users: ``CODE: message (hint)``."""
        text = f"{self.code}: {self.message}"
        return f"{text} ({self.hint})" if self.hint else text

    def __str__(self) -> str:
        return self.render()


class ConfigError(RemoraError):
    """A configuration file, environment variable or flag is invalid.

    CONFIG_001 unreadable file, CONFIG_002 malformed YAML/TOML, CONFIG_003 invalid
    value, CONFIG_004 bad ``--set`` or environment syntax, CONFIG_005 unknown key.
    """

    prefix = "CONFIG"
    exit_code = 2


class DiscoveryError(RemoraError):
    """A target path cannot be discovered at all (per-file problems are reported, not raised).

    DISC_001 path does not exist, DISC_002 not a Python file or directory, DISC_003 query
    pack missing or invalid.
    """

    prefix = "DISC"
    exit_code = 2


class AgentDefinitionError(RemoraError):
    """A subagent YAML file or one of its .pym scripts is invalid (AGENT_xxx)."""

    prefix = "AGENT"


class ToolError(RemoraError):
    """A tool or host capability failed in a way the caller must handle (TOOL_xxx)."""

    prefix = "TOOL"


class WorkspaceError(RemoraError):
    """A workspace operation failed: unknown id, conflict, bad path (WS_xxx)."""

    prefix = "WS"


class ModelError(RemoraError):
    """A model backend cannot serve requests: missing GGUF, server down (MODEL_xxx)."""

    prefix = "MODEL"


class RunnerError(RemoraError):
    """The agent loop cannot start or continue (RUN_xxx)."""

    prefix = "RUN"
