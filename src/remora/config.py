"""RemoraConfig: one validated model, loaded from layered sources.

Precedence, highest first: CLI flags (``--set section.key=value`` and dedicated
flags) > environment (``REMORA_SECTION__KEY``) > ``remora.yaml`` or
``[tool.remora]`` in ``pyproject.toml`` (searched upward from the target) >
defaults. Every leaf remembers which layer set it, so ``remora config --sources``
can explain the effective value.
"""

from __future__ import annotations

import copy
import difflib
import errno
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from remora.errors import ConfigError
from remora.regular_files import read_regular_file

NodeType = Literal["file", "class", "function", "method"]
NODE_TYPES: tuple[NodeType, ...] = ("file", "class", "function", "method")

CONFIG_FILENAMES = ("remora.yaml", "remora.yml")
ENV_PREFIX = "REMORA_"
ENV_CONFIG_FILE = "REMORA_CONFIG"
USER_CONFIG = ("remora", "remora.yaml")
"""The user's own config, under ``$XDG_CONFIG_HOME`` (default ``~/.config``)."""
TRUSTED_ONLY = (
    "tools.isolation",
    "tools.python",
    "tools.timeout",
    "tools.call_timeout",
    "tools.subprocess_timeout",
    "tools.max_memory_mb",
    "tools.max_recursion_depth",
    "tools.max_process_memory_mb",
    "tools.max_file_mb",
    "tools.max_processes",
    "tools.max_result_chars",
    "model.backend",
    "model.base_url",
    "model.api_key_env",
    "executor.kind",
    "executor.ray_address",
    "executor.ray_project",
)
"""Settings that weaken isolation (its level, the interpreter, the limits) or reach the
network (a model server, and which secret is sent to it; a Ray cluster, which would get the
project's code and run its jobs): taken from the command line, the environment and the
user's own config only, never from a file inside the project, which a cloned repository
controls."""
MAX_CONFIG_BYTES = 1024 * 1024
"""Largest config file read (a FIFO or device named like one is refused, not read)."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


class DiscoveryConfig(_Section):
    """Which files and nodes discovery yields."""

    query_packs: list[str] = Field(default_factory=lambda: ["core"], min_length=1)
    node_types: list[NodeType] = Field(default_factory=lambda: list(NODE_TYPES))
    respect_gitignore: bool = True
    ignore: list[str] = Field(
        default_factory=list, description="Extra gitignore-style patterns to skip."
    )
    max_file_bytes: int = Field(default=1_000_000, gt=0)
    follow_symlinks: bool = False
    parse_timeout: float = Field(
        default=5.0, gt=0, description="Seconds to parse and query one file before giving up."
    )


class ModelConfig(_Section):
    """Which model answers and how it is run."""

    backend: Literal["llama_cpp", "openai"] = "llama_cpp"
    path: Path | None = Field(
        default=None, description="GGUF file; unset means the embedded Gemma 3 270M."
    )
    use_adapters: bool = True
    adapters: dict[str, Path] = Field(
        default_factory=dict,
        description="Per agent name, a LoRA adapter GGUF to use instead of the agent's own "
        "(a candidate to try, as remora train gate does).",
    )
    context_size: int = Field(default=8192, ge=512)
    max_tokens: int = Field(default=384, ge=16)
    threads: int | None = Field(default=None, ge=1)
    lanes: int | None = Field(
        default=None,
        ge=1,
        description="llama.cpp contexts decoding side by side (llama_cpp); unset means one "
        "per model.threads usable CPUs, at most 4.",
    )
    batch_size: int = Field(default=512, ge=16)
    extra_buffers: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="llama.cpp's extra CPU buffer types (weight repacking, AMX tiles): auto "
        "probes once per machine, build and model in a child process and turns them off if "
        "loading with them crashes (remora doctor shows the verdict); on/off skip the probe.",
    )
    grammar: bool = Field(
        default=True,
        description="Constrain tool calls with the call grammar (in-process, and on a server "
        "in completions mode).",
    )
    jump_forward: bool = Field(
        default=True,
        description="Append the text the call grammar forces without sampling it (llama_cpp).",
    )
    base_url: str = "http://127.0.0.1:8000/v1"
    model_id: str = "remora"
    api_key_env: str = "REMORA_OPENAI_API_KEY"
    request_timeout: float = Field(
        default=120.0,
        gt=0,
        description="Seconds one request to an OpenAI-compatible server may take in all "
        "(connect, send, the whole reply); each retry gets as long again.",
    )
    max_retries: int = Field(
        default=3,
        ge=0,
        description="Retries after a connection error, 429 or 5xx; a request that timed out "
        "is retried at most once.",
    )
    openai_mode: Literal["completions", "chat"] = Field(
        default="completions",
        description="completions: Remora's FunctionGemma prompt with the call grammar, the "
        "same calls as in-process; chat: chat completions with native tools, for servers "
        "without /completions.",
    )
    server_grammar: Literal["llama_cpp", "vllm", "vllm_guided", "none"] = Field(
        default="llama_cpp",
        description="How completions mode sends the call grammar: llama_cpp (grammar, "
        "llama.cpp's servers), vllm (structured_outputs, vLLM 0.11+), vllm_guided "
        "(guided_grammar, older vLLM), none.",
    )

    def adapter_for(self, agent: str, own: Path | None) -> Path | None:
        """The LoRA adapter agent ``agent`` runs with: a candidate named under ``adapters``,
        else its own (``own``, from its definition); None with adapters off or neither."""
        chosen = self.adapters.get(agent, own)
        return chosen if self.use_adapters else None


class OperationConfig(_Section):
    """One operation (agent) as the user configured it."""

    enabled: bool = True
    agent: str | None = Field(default=None, description="Agent name; defaults to the operation.")
    model_id: str | None = Field(
        default=None, description="Model id for this operation on an OpenAI-compatible server."
    )
    options: dict[str, Any] = Field(default_factory=dict)


class RunnerConfig(_Section):
    """The agent loop: turn limits, sampling and stall guards."""

    max_turns: int | None = Field(default=None, ge=1, description="Overrides each agent's own.")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    tool_choice: Literal["auto", "required"] = "required"
    read_only_nudge_after: int = Field(default=2, ge=1)
    read_only_force_after: int = Field(default=3, ge=1)
    max_repeats: int = Field(default=2, ge=1)
    max_requeries: int = Field(default=2, ge=0)
    job_timeout: float = Field(default=600.0, gt=0)
    concurrency: int = Field(default=2, ge=1)
    candidates: int = Field(
        default=1,
        ge=1,
        le=16,
        description="Answers asked of the model at a decision whose tool the host can screen "
        "(the docstring summary): the greedy one and samples, each checked by the host; the "
        "greedy one is used when it passes, else the passing sample closest to the other "
        "passing ones, when one supports it. 1 (the default, docs/evaluation.md) asks for one "
        "greedy answer.",
    )
    candidate_temperature: float = Field(
        default=0.8, gt=0.0, le=2.0, description="Temperature of the sampled candidates."
    )


class ToolsConfig(_Section):
    """Limits for sandboxed .pym scripts and the subprocesses capabilities start."""

    timeout: float = Field(
        default=10.0, gt=0, description="Seconds a .pym script itself may execute."
    )
    call_timeout: float = Field(
        default=180.0,
        gt=0,
        description="Wall-clock seconds one whole tool call may take: script, sleeps, host "
        "capabilities and the commands they run (the job's own deadline also bounds it).",
    )
    max_memory_mb: int = Field(default=128, ge=8)
    max_recursion_depth: int = Field(default=200, ge=10)
    workers: int = Field(default=2, ge=1)
    subprocess_timeout: float = Field(default=60.0, gt=0)
    isolation: Literal["auto", "bwrap", "landlock", "none"] = Field(
        default="auto",
        description="How project code is isolated: auto = bwrap, else landlock, else refuse.",
    )
    python: str | None = Field(
        default=None,
        description="The project's Python, which runs its code (calls, pytest, coverage); "
        "null: $VIRTUAL_ENV, then .venv/ or venv/ in the project, else Remora's own.",
    )
    max_process_memory_mb: int = Field(
        default=2048, ge=64, description="Address space of each process that runs project code."
    )
    max_file_mb: int = Field(
        default=64, ge=1, description="Largest file project code may write (also the /tmp size)."
    )
    max_processes: int = Field(
        default=128, ge=4, description="Processes project code may run at once."
    )
    max_result_chars: int = Field(
        default=16_000,
        ge=1_000,
        description="Longest tool result the model is shown; longer results are cut, with a note.",
    )


class WorkspaceConfig(_Section):
    """Where workspaces, run manifests and views live."""

    state_dir: str = Field(default=".remora", description="Relative to the project root.")
    keep_views: bool = False
    max_read_mb: int = Field(default=64, ge=1, description="Largest file a tool may read.")
    max_mb: int = Field(
        default=256,
        ge=1,
        description="Most data one workspace may hold: changed files plus the originals "
        "kept for merging.",
    )


class EventsConfig(_Section):
    """Structured event stream and transcripts."""

    enabled: bool = True
    path: Path | None = Field(default=None, description="JSONL file; default <state>/events.jsonl")
    transcript: bool = False


class WatchConfig(_Section):
    """``remora watch``."""

    debounce_ms: int = Field(default=400, ge=0)


class ExecutorConfig(_Section):
    """Where a run's jobs run: this process, or the workers of a Ray cluster (docs/cluster.md)."""

    kind: Literal["local", "ray"] = Field(
        default="local",
        description="local: this process, runner.concurrency jobs at a time; ray: Ray "
        "workers, each with its own model (needs the ray extra: pip install 'remora[ray]').",
    )
    ray_address: str | None = Field(
        default=None,
        description="The Ray cluster: none starts a local Ray instance for the run; auto joins "
        "the one 'ray start --head' began on this machine; else ray://host:10001 or host:6379.",
    )
    ray_workers: int | None = Field(
        default=None,
        ge=1,
        description="Worker processes, one job and one model each (default: the cluster's CPUs).",
    )
    ray_project: Literal["shared", "upload"] = Field(
        default="shared",
        description="How workers see the project: shared, at the driver's path (one machine, "
        "or a shared filesystem); upload, as Ray's runtime_env working_dir.",
    )


