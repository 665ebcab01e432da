"""``ast.parse`` that is safe to call from several threads at once.

CPython 3.11 keeps the AST constructor's recursion depth in per-interpreter state, so two
threads building syntax trees at the same time can corrupt it and fail with ``SystemError:
AST constructor recursion depth mismatch`` (python/cpython#106905). Tools and capabilities
run in worker threads, so every parse in Remora goes through this one lock.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal, overload

_LOCK = threading.Lock()


@overload
def parse(source: str | bytes, filename: str = ..., mode: Literal["exec"] = ...) -> ast.Module: ...


@overload
def parse(source: str | bytes, filename: str = ..., *, mode: Literal["eval"]) -> ast.Expression: ...


def parse(
    source: str | bytes, filename: str = "<unknown>", mode: Literal["exec", "eval"] = "exec"
) -> ast.Module | ast.Expression:
    """``ast.parse(source, filename, mode)``, one thread at a time."""
    with _LOCK:
        tree = ast.parse(source, filename=filename, mode=mode)
    assert isinstance(tree, ast.Module | ast.Expression)
    return tree
