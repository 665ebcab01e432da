"""Planning: which (operation x node) jobs a run has, as pure functions of config, agents, nodes.

An operation runs when ``--ops`` names it, or, without ``--ops``, when its config says
``enabled``. Its agent is ``operations.<op>.agent`` (default: the operation's name); the
agent takes the nodes whose type it lists in ``applies_to``. What cannot run is reported
per operation (unknown operation, missing agent), never raised, so one missing agent does
not stop the others.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from remora.config import RemoraConfig
from remora.definitions import SubagentDefinition
from remora.discovery import CSTNode
from remora.orchestration.job import Job


@dataclass(frozen=True)
class OperationProblem:
    """Why an operation contributes no jobs."""

    operation: str
    message: str
    hint: str


@dataclass
class Plan:
    """The jobs of a run, the operations they belong to, and what could not be planned."""

    jobs: list[Job] = field(default_factory=list)
    operations: list[str] = field(default_factory=list)
    problems: list[OperationProblem] = field(default_factory=list)

    def jobs_for(self, operation: str) -> list[Job]:
        return [job for job in self.jobs if job.operation == operation]


def selected_operations(config: RemoraConfig, ops: Sequence[str] | None) -> list[str]:
    """``ops`` as given (explicit wins over ``enabled: false``), else the enabled ones."""
    if ops:
        return list(dict.fromkeys(ops))
    return config.enabled_operations()


def plan_jobs(
    config: RemoraConfig,
    agents: Mapping[str, SubagentDefinition],
    nodes: Sequence[CSTNode],
    ops: Sequence[str] | None = None,
) -> Plan:
    """Jobs in operation order, then node order (files, then position in the file)."""
    plan = Plan()
    for operation in selected_operations(config, ops):
        settings = config.operations.get(operation)
        if settings is None:
            close = difflib.get_close_matches(operation, list(config.operations), n=1)
            plan.problems.append(
                OperationProblem(
                    operation,
                    f"unknown operation '{operation}'",
                    f"did you mean '{close[0]}'?"
                    if close
                    else f"configured operations: {', '.join(config.operations)}",
                )
            )
            continue
        agent_name = config.agent_of(operation)
        agent = agents.get(agent_name)
        if agent is None:
            plan.problems.append(
                OperationProblem(
                    operation,
                    f"operation '{operation}' has no agent: no agent named '{agent_name}' "
                    "is bundled or in agents.dirs",
                    f"available agents: {', '.join(sorted(agents)) or 'none'}; "
                    f"set operations.{operation}.agent or leave it out with --ops",
                )
            )
            continue
        plan.operations.append(operation)
        plan.jobs.extend(
            Job(agent=agent, node=node, operation=operation, options=settings.options)
            for node in nodes
            if node.node_type in agent.applies_to
        )
    return plan


def plan_retries(
    config: RemoraConfig,
    agents: Mapping[str, SubagentDefinition],
    nodes: Sequence[CSTNode],
    requested: Sequence[tuple[str, str]],
    notes: Mapping[tuple[str, str], str] | None = None,
) -> Plan:
    """Jobs for ``(operation, node_id)`` pairs a review marked for retry, on today's nodes,
    each marked as a retry with the person's note (``notes``).

    A node that no longer exists (renamed, deleted) or an operation that can no longer run
    is reported as a problem instead.
    """
    by_id = {node.node_id: node for node in nodes}
    plan = Plan()
    for operation, node_id in requested:
        node = by_id.get(node_id)
        single = plan_jobs(config, agents, [node] if node else [], [operation])
        plan.problems.extend(single.problems)
        if node is None and not single.problems:
            plan.problems.append(
                OperationProblem(
                    operation,
                    f"node {node_id} no longer exists",
                    "it was renamed or deleted since the run; run 'remora analyze' on it",
                )
            )
        note = (notes or {}).get((operation, node_id), "")
        plan.jobs.extend(replace(job, retry=True, retry_note=note) for job in single.jobs)
        if single.jobs and operation not in plan.operations:
            plan.operations.append(operation)
    return plan