class AgentsConfig(_Section):
    """Where agent definitions come from besides the bundled ones."""

    dirs: list[Path] = Field(default_factory=list)


class RemoraConfig(_Section):
    """The whole effective configuration."""

    discovery: DiscoveryConfig = Field(default_factory=DiscoveryConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    operations: dict[str, OperationConfig] = Field(
        default_factory=dict,
        description="By name; the installed operations' defaults come first "
        "(remora.operations), the user's files change or add to them.",
    )
    runner: RunnerConfig = Field(default_factory=RunnerConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    events: EventsConfig = Field(default_factory=EventsConfig)
    watch: WatchConfig = Field(default_factory=WatchConfig)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    agents: AgentsConfig = Field(default_factory=AgentsConfig)

    @field_validator("operations")
    @classmethod
    def _operation_names(cls, value: dict[str, OperationConfig]) -> dict[str, OperationConfig]:
        for name in value:
            if not name.isidentifier():
                raise ValueError(f"operation name {name!r} must be an identifier")
        return value

    def enabled_operations(self) -> list[str]:
        return [name for name, op in self.operations.items() if op.enabled]

    def agent_of(self, operation: str) -> str:
        """The agent that runs ``operation``: its ``agent`` setting, else the agent of the
        same name."""
        settings = self.operations.get(operation)
        return (settings.agent if settings is not None else None) or operation


DEFAULT_SOURCE = "default"


@dataclass
class LoadedConfig:
    """The effective config plus where each leaf value came from."""

    config: RemoraConfig
    sources: dict[str, str] = field(default_factory=dict)
    file: Path | None = None
    warnings: list[str] = field(default_factory=list)
    """What was ignored and why, for the user to read before any work."""

    def source_of(self, key: str) -> str:
        """Where ``key`` (or the nearest value above it) was set."""
        parts = key.split(".")
        while parts:
            found = self.sources.get(".".join(parts))
            if found is not None:
                return found
            parts.pop()
        return DEFAULT_SOURCE


def user_config_file(environ: Mapping[str, str]) -> Path | None:
    """The user's own ``remora.yaml`` (``$XDG_CONFIG_HOME/remora``, else
    ``$HOME/.config/remora``), when it exists; none without either variable."""
    base = environ.get("XDG_CONFIG_HOME") or (
        str(Path(environ["HOME"]) / ".config") if environ.get("HOME") else ""
    )
    if not base:
        return None
    path = Path(base).joinpath(*USER_CONFIG)
    return path if path.is_file() else None


def _without_trusted_only(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` without the :data:`TRUSTED_ONLY` settings, and the ones it had."""
    ignored: list[str] = []
    kept = copy.deepcopy(data)
    for key in TRUSTED_ONLY:
        section, _, name = key.partition(".")
        table = kept.get(section)
        if isinstance(table, dict) and name in table:
            del table[name]
            ignored.append(key)
            if not table:
                del kept[section]
    return kept, ignored


def _ignored_warning(path: Path, ignored: list[str]) -> str:
    return (
        f"CONFIG_010: {path} sets {', '.join(ignored)}, which a file inside the project may "
        "not set: ignored (settings that weaken isolation or reach the network come only from "
        "--set, --config, REMORA_* variables or your own ~/.config/remora/remora.yaml)"
    )


def find_config_file(start: Path) -> Path | None:
    """The nearest ``remora.yaml``/``remora.yml`` or pyproject with ``[tool.remora]``.

    A target that cannot be resolved (a symlink loop) is a CONFIG_001 error rather than a
    traceback; a ``pyproject.toml`` on the way up that does not parse is a CONFIG_002 error,
    since it may hold the ``[tool.remora]`` table the user meant to apply.
    """
    try:
        start = start.resolve()
        directory = start if start.is_dir() else start.parent
    except (OSError, RuntimeError) as exc:  # RuntimeError: "Symlink loop" (Python < 3.13)
        raise ConfigError(
            "CONFIG_001",
            f"cannot search for a config file from {os.path.abspath(start)}: "
            f"{_resolve_reason(exc)}",
            "fix or remove the link, or name the config file with --config",
        ) from None
    for candidate in (directory, *directory.parents):
        for name in CONFIG_FILENAMES:
            path = candidate / name
            if path.is_file():
                return path
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file() and _pyproject_has_remora(pyproject):
            return pyproject
    return None


def _resolve_reason(exc: BaseException) -> str:
    if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
        return "symbolic link loop"
    return getattr(exc, "strerror", None) or str(exc)


def _pyproject_has_remora(path: Path) -> bool:
    """Whether ``path`` holds ``[tool.remora]``; a file that does not parse is an error."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            "CONFIG_002",
            f"{path} is not valid UTF-8 TOML: {exc.reason} at byte {exc.start}",
            "fix the file's encoding; Remora reads [tool.remora] from it",
        ) from None
    except OSError as exc:
        raise ConfigError(
            "CONFIG_001",
            f"cannot read {path}: {exc.strerror or exc}",
            "check its permissions, or name the config file with --config",
        ) from None
    data = _load_toml(
        path,
        text,
        "fix the TOML syntax; Remora reads [tool.remora] from it, or name another "
        "config file with --config",
    )
    return isinstance(data.get("tool"), dict) and "remora" in data["tool"]


def _load_toml(path: Path, text: str, hint: str) -> dict[str, Any]:
    """The TOML document, CONFIG_002 when it does not parse; tomllib recurses once per
    nesting level, so ``a = [[[...]]]`` 3,000 deep is a ``RecursionError`` caught here."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("CONFIG_002", f"{path} is not valid TOML: {exc}", hint) from None
    except RecursionError:
        raise ConfigError(
            "CONFIG_002", f"{path} is nested too deeply to read", _DEPTH_HINT
        ) from None


def read_config_file(path: Path) -> dict[str, Any]:
    """Parse one config file into a plain dict, with CONFIG_xxx errors."""
    try:
        text = read_regular_file(path, MAX_CONFIG_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(
            "CONFIG_001", f"config file {path} does not exist", "check the --config path"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            "CONFIG_001", f"cannot read config file {path}: {exc}", "check permissions and encoding"
        ) from None
    if path.name == "pyproject.toml":
        tool = _load_toml(path, text, "fix the TOML syntax").get("tool", {})
        data: Any = tool.get("remora", {}) if isinstance(tool, dict) else {}
    else:
        try:
            data = safe_load_yaml(text)
        except YamlRefusedError as exc:
            raise ConfigError("CONFIG_002", f"{path} is refused: {exc.reason}", exc.hint) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            raise ConfigError(
                "CONFIG_002", f"{path} is not valid YAML{where}", "fix the YAML syntax"
            ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            "CONFIG_002",
            f"{path} must hold a mapping of sections, got {type(data).__name__}",
            "start the file with a section such as 'runner:'",
        )
    if _too_deep(data):
        raise ConfigError(
            "CONFIG_002", f"{path} is nested more than {MAX_CONFIG_DEPTH} levels deep", _DEPTH_HINT
        )
    return _anchor_paths(data, path.parent.resolve())


MAX_CONFIG_DEPTH: Final = 32
"""Deepest nesting of mappings and lists a config layer may have (the settings need 4).
Merging, flattening and validating recurse once per level: a deeper layer is refused first."""

_DEPTH_HINT = f"Remora's settings nest at most a few levels; keep it under {MAX_CONFIG_DEPTH}"


def _too_deep(data: Any) -> bool:
    """Whether mappings and lists in ``data`` nest more than :data:`MAX_CONFIG_DEPTH` deep
    (walked with a stack: the check itself must not recurse)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_CONFIG_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


YAML_ALIAS_EXPANSION_LIMIT: Final = 10_000
"""Values YAML aliases may add beyond those written out: bounds a "billion laughs" file,
which costs nothing to parse but explodes when merged, validated and printed."""


class YamlRefusedError(yaml.YAMLError):
    """YAML refused before it is built: aliases that expand past
    :data:`YAML_ALIAS_EXPANSION_LIMIT` or refer to themselves, or nesting too deep to compose.
    Every loader of user YAML (config, agent definitions) reports it under its own code."""

    def __init__(self, reason: str, hint: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


_ALIAS_HINT = (
    f"anchors and aliases may repeat at most {YAML_ALIAS_EXPANSION_LIMIT} values "
    "and may not refer to themselves; write the values out"
)


class _BoundedLoader(yaml.SafeLoader):
    """``SafeLoader`` that checks each composed document's alias expansion before building it."""

    def compose_document(self) -> yaml.Node | None:
        node: yaml.Node | None = super().compose_document()
        if node is not None:
            _check_expansion(node)
        return node


def safe_load_yaml(text: str) -> Any:
    """``yaml.safe_load`` with the alias expansion and nesting bounds: a "billion laughs" or
    a ``[[[[...`` file raises :class:`YamlRefusedError` quickly instead of taking minutes
    and gigabytes (or a ``RecursionError``). Other syntax errors stay ``yaml.YAMLError``."""
    try:
        return yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader subclass: safe
    except RecursionError:
        raise YamlRefusedError("it is nested too deeply to read", "flatten the YAML") from None


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: yaml.Node) -> None:
    """Raise :class:`YamlRefusedError` if aliases cycle or would add too many values when expanded.

    Composed nodes are shared by every alias to them, so the graph is as small as the text;
    its expanded size is counted bottom-up once per distinct node (iteratively: no recursion).
    """
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            continue
        if key in sizes:
            continue
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                mark = child.start_mark
                raise YamlRefusedError(
                    f"an alias at line {mark.line + 1} refers to itself", _ALIAS_HINT
                )
            if id(child) not in sizes:
                stack.append((child, False))
    added = sizes[id(root)] - len(sizes)
    if added > YAML_ALIAS_EXPANSION_LIMIT:
        raise YamlRefusedError(
            f"its aliases expand to {added} more values than are written out", _ALIAS_HINT
        )


_PATH_KEYS = (("model", "path"), ("events", "path"))
_PATH_LIST_KEYS = (("agents", "dirs"),)


def _anchor_paths(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """Relative paths in a config file mean relative to that file, not to the cwd."""

    def anchor(value: Any) -> Any:
        if isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
            return str(base / value)
        return value

    for section, key in _PATH_KEYS:
        block = data.get(section)
        if isinstance(block, dict) and key in block:
            block[key] = anchor(block[key])
    for section, key in _PATH_LIST_KEYS:
        block = data.get(section)
        if isinstance(block, dict) and isinstance(block.get(key), list):
            block[key] = [anchor(item) for item in block[key]]
    return data


def parse_scalar(text: str) -> Any:
    """Interpret a flag or environment value the way YAML would (``4``, ``true``, ``[a, b]``)."""
    try:
        return safe_load_yaml(text) if text.strip() else text
    except yaml.YAMLError:
        return text


def parse_assignments(assignments: list[str]) -> dict[str, Any]:
    """Turn ``["runner.max_turns=4"]`` into a nested dict."""
    result: dict[str, Any] = {}
    for item in assignments:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise ConfigError(
                "CONFIG_004",
                f"cannot parse --set {item!r}",
                "use --set section.key=value, e.g. --set runner.max_turns=4",
            )
        _set_path(result, key.split("."), parse_scalar(value))
    return result


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """Config values from ``REMORA_SECTION__KEY`` variables (``__`` separates levels)."""
    result: dict[str, Any] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        parts = [part.lower() for part in name[len(ENV_PREFIX) :].split("__")]
        if any(not part for part in parts):
            raise ConfigError(
                "CONFIG_004",
                f"cannot parse environment variable {name}",
                "use REMORA_SECTION__KEY, e.g. REMORA_RUNNER__MAX_TURNS=4",
            )
        _set_path(result, parts, parse_scalar(value))
    return result


def _set_path(target: dict[str, Any], parts: list[str], value: Any) -> None:
    node = target
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[parts[-1]] = value


def deep_merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``override`` into a copy of ``base``; mappings merge, everything else replaces."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = dict(value) if isinstance(value, Mapping) else value
    return merged


def flatten_keys(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten_keys(value, path + "."))
        else:
            out[path] = value
    return out


def load_config(
    target: Path | None = None,
    *,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    operations: Mapping[str, OperationConfig] | None = None,
) -> LoadedConfig:
    """Build the effective config for ``target`` from every layer.

    ``config_file`` (or ``$REMORA_CONFIG``) replaces the upward search. ``operations`` are
    the defaults of the installed operations (``remora.operations``), the bottom layer.
    """
    environ = os.environ if environ is None else environ
    if config_file is None and environ.get(ENV_CONFIG_FILE):
        config_file = Path(environ[ENV_CONFIG_FILE])
    trusted = config_file is not None
    if config_file is None:
        config_file = find_config_file(target or Path.cwd())
    layers: list[tuple[str, dict[str, Any]]] = []
    warnings: list[str] = []
    user_file = user_config_file(environ)
    if user_file is not None and user_file != config_file:
        layers.append((str(user_file), read_config_file(user_file)))
    if config_file is not None:
        data = read_config_file(config_file)
        if not trusted:
            data, ignored = _without_trusted_only(data)
            if ignored:
                warnings.append(_ignored_warning(config_file, ignored))
        layers.append((str(config_file), data))
    layers.append(("environment", env_overrides(environ)))
    layers.append(("flag", dict(overrides or {})))
    for (_, data), what in zip(
        layers[-2:], ("an environment variable", "a --set value"), strict=True
    ):
        if _too_deep(data):
            raise ConfigError(
                "CONFIG_004", f"{what} nests more than {MAX_CONFIG_DEPTH} levels deep", _DEPTH_HINT
            )

    base = RemoraConfig(operations=dict(operations or {}))
    merged: dict[str, Any] = base.model_dump(mode="json", exclude_none=True)
    for _, data in layers:
        merged = deep_merge(merged, data)
    config = _validate(merged, layers, known_operations=list(base.operations))

    sources: dict[str, str] = {}
    effective = flatten_keys(config.model_dump(mode="json"))
    for key in effective:
        sources[key] = DEFAULT_SOURCE
        for label, data in layers:
            for leaf in flatten_keys(data):
                if key == leaf or key.startswith(leaf + ".") or leaf.startswith(key + "."):
                    sources[key] = label
    return LoadedConfig(config=config, sources=sources, file=config_file, warnings=warnings)


def _validate(
    merged: dict[str, Any],
    layers: list[tuple[str, dict[str, Any]]],
    known_operations: Sequence[str] = (),
) -> RemoraConfig:
    try:
        return RemoraConfig.model_validate(merged)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = ".".join(str(part) for part in error["loc"])
        origin = "default"
        for label, data in layers:
            if _holds(data, error["loc"]):
                origin = label
        if error["type"] == "extra_forbidden":
            parent_loc, _, name = loc.rpartition(".")
            known = _known_keys(parent_loc, known_operations)
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(known)}"
            raise ConfigError(
                "CONFIG_005", f"unknown config key '{loc}' (from {origin})", hint
            ) from None
        count = len(exc.errors())
        more = f"; {count - 1} more problem(s)" if count > 1 else ""
        raise ConfigError(
            "CONFIG_003",
            f"invalid value for '{loc}' (from {origin}): {error['msg']}{more}",
            "docs/configuration.md lists every key with its type and default; "
            "'remora config --sources' shows the effective values",
        ) from None


def _holds(data: Any, loc: Sequence[Any]) -> bool:
    """Whether a layer's ``data`` sets the key at ``loc`` or a value above it (a scalar
    where a mapping belongs), whatever it holds (an unknown key may hold a mapping, an
    empty one or null)."""
    for part in loc:
        if not isinstance(data, dict):
            return True  # the layer set a value above ``loc``
        if str(part) not in data:
            return False
        data = data[str(part)]
    return True


def _known_keys(parent_loc: str, operations: Sequence[str] = ()) -> list[str]:
    """Valid key names under ``parent_loc``, for did-you-mean hints."""
    parts = parent_loc.split(".") if parent_loc else []
    model: type[BaseModel] = RemoraConfig
    index = 0
    while index < len(parts):
        if model is RemoraConfig and parts[index] == "operations":
            if index + 1 == len(parts):
                return sorted(operations)
            model, index = OperationConfig, index + 2
            continue
        info = model.model_fields.get(parts[index])
        annotation = info.annotation if info else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model, index = annotation, index + 1
    return sorted(model.model_fields)
