"""Operations: what Remora can do to a node, one package each, and their registry.

A new layer between training and the harness/evaluation: each bundled operation's package
(:mod:`.lint`, :mod:`.docstring`, :mod:`.characterize` for ``test`` and ``sample_data``)
holds its agent folders, capabilities, evaluation, expert policy and training material, and
gives an :class:`~remora.operations.base.Operation` value. The packages never import each
other (an import-linter contract); what they share is below them (the toolkit in
``remora.tools.capabilities``) or in :mod:`.base` and :mod:`.experts`.

The registry is assembled here, at the top, and passed down: the CLI takes its operation
names, the config its defaults, agent loading its folders and capabilities (an
:class:`~remora.definitions.AgentLibrary`), ``remora eval`` its evaluators and training its
episode planners. Nothing registers itself on import. A user's operation is published
through the ``remora.operations`` entry point group (docs/writing-an-agent.md).
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from remora.config import LoadedConfig, OperationConfig, RemoraConfig
from remora.definitions import BUNDLED_AGENTS_DIR, AgentLibrary, SubagentDefinition
from remora.errors import AgentDefinitionError, ConfigError
from remora.operations.base import Operation
from remora.tools.capabilities import TOOLKIT, Capability, merge_capabilities

if TYPE_CHECKING:
    from remora.evaluation.context import Evaluator

__all__ = [
    "ENTRY_POINT_GROUP",
    "Operation",
    "OperationRegistry",
    "bundled_operations",
    "installed_operations",
    "load_agents",
]

ENTRY_POINT_GROUP = "remora.operations"
"""Where an installed package publishes its operations: an Operation or a list of them."""


class OperationRegistry:
    """The operations one process knows, in order; a later one replaces an earlier one of
    the same name (a user's operation may replace a bundled one)."""

    def __init__(self, operations: Iterable[Operation]) -> None:
        self._operations: dict[str, Operation] = {}
        for operation in operations:
            self._operations.pop(operation.name, None)
            self._operations[operation.name] = operation
        try:
            self.capabilities: Mapping[str, Capability] = merge_capabilities(
                TOOLKIT, *(operation.capabilities for operation in self)
            )
        except TypeError as exc:
            raise AgentDefinitionError(
                "AGENT_015", str(exc), "give each operation's capabilities their own names"
            ) from None
        directories = [BUNDLED_AGENTS_DIR]
        for operation in self:
            directories += [d for d in operation.agent_dirs if d not in directories]
        self.library = AgentLibrary(directories=tuple(directories), capabilities=self.capabilities)

    def __iter__(self) -> Iterator[Operation]:
        return iter(self._operations.values())

    def __contains__(self, name: object) -> bool:
        return name in self._operations

    def __len__(self) -> int:
        return len(self._operations)

    @property
    def names(self) -> list[str]:
        return list(self._operations)

    def get(self, name: str) -> Operation:
        """The operation ``name`` (AGENT_015 with the known names when there is none)."""
        found = self._operations.get(name)
        if found is None:
            close = difflib.get_close_matches(name, self.names, n=1)
            raise AgentDefinitionError(
                "AGENT_015",
                f"no operation named '{name}'",
                f"did you mean '{close[0]}'?" if close else f"known: {', '.join(self.names)}",
            )
        return found

    def for_agent(self, agent: str) -> Operation | None:
        """The operation an agent runs for: the one of the same name first."""
        ranked = sorted(self, key=lambda operation: operation.name != agent)
        return next((op for op in ranked if op.agent_name == agent), None)

    def evaluators(self) -> dict[str, Evaluator]:
        """``remora eval``'s operations: those that say how they are measured."""
        return {op.name: op.evaluate for op in self if op.evaluate is not None}

    def traced_agents(self) -> list[str]:
        """The agents training can record expert episodes for."""
        return [op.agent_name for op in self if op.plan_episodes is not None]

    def default_configs(self) -> dict[str, OperationConfig]:
        """Each operation as the config has it before the user's files: enabled, with its
        default options."""
        return {op.name: OperationConfig(agent=op.agent, options=dict(op.options)) for op in self}

    def check_options(self, loaded: LoadedConfig) -> None:
        """Check each operation's options against its ``options_model`` (CONFIG_005 for
        an unknown option, CONFIG_003 for a bad value, naming where it was set). An
        operation run by another agent than its own takes whatever options that agent
        reads, unchecked."""
        for name, settings in loaded.config.operations.items():
            operation = self._operations.get(name)
            if operation is None or operation.options_model is None:
                continue
            if settings.agent not in (None, operation.agent_name):
                continue
            try:
                operation.options_model.model_validate(settings.options)
            except ValidationError as exc:
                raise _option_error(name, operation.options_model, exc, loaded) from None

    def config(self, **sections: Any) -> RemoraConfig:
        """A config with these operations' defaults and the given sections (library use
        and tests; the CLI loads the user's files with :func:`~remora.config.load_config`)."""
        return RemoraConfig(operations=self.default_configs(), **sections)

    def load_agents(self, extra_dirs: Sequence[Path] = ()) -> dict[str, SubagentDefinition]:
        """Every bundled agent plus those in ``extra_dirs`` (see AgentLibrary.load)."""
        return self.library.load(extra_dirs)


def _option_error(
    name: str, model: type[BaseModel], exc: ValidationError, loaded: LoadedConfig
) -> ConfigError:
    error = exc.errors()[0]
    key = ".".join(["operations", name, "options", *(str(part) for part in error["loc"])])
    origin = loaded.source_of(key)
    if error["type"] == "extra_forbidden":
        known = sorted(model.model_fields)
        close = difflib.get_close_matches(str(error["loc"][-1]), known, n=1)
        return ConfigError(
            "CONFIG_005",
            f"unknown config key '{key}' (from {origin})",
            f"did you mean '{close[0]}'?" if close else f"known options: {', '.join(known)}",
        )
    return ConfigError(
        "CONFIG_003",
        f"invalid value for '{key}' (from {origin}): {error['msg']}",
        "docs/configuration.md lists every operation's options",
    )


@functools.cache
def bundled_operations() -> OperationRegistry:
    """The operations that ship with Remora."""
    from remora.operations.characterize import SAMPLE_DATA, TEST
    from remora.operations.docstring import DOCSTRING
    from remora.operations.lint import LINT

    return OperationRegistry([LINT, DOCSTRING, TEST, SAMPLE_DATA])


@functools.cache
def installed_operations() -> OperationRegistry:
    """The bundled operations plus those installed packages publish in the
    ``remora.operations`` entry point group (AGENT_015 for one that cannot load)."""
    found = list(bundled_operations())
    for entry in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        found += _published(entry)
    return OperationRegistry(found)


def _published(entry: metadata.EntryPoint) -> list[Operation]:
    try:
        value: Any = entry.load()
    except Exception as exc:  # a broken plug-in must say which one, not crash the CLI
        raise AgentDefinitionError(
            "AGENT_015",
            f"the operation entry point '{entry.name}' ({entry.value}) cannot be loaded: "
            f"{type(exc).__name__}: {exc}",
            f"fix or uninstall the package that publishes it ({entry.value.split(':')[0]})",
        ) from None
    values = [value] if isinstance(value, Operation) else value
    if not isinstance(values, list | tuple) or not all(isinstance(v, Operation) for v in values):
        raise AgentDefinitionError(
            "AGENT_015",
            f"the operation entry point '{entry.name}' ({entry.value}) gives "
            f"{type(value).__name__}, not an Operation",
            "point it at a remora.operations.Operation or a list of them",
        )
    return list(values)


def load_agents(extra_dirs: Sequence[Path] = ()) -> dict[str, SubagentDefinition]:
    """The installed operations' agents plus those in ``extra_dirs``."""
    return installed_operations().load_agents(extra_dirs)
