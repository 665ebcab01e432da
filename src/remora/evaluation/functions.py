"""The public module-level functions of a package: what the function-level evaluations pick from."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from remora.evaluation.package import Project

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class FunctionRef:
    """One function: its module file (relative posix path) and its name."""

    path: str
    name: str

    @property
    def target(self) -> str:
        """The node selector Remora's discovery accepts: ``pkg/mod.py::name``."""
        return f"{self.path}::{self.name}"


def parameter_names(node: FunctionNode) -> tuple[str, ...]:
    """The parameter names in signature order, ``*args`` and ``**kwargs`` without stars."""
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    if args.vararg:
        names.append(args.vararg.arg)
    names.extend(a.arg for a in args.kwonlyargs)
    if args.kwarg:
        names.append(args.kwarg.arg)
    return tuple(names)


def mean(values: Iterable[float]) -> float | None:
    """The mean, or None for no values (a column shows '-', not a misleading 0)."""
    items = list(values)
    return sum(items) / len(items) if items else None


def is_private_module(relative: str) -> bool:
    """A module whose file or package name starts with ``_`` (``__init__`` is public)."""
    parts = PurePosixPath(relative).with_suffix("").parts
    return any(part.startswith("_") and part != "__init__" for part in parts)


def public_functions(project: Project) -> list[tuple[FunctionRef, FunctionNode]]:
    """Top-level ``def``s not starting with ``_`` in the public modules, in file order.

    A module that does not parse is left out (the evaluation cannot measure it anyway).
    """
    found: list[tuple[FunctionRef, FunctionNode]] = []
    for relative in project.modules():
        if is_private_module(relative):
            continue
        try:
            tree = ast.parse((project.root / relative).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        found += [
            (FunctionRef(relative, node.name), node)
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and not node.name.startswith("_")
        ]
    return found
