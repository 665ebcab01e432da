"""The agent loop: prompt → model → parse → validate → guard → tool → result → …

One run drives one (operation, node) job against any ``ModelClient``. The whole
conversation is sent every turn; calls are recovered from whatever format the model
used, validated against the tool schemas, checked by the stall guards, executed through
the ``ToolInvoker`` and fed back as ``{"name", "response"}`` results. The run ends when
``submit_result`` is accepted, when the guards give up (``failed``), or when it is
cancelled or times out between steps (``interrupted``, workspace untouched). Whatever
happens, the caller gets an AgentResult with the run's telemetry, and the event stream
gets an ``agent_done`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from remora.contracts import HOST_STEP_ID, SUBMIT_TOOL
from remora.errors import ModelError, RemoraError, RunnerError
from remora.model.base import (
    Message,
    ModelClient,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
)
from remora.runner.candidates import call_words, choose
from remora.runner.catalog import ToolCatalog, ToolInvoker
from remora.runner.guards import (
    HOST_FINISH,
    CallRecord,
    GuardFiring,
    Guards,
    call_signature,
)
from remora.runner.history import History, TokenCounter, estimate_tokens
from remora.runner.observers import LoopObserver, TelemetryRecorder
from remora.runner.parsing import ParseResult, parse_response
from remora.runner.result import AgentResult, AgentTelemetry
from remora.runner.run import AgentRun
from remora.runner.submit import normalize_path, submitted_result
from remora.runner.validation import CallValidator
from remora.tools.result import ToolResult

CANCELLED = "RUN_004: the run was cancelled"
_TOOL_DEADLINE_GRACE_S = 2.0
"""How long past the job's deadline the loop still waits for a tool call in flight."""


async def run_agent(
    run: AgentRun,
    *,
    model: ModelClient,
    invoke: ToolInvoker,
    changed_paths: Callable[[], list[str]] = list,
    screen: ToolInvoker | None = None,
    cancel: asyncio.Event | None = None,
    count_tokens: TokenCounter | None = None,
    observers: Sequence[LoopObserver] = (),
) -> AgentResult:
    """Run one agent to a structured result; see the module docstring for the contract.

    ``run`` is what to do; beside it, what is bound to this process: the ``model``, the
    tools (``invoke``), what the job's workspace has changed (``changed_paths``) and who
    watches (``observers``: events, transcripts; :func:`~.observers.watching`).
    ``screen`` runs the host's checks of a call of a ``screened`` tool without running
    it: at a turn where that tool is the only one allowed, ``settings.candidates``
    answers are asked for and the screened survivor that agrees most with the others is
    used (:mod:`remora.runner.candidates`).

    Raises ``RunnerError`` (RUN_001) before the first turn when the tools or settings are
    unusable. ``cancel`` (e.g. set on Ctrl-C) and ``settings.job_timeout`` stop the run
    between steps with status ``interrupted``; a model call in flight is abandoned, a
    tool call in flight is allowed to finish, within the job's deadline, which it is given
    (it is abandoned two seconds after it). If the task itself is cancelled, the
    observers still see the run finish before the cancellation propagates.
    """
    loop = AgentLoop(
        run,
        model=model,
        invoke=invoke,
        changed_paths=changed_paths,
        screen=screen,
        cancel=cancel,
        count_tokens=count_tokens,
        observers=observers,
    )
    return await loop.run()


