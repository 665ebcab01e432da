"""The agent loop and its parts: parsing, validation, guards, history, result contract."""

from remora.contracts import SUBMIT_TOOL, Effect
from remora.runner.catalog import LoopTool, ToolCatalog, ToolInvoker
from remora.runner.loop import AgentLoop, run_agent
from remora.runner.parsing import (
    ParseResult,
    parse_functiongemma_arguments,
    parse_functiongemma_calls,
    parse_response,
    parse_text,
)
from remora.runner.result import AgentResult, AgentStatus, AgentTelemetry, TimelineEntry
from remora.runner.settings import LoopSettings

__all__ = [
    "SUBMIT_TOOL",
    "AgentLoop",
    "AgentResult",
    "AgentStatus",
    "AgentTelemetry",
    "Effect",
    "LoopSettings",
    "LoopTool",
    "ParseResult",
    "TimelineEntry",
    "ToolCatalog",
    "ToolInvoker",
    "parse_functiongemma_arguments",
    "parse_functiongemma_calls",
    "parse_response",
    "parse_text",
    "run_agent",
]
