"""Run tool-script bodies in pydantic-monty, with limits, captured prints and clear failures.

One :class:`Sandbox` owns a long-lived pool of Monty worker processes (``tools.workers``
of them, started on first use). Each run checks a worker out for a fresh session, binds
the inputs as globals and the capabilities as host functions, and returns a
:class:`SandboxRun`: the value of the script's last expression, or a
:class:`SandboxFailure` whose message a model can act on. Nothing a script does raises
out of :meth:`Sandbox.run`.

Limits come from :class:`~remora.config.ToolsConfig`: ``timeout`` bounds the time the
script itself executes, ``max_memory_mb`` its heap and ``max_recursion_depth`` its call
stack. A run may also get a wall-clock ``deadline`` (the tool call's): the script's
execution and its sleeps (which Monty does not count as execution) are cut to what is left
of it, and a capability called after it has passed fails instead of starting; capabilities
bound their own waiting by the same deadline. A worker that dies (crash, kill, the
parent-side deadline) is replaced by the pool; the run that hit it reports ``crash`` and
the next run gets a fresh worker.

Capability failures reach the script as an ordinary ``Exception`` whose message is the
rendered ``CODE: message (hint)``, so a script may catch and handle them; uncaught, the
run fails with kind ``capability`` and that message.

Error code: TOOL_901 the worker pool cannot start (raised by :meth:`Sandbox.start`, the
only method that raises).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pydantic_monty as monty

from remora.config import ToolsConfig
from remora.errors import RemoraError, ToolError

__all__ = ["FailureKind", "PrintSink", "Sandbox", "SandboxFailure", "SandboxRun"]

FailureKind = Literal[
    "timeout",
    "memory",
    "recursion",
    "exception",
    "capability",
    "output",
    "crash",
    "syntax",
    "conversion",
    "unavailable",
]
PrintSink = Callable[[str, str], None]
"""Receives ``(stream, text)`` for everything a script prints."""

DEFAULT_MAX_PRINT_BYTES = 64 * 1024
_DEADLINE_GRACE_S = 5.0
_DEADLINE_SLACK_S = 0.05
"""A script stopped this close to the call's deadline was stopped by the deadline."""


@dataclass(frozen=True)
class SandboxFailure:
    """Why a run produced no value; ``message`` is written for the model."""

    kind: FailureKind
    message: str
    line: int | None = None


@dataclass(frozen=True)
class SandboxRun:
    """The outcome of one run: ``value`` when ``failure`` is None."""

    value: Any = None
    failure: SandboxFailure | None = None
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.failure is None


class _CapabilityFailure(Exception):
    """What the script sees when a capability raises a RemoraError."""


class _DeadlinePassed(Exception):
    """Raised instead of starting a capability once the run's deadline has passed."""


class _OutputLimit(Exception):
    """Raised from the print callback to stop a script that prints too much."""


