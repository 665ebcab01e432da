"""Host capabilities: the plain-Python functions .pym tools call, bound to one job's workspace.

This package is the generic toolkit every agent may use (files, ruff, pytest, signatures,
calling a function) and the machinery to define more (:func:`capability`,
:func:`capabilities_of`); an operation's own capabilities live with the operation
(``remora.operations``). Paths are always relative to the workspace root and checked
(WS_001 for absolute, ``..``-escaping or symlink-escaping paths); failures raise
:class:`~remora.errors.ToolError` with a message a small model can act on.
"""

from __future__ import annotations

from remora.tools.capabilities import call, files, pytest_runner, ruff, signature
from remora.tools.capabilities.registry import (
    Capability,
    CapabilityContext,
    bind_capabilities,
    capabilities_of,
    capability,
    merge_capabilities,
)

TOOLKIT = capabilities_of(call, files, pytest_runner, ruff, signature)
"""The generic capabilities, offered to every agent."""

__all__ = [
    "TOOLKIT",
    "Capability",
    "CapabilityContext",
    "bind_capabilities",
    "capabilities_of",
    "capability",
    "merge_capabilities",
]
