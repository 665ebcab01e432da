"""The configuration reference (``docs/configuration.md``), generated from :class:`RemoraConfig`.

Every key, type, default and description comes from the pydantic models in
:mod:`remora.config`, so the page cannot drift from the code: ``tests/test_docs.py`` fails
when the file and the model disagree. Regenerate it with::

    python -m remora.config_reference > docs/configuration.md

or ``python -m remora.config_reference docs/configuration.md``. To change what the page
says about a key, edit the ``Field(description=...)`` or the section's docstring.
"""

from __future__ import annotations

import inspect
import json
import sys
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from remora.config import (
    CONFIG_FILENAMES,
    ENV_CONFIG_FILE,
    ENV_PREFIX,
    TRUSTED_ONLY,
    OperationConfig,
    RemoraConfig,
    parse_scalar,
)

__all__ = ["REGENERATE_COMMAND", "env_var_name", "main", "render_configuration_reference"]

REGENERATE_COMMAND = "python -m remora.config_reference > docs/configuration.md"

_OPERATIONS = "operations"
_ENV_EXAMPLE = "tools.isolation"
_ENV_EXAMPLE_VALUE = "landlock"
_SCALAR_NAMES: dict[Any, str] = {
    str: "string",
    int: "int",
    float: "float",
    bool: "bool",
    Path: "path",
    Any: "any",
}


def env_var_name(key: str) -> str:
    """The environment variable that sets the dotted ``key``: ``REMORA_TOOLS__ISOLATION``."""
    return ENV_PREFIX + "__".join(part.upper() for part in key.split("."))


def render_configuration_reference() -> str:
    """The whole Markdown page, deterministic for a given version of the config models."""
    lines: list[str] = [*_intro()]
    for section, info in RemoraConfig.model_fields.items():
        lines.append("")
        if section == _OPERATIONS:
            lines.extend(_operations_section())
            continue
        model = info.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError(f"config section {section!r} is not a model")
        lines.extend(_section(section, model))
    return "\n".join(lines).rstrip("\n") + "\n"


# --- the page ------------------------------------------------------------------------------


def _intro() -> list[str]:
    files = ", ".join(f"`{name}`" for name in CONFIG_FILENAMES)
    example_env = env_var_name(_ENV_EXAMPLE)
    nested_env = env_var_name("operations.docstring.options.style")
    sections = ", ".join(f"[`{name}`](#{name})" for name in RemoraConfig.model_fields)
    return [
        "<!-- Generated from remora.config by remora/config_reference.py: do not edit by hand.",
        f"     Regenerate with: {REGENERATE_COMMAND} -->",
        "",
        "# Configuration reference",
        "",
        "This page is generated from the configuration model (`remora.config.RemoraConfig`).",
        "After changing the model, regenerate it with",
        f"`{REGENERATE_COMMAND}`.",
        "",
        f"Sections: {sections}.",
        "",
        "## Where values come from",
        "",
        "Remora builds one configuration from these layers, highest precedence first:",
        "",
        "1. flags: `--set section.key=value` (repeatable) and each command's own options;",
        f"2. environment variables `{ENV_PREFIX}SECTION__KEY`, a double underscore between",
        f"   levels: `{example_env}={_ENV_EXAMPLE_VALUE}` sets `{_ENV_EXAMPLE}`,",
        f"   `{nested_env}=numpy` sets",
        "   `operations.docstring.options.style`;",
        f"3. a config file: the nearest {files} or `pyproject.toml` with a",
        "   `[tool.remora]` table, searched upward from the target (in each directory, in",
        f"   that order); `--config FILE` or `{ENV_CONFIG_FILE}=FILE` names the file instead;",
        "4. your own config: `$XDG_CONFIG_HOME/remora/remora.yaml`, by default",
        "   `~/.config/remora/remora.yaml`;",
        "5. the defaults listed below.",
        "",
        "**A cloned repository decides nothing about its own sandbox.** A config file found",
        "inside the project (layer 3 without `--config`) may not set what weakens isolation",
        "or reaches the network: "
        + ", ".join(f"`{key}`" for key in TRUSTED_ONLY)
        + ". Those settings are ignored there, with a `CONFIG_010` warning before any work;",
        "set them with flags, environment variables, `--config` or your own config.",
        "",
        "Mappings merge key by key across layers; any other value, lists included, replaces",
        "the lower layer's value entirely. Flag and environment values are read the way YAML",
        "reads a scalar: `4` is a number, `true` a boolean, `[a, b]` a list and `null` null.",
        "Relative paths in a config file (`model.path`, `events.path`, `agents.dirs`) are",
        "relative to the directory of that file.",
        "",
        "An unknown key is an error (`CONFIG_005`, with a did-you-mean hint), and so is a",
        "value of the wrong type or outside its range (`CONFIG_003`); both exit with status 2.",
        "`remora config --sources` prints every effective value with the layer that set it.",
        "",
        "The same setting in each form:",
        "",
        "```yaml",
        "# ~/.config/remora/remora.yaml (a project's own file may not set this one)",
        "tools:",
        f"  isolation: {_ENV_EXAMPLE_VALUE}",
        "```",
        "",
        "```bash",
        f"{example_env}={_ENV_EXAMPLE_VALUE} remora doctor",
        f"remora doctor --set {_ENV_EXAMPLE}={_ENV_EXAMPLE_VALUE}",
        "```",
    ]


def _section(section: str, model: type[BaseModel]) -> list[str]:
    defaults = model().model_dump(mode="json")
    rows = [
        _row(f"{section}.{key}", info, defaults[key]) for key, info in model.model_fields.items()
    ]
    return [f"## {section}", "", *_doc(model), *_table(rows)]


