"""The agent loop and its parts: parsing, validation, guards, history, result contract."""

from remora.contracts import SUBMIT_TOOL, Effect
from remora.runner.catalog import LoopTool, ToolCatalog, ToolInvoker
from remora.runner.loop import AgentLoop, run_agent
from remora.runner.observers import (
    EventObserver,
    LoopObserver,
    TelemetryRecorder,
    TranscriptObserver,
    watching,
)
from remora.runner.parsing import (
    ParseResult,
    parse_functiongemma_arguments,
    parse_functiongemma_calls,
    parse_response,
    parse_text,
)
from remora.runner.result import AgentResult, AgentStatus, AgentTelemetry, TimelineEntry
from remora.runner.run import AgentRun
from remora.runner.settings import LoopSettings

__all__ = [
    "SUBMIT_TOOL",
    "AgentLoop",
    "AgentResult",
    "AgentRun",
    "AgentStatus",
    "AgentTelemetry",
    "Effect",
    "EventObserver",
    "LoopObserver",
    "LoopSettings",
    "LoopTool",
    "ParseResult",
    "TelemetryRecorder",
    "TimelineEntry",
    "ToolCatalog",
    "ToolInvoker",
    "TranscriptObserver",
    "parse_functiongemma_arguments",
    "parse_functiongemma_calls",
    "parse_response",
    "parse_text",
    "run_agent",
    "watching",
]
