"""Subagent definitions: the YAML schema of an agent, loading and validation.

An agent lives in a folder ``<name>/`` holding ``<name>.yaml``, its ``tools/*.pym``,
optional ``context/*.pym`` providers and ``adapters/*.gguf``. Agents are loaded from an
:class:`AgentLibrary`: the bundled folders (each operation's, assembled by
``remora.operations``, plus ``remora/agents/`` for those no operation owns) and the
capabilities their scripts may call. ``agents.dirs`` in the config adds user folders, each
either one agent folder or a folder of agent folders. A user agent shadows a bundled one
with the same name (later directories win). Scripts are checked against the capabilities
given (the generic toolkit unless a library or caller gives more).

Loading validates everything docs/writing-an-agent.md describes: the schema (unknown keys
are errors), exactly one terminal tool and it is named ``submit_result``, unique tool names, a
``node_context`` Jinja2 template that compiles and only uses the variables in
:data:`NODE_CONTEXT_VARIABLES`, every ``.pym`` passing the checker, ``inputs_override``
naming real model-facing inputs, context providers whose inputs can be filled, and a
declared LoRA adapter that exists, and an ``expectation`` (what a correct episode is, for
``remora harness``) naming real tools and inputs with templates that compile. Paths in the
YAML are relative to the agent folder.

Error codes (``AgentDefinitionError``):

- AGENT_001 agent file or directory missing or unreadable, or no agents in a directory
- AGENT_002 the file is not valid YAML or not a mapping, or its aliases expand past
  ``YAML_ALIAS_EXPANSION_LIMIT`` values or nest too deep (the config loader's bound)
- AGENT_003 a key is missing, unknown or has a wrong value
- AGENT_004 tool-set rules: one terminal tool named submit_result, unique tool names
- AGENT_005 the node_context template does not compile or uses an unknown variable
- AGENT_006 a .pym script or adapter file is missing or unreadable
- AGENT_007 a .pym script fails the checker (the PYM codes of ``remora.tools.pym``)
- AGENT_008 inputs_override does not fit the script's inputs
- AGENT_009 a context provider needs an input neither the runner nor its tool provides
- AGENT_010 no tool with the requested name
- AGENT_011 two agents with the same name in one directory
- AGENT_012 rendering node_context failed at run time (a variable was not passed)
- AGENT_013 the precheck script declares model-facing inputs (it runs without the model)
- AGENT_014 the expectation names an unknown tool or input, leaves out a required input,
  does not end with submit_result, or holds a template that does not compile or uses an
  unknown variable
- AGENT_016 a host step (``step: host``) has a required model-facing input (the host
  calls it without arguments), or ``opening`` names a tool that is not a host step
- AGENT_017 a tool's screen declares a model-facing input the tool does not have
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import jinja2
import yaml
from jinja2.sandbox import SandboxedEnvironment
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from remora.config import NodeType, YamlRefusedError, safe_load_yaml
from remora.contracts import SUBMIT_TOOL, SYSTEM_INPUTS, Effect
from remora.errors import AgentDefinitionError
from remora.model.base import ToolSpec
from remora.regular_files import read_regular_file
from remora.tools.capabilities import TOOLKIT, Capability
from remora.tools.pym import (
    PymScript,
    check_script_file,
    load_pym,
    override_problems,
)
from remora.tools.script_tool import ScriptTool

__all__ = [
    "ANY_VALUE",
    "BUNDLED_AGENTS_DIR",
    "NODE_CONTEXT_VARIABLES",
    "TERMINAL_TOOL",
    "AgentCheck",
    "AgentLibrary",
    "Effect",
    "Expectation",
    "ExpectedCall",
    "InitialContext",
    "RenderedCall",
    "SubagentDefinition",
    "ToolDefinition",
    "agent_files",
    "check_agent",
    "check_agents",
    "load_agent",
]

BUNDLED_AGENTS_DIR = Path(__file__).resolve().parent / "agents"
TERMINAL_TOOL = SUBMIT_TOOL
NODE_CONTEXT_VARIABLES = tuple(SYSTEM_INPUTS)
"""What the runner passes to ``node_context``: the system inputs (``remora.contracts``)."""
MAX_AGENT_FILE_BYTES = 1024 * 1024
"""An agent YAML is a few kilobytes; the bound keeps a FIFO, ``/dev/zero`` link or huge file
from hanging or filling memory when agents load."""

_IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"
ANY_VALUE = "any"
"""An expected argument written as this word matches any value the model passes."""


# --- the YAML as written ------------------------------------------------------------------


class _Raw(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _RawModel(_Raw):
    adapter: str | None = None


class _RawTool(_Raw):
    name: str = Field(pattern=_IDENTIFIER)
    pym: str = Field(min_length=1)
    description: str = ""
    effect: Effect
    inputs_override: dict[str, Any] = Field(default_factory=dict)
    context_providers: list[str] = Field(default_factory=list)
    when_option: str | None = Field(default=None, pattern=_IDENTIFIER)
    step: Literal["model", "host"] = "model"
    screen: str | None = Field(default=None, min_length=1)


class InitialContext(_Raw):
    """The system prompt (plain text) and the per-node user message (Jinja2)."""

    system_prompt: str = Field(min_length=1)
    node_context: str = Field(min_length=1)
    declared_tools: Literal["all", "allowed"] = Field(
        default="all",
        description="Which tools each request declares: all of the agent's, or only those "
        "the model may call that turn (a short decision prompt; the adapter must be trained "
        "on the same).",
    )
    node_max_tokens: int | None = Field(
        default=None,
        ge=32,
        description="At most this many tokens of the node's text; a longer node is "
        "outlined. Unset: half of what the prompt budget leaves.",
    )


ExpectedValue = StrictStr | StrictInt | StrictFloat | StrictBool


class ExpectedCall(_Raw):
    """One call of a correct episode. A string value is a Jinja2 template over the
    node-context variables, or ``any``; numbers and booleans are literal values."""

    tool: str = Field(pattern=_IDENTIFIER)
    arguments: dict[str, ExpectedValue] = Field(default_factory=dict)


@dataclass(frozen=True)
class RenderedCall:
    """An expected call for one node: argument values as text, ``None`` for any value
    (so a node named ``any`` is still compared, not taken for the wildcard)."""

    tool: str
    arguments: Mapping[str, str | None]


class Expectation(_Raw):
    """What a correct episode is, so ``remora harness`` can tell a call that works from one
    that is merely well formed.

    ``exact``: the episode makes exactly ``calls``, in order. ``prefix``: it starts with
    every call but the last, in order, ends with the last (``submit_result``), and in
    between makes any calls of the agent's other tools that do not repeat an earlier call.
    """

    match: Literal["exact", "prefix"] = "exact"
    calls: list[ExpectedCall] = Field(min_length=1)

    def render(self, variables: Mapping[str, Any]) -> list[RenderedCall]:
        """The calls expected on one node (AGENT_012 when a variable is missing)."""
        environment = _environment()
        rendered: list[RenderedCall] = []
        for expected in self.calls:
            arguments: dict[str, str | None] = {}
            for name, value in expected.arguments.items():
                if value == ANY_VALUE:
                    arguments[name] = None
                elif isinstance(value, str):
                    try:
                        arguments[name] = environment.from_string(value).render(**variables)
                    except jinja2.TemplateError as exc:
                        raise AgentDefinitionError(
                            "AGENT_012",
                            f"rendering the expected {expected.tool} argument '{name}' "
                            f"failed: {exc}",
                            f"pass {', '.join(NODE_CONTEXT_VARIABLES)} or fix the template",
                        ) from None
                else:
                    arguments[name] = json.dumps(value)
            rendered.append(RenderedCall(tool=expected.tool, arguments=arguments))
        return rendered

    def describe(self) -> str:
        """One line as written, e.g. ``exact: echo(text={{ node_name }}) submit_result(...)``."""
        calls = " ".join(
            f"{call.tool}({', '.join(f'{k}={v}' for k, v in call.arguments.items())})"
            for call in self.calls
        )
        return f"{self.match}: {calls}"


class _RawAgent(_Raw):
    name: str = Field(pattern=_IDENTIFIER)
    applies_to: list[NodeType] = Field(min_length=1)
    max_turns: int = Field(ge=1, le=100)
    model: _RawModel | None = None
    initial_context: InitialContext
    tools: list[_RawTool] = Field(min_length=1)
    precheck: str | None = None
    opening: list[str] = Field(default_factory=list)
    expectation: Expectation | None = None


# --- the validated definition -----------------------------------------------------------


class ToolDefinition(ScriptTool):
    """One tool of an agent, with its script and provider paths resolved: the runtime's
    :class:`ScriptTool` plus what the model and the runner see."""

    description: str = ""
    effect: Effect
    when_option: str | None = None
    host_step: bool = Field(
        default=False,
        description="Called by the host whenever a result names it as the only next tool.",
    )
    screen: ScriptTool | None = Field(
        default=None,
        description="A script that runs the host's checks of a call without making it: the "
        "model is then asked for several answers and the host picks among those it accepts.",
    )

    def offered(self, options: Mapping[str, Any]) -> bool:
        """Whether the model is offered this tool under the operation's ``options``."""
        return self.when_option is None or bool(options.get(self.when_option, False))

    def spec(self) -> ToolSpec:
        """The tool as the model sees it: system inputs hidden, overrides merged."""
        script = load_pym(self.pym)
        description = self.description or _first_paragraph(script.doc)
        return ToolSpec(
            name=self.name,
            description=description,
            parameters=script.parameters_schema(self.inputs_override),
        )


