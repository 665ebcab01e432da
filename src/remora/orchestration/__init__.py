"""The orchestration tier: plan (operation x node) jobs, run them, record them, review them.

Everything that runs agents — ``remora analyze``, ``watch``, ``harness``, ``retry`` — is a
thin caller of :func:`plan_jobs` and :func:`run_jobs`.
"""

from remora.orchestration.job import Job, run_job
from remora.orchestration.planning import (
    OperationProblem,
    Plan,
    plan_jobs,
    plan_retries,
)
from remora.orchestration.review import ReviewService
from remora.orchestration.runs import (
    JobRecord,
    RunManifest,
    RunStore,
    RunSummary,
    check_run_id,
    new_run_id,
)
from remora.orchestration.scheduler import (
    RunResult,
    interrupt_on_sigint,
    open_emitter,
    run_jobs,
)

__all__ = [
    "Job",
    "JobRecord",
    "OperationProblem",
    "Plan",
    "ReviewService",
    "RunManifest",
    "RunResult",
    "RunStore",
    "RunSummary",
    "check_run_id",
    "interrupt_on_sigint",
    "new_run_id",
    "open_emitter",
    "plan_jobs",
    "plan_retries",
    "run_job",
    "run_jobs",
]