class AgentLoop:
    """The state of one run; use ``run_agent`` unless you need to inspect it afterwards."""

    def __init__(
        self,
        run: AgentRun,
        *,
        model: ModelClient,
        invoke: ToolInvoker,
        changed_paths: Callable[[], list[str]] = list,
        screen: ToolInvoker | None = None,
        cancel: asyncio.Event | None = None,
        count_tokens: TokenCounter | None = None,
        observers: Sequence[LoopObserver] = (),
    ) -> None:
        if run.conversation_id is None:
            run = replace(
                run, conversation_id=f"{run.operation}:{run.node_id}:{uuid.uuid4().hex[:12]}"
            )
        self.spec = run
        settings = run.settings
        self.catalog = ToolCatalog(run.tools)
        self.screen = screen
        unknown = [name for name in run.opening if name not in self.catalog.host_steps]
        if unknown:
            raise RunnerError(
                "RUN_001",
                f"opening step(s) {unknown} are not host steps of this agent",
                "mark them 'step: host' or leave them out of 'opening'",
            )
        self.validator = CallValidator(self.catalog.specs)
        self.settings = settings
        self.guards = Guards(self.catalog, settings)
        counter = count_tokens or estimate_tokens
        catalog_tokens = counter(
            json.dumps([spec.model_dump() for spec in self.catalog.specs], ensure_ascii=False)
        )
        self.history = History(
            run.system_prompt,
            run.node_context,
            budget=settings.prompt_budget - catalog_tokens,
            count_tokens=count_tokens,
            max_result_chars=settings.max_result_chars,
        )
        self.recorder = TelemetryRecorder()
        self.observers: tuple[LoopObserver, ...] = (self.recorder, *observers)
        self.model = model
        self.invoke = invoke
        self.changed_paths = changed_paths
        self.cancel = cancel
        self.choices: dict[str, list[Any]] = {}
        self.next_tools: list[str] | None = None
        self._started = 0.0
        self._deadline = 0.0
        self._turn = 0

    @property
    def telemetry(self) -> AgentTelemetry:
        return self.recorder.telemetry

    @property
    def conversation_id(self) -> str:
        assert self.spec.conversation_id is not None
        return self.spec.conversation_id

    async def run(self) -> AgentResult:
        self._started = time.monotonic()
        self._deadline = self._started + self.settings.job_timeout
        for observer in self.observers:
            observer.started(self.spec)
        try:
            result = await self._run()
        except asyncio.CancelledError:
            self._finish(self._interrupted(CANCELLED))
            raise
        except BaseException:
            for observer in self.observers:
                observer.crashed()
            raise
        return self._finish(result)

    async def _run(self) -> AgentResult:
        for name in self.spec.opening:
            self.next_tools = [name]
            finished = await self._host_steps(0)
            if finished is not None:
                return finished
        while True:
            stop = self._stop_reason()
            if stop is not None:
                return self._interrupted(stop)
            self._turn += 1
            turn = self._turn
            plan, firings = self.guards.plan(turn)
            self._fire(turn, firings)
            if plan.stop is not None:
                return self._failed(plan.stop)
            narrowed = self._narrowed(plan.allowed)
            if self._left_to_host(narrowed):
                finished = await self._host_finish(turn)
                if finished is not None:
                    return finished
            allowed = list(narrowed) if narrowed is not None else None
            samples = self._samples(narrowed)
            request = self._fitted(
                ModelRequest(
                    messages=self.history.render(),
                    tools=self._declared(narrowed),
                    allowed_tools=allowed,
                    tool_choice=plan.tool_choice,
                    temperature=self.settings.temperature,
                    max_tokens=self.settings.max_tokens,
                    choices=dict(self.choices),
                    conversation_id=self.conversation_id,
                    adapter=self.spec.adapter,
                    model_id=self.spec.model_id,
                    samples=samples,
                    sample_temperature=self.settings.candidate_temperature,
                )
            )
            shown = allowed if allowed is not None else list(self.catalog.names)
            for observer in self.observers:
                observer.requested(turn, request, shown)
            started = time.perf_counter()
            try:
                response = await self._complete(request)
            except ModelError as exc:
                for observer in self.observers:
                    observer.model_failed(turn, exc.render())
                return self._failed(exc.render())
            if response is None:
                return self._interrupted(self._stop_reason() or CANCELLED)
            latency = time.perf_counter() - started
            for observer in self.observers:
                observer.answered(turn, response, latency)
            if samples > 1:
                response = await self._chosen(turn, narrowed, request, response)
            finished = await self._handle(turn, narrowed, response)
            if finished is None:
                finished = await self._host_steps(turn)
            if finished is not None:
                return finished

    def _samples(self, allowed: tuple[str, ...] | None) -> int:
        """How many answers to ask for: ``settings.candidates`` when the only tool allowed
        is one the host can screen, else one."""
        if (
            self.screen is None
            or allowed is None
            or len(allowed) != 1
            or allowed[0] not in self.catalog.screened
        ):
            return 1
        return self.settings.candidates

    async def _chosen(
        self,
        turn: int,
        allowed: tuple[str, ...] | None,
        request: ModelRequest,
        response: ModelResponse,
    ) -> ModelResponse:
        """Among the answers (``response`` and its alternatives; a backend that gives none
        is asked for the samples one by one), the one :func:`~.candidates.choose` picks
        from those whose call is valid and passes the host's screen; the greedy answer when
        it picks none, so its refusal reaches the model as before."""
        answers = [response, *response.alternatives]
        if len(answers) < request.samples:
            extra = await self._more_samples(request, request.samples - len(answers))
            if extra is None:
                return response
            answers += extra
        accepted: list[frozenset[str] | None] = []
        screened: dict[str, ToolResult] = {}
        verdicts: list[str] = []
        for answer in answers:
            parsed = parse_response(answer)
            check = self.validator.check(parsed.calls[0], allowed) if parsed.calls else None
            if len(parsed.calls) != 1 or check is None or check.error is not None:
                verdicts.append("no single valid call")
                accepted.append(None)
                continue
            call = check.call
            signature = call_signature(call.name, call.arguments)
            if signature not in screened:
                screened[signature] = await self._screen(call)
            verdict = screened[signature]
            said = json.dumps(call.arguments, ensure_ascii=False)
            if verdict.outcome == "error":
                verdicts.append(f"{said} refused: {verdict.summary}")
                accepted.append(None)
                continue
            verdicts.append(f"{said} passed")
            accepted.append(call_words(call.arguments))
        index = choose(accepted)
        chosen = answers[index] if index is not None else response
        passed = sum(words is not None for words in accepted)
        for observer in self.observers:
            observer.candidates(turn, answers, verdicts, index, passed)
        return chosen.model_copy(update={"alternatives": []})

    async def _screen(self, call: ToolCall) -> ToolResult:
        assert self.screen is not None
        try:
            return await self.screen(call.name, dict(call.arguments), deadline=self._deadline)
        except RemoraError as exc:
            return ToolResult.failure(exc.render())

    async def _more_samples(self, request: ModelRequest, count: int) -> list[ModelResponse] | None:
        """``count`` sampled answers, each its own request (None when cancelled or out of
        time)."""
        sampled = [
            request.model_copy(
                update={
                    "samples": 1,
                    "temperature": request.sample_temperature,
                    "conversation_id": f"{self.conversation_id}~{index}",
                }
            )
            for index in range(1, count + 1)
        ]
        answers = await asyncio.gather(*(self._complete(each) for each in sampled))
        if any(answer is None for answer in answers):
            return None
        return [answer for answer in answers if answer is not None]

    def _left_to_host(self, allowed: tuple[str, ...] | None) -> bool:
        """Whether the guards left the model nothing but host steps, the submit among them
        (its repeated call blocked, or a closing turn): the model is never asked for a step
        the host takes."""
        host = self.catalog.host_steps
        return (
            allowed is not None and SUBMIT_TOOL in allowed and all(name in host for name in allowed)
        )

    async def _host_finish(self, turn: int) -> AgentResult | None:
        """The host submits in the model's place: its verdict says what was really done.
        None when the submit was refused (the model is then asked, as before)."""
        why = self.guards.closing_reason or "the model's own calls are blocked"
        self._fire(
            turn, [GuardFiring(HOST_FINISH, f"only host steps left ({why}); the host submits")]
        )
        self.next_tools = [SUBMIT_TOOL]
        return await self._host_steps(turn)

    async def _host_steps(self, turn: int) -> AgentResult | None:
        """Take the steps whose call follows from the state: while the last result names a
        single next tool and the agent declares it a host step, the host calls it (no
        arguments, no model turn) and the model sees the call and its result as context."""
        for step in range(len(self.catalog.host_steps) + 1):
            tools = self.next_tools
            if tools is None or len(tools) != 1 or tools[0] not in self.catalog.host_steps:
                return None
            stop = self._stop_reason()
            if stop is not None:
                return self._interrupted(stop)
            call = ToolCall(id=f"{HOST_STEP_ID}{turn}_{step}", name=tools[0], arguments={})
            effect = self.catalog.effect(call.name)
            self.history.start_turn(Message(role="assistant", content="", tool_calls=[call]))
            result = await self._execute(turn, call, effect, host_step=True)
            self.guards.remember(call_signature(call.name, {}), effect, result)
            self.history.add_tool_result(call.name, call.id, result)
            if call.name == SUBMIT_TOOL and result.outcome != "error":
                return self._submitted({}, result, [])
            self.choices = result.choices or self.choices
            self.next_tools = result.next_tools
        return None

    def _fitted(self, request: ModelRequest) -> ModelRequest:
        """The request within the prompt budget as the backend renders it, when the backend
        can say (``render`` and ``count_tokens``): the history counts message text, and a
        rendered prompt can come out longer (tool declarations, escapes). The history's
        budget then shrinks by the excess, so trimming stays monotone; what cannot be
        trimmed is sent as it is, for the backend to refuse."""
        render = getattr(self.model, "render", None)
        count = getattr(self.model, "count_tokens", None)
        if not callable(render) or not callable(count):
            return request
        while (excess := count(render(request)) - self.settings.prompt_budget) > 0:
            if not self.history.tighten(excess):
                break
            request = request.model_copy(update={"messages": self.history.render()})
        return request

    def _declared(self, allowed: tuple[str, ...] | None) -> list[ToolSpec]:
        """The tools a request declares: the whole catalog, or only the ``allowed`` ones
        when the agent asks for short decision prompts."""
        if not self.spec.declare_allowed_only or allowed is None:
            return self.catalog.specs
        return [spec for spec in self.catalog.specs if spec.name in allowed]

    def _narrowed(self, allowed: tuple[str, ...] | None) -> tuple[str, ...] | None:
        """The guards' allowed tools, narrowed to the last result's ``next_tools``.

        The guards win: when none of the tools a result suggests is allowed this turn, the
        suggestion is ignored.
        """
        if self.next_tools is None:
            return allowed
        pool = allowed if allowed is not None else tuple(self.catalog.names)
        narrowed = tuple(name for name in pool if name in self.next_tools)
        return narrowed or allowed

    async def _complete(self, request: ModelRequest) -> ModelResponse | None:
        """The model's answer, or None when cancel or the deadline came first."""
        remaining = self._deadline - time.monotonic()
        if self.cancel is None:
            try:
                return await asyncio.wait_for(self.model.complete(request), remaining)
            except TimeoutError:
                if time.monotonic() < self._deadline:
                    raise
                return None
        work = asyncio.ensure_future(self.model.complete(request))
        cancelled = asyncio.ensure_future(self.cancel.wait())
        try:
            done, _ = await asyncio.wait(
                {work, cancelled}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:
            work.cancel()
            raise
        finally:
            cancelled.cancel()
        if work in done:
            return work.result()
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await work
        return None

    async def _handle(
        self, turn: int, allowed: tuple[str, ...] | None, response: ModelResponse
    ) -> AgentResult | None:
        """Parse, validate, guard and execute one response; an AgentResult ends the run."""
        parsed = parse_response(response)
        for observer in self.observers:
            observer.parsed(turn, response, parsed)
        if not parsed.calls:
            self.history.start_turn(
                Message(role="assistant", content=response.raw_text or response.content)
            )
            self._fire(turn, self.guards.end_turn([], _miss(parsed)))
            return None
        calls = [
            call if call.id else call.model_copy(update={"id": f"call_{turn}_{index}"})
            for index, call in enumerate(parsed.calls)
        ]
        self.history.start_turn(Message(role="assistant", content="", tool_calls=calls))
        records: list[CallRecord] = []
        firings: list[GuardFiring] = []
        choices: dict[str, list[Any]] = {}
        next_tools: list[str] | None = None
        for index, raw_call in enumerate(calls):
            stop = self._stop_reason()
            if stop is not None:
                return self._interrupted(stop)
            check = self.validator.check(raw_call, allowed)
            if check.coercions:
                for observer in self.observers:
                    observer.coerced(turn, raw_call, len(check.coercions))
            if check.error is not None:
                for observer in self.observers:
                    observer.rejected(turn, raw_call, check.error)
                self.history.add_tool_result(raw_call.name, raw_call.id, check.error)
                continue
            call = check.call
            effect = self.catalog.effect(call.name)
            signature = call_signature(call.name, call.arguments)
            earlier = self.guards.earlier_result(signature)
            if earlier is not None:
                for observer in self.observers:
                    observer.repeated(turn, call)
                firings.append(self.guards.repeated(call.name, signature))
                records.append(CallRecord(call.name, signature, effect, repeated=True))
                self.history.add_tool_result(call.name, call.id, earlier)
                choices.update(earlier.choices)
                next_tools = earlier.next_tools
                continue
            result = await self._execute(turn, call, effect)
            self.guards.remember(signature, effect, result)
            records.append(CallRecord(call.name, signature, effect))
            self.history.add_tool_result(call.name, call.id, result)
            choices.update(result.choices)
            next_tools = result.next_tools
            if call.name == SUBMIT_TOOL and result.outcome != "error":
                return self._submitted(call.arguments, result, calls[index + 1 :])
        mistake = None if records else "none of your calls was valid; read the errors above"
        firings.extend(self.guards.end_turn(records, mistake))
        self._fire(turn, firings)
        if records:
            # Choices stay in force until a result reports new ones: a read in between
            # (say, of the file) must not lift them.
            self.choices = choices or self.choices
            self.next_tools = next_tools
        return None

    async def _execute(
        self, turn: int, call: ToolCall, effect: str, *, host_step: bool = False
    ) -> ToolResult:
        for observer in self.observers:
            observer.tool_called(turn, call, effect, host_step)
        started = time.perf_counter()
        try:
            result = await self._invoke(call)
        except RemoraError as exc:
            result = ToolResult.failure(exc.render())
        except Exception as exc:
            result = ToolResult.failure(f"tool {call.name} crashed: {type(exc).__name__}: {exc}")
        if not isinstance(result, ToolResult):
            result = ToolResult.failure(f"tool {call.name} returned no ToolResult")
        duration = time.perf_counter() - started
        for observer in self.observers:
            observer.tool_returned(turn, call, effect, result, duration)
        return result

    async def _invoke(self, call: ToolCall) -> ToolResult:
        """The tool's result; the tool gets the job's deadline and is abandoned (its thread
        ends on its own deadline) when it overruns it by more than a short grace."""
        work = self.invoke(call.name, dict(call.arguments), deadline=self._deadline)
        wait = self._deadline - time.monotonic() + _TOOL_DEADLINE_GRACE_S
        try:
            return await asyncio.wait_for(work, max(wait, 0.0))
        except TimeoutError:
            if time.monotonic() < self._deadline:
                raise  # the tool's own TimeoutError, not the deadline
            return ToolResult.failure(
                f"RUN_005: the job timed out after {self.settings.job_timeout:g}s while "
                f"{call.name} was running"
            )

    def _fire(self, turn: int, firings: Sequence[GuardFiring]) -> None:
        for firing in firings:
            for observer in self.observers:
                observer.guard_fired(turn, firing)
            if firing.message:
                self.history.add_note(firing.message)

    def _stop_reason(self) -> str | None:
        if self.cancel is not None and self.cancel.is_set():
            return CANCELLED
        if time.monotonic() >= self._deadline:
            return f"RUN_005: the job timed out after {self.settings.job_timeout:g}s"
        return None

    def _changed(self) -> list[str]:
        return sorted({normalize_path(path) for path in self.changed_paths()})

    def _submitted(
        self, arguments: dict[str, Any], result: ToolResult, ignored: Sequence[ToolCall]
    ) -> AgentResult:
        agent_result = submitted_result(
            arguments=arguments,
            tool_result=result,
            operation=self.spec.operation,
            node_id=self.spec.node_id,
            workspace_id=self.spec.workspace_id,
            changed=self.changed_paths(),
            telemetry=self.telemetry,
        )
        if ignored:
            agent_result.details["ignored_calls_after_submit"] = [call.name for call in ignored]
        return agent_result

    def _failed(self, error: str) -> AgentResult:
        return AgentResult(
            status="failed",
            operation=self.spec.operation,
            node_id=self.spec.node_id,
            workspace_id=self.spec.workspace_id,
            changed_files=self._changed(),
            summary=f"no result submitted after {self.telemetry.turns} turn(s)",
            error=error,
            telemetry=self.telemetry,
        )

    def _interrupted(self, reason: str) -> AgentResult:
        return AgentResult(
            status="interrupted",
            operation=self.spec.operation,
            node_id=self.spec.node_id,
            workspace_id=self.spec.workspace_id,
            changed_files=self._changed(),
            summary=f"interrupted after {self.telemetry.turns} turn(s); workspace kept",
            error=reason,
            telemetry=self.telemetry,
        )

    def _finish(self, result: AgentResult) -> AgentResult:
        self.telemetry.wall_time_s = time.monotonic() - self._started
        self.telemetry.context_trims = self.history.trimmed
        result.telemetry = self.telemetry
        for observer in self.observers:
            observer.finished(result)
        return result


def _miss(parsed: ParseResult) -> str:
    if parsed.problems:
        return f"your reply could not be read as a function call ({parsed.problems[0]})"
    if parsed.textual_pattern:
        return "your reply looked like a function call but could not be read"
    return "your reply did not contain a function call"
