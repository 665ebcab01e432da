"""The ``remora`` command: flags in, one library call, Rich rendering out.

Each command lives in its own module and registers itself on the shared Typer app.
"""

from __future__ import annotations

import sys

from remora.cli import agents as _agents  # noqa: F401
from remora.cli import analyze as _analyze  # noqa: F401
from remora.cli import config as _config  # noqa: F401  (registers commands)
from remora.cli import discovery as _discovery  # noqa: F401
from remora.cli import doctor as _doctor  # noqa: F401
from remora.cli import eval as _eval  # noqa: F401
from remora.cli import explain as _explain  # noqa: F401
from remora.cli import harness as _harness  # noqa: F401
from remora.cli import review as _review  # noqa: F401
from remora.cli import train as _train  # noqa: F401
from remora.cli import watch as _watch  # noqa: F401
from remora.cli._app import app, err_console, fill_optional_values, hoist_global_options
from remora.cli._text import visible
from remora.errors import RemoraError

__all__ = ["app", "main"]


def main() -> None:
    """Console entry point: RemoraError becomes ``CODE: message (hint)`` and an exit code."""
    try:
        app(args=fill_optional_values(hoist_global_options(sys.argv[1:])))
    except RemoraError as exc:
        err_console.print(
            visible(exc.render()), style="red", markup=False, highlight=False, soft_wrap=True
        )
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted", style="red")
        sys.exit(130)