class SubagentDefinition(BaseModel):
    """A loaded, validated agent."""

    model_config = ConfigDict(extra="forbid")

    name: str
    applies_to: list[NodeType]
    max_turns: int
    model: Path | None = Field(default=None, description="The LoRA adapter, if the agent has one.")
    initial_context: InitialContext
    tools: list[ToolDefinition]
    directory: Path
    precheck: Path | None = Field(
        default=None,
        description="A .pym run before the loop, without the model; it may end the job early.",
    )
    opening: list[str] = Field(
        default_factory=list,
        description="Host steps the host takes before the model's first turn, in order.",
    )
    expectation: Expectation | None = Field(
        default=None, description="What a correct episode is; remora harness checks it."
    )

    _template: jinja2.Template | None = PrivateAttr(default=None)
    _capabilities: Mapping[str, Capability] = PrivateAttr(default_factory=dict)

    @property
    def capabilities(self) -> Mapping[str, Capability]:
        """What the agent's scripts may call: the capabilities they were checked against."""
        return self._capabilities

    def __getstate__(self) -> dict[Any, Any]:
        """Pickled with its capabilities as a plain mapping and without the compiled
        template, so a job carrying the agent travels to another process."""
        state = super().__getstate__()
        private = dict(state.get("__pydantic_private__") or {})
        private["_template"] = None
        private["_capabilities"] = dict(private.get("_capabilities") or {})
        return {**state, "__pydantic_private__": private}

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        self._capabilities = MappingProxyType(dict(self._capabilities))

    def definition_digest(self) -> str:
        """A digest of what the agent asks and runs, without its adapter: its files but the
        adapters, and the YAML as data without ``model`` (shipping an adapter changes
        neither the prompts nor the tools). Work measured or recorded with one definition
        is reused only with it."""
        files = sorted(
            p for p in self.directory.rglob("*") if p.is_file() and "adapters" not in p.parts
        )
        digest = hashlib.sha256()
        for path in files:
            content = path.read_bytes()
            if path.parent == self.directory and path.stem == self.name:
                loaded = yaml.safe_load(content)
                if isinstance(loaded, dict):
                    loaded.pop("model", None)
                content = json.dumps(loaded, sort_keys=True, default=str).encode()
            digest.update(path.relative_to(self.directory).as_posix().encode())
            digest.update(content)
        return digest.hexdigest()[:16]

    def render_node_context(self, variables: Mapping[str, Any]) -> str:
        """The first user message for one node (AGENT_012 when a variable is missing)."""
        try:
            if self._template is None:
                self._template = _environment().from_string(self.initial_context.node_context)
            return self._template.render(**variables)
        except jinja2.TemplateError as exc:
            raise AgentDefinitionError(
                "AGENT_012",
                f"agent '{self.name}': rendering node_context failed: {exc}",
                f"pass {', '.join(NODE_CONTEXT_VARIABLES)} or fix the template",
            ) from None

    def tool_specs(self) -> list[ToolSpec]:
        return [tool.spec() for tool in self.tools]

    def tool(self, name: str) -> ToolDefinition:
        for tool in self.tools:
            if tool.name == name:
                return tool
        known = ", ".join(tool.name for tool in self.tools)
        raise AgentDefinitionError(
            "AGENT_010", f"agent '{self.name}' has no tool '{name}'", f"its tools are: {known}"
        )

    @property
    def effects(self) -> dict[str, Effect]:
        return {tool.name: tool.effect for tool in self.tools}


