"""Options have one source of defaults: each operation's options model.

A capability reads its options typed (``ctx.options(Model)``), and where a ``.pym`` script
or a capability still reads one from the mapping with a fallback (``options.get(name,
default)``), the fallback must be the model's own default: a second default that
disagrees (the docstring writer once fell back to describing when the option said not to)
changes behaviour whenever the job's options leave the key out.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from remora.operations import installed_operations
from remora.operations.docstring.options import DocstringOptions
from remora.operations.lint.options import LintOptions
from remora.tools.capabilities import CapabilityContext
from tests.stores import overlay_store

SOURCES = Path(__file__).parent.parent / "src" / "remora" / "operations"


def _defaults() -> dict[str, dict[str, set[str]]]:
    """For each option name, the repr of its default in each operation's model."""
    found: dict[str, dict[str, set[str]]] = {}
    for operation in installed_operations():
        model = operation.options_model
        if model is None:
            continue
        for name, field in model.model_fields.items():
            found.setdefault(name, {})[operation.name] = {repr(field.get_default())}
    return found


def _fallbacks() -> list[tuple[Path, int, str, Any]]:
    """Every ``<x>.get("<option>", <literal>)`` on something named ``options``."""
    found = []
    for path in sorted([*SOURCES.rglob("*.py"), *SOURCES.rglob("*.pym")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and "options" in ast.unparse(node.func.value)
                and len(node.args) == 2
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                try:
                    default = ast.literal_eval(node.args[1])
                except ValueError:
                    continue
                found.append((path, node.lineno, node.args[0].value, default))
    return found


def test_every_fallback_default_is_the_options_models_own() -> None:
    defaults = _defaults()
    fallbacks = _fallbacks()
    assert fallbacks, "the scan found no fallback at all: it is not looking where it should"
    wrong = []
    for path, line, name, default in fallbacks:
        models = defaults.get(name)
        if not models:
            continue
        if not any(repr(default) in reprs for reprs in models.values()):
            wrong.append(f"{path.relative_to(SOURCES)}:{line}: {name} falls back to {default!r}")
    assert wrong == []


@pytest.mark.parametrize(
    ("given", "describe", "style"),
    [({}, False, "auto"), ({"describe": True, "style": "numpy"}, True, "numpy")],
)
def test_a_capability_reads_options_typed_with_the_models_defaults(
    tmp_path: Path, given: dict[str, Any], describe: bool, style: str
) -> None:
    context = CapabilityContext(
        store=overlay_store(tmp_path),
        config=installed_operations().config().tools,
        system={"options": {**given, "select": ["F401"]}},
    )
    options = context.options(DocstringOptions)
    assert (options.describe, options.style) == (describe, style)
    assert context.options(LintOptions).select == ["F401"]
    assert context.options(LintOptions).unsafe_fixes is True
