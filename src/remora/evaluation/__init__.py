"""``remora eval``: Remora's agents against the best deterministic tools, on a real package.

For a package named by a pip requirement or a path, each operation is measured on a seeded
selection of its modules or functions, Remora and the baselines side by side on identical
scratch copies, in one run. See :func:`run_eval` and ``docs/evaluation.md``.
"""

from remora.evaluation._context import ProgressSink
from remora.evaluation._remora import RemoraSession
from remora.evaluation.report import EvalReport, OperationReport, to_markdown
from remora.evaluation.run import DEFAULT_LIMIT, OPERATIONS, EvalOptions, run_eval, write_report

__all__ = [
    "DEFAULT_LIMIT",
    "OPERATIONS",
    "EvalOptions",
    "EvalReport",
    "OperationReport",
    "ProgressSink",
    "RemoraSession",
    "run_eval",
    "to_markdown",
    "write_report",
]
