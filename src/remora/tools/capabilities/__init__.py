"""Host capabilities: the plain-Python functions .pym tools call, bound to one job's workspace.

Importing this package registers every capability in :data:`CAPABILITIES`. Paths are
always relative to the workspace root and checked (WS_001 for absolute, ``..``-escaping
or symlink-escaping paths); failures raise :class:`~remora.errors.ToolError` with a
message a small model can act on.
"""

from __future__ import annotations

from remora.tools.capabilities import (
    call,
    characterization,
    docstring_check,
    docstrings,
    files,
    fixtures,
    inputs,
    lint,
    pytest_runner,
    ruff,
    signature,
)
from remora.tools.capabilities._registry import (
    CAPABILITIES,
    Capability,
    CapabilityContext,
    bind_capabilities,
    capability,
)

__all__ = [
    "CAPABILITIES",
    "Capability",
    "CapabilityContext",
    "bind_capabilities",
    "call",
    "capability",
    "characterization",
    "docstring_check",
    "docstrings",
    "files",
    "fixtures",
    "inputs",
    "lint",
    "pytest_runner",
    "ruff",
    "signature",
]