def _first_paragraph(text: str) -> str:
    return " ".join(text.strip().split("\n\n")[0].split())


# --- loading ------------------------------------------------------------------------------


@dataclass
class AgentCheck:
    """The result of validating one agent file: the definition, or every problem found."""

    path: Path
    source: str
    definition: SubagentDefinition | None = None
    problems: list[AgentDefinitionError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and self.definition is not None

    @property
    def name(self) -> str:
        return self.definition.name if self.definition else self.path.stem


def load_agent(path: Path, *, registry: Mapping[str, Capability] = TOOLKIT) -> SubagentDefinition:
    """Load and validate one agent (its YAML file or its folder); raises the first problem."""
    check = check_agent(path, registry=registry)
    if not check.ok:
        raise _first_problem(check)
    assert check.definition is not None
    return check.definition


@dataclass(frozen=True)
class AgentLibrary:
    """Where the bundled agents live and what their scripts may call.

    Assembled at the top (``remora.operations``) from the installed operations and passed
    down, so loading agents never depends on what happens to have been imported.
    """

    directories: tuple[Path, ...]
    capabilities: Mapping[str, Capability]

    def sources(self, extra_dirs: Sequence[Path] = ()) -> list[tuple[str, Path]]:
        """``(label, directory)`` pairs to search, bundled first: what :meth:`load` reads."""
        bundled = [("bundled", directory) for directory in self.directories]
        return [*bundled, *((str(path), Path(path)) for path in extra_dirs)]

    def check(self, extra_dirs: Sequence[Path] = ()) -> list[AgentCheck]:
        """Every agent validated, problems collected (``remora validate-agents``)."""
        return check_agents(self.sources(extra_dirs), registry=self.capabilities)

    def load(self, extra_dirs: Sequence[Path] = ()) -> dict[str, SubagentDefinition]:
        """Bundled agents plus those in ``extra_dirs``; later directories shadow earlier
        names. Raises the first problem of the first agent that fails."""
        agents: dict[str, SubagentDefinition] = {}
        for check in self.check(extra_dirs):
            if not check.ok:
                raise _first_problem(check)
            assert check.definition is not None
            agents[check.definition.name] = check.definition
        return agents


def _first_problem(check: AgentCheck) -> AgentDefinitionError:
    """The first problem of a failed check, its hint pointing at the rest."""
    first = check.problems[0]
    more = len(check.problems) - 1
    if more:
        where = check.path.parent if check.path.is_file() else check.path
        note = f"{more} more problem(s): run 'remora validate-agents {where}'"
        first.hint = f"{first.hint}; {note}" if first.hint else note
    return first


def agent_files(directory: Path) -> list[Path]:
    """Agent YAML files under ``directory``: itself an agent folder, or a folder of them."""
    if not directory.is_dir():
        raise AgentDefinitionError(
            "AGENT_001",
            f"agent directory {directory} does not exist",
            "check agents.dirs in the config or the path you passed",
        )
    own = _agent_file(directory)
    if own is not None:
        return [own]
    try:
        entries = sorted(directory.iterdir())
    except OSError as exc:
        raise AgentDefinitionError(
            "AGENT_001",
            f"cannot list agent directory {directory}: {exc.strerror or exc}",
            "check its permissions",
        ) from None
    return [found for sub in entries if sub.is_dir() and (found := _agent_file(sub)) is not None]


def _agent_file(directory: Path) -> Path | None:
    """The agent's YAML, if anything by that name exists: a FIFO or device named so is
    reported when read, rather than passed over as a folder without an agent."""
    for suffix in (".yaml", ".yml"):
        candidate = directory / f"{directory.name}{suffix}"
        if candidate.exists() and not candidate.is_dir():
            return candidate
    return None


def check_agents(
    sources: Sequence[tuple[str, Path]], *, registry: Mapping[str, Capability] = TOOLKIT
) -> list[AgentCheck]:
    """Validate every agent in each ``(label, directory)``; problems are collected, not raised."""
    checks: list[AgentCheck] = []
    for label, directory in sources:
        try:
            files = agent_files(directory)
        except AgentDefinitionError as exc:
            checks.append(AgentCheck(path=directory, source=label, problems=[exc]))
            continue
        if not files:
            problem = AgentDefinitionError(
                "AGENT_001",
                f"no agent definitions in {directory}",
                "an agent is a folder <name>/ holding <name>.yaml",
            )
            checks.append(AgentCheck(path=directory, source=label, problems=[problem]))
            continue
        seen: dict[str, Path] = {}
        for path in files:
            check = check_agent(path, registry=registry, source=label)
            if check.definition is not None:
                name = check.definition.name
                if name in seen:
                    check.problems.append(
                        AgentDefinitionError(
                            "AGENT_011",
                            f"{path}: agent name '{name}' is already used by {seen[name]}",
                            "give each agent a unique name",
                        )
                    )
                seen.setdefault(name, path)
            checks.append(check)
    return checks


def check_agent(
    path: Path, *, registry: Mapping[str, Capability] = TOOLKIT, source: str = ""
) -> AgentCheck:
    """Validate one agent file (or folder) and collect every problem."""
    if path.is_dir():
        found = _agent_file(path)
        if found is None:
            problem = AgentDefinitionError(
                "AGENT_001",
                f"{path} holds no {path.name}.yaml",
                "an agent folder <name>/ must hold <name>.yaml",
            )
            return AgentCheck(path=path, source=source, problems=[problem])
        path = found
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        problem = AgentDefinitionError(
            "AGENT_001", f"cannot resolve agent path {path}: {exc}", "check the path"
        )
        return AgentCheck(path=path, source=source, problems=[problem])
    check = AgentCheck(path=resolved, source=source)
    raw = _read(check)
    if raw is None:
        return check
    _Validator(check, raw, registry).run()
    return check


def _read(check: AgentCheck) -> _RawAgent | None:
    path = check.path
    try:
        text = read_regular_file(path, MAX_AGENT_FILE_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        check.problems.append(
            AgentDefinitionError(
                "AGENT_001", f"cannot read agent file {path}: {exc}", "check the path"
            )
        )
        return None
    try:
        data = safe_load_yaml(text)
    except YamlRefusedError as exc:
        check.problems.append(
            AgentDefinitionError("AGENT_002", f"{path} is refused: {exc.reason}", exc.hint)
        )
        return None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        check.problems.append(
            AgentDefinitionError(
                "AGENT_002", f"{path} is not valid YAML{where}", "fix the YAML syntax"
            )
        )
        return None
    if not isinstance(data, dict):
        check.problems.append(
            AgentDefinitionError(
                "AGENT_002",
                f"{path} must hold a mapping, got {type(data).__name__}",
                "start with 'name: <agent>' followed by applies_to, max_turns, "
                "initial_context and tools",
            )
        )
        return None
    try:
        return _RawAgent.model_validate(data)
    except ValidationError as exc:
        check.problems.extend(_schema_problems(path, data, exc))
        return None


def _schema_problems(
    path: Path, data: dict[str, Any], exc: ValidationError
) -> list[AgentDefinitionError]:
    problems: list[AgentDefinitionError] = []
    for error in exc.errors():
        loc = list(error["loc"])
        key = _key_path(data, loc)
        kind = error["type"]
        if kind == "missing":
            hint = f"add '{loc[-1]}'"
        elif kind == "extra_forbidden":
            hint = _unknown_key_hint(loc)
        else:
            hint = "see docs/writing-an-agent.md for the expected value"
        problems.append(AgentDefinitionError("AGENT_003", f"{path}: {key}: {error['msg']}", hint))
    return problems


def _key_path(data: dict[str, Any], loc: list[int | str]) -> str:
    """``tools[1] (echo).effect`` style path of a validation error."""
    parts: list[str] = []
    node: Any = data
    for part in loc:
        if isinstance(part, int):
            label = f"[{part}]"
            if isinstance(node, list) and part < len(node):
                node = node[part]
                if isinstance(node, dict) and isinstance(node.get("name"), str):
                    label += f" ({node['name']})"
            parts.append(label)
        else:
            parts.append(("." if parts else "") + part)
            node = node.get(part) if isinstance(node, dict) else None
    return "".join(parts) or "(top level)"


def _unknown_key_hint(loc: list[int | str]) -> str:
    model: type[BaseModel] = _RawAgent
    nested: dict[str, type[BaseModel]] = {
        "tools": _RawTool,
        "initial_context": InitialContext,
        "model": _RawModel,
        "expectation": Expectation,
        "calls": ExpectedCall,
    }
    for part in loc[:-1]:
        if isinstance(part, str) and part in nested:
            model = nested[part]
    known = sorted(model.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    return f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(known)}"


class _PermissiveOptions(dict[str, Any]):
    """Stands in for operation options when trial-rendering: any key has a value."""

    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def _environment() -> SandboxedEnvironment:
    return SandboxedEnvironment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
    )


_SAMPLE_VARIABLES: dict[str, Any] = {
    "node_text": "def example():\n    return 1\n",
    "node_name": "example",
    "node_type": "function",
    "file_path": "pkg/module.py",
    "qualname": "example",
    "node_id": "0123456789abcdef",
    "workspace_id": "ws-example",
    "operation": "example",
}


def _template_problem(source: str) -> tuple[str, str] | None:
    """``(message suffix, hint)`` when a template does not compile or names an unknown
    variable; rendered with sample values since undefined names only show when rendering."""
    try:
        template = _environment().from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        return f" line {exc.lineno}: {exc.message}", "fix the Jinja2 syntax"
    variables = {**_SAMPLE_VARIABLES, "options": _PermissiveOptions()}
    try:
        template.render(**variables)
    except jinja2.UndefinedError as exc:
        return f": {exc.message}", f"available variables: {', '.join(NODE_CONTEXT_VARIABLES)}"
    except jinja2.TemplateError as exc:
        return f": {exc}", "fix the template"
    except (TypeError, ValueError, ArithmeticError):
        # Sample values cannot satisfy every expression; only names are checked here.
        return None
    return None


class _Validator:
    """Turns a schema-valid raw agent into a definition, collecting every rule violation."""

    def __init__(
        self, check: AgentCheck, raw: _RawAgent, registry: Mapping[str, Capability]
    ) -> None:
        self.check = check
        self.raw = raw
        self.registry = registry
        self.path = check.path
        self.directory = check.path.parent

    def problem(self, code: str, message: str, hint: str) -> None:
        self.check.problems.append(AgentDefinitionError(code, f"{self.path}: {message}", hint))

    def run(self) -> None:
        self._tool_set()
        self._template()
        adapter = self._adapter()
        inputs: dict[str, dict[str, bool] | None] = {}
        tools = [self._tool(index, raw, inputs) for index, raw in enumerate(self.raw.tools)]
        self._expectation(inputs)
        self.check.definition = SubagentDefinition(
            name=self.raw.name,
            applies_to=self.raw.applies_to,
            max_turns=self.raw.max_turns,
            model=adapter,
            initial_context=self.raw.initial_context,
            tools=tools,
            directory=self.directory,
            precheck=self._precheck(),
            opening=self._opening(tools),
            expectation=self.raw.expectation,
        )
        self.check.definition._capabilities = self.registry

    def _opening(self, tools: Sequence[ToolDefinition]) -> list[str]:
        steps = {tool.name for tool in tools if tool.host_step}
        for name in self.raw.opening:
            if name not in steps:
                self.problem(
                    "AGENT_016",
                    f"opening: {name} is not a tool marked 'step: host'",
                    "list only host steps in 'opening'",
                )
        return list(self.raw.opening)

    def _precheck(self) -> Path | None:
        if self.raw.precheck is None:
            return None
        path = (self.directory / self.raw.precheck).resolve()
        script = self._script("precheck", path)
        if script is not None and script.model_inputs:
            names = ", ".join(decl.name for decl in script.model_inputs)
            self.problem(
                "AGENT_013",
                f"precheck: {path.name} declares inputs no one can fill: {names}",
                "a precheck runs without the model: declare only system inputs",
            )
        return path

    def _tool_set(self) -> None:
        names = [tool.name for tool in self.raw.tools]
        for name in sorted({name for name in names if names.count(name) > 1}):
            self.problem("AGENT_004", f"tools: '{name}' is defined twice", "rename one of them")
        terminal = [tool.name for tool in self.raw.tools if tool.effect == "terminal"]
        if terminal != [TERMINAL_TOOL]:
            found = ", ".join(terminal) or "none"
            self.problem(
                "AGENT_004",
                f"tools: exactly one terminal tool named {TERMINAL_TOOL} is required "
                f"(terminal tools: {found})",
                f"add '- name: {TERMINAL_TOOL}' with 'effect: terminal' and make the "
                "other tools read or write",
            )
        elif TERMINAL_TOOL not in names:
            self.problem("AGENT_004", f"tools: no {TERMINAL_TOOL} tool", "add one")

    def _template(self) -> None:
        problem = _template_problem(self.raw.initial_context.node_context)
        if problem is not None:
            message, hint = problem
            self.problem("AGENT_005", f"initial_context.node_context{message}", hint)

    def _expectation(self, inputs: Mapping[str, Mapping[str, bool] | None]) -> None:
        """AGENT_014 for an expectation the harness could not check against real calls."""
        if self.raw.expectation is None:
            return
        calls = self.raw.expectation.calls
        for index, expected in enumerate(calls):
            where = f"expectation.calls[{index}] ({expected.tool})"
            if expected.tool not in inputs:
                close = difflib.get_close_matches(expected.tool, list(inputs), n=1)
                self.problem(
                    "AGENT_014",
                    f"{where}: the agent has no tool '{expected.tool}'",
                    f"did you mean '{close[0]}'?"
                    if close
                    else f"its tools are: {', '.join(inputs)}",
                )
                continue
            known = inputs[expected.tool]
            for name, value in expected.arguments.items():
                if known is not None and name not in known:
                    self.problem(
                        "AGENT_014",
                        f"{where}.arguments: '{name}' is not an input the model passes to "
                        f"{expected.tool}",
                        f"its model-facing inputs: {', '.join(sorted(known)) or 'none'}",
                    )
                if isinstance(value, str) and value != ANY_VALUE:
                    problem = _template_problem(value)
                    if problem is not None:
                        message, hint = problem
                        self.problem("AGENT_014", f"{where}.arguments.{name}{message}", hint)
            for name, required in (known or {}).items():
                if required and name not in expected.arguments:
                    self.problem(
                        "AGENT_014",
                        f"{where}.arguments: '{name}' is required by {expected.tool}, so no "
                        "call could match without it",
                        f"give its expected value, or '{name}: {ANY_VALUE}'",
                    )
        if calls[-1].tool != TERMINAL_TOOL or any(
            expected.tool == TERMINAL_TOOL for expected in calls[:-1]
        ):
            self.problem(
                "AGENT_014",
                f"expectation.calls: a correct episode ends with {TERMINAL_TOOL}, and only "
                "the last expected call names it",
                f"make '- tool: {TERMINAL_TOOL}' the last call",
            )

    def _adapter(self) -> Path | None:
        if self.raw.model is None or self.raw.model.adapter is None:
            return None
        adapter = (self.directory / self.raw.model.adapter).resolve()
        if not adapter.is_file():
            self.problem(
                "AGENT_006",
                f"model.adapter: {adapter} does not exist",
                "put the adapter GGUF at that path or remove the 'model' key to use the base "
                "model (docs/writing-an-agent.md)",
            )
        return adapter

    def _tool(
        self, index: int, raw: _RawTool, inputs: dict[str, dict[str, bool] | None]
    ) -> ToolDefinition:
        """The resolved tool; records its model-facing inputs, name to required (None when
        the script is unreadable)."""
        where = f"tools[{index}] ({raw.name})"
        pym = (self.directory / raw.pym).resolve()
        providers = [(self.directory / item).resolve() for item in raw.context_providers]
        description = raw.description
        script = self._script(f"{where}.pym", pym)
        inputs[raw.name] = (
            {decl.name: decl.required for decl in script.model_inputs} if script else None
        )
        if script is not None:
            description = description or _first_paragraph(script.doc)
            problems = override_problems(script, raw.inputs_override)
            for text in problems:
                self.problem(
                    "AGENT_008",
                    f"{where}.inputs_override: {text}",
                    "override only the model-facing inputs the script declares",
                )
        required = [decl.name for decl in script.model_inputs if decl.required] if script else []
        if raw.step == "host" and required:
            self.problem(
                "AGENT_016",
                f"{where}: a host step is called without arguments, but it requires "
                f"{', '.join(required)}",
                "give those inputs defaults or make it a model step (step: model)",
            )
        for number, provider in enumerate(providers):
            provider_script = self._script(f"{where}.context_providers[{number}]", provider)
            if provider_script is None:
                continue
            tool_inputs = {decl.name for decl in script.model_inputs} if script else set()
            for decl in provider_script.inputs:
                if decl.required and decl.name not in {*SYSTEM_INPUTS, *tool_inputs}:
                    self.problem(
                        "AGENT_009",
                        f"{where}.context_providers[{number}]: {provider.name} needs "
                        f"'{decl.name}', which is neither a system input nor an input of "
                        f"{raw.name}",
                        "give it a default or declare a matching input",
                    )
        return ToolDefinition(
            name=raw.name,
            pym=pym,
            description=description,
            effect=raw.effect,
            inputs_override=raw.inputs_override,
            context_providers=providers,
            when_option=raw.when_option,
            host_step=raw.step == "host",
            screen=self._screen(where, raw, script),
        )

    def _screen(self, where: str, raw: _RawTool, script: PymScript | None) -> ScriptTool | None:
        """The tool's screen, checked: its model-facing inputs must be the tool's own
        (AGENT_017), since it is called with the arguments of the tool's call."""
        if raw.screen is None:
            return None
        path = (self.directory / raw.screen).resolve()
        screen = self._script(f"{where}.screen", path)
        if screen is None or script is None:
            return None
        tool_inputs = {decl.name for decl in script.model_inputs}
        foreign = [decl.name for decl in screen.model_inputs if decl.name not in tool_inputs]
        if foreign:
            self.problem(
                "AGENT_017",
                f"{where}.screen: {path.name} takes {', '.join(foreign)}, which {raw.name} "
                "does not",
                "a screen is called with the arguments of the tool's call: declare only its inputs",
            )
            return None
        return ScriptTool(name=f"{raw.name}.screen", pym=path)

    def _script(self, where: str, path: Path) -> PymScript | None:
        """The checked script at ``path`` or None, recording problems."""
        try:
            script, diagnostics = check_script_file(path, self.registry)
        except AgentDefinitionError as exc:
            self.problem("AGENT_006", f"{where}: {exc.message}", exc.hint or "")
            return None
        if diagnostics:
            lines = "; ".join(diagnostic.render() for diagnostic in diagnostics)
            self.problem(
                "AGENT_007",
                f"{where}: {path.name} fails the .pym checker: {lines}",
                "fix the script; 'remora validate-agents' lists every problem",
            )
            return None
        return script
