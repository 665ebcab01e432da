"""The declarations ``.pym`` tool scripts import: ``from remora.pym import Input, external``.

Remora never executes these at run time: it reads the declarations with ``ast``, strips
them and binds real values and host functions in the sandbox. They exist so editors and
type checkers understand a ``.pym`` file as ordinary Python, and so a script can be
imported outside the sandbox without failing on unknown names.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final, TypeVar

__all__ = ["REQUIRED", "Input", "external"]

F = TypeVar("F", bound=Callable[..., Any])


class _Required:
    """Marks an input declared without a default; the runner must supply it."""

    _instance: _Required | None = None

    def __new__(cls) -> _Required:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()


def Input(name: str, default: Any = REQUIRED, description: str | None = None) -> Any:
    """Declare one input: ``text: str = Input("text", description="...")``.

    The annotation on the left gives the type (required), ``name`` must repeat the
    variable name, a ``default`` makes the input optional and ``description`` is what
    the model reads about it. System inputs (``node_text``, ``file_path``, ...) are
    declared the same way and filled by the runner instead of the model. Outside the
    sandbox this returns the default, or :data:`REQUIRED` when there is none.
    """
    del name, description
    return default


def external(func: F) -> F:
    """Declare a host capability stub: signature and docstring, body ``...``.

    Inside the sandbox the name is bound to the real capability; outside it calling
    the stub raises, because capabilities need a job's workspace.
    """

    @functools.wraps(func)
    def stub(*args: Any, **kwargs: Any) -> Any:
        del args, kwargs
        raise RuntimeError(
            f"{func.__name__} is a host capability; it runs only inside Remora's tool sandbox"
        )

    return stub  # type: ignore[return-value]