class _RunState:
    """Per-run bookkeeping the host callbacks write to."""

    def __init__(
        self, on_print: PrintSink | None, max_print_bytes: int, deadline: float | None
    ) -> None:
        self.on_print = on_print
        self.max_print_bytes = max_print_bytes
        self.deadline = deadline
        self.deadline_passed = False
        self.printed = 0
        self.output_exceeded = False
        self.capability_error: tuple[str, str, BaseException] | None = None

    def print_callback(self, stream: str, text: str) -> None:
        self.printed += len(text.encode("utf-8", errors="replace"))
        if self.printed > self.max_print_bytes:
            self.output_exceeded = True
            raise _OutputLimit(f"printed more than {self.max_print_bytes} bytes")
        if self.on_print is not None:
            self.on_print(stream, text)

    def wrap(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self.deadline is not None and time.monotonic() >= self.deadline:
                self.deadline_passed = True
                raise _DeadlinePassed(f"{name} was not started: the tool call is out of time")
            try:
                return func(*args, **kwargs)
            except RemoraError as exc:
                failure = _CapabilityFailure(exc.render())
                self.capability_error = (name, exc.render(), failure)
                raise failure from None
            except Exception as exc:
                self.capability_error = (name, f"{type(exc).__name__}: {exc}", exc)
                raise

        return call


class Sandbox:
    """A pool of Monty workers shared by every tool call of a process; thread-safe."""

    def __init__(
        self, config: ToolsConfig, *, max_print_bytes: int = DEFAULT_MAX_PRINT_BYTES
    ) -> None:
        self.config = config
        self.max_print_bytes = max_print_bytes
        self._pool: monty.Monty | None = None
        self._closed = False
        self._lock = threading.Lock()

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def limits(self) -> monty.ResourceLimits:
        return {
            "max_feed_duration_secs": self.config.timeout,
            "max_memory": self.config.max_memory_mb * 1024 * 1024,
            "max_recursion_depth": self.config.max_recursion_depth,
        }

    def _limits_until(self, deadline: float | None) -> monty.ResourceLimits:
        """:attr:`limits` with execution and sleep cut to what is left before ``deadline``."""
        limits = self.limits
        if deadline is not None:
            left = max(deadline - time.monotonic(), 0.001)
            limits["max_feed_duration_secs"] = min(self.config.timeout, left)
            limits["max_total_sleep_secs"] = left
        return limits

    def start(self) -> None:
        """Spawn the worker pool now rather than on the first run (TOOL_901 if it cannot)."""
        try:
            self._ensure_pool()
        except (monty.MontyError, OSError, RuntimeError) as exc:
            raise ToolError(
                "TOOL_901",
                f"the tool sandbox cannot start: {exc}",
                "reinstall pydantic-monty; its 'monty' worker binary must be on the "
                "environment's path or named by MONTY_BIN",
            ) from None

    def _ensure_pool(self) -> monty.Monty:
        with self._lock:
            if self._closed:
                raise RuntimeError("the tool sandbox has been closed")
            if self._pool is None:
                pool = monty.Monty(
                    min_processes=self.config.workers,
                    max_processes=self.config.workers,
                    checkout_timeout=self.config.call_timeout,
                    request_timeout=self.config.timeout + _DEADLINE_GRACE_S,
                )
                pool.__enter__()
                self._pool = pool
            return self._pool

    def close(self) -> None:
        """Stop the workers; later runs fail with kind ``unavailable``. Idempotent."""
        with self._lock:
            pool, self._pool, self._closed = self._pool, None, True
        if pool is not None:
            pool.__exit__(None, None, None)

    def run(
        self,
        code: str,
        *,
        script_name: str,
        inputs: Mapping[str, Any],
        functions: Mapping[str, Callable[..., Any]],
        on_print: PrintSink | None = None,
        deadline: float | None = None,
    ) -> SandboxRun:
        """Run ``code`` with ``inputs`` bound as globals and ``functions`` callable by name.

        ``deadline`` is a ``time.monotonic()`` value the whole run must end by.
        """
        start = time.perf_counter()
        if deadline is not None and deadline <= time.monotonic():
            return SandboxRun(failure=self._deadline_failure(), duration_s=0.0)
        state = _RunState(on_print, self.max_print_bytes, deadline)
        lookup = {name: state.wrap(name, func) for name, func in functions.items()}
        try:
            pool = self._ensure_pool()
            limits = self._limits_until(deadline)
            with pool.checkout(script_name=script_name, limits=limits) as session:
                value = session.feed_run(
                    code,
                    inputs=dict(inputs),
                    external_lookup=lookup,
                    print_callback=state.print_callback,
                )
        except monty.MontyError as exc:
            failure = self._failure(exc, state)
            late = deadline is not None and time.monotonic() >= deadline - _DEADLINE_SLACK_S
            if failure.kind == "timeout" and late:
                failure = self._deadline_failure(failure.line)
            return SandboxRun(failure=failure, duration_s=time.perf_counter() - start)
        except (RuntimeError, OSError, TimeoutError) as exc:
            failure = SandboxFailure(
                "unavailable", f"the tool sandbox is unavailable ({exc}); try again later"
            )
            return SandboxRun(failure=failure, duration_s=time.perf_counter() - start)
        return SandboxRun(value=value, duration_s=time.perf_counter() - start)

    def _failure(self, exc: monty.MontyError, state: _RunState) -> SandboxFailure:
        if isinstance(exc, monty.MontyCrashedError):
            if exc.timed_out:
                return SandboxFailure("timeout", self._timeout_message())
            return SandboxFailure(
                "crash",
                f"the sandbox worker crashed ({exc}); the call produced no result, "
                "so call the tool again",
            )
        if isinstance(exc, monty.MontyConversionError):
            return SandboxFailure(
                "conversion", f"an input value cannot be passed into the sandbox: {exc}"
            )
        if isinstance(exc, monty.MontySyntaxError):
            line = _line(exc.traceback())
            return SandboxFailure(
                "syntax", f"the script cannot run in the sandbox: {exc.display('msg')}", line
            )
        if isinstance(exc, monty.MontyRuntimeError):
            return self._runtime_failure(exc, state)
        return SandboxFailure("exception", f"the sandbox rejected the script: {exc}")

    def _runtime_failure(self, exc: monty.MontyRuntimeError, state: _RunState) -> SandboxFailure:
        line = _line(exc.traceback())
        where = f" at line {line}" if line else ""
        inner = exc.exception()
        text = exc.display("msg")
        if state.output_exceeded:
            return SandboxFailure(
                "output",
                f"the script printed more than {self.max_print_bytes} bytes and was stopped; "
                "print less",
                line,
            )
        if state.deadline_passed or (isinstance(inner, TimeoutError) and "sleep limit" in text):
            return self._deadline_failure(line)  # only a deadline sets a sleep limit
        if state.capability_error is not None and _same_error(inner, state.capability_error[2]):
            name, message, _ = state.capability_error
            return SandboxFailure("capability", f"{name} failed: {message}", line)
        if isinstance(inner, TimeoutError) and "limit" in text:
            return SandboxFailure("timeout", self._timeout_message(), line)
        if isinstance(inner, MemoryError) and "limit" in text:
            return SandboxFailure(
                "memory",
                f"the script used more than its {self.config.max_memory_mb} MB memory limit "
                f"and was stopped{where}; call the tool with a smaller input",
                line,
            )
        if isinstance(inner, RecursionError):
            return SandboxFailure(
                "recursion",
                f"the script exceeded the recursion limit of {self.config.max_recursion_depth} "
                f"nested calls{where}",
                line,
            )
        return SandboxFailure(
            "exception", f"the script raised {exc.display('type-msg')}{where}", line
        )

    def _deadline_failure(self, line: int | None = None) -> SandboxFailure:
        return SandboxFailure(
            "timeout",
            "the tool call ran out of time (its tools.call_timeout or the job's "
            "runner.job_timeout) and was stopped; call submit_result with what you have",
            line,
        )

    def _timeout_message(self) -> str:
        return (
            f"the script ran longer than its {self.config.timeout:g} s time limit and was "
            "stopped; call the tool with a smaller input or use another tool"
        )


def _same_error(seen: BaseException, raised: BaseException) -> bool:
    """Whether the script died of the exception a capability raised (as Monty mirrors it)."""
    kind = "Exception" if isinstance(raised, _CapabilityFailure) else type(raised).__name__
    return type(seen).__name__ == kind and seen.args == raised.args


def _line(frames: list[monty.Frame]) -> int | None:
    """The innermost line of the traceback, which is where the script failed."""
    for frame in reversed(frames):
        if frame.line:
            return frame.line
    return None
