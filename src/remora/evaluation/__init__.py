"""``remora eval``: Remora's agents against the best deterministic tools, on a real package.

For a package named by a pip requirement or a path, each operation is measured on a seeded
selection of its modules or functions, Remora and the baselines side by side on identical
scratch copies, in one run. See :func:`run_eval` and ``docs/evaluation.md``. This package
is the framework (resolving the package, scratch copies, running Remora, the report); how
each operation is measured lives with the operation (``remora.operations.<op>.evaluation``).
"""

from remora.evaluation.context import EvalContext, Evaluator, ProgressSink
from remora.evaluation.report import EvalReport, OperationReport, to_markdown
from remora.evaluation.run import DEFAULT_LIMIT, EvalOptions, run_eval, write_report
from remora.evaluation.session import RemoraSession

__all__ = [
    "DEFAULT_LIMIT",
    "EvalContext",
    "EvalOptions",
    "EvalReport",
    "Evaluator",
    "OperationReport",
    "ProgressSink",
    "RemoraSession",
    "run_eval",
    "to_markdown",
    "write_report",
]
