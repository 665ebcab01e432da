"""Remora itself inside an evaluation: the same discovery, planning, scheduler and review
``remora analyze --auto-accept`` uses, in process, on a scratch project.

The user's ``--config``/``--set`` (and ``--backend``) shape every run, so one evaluation can
compare the embedded model with a server; an evaluation's own settings (a variant's options)
are applied after them and win. The model client comes from ``model_factory`` (the real
backends by default; tests inject a scripted model).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import remora.model as model_package
from remora.config import (
    ModelConfig,
    OperationConfig,
    RemoraConfig,
    load_config,
    parse_assignments,
)
from remora.definitions import AgentLibrary
from remora.discovery import discover
from remora.errors import RemoraError
from remora.evaluation.package import Project
from remora.evaluation.report import RemoraFigures
from remora.model import ModelClient
from remora.model.factory import describe_backend
from remora.orchestration import (
    Job,
    JobRecord,
    ReviewService,
    open_emitter,
    plan_jobs,
    run_jobs,
)
from remora.orchestration.executor import executor_for
from remora.runner import AgentResult
from remora.workspace import WorkspaceManager

ModelFactory = Callable[[ModelConfig], ModelClient]
JobCallback = Callable[[JobRecord], None]


@dataclass
class RemoraRun:
    """The jobs of one run (every change accepted into the project), or why it did not run."""

    jobs: list[JobRecord] = field(default_factory=list)
    wall_s: float = 0.0
    error: str | None = None

    def of(self, operation: str) -> list[JobRecord]:
        return [job for job in self.jobs if job.operation == operation]

    def job(self, operation: str, file_path: str, qualname: str | None) -> JobRecord | None:
        """The job of ``operation`` on one node, when the run had one."""
        for record in self.of(operation):
            if record.file_path == file_path and (qualname is None or record.qualname == qualname):
                return record
        return None

    def figures(self, variant: str, operation: str) -> RemoraFigures:
        """Throughput, turns and call validity of the run's ``operation`` jobs.

        Wall time is the run's, shared out by job count when the run had several operations.
        Validity is valid / (valid + rejected) calls: valid calls are the executed ones plus
        repeats answered from memory; rejected ones failed the validator.
        """
        jobs = self.of(operation)
        wall = self.wall_s * len(jobs) / len(self.jobs) if self.jobs else self.wall_s
        telemetry = [job.telemetry for job in jobs]
        valid = sum(sum(t.tool_calls.values()) + t.repeats for t in telemetry)
        invalid = sum(t.invalid_calls for t in telemetry)
        model_s = sum(sum(t.model_latency_s) for t in telemetry)
        own_s = sum(t.wall_time_s for t in telemetry)
        return RemoraFigures(
            variant=variant,
            jobs=len(jobs),
            statuses=dict(Counter(job.status for job in jobs)),
            wall_s=wall,
            jobs_per_min=len(jobs) / (wall / 60) if wall > 0 and jobs else None,
            mean_turns=sum(t.turns for t in telemetry) / len(jobs) if jobs else None,
            valid_calls=valid,
            invalid_calls=invalid,
            call_validity=valid / (valid + invalid) if valid + invalid else None,
            model_s=model_s,
            model_share=min(model_s / own_s, 1.0) if own_s > 0 else (0.0 if jobs else None),
            tokens_per_job=(
                sum(
                    t.prompt_tokens - t.cached_prompt_tokens + t.completion_tokens
                    for t in telemetry
                )
                / len(jobs)
                if jobs
                else None
            ),
            candidates=sum(t.candidates for t in telemetry),
            candidates_passed=sum(t.candidates_passed for t in telemetry),
            error=self.error,
        )


@dataclass
class RemoraSession:
    """How an evaluation runs Remora: the installed agents and operation defaults (from
    ``remora.operations``), the user's config file and ``key=value`` overrides."""

    agents: AgentLibrary
    defaults: Mapping[str, OperationConfig]
    config_file: Path | None = None
    assignments: Sequence[str] = ()
    model_factory: ModelFactory | None = None

    def config(self, project: Project, sets: Sequence[str] = ()) -> RemoraConfig:
        """The config of a run on ``project``: the user's layers, then the run's ``sets``."""
        overrides = parse_assignments([*self.assignments, *sets])
        return load_config(
            project.root,
            config_file=self.config_file,
            overrides=overrides,
            operations=self.defaults,
        ).config

    def adapter(self, project: Project, operation: str, sets: Sequence[str] = ()) -> Path | None:
        """The LoRA adapter ``operation``'s agent runs with under this config and ``sets``
        (None: it runs on the base model, so a base-model row would repeat its run)."""
        config = self.config(project, sets)
        name = config.agent_of(operation)
        agent = self.agents.load(config.agents.dirs).get(name)
        return config.model.adapter_for(name, agent.model if agent is not None else None)

    def describe_model(self, project: Project) -> str:
        """Which model answers, for the report (the server's URL and model id, or the GGUF)."""
        model = self.config(project).model
        if model.backend == "openai":
            mode = describe_backend(model)
            return f"openai-compatible server {model.base_url}, model {model.model_id}, {mode}"
        where = str(model.path) if model.path else "embedded Gemma 3 270M (Q4_K_M)"
        adapters = "adapters on" if model.use_adapters else "adapters off"
        return f"llama.cpp, {where}, {adapters}"

    def run(
        self,
        project: Project,
        targets: Sequence[str],
        operations: Sequence[str],
        *,
        sets: Sequence[str] = (),
        on_planned: Callable[[int], None] | None = None,
        on_job: JobCallback | None = None,
    ) -> RemoraRun:
        """Run ``operations`` on ``targets`` (paths or ``file::qualname`` selectors) and
        accept every proposed change into the project; a problem is the run's ``error``.

        A selector means exactly that node here (``analyze`` adds its members: the nested
        functions of a selected function would be jobs nobody measures)."""
        started = time.perf_counter()
        try:
            run = self._run(project, targets, operations, sets, on_planned, on_job)
        except RemoraError as exc:
            run = RemoraRun(error=exc.render())
        run.wall_s = time.perf_counter() - started
        return run

    def _run(
        self,
        project: Project,
        targets: Sequence[str],
        operations: Sequence[str],
        sets: Sequence[str],
        on_planned: Callable[[int], None] | None,
        on_job: JobCallback | None,
    ) -> RemoraRun:
        config = self.config(project, sets)
        paths = [project.root / target for target in targets]
        nodes = discover(paths, config.discovery, root=project.root, members=False).nodes
        plan = plan_jobs(config, self.agents.load(config.agents.dirs), nodes, operations)
        problems = [f"{problem.message} ({problem.hint})" for problem in plan.problems]
        if on_planned is not None:
            on_planned(len(plan.jobs))
        if not plan.jobs:
            return RemoraRun(error="; ".join(problems) or "no node to run on")
        manager = WorkspaceManager.from_config(project.root, config.workspace)
        emitter = open_emitter(config, manager.state_path)
        model = (
            (self.model_factory or _real_client)(config.model)
            if config.executor.kind == "local"
            else None
        )
        executor = executor_for(config, model, model_factory=self.model_factory)

        def finished(job: Job, outcome: AgentResult) -> None:
            if on_job is not None:
                on_job(JobRecord.from_result(outcome, job.node))

        async def main() -> list[JobRecord]:
            try:
                result = await run_jobs(
                    plan.jobs,
                    executor=executor,
                    config=config,
                    manager=manager,
                    targets=list(targets),
                    operations=plan.operations,
                    emitter=emitter,
                    on_done=finished,
                )
                return result.manifest.jobs
            finally:
                if model is not None:
                    await model.aclose()
                emitter.close()

        jobs = asyncio.run(main())
        errors = problems + _accept_all(manager, jobs)
        return RemoraRun(jobs=jobs, error="; ".join(errors) or None)


def _real_client(config: ModelConfig) -> ModelClient:
    """The backend the config names (looked up at call time, so a test may replace it)."""
    return model_package.create_client(config)


def _accept_all(manager: WorkspaceManager, jobs: Sequence[JobRecord]) -> list[str]:
    """Apply every proposed change, as ``--auto-accept`` does; the errors of those that fail."""
    service = ReviewService(manager)
    errors = []
    for record in jobs:
        if record.review != "pending" or record.workspace_id is None:
            continue
        try:
            service.accept(record.workspace_id)
        except RemoraError as exc:
            errors.append(f"accepting {record.label}: {exc.render()}")
    return errors