def _operations_section() -> list[str]:
    generic = OperationConfig().model_dump(mode="json")
    rows = [
        _row(f"{_OPERATIONS}.<name>.{key}", info, generic[key])
        for key, info in OperationConfig.model_fields.items()
    ]
    builtin: list[tuple[str, str]] = []
    from remora.operations import bundled_operations  # the operations' defaults live there

    operations = bundled_operations().default_configs()
    for name, operation in operations.items():
        for key, value in operation.model_dump(mode="json").items():
            if isinstance(value, dict) and value:
                for option, option_value in value.items():
                    builtin.append(
                        (f"{_OPERATIONS}.{name}.{key}.{option}", _default_text(option_value))
                    )
            else:
                builtin.append((f"{_OPERATIONS}.{name}.{key}", _default_text(value)))
    names = ", ".join(f"`{name}`" for name in operations)
    return [
        f"## {_OPERATIONS}",
        "",
        *_doc(OperationConfig),
        f"`{_OPERATIONS}` maps an operation name (a Python identifier) to its settings.",
        f"The built-in operations are {names}; they are always present, and",
        "`enabled: false` turns one off. `options` reaches the agent's tools and its",
        "`node_context` template as the `options` system input.",
        "",
        *_table(rows),
        "",
        "Defaults of the built-in operations:",
        "",
        "| key | default |",
        "| --- | --- |",
        *(f"| `{key}` | {_cell(default)} |" for key, default in builtin),
    ]


def _doc(model: type[BaseModel]) -> list[str]:
    doc = inspect.getdoc(model) or ""
    return [doc.strip(), ""] if doc.strip() else []


def _table(rows: Sequence[tuple[str, str, str, str]]) -> list[str]:
    lines = ["| key | type | default | description |", "| --- | --- | --- | --- |"]
    for key, kind, default, description in rows:
        lines.append(f"| `{key}` | {_cell(kind)} | {_cell(default)} | {_text_cell(description)} |")
    return lines


def _row(key: str, info: FieldInfo, default: Any) -> tuple[str, str, str, str]:
    return (key, _type_text(info), _default_text(default), info.description or "")


def _cell(text: str) -> str:
    """``text`` as inline code in a table cell ('|' escaped, as GitHub tables require)."""
    return f"`{text}`".replace("|", "\\|")


def _text_cell(text: str) -> str:
    escaped = " ".join(text.split()).replace("|", "\\|")
    return escaped.replace("<", "\\<").replace(">", "\\>")


# --- types and defaults ----------------------------------------------------------------------


def _type_text(info: FieldInfo) -> str:
    """A readable type: ``auto | bwrap``, ``int ≥ 1 or null``, ``list of string, ≥ 1 item``."""
    annotation = info.annotation
    args = typing.get_args(annotation)
    nullable = _is_union(annotation) and type(None) in args
    if nullable:
        others = [arg for arg in args if arg is not type(None)]
        if len(others) == 1:
            annotation = others[0]
            text = _annotation_text(annotation)
        else:
            text = " or ".join(_annotation_text(arg) for arg in others)
    else:
        text = _annotation_text(annotation)
    constraints = _constraints(info.metadata, annotation)
    if constraints:
        text = f"{text}{constraints}"
    return f"{text} or null" if nullable else text


def _is_union(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    return origin is typing.Union or origin is types.UnionType


def _annotation_text(annotation: Any) -> str:
    if annotation in _SCALAR_NAMES:
        return _SCALAR_NAMES[annotation]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Literal:
        return " | ".join(str(arg) for arg in args)
    if origin is list:
        item = _annotation_text(args[0]) if args else "any"
        return f"list of ({item})" if " | " in item else f"list of {item}"
    if origin is dict:
        value = args[1] if len(args) == 2 else Any
        return "mapping" if value is Any else f"mapping of string to {_annotation_text(value)}"
    if _is_union(annotation):
        return " or ".join(_annotation_text(arg) for arg in args)
    return getattr(annotation, "__name__", str(annotation))


def _constraints(metadata: Sequence[Any], annotation: Any) -> str:
    bounds: list[str] = []
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            bounds.append(f"≥ {_number(item.ge)}")
        elif isinstance(item, annotated_types.Gt):
            bounds.append(f"> {_number(item.gt)}")
        elif isinstance(item, annotated_types.Le):
            bounds.append(f"≤ {_number(item.le)}")
        elif isinstance(item, annotated_types.Lt):
            bounds.append(f"< {_number(item.lt)}")
        elif isinstance(item, annotated_types.MinLen):
            noun = "item" if item.min_length == 1 else "items"
            unit = noun if typing.get_origin(annotation) is list else "characters"
            bounds.append(f"≥ {item.min_length} {unit}")
        elif isinstance(item, annotated_types.MaxLen):
            noun = "item" if item.max_length == 1 else "items"
            unit = noun if typing.get_origin(annotation) is list else "characters"
            bounds.append(f"≤ {item.max_length} {unit}")
    if not bounds:
        return ""
    separator = ", " if typing.get_origin(annotation) is not None else " "
    return separator + ", ".join(bounds)


def _number(value: Any) -> str:
    return json.dumps(value)


def _default_text(value: Any) -> str:
    """A default as you would write it: bare strings when YAML reads them back as such."""
    if isinstance(value, str) and value and parse_scalar(value) == value and value == value.strip():
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# --- command line --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m remora.config_reference [PATH]``: write the page to PATH, else stdout."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) > 1 or any(arg in ("-h", "--help") for arg in args):
        sys.stderr.write(f"usage: python -m remora.config_reference [PATH]\n{__doc__}")
        return 0 if args and args[0] in ("-h", "--help") else 2
    text = render_configuration_reference()
    if args:
        Path(args[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
