"""Errors a user can cause, each with a stable code, a message and a hint.

The CLI prints them as ``CODE: message (hint)`` and exits non-zero without a
traceback. Codes are part of the public contract: tests and scripts match on
them, so an existing code never changes meaning.
"""

from __future__ import annotations


class RemoraError(Exception):
    """Base of every error Remora raises on purpose."""

    prefix = "REMORA"
    exit_code = 1

    def __init__(self, code: str, message: str, hint: str | None = None) -> None:
        if not code.startswith(self.prefix + "_"):
            raise ValueError(f"{type(self).__name__} codes start with {self.prefix}_, got {code}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint

    def render(self) -> str:
        """The one-line form shown to users: ``CODE: message (hint)``."""
        text = f"{self.code}: {self.message}"
        return f"{text} ({self.hint})" if self.hint else text

    def __str__(self) -> str:
        return self.render()


class ConfigError(RemoraError):
    """A configuration file, environment variable or flag is invalid.

    CONFIG_001 unreadable file, CONFIG_002 malformed YAML/TOML, CONFIG_003 invalid
    value, CONFIG_004 bad ``--set`` or environment syntax, CONFIG_005 unknown key.
    """

    prefix = "CONFIG"
    exit_code = 2


class DiscoveryError(RemoraError):
    """A target path cannot be discovered at all (per-file problems are reported, not raised).

    DISC_001 path does not exist, DISC_002 not a Python file or directory, DISC_003 query
    pack missing or invalid (a pattern with more than one root included), DISC_004 a
    ``file.py::name`` target names no node of its file. Per-file problems (DISC_101-108)
    are ``remora.discovery.DiscoveryProblem``s.
    """

    prefix = "DISC"
    exit_code = 2


class AgentDefinitionError(RemoraError):
    """A subagent YAML file or one of its .pym scripts is invalid.

    AGENT_001 agent file/dir missing or unreadable, or no agents in a dir; AGENT_002 not
    valid YAML or not a mapping; AGENT_003 missing/unknown/invalid key; AGENT_004 tool-set
    rules (one terminal submit_result, unique names); AGENT_005 node_context does not
    compile or uses an unknown variable; AGENT_006 .pym or adapter file missing/unreadable;
    AGENT_007 .pym fails the checker; AGENT_008 inputs_override does not fit the script;
    AGENT_009 context provider input cannot be filled; AGENT_010 unknown tool name;
    AGENT_011 duplicate agent name in one directory; AGENT_012 node_context render failed;
    AGENT_013 a precheck script declares inputs only the model could fill; AGENT_014 the
    harness expectation names an unknown tool or input, or does not end in submit_result;
    AGENT_015 an installed operation (a ``remora.operations`` entry point) cannot be loaded,
    is not an Operation, or defines a capability another operation defines differently;
    AGENT_016 a host step (``step: host``) requires a model-facing input.
    """

    prefix = "AGENT"


class ToolError(RemoraError):
    """A tool or host capability failed in a way the caller must handle.

    TOOL_1xx-7xx are raised by host capabilities (see ``remora.tools.capabilities``);
    TOOL_8xx by the isolation of project code (``remora.tools.isolation``): TOOL_801 no
    isolation available, TOOL_802 the configured isolation is unavailable, TOOL_803 the
    sandbox could not be set up, TOOL_804 too many processes, TOOL_805 ``tools.python`` is
    no interpreter, TOOL_806 the project's interpreter lacks pytest or coverage, TOOL_807 a
    venv's ``pyvenv.cfg`` cannot be read as one, TOOL_808 its ``home`` would show the sandbox
    more than a Python installation (see ``remora.tools.interpreter``); TOOL_901 the tool sandbox
    (Monty worker pool) cannot start.
    """

    prefix = "TOOL"


class WorkspaceError(RemoraError):
    """A workspace, review or run-manifest operation failed (WS_xxx).

    WS_001 invalid path or one escaping the project, WS_002 unknown or malformed
    workspace id, WS_003 workspace in the wrong state (accept twice, undo before accept,
    reject after accept), WS_004 accept refused: conflict with changes made in the
    project since, WS_005 undo refused: the file changed since the accept, WS_006 path
    clash (a directory or file in the way, or Remora's state directory), WS_007 workspace
    storage unreadable, WS_008 interactive review needs a terminal, WS_009 unknown run
    id or no runs, WS_010 run manifest unreadable, WS_011 review lock held by another
    process too long, WS_012 workspace already exists, WS_013 workspace used after
    close, WS_014 an interrupted accept/undo cannot be completed (or its files were
    applied but recording it failed; the next command finishes it), WS_015 no space left
    on the device (disk or quota full) writing the project or Remora's state, WS_016 a
    workspace database locked by another process past the busy timeout, WS_017 a project
    file or directory, or Remora's state, cannot be written or read (read-only, immutable,
    permission denied, I/O error), WS_018 a write would take a workspace past
    ``workspace.max_mb``, WS_019 a write or delete (or an accept) in a version-control
    directory (``.git``, ``.hg``, ``.svn``, ``.bzr``), which no workspace may change,
    WS_020 review's editor (``$VISUAL``/``$EDITOR``) cannot be run: it does not split
    into a command (an unbalanced quote) or is not found.
    """

    prefix = "WS"


class ModelError(RemoraError):
    """A model backend cannot serve requests: missing GGUF, server down (MODEL_xxx)."""

    prefix = "MODEL"


class RunnerError(RemoraError):
    """The agent loop or a run cannot start or continue.

    RUN_001 bad tools or settings; RUN_002 no valid submit within the turn limit; RUN_003
    too many unusable replies in a row; RUN_004 cancelled; RUN_005 job timeout; RUN_010
    bad harness variants file; RUN_011 unknown harness variant; RUN_012 no nodes the agent
    applies to; RUN_013 bad harness request/concurrency counts; RUN_014 unknown harness agent;
    RUN_020 an operation cannot run (unknown, or no agent); RUN_021 nothing to run; RUN_022
    every job of a run failed; RUN_023 ``--changed`` outside a git repository (or without
    git); RUN_024 ``--changed`` names no revision; RUN_026 ``--executor ray`` without Ray
    installed; RUN_027 a Ray worker's copy of the project is stale; RUN_028 a Ray worker
    died, and so did its retries; RUN_029 a Ray worker could not start. The usage errors
    (RUN_010-014, RUN_020, RUN_021, RUN_023, RUN_024, RUN_026) exit 2.
    """

    prefix = "RUN"
    usage_codes = frozenset(
        {
            *("RUN_010", "RUN_011", "RUN_012", "RUN_013", "RUN_014"),
            *("RUN_020", "RUN_021", "RUN_023", "RUN_024", "RUN_026"),
        }
    )

    def __init__(self, code: str, message: str, hint: str | None = None) -> None:
        super().__init__(code, message, hint)
        self.exit_code = 2 if code in self.usage_codes else 1


class EvalError(RemoraError):
    """``remora eval`` cannot set up its run.

    EVAL_001 the package spec is neither an existing path nor a valid pip requirement;
    EVAL_002 pip could not fetch the sdist; EVAL_003 the sdist or path holds no importable
    Python package; EVAL_004 unknown operation; EVAL_005 bad --limit/--seed; EVAL_006 the
    --out directory is not empty; EVAL_007 a row named with --rows was measured by no
    operation. All are usage errors and exit 2.
    """

    prefix = "EVAL"
    exit_code = 2


class TrainingError(RemoraError):
    """``remora train``: examples, fine-tuning, export and evaluation of adapters.

    TRAIN_001 training examples cannot be read; TRAIN_002 the ``remora[train]`` extra is
    not installed; TRAIN_003 the base model cannot be loaded for training; TRAIN_004 a
    checkpoint or adapter directory is unusable; TRAIN_005 the adapter cannot be exported
    or does not load in llama.cpp; TRAIN_006 no examples to train or evaluate on;
    TRAIN_010 a corpus entry is a package kept for evaluation; TRAIN_011 a corpus entry
    does not exist; TRAIN_012 no expert policy for the agent; TRAIN_013 the corpus holds
    no Python file; TRAIN_014 the output directory cannot be written; TRAIN_015 the pinned
    package list is unusable; TRAIN_016 ``--decision`` names a tool no example calls;
    TRAIN_017 the agent's evaluation has no gate metric; TRAIN_018 the adapter does not
    beat the base model by more than the spread across seeds (it does not ship); TRAIN_019
    training on CUDA was asked for where torch sees no GPU.
    """

    prefix = "TRAIN"
