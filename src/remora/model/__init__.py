"""Model backends behind one protocol."""

from remora.model.base import (
    Message,
    ModelClient,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = [
    "Message",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "ToolCall",
    "ToolSpec",
    "Usage",
]
