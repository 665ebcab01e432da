"""Training traces: the real agents' tools driven by expert policies, every turn recorded.

For one agent, :func:`generate_traces` plans episodes on corpus nodes (see
:mod:`remora.training.corpus`), copies what each needs into a scratch project, and runs
the agent through the real runner, tools, prechecks and copy-on-write workspaces
(:func:`~remora.orchestration.job.run_job`) with a model that answers from the agent's
expert policy (:mod:`remora.training.experts`) and writes its call as FunctionGemma text,
so the runner parses it exactly as it parses the embedded model's output.

An episode is kept only when it submitted with success or partial (what the author did
not describe is left for the person; the host's verdict, not the model's claim), its calls
pass the agent's own expectation (:func:`~remora.harness.check_episode`), every call
validates against its tool's JSON schema and was allowed that turn, and every call came
back through the runner's parser unchanged. Each of its turns becomes a
:class:`~remora.training.dataset.TrainingExample`: the prompt exactly as the backend
renders it, the completion exactly as the model should write it. Identical (prompt,
completion) pairs are kept once; train and validation are split by package (and so by
source file, see :func:`is_validation`).

Episodes are appended to ``<out>/<agent>/episodes.jsonl`` as they end, so an interrupted
or limited run resumes where it stopped (same agent definition, seed and token counter);
``train.jsonl`` and ``validation.jsonl`` are rewritten from it at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import itertools
import json
import random
import shutil
import tempfile
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from jsonschema.validators import validator_for
from pydantic import BaseModel, Field
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from remora.config import RemoraConfig
from remora.contracts import HOST_STEP_ID, SUBMIT_TOOL
from remora.definitions import SubagentDefinition
from remora.discovery import CSTNode, discover
from remora.errors import RemoraError, TrainingError
from remora.harness import check_episode, operation_options, with_host_submit
from remora.model.base import (
    Message,
    ModelClient,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
    sure_of,
)
from remora.model.functiongemma import (
    render_call,
    render_completion,
    render_prompt,
    render_request,
)
from remora.operations import OperationRegistry, installed_operations
from remora.operations.base import (
    CorpusFile,
    EpisodePlanner,
    PlannedEpisode,
    entry_test_texts,
    read_source,
)
from remora.operations.experts import Expert, ExpertError, MistakenCall
from remora.orchestration import Job, interrupt_on_sigint
from remora.orchestration.job import open_job
from remora.runner import AgentResult
from remora.runner.history import estimate_tokens
from remora.tools.runtime import ToolRuntime
from remora.training.corpus import corpus_files
from remora.training.dataset import TrainingExample, write_examples
from remora.workspace import WorkspaceManager

VALIDATION_SHARE = 0.1
MISTAKES = 0.15
"""The share of lint and docstring episodes that open with a deliberate, refused mistake."""
EPISODES_FILE = "episodes.jsonl"
STATE_FILE = "state.json"
REPORT_FILE = "report.json"
TRAIN_FILE = "train.jsonl"
VALIDATION_FILE = "validation.jsonl"
FORMAT_VERSION = 2
"""Bumped when what an episode records changes: older episode files are not resumed."""

TokenCounting = Literal["model", "estimate"]


class TraceReport(BaseModel):
    """What one generation did, for one agent."""

    agent: str
    out_dir: str
    seed: int
    corpus_files: int
    planned: int = Field(description="Episodes planned before the limit or time stopped it.")
    episodes_run: int = Field(description="Episodes the agent ran (this call and resumed).")
    episodes_kept: int
    resumed: int = Field(description="Episodes taken from an earlier, interrupted run.")
    interrupted: bool = Field(
        default=False,
        description="Ctrl-C stopped it: the episodes in flight finished and every example "
        "so far was written; the same command resumes.",
    )
    skipped: dict[str, int] = Field(
        default_factory=dict, description="Why nodes got no episode (reason -> count)."
    )
    dropped: dict[str, int] = Field(
        default_factory=dict, description="Why episodes that ran were not kept."
    )
    recoveries: int = Field(description="Kept episodes in which a tool refused a call.")
    deliberate_mistakes: int = Field(description="Of those, opened with a deliberate mistake.")
    examples: int
    over_context: int = Field(description="Examples left out: prompt longer than the context.")
    duplicates: int = Field(description="Identical (prompt, completion) pairs dropped.")
    train_examples: int
    validation_examples: int
    train_sources: int
    validation_sources: int
    train_packages: int = Field(
        default=0, description="Packages (a source's first path part) the train examples are from."
    )
    validation_packages: int = Field(
        default=0, description="Packages of the validation examples, none of them trained on."
    )
    decisions: dict[str, int] = Field(
        default_factory=dict,
        description="Examples per decision: the tool the expected call names (tool -> count).",
    )
    seconds: float
    episodes_per_minute: float = Field(description="Episodes run in this call per minute.")
    token_counter: str


# --- episodes -------------------------------------------------------------------------


class Outcome(BaseModel):
    """One episode's end: kept with its examples, or why not (one line of the journal)."""

    id: str
    source: str
    digest: str = Field(description="Of the episode's input, so a changed one runs again.")
    status: Literal["kept", "dropped", "skipped"]
    reason: str = ""
    seconds: float = 0.0
    recovers: bool = Field(default=False, description="A tool refused a call, and it went on.")
    mistake: bool = Field(default=False, description="It opened with a deliberate mistake.")
    over_context: int = Field(default=0, description="Turns left out: longer than the context.")
    file_digest: str = Field(
        default="",
        description="Of the source file's text: a later run that does not reach the episode "
        "(cut short by its time or limit) keeps it only while the file is unchanged.",
    )
    examples: list[TrainingExample] = Field(default_factory=list)


def is_validation(source: str, share: float = VALIDATION_SHARE) -> bool:
    """Whether a source file belongs to validation: a stable hash of its package (the first
    part of its path: ``click/core.py`` goes where all of ``click`` goes; a module on its
    own, ``textwrap.py``, by itself), so validation holds whole packages the adapter never
    saw a file of, and every agent and every run puts the same files there."""
    unit = source.split("/", 1)[0]
    value = int(hashlib.sha256(unit.encode("utf-8")).hexdigest()[:8], 16)
    return value % 10_000 < share * 10_000


# --- planning ---------------------------------------------------------------------------


def _nodes(root: Path, source: str) -> list[CSTNode]:
    return discover([root / source], root=root).nodes


def outcome_of(
    episode: PlannedEpisode, status: Literal["kept", "dropped", "skipped"], reason: str
) -> Outcome:
    """The journal line of ``episode`` ending as ``status``."""
    return Outcome(
        id=episode.id,
        source=episode.file.source,
        digest=episode.digest,
        status=status,
        reason=reason,
        file_digest=file_digest(episode.file.path),
    )


def file_digest(path: Path) -> str:
    """A digest of a corpus file's text ('' when it cannot be read)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return ""


def journaled_unreached(
    done: dict[str, Outcome], reached: dict[str, Outcome], files: Sequence[CorpusFile]
) -> list[Outcome]:
    """The episodes an earlier run journaled that this one did not reach, whose file is
    still in the corpus, unchanged: a rerun cut short keeps the data made before."""
    current = {file.source: file.path for file in files}
    digests: dict[str, str] = {}
    kept = []
    for item in done.values():
        path = current.get(item.source)
        if item.id in reached or path is None or not item.file_digest:
            continue
        if item.source not in digests:
            digests[item.source] = file_digest(path)
        if digests[item.source] == item.file_digest:
            kept.append(item)
    return kept


def plan_file(
    agent: SubagentDefinition,
    file: CorpusFile,
    seed: int,
    skipped: Counter[str],
    mistakes: float = 0.0,
    *,
    operations: OperationRegistry | None = None,
) -> Iterator[PlannedEpisode]:
    """The episodes of one corpus file, as the agent's operation plans them; nodes without
    one are counted in ``skipped``. A ``mistakes`` share of episodes may open with a
    deliberate mistake the tools refuse, to show recoveries."""
    planner = _planner(agent.name, operations or installed_operations())
    text = read_source(file.path)
    if text is None:
        skipped["the file is not UTF-8 Python that parses"] += 1
        return
    yield from planner(agent, file, text, seed, skipped, mistakes)


def training_options(agent: str, operations: OperationRegistry) -> Mapping[str, Any]:
    """The options the operation ``agent`` runs for traces its episodes with."""
    operation = operations.for_agent(agent)
    return operation.training_options if operation is not None else {}


def _planner(agent: str, operations: OperationRegistry) -> EpisodePlanner:
    """The episode planner of the operation ``agent`` runs for (TRAIN_012 without one)."""
    operation = operations.for_agent(agent)
    if operation is None or operation.plan_episodes is None:
        raise TrainingError(
            "TRAIN_012",
            f"no expert policy for agent '{agent}'",
            f"choose one of: {', '.join(operations.traced_agents())}",
        )
    return operation.plan_episodes


# --- the recording model ----------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One model turn: what the runner sent, what the expert called, and whether the
    call was a deliberate mistake (kept in the conversation, never a training target)."""

    request: ModelRequest
    call: ToolCall
    mistake: bool = False


class ExpertModel:
    """A ``ModelClient`` answering every turn with the expert's call, written as the
    embedded model writes it (the runner parses it back), and keeping each turn."""

    def __init__(self, expert: Expert, count_tokens: Callable[[str], int] | None) -> None:
        self.expert = expert
        self.turns: list[Turn] = []
        if count_tokens is not None:
            self.count_tokens = count_tokens

    async def complete(self, request: ModelRequest) -> ModelResponse:
        chosen = self.expert(request)
        made = ToolCall(name=chosen.name, arguments=dict(chosen.arguments))
        self.turns.append(Turn(request, made, isinstance(chosen, MistakenCall)))
        text = render_call(made)
        response = ModelResponse(content=text, raw_text=text, finish_reason="stop")
        return sure_of(response, request.samples)

    async def aclose(self) -> None:
        return None


def schema_problem(made: ToolCall, request: ModelRequest) -> str | None:
    """Why ``made`` is not a call the runner would accept unchanged this turn."""
    specs: dict[str, ToolSpec] = {spec.name: spec for spec in request.allowed_specs()}
    spec = specs.get(made.name)
    if spec is None:
        return f"{made.name} is not allowed this turn"
    validator = validator_for(spec.parameters)(spec.parameters)
    error = next(iter(validator.iter_errors(made.arguments)), None)
    if error is not None:
        return f"{made.name} arguments do not validate: {error.message}"
    return None


def _echoed(request: ModelRequest) -> list[ToolCall]:
    """The calls of the conversation's last assistant message of the model (not the host's
    steps), as the runner kept them."""
    for message in reversed(request.messages):
        if message.role != "assistant":
            continue
        calls = message.tool_calls
        if calls and all(call.id and call.id.startswith(HOST_STEP_ID) for call in calls):
            continue  # the host's own step
        return calls
    return []


def _refused(request: ModelRequest) -> bool:
    """Whether the conversation's last tool result is an error."""
    for message in reversed(request.messages):
        if message.role == "tool":
            return '"outcome": "error"' in message.content
    return False


def episode_problem(
    agent: SubagentDefinition,
    job: Job,
    result: AgentResult,
    turns: Sequence[Turn],
    docstring: str | None,
) -> str | None:
    """Why a finished episode is not worth keeping (None when it is)."""
    if not turns:
        return "no model turn"
    if result.status not in ("success", "partial"):
        return f"ended {result.status}: {(result.error or result.summary)[:120]}"
    calls = with_host_submit([turn.call for turn in turns], result)
    if calls[-1].name != SUBMIT_TOOL or turns[-1].mistake:
        return f"the last call is {turns[-1].call.name}"
    for turn in turns:
        problem = schema_problem(turn.call, turn.request)
        if problem is not None:
            return problem
    for turn, after in itertools.pairwise(turns):
        made = turn.call
        echoed = _echoed(after.request)
        if [(c.name, c.arguments) for c in echoed] != [(made.name, made.arguments)]:
            return f"the runner did not parse {made.name} back unchanged"
        if turn.mistake and not _refused(after.request):
            return f"the deliberate mistake ({made.name}) was not refused"
    if agent.expectation is not None:
        expected = agent.expectation.render(job.system_inputs().as_dict())
        checked = check_episode(agent, expected, calls)
        if not checked.correct:
            return f"not as expected: {checked.problem}"
    if docstring is not None and docstring in render_request(turns[0].request):
        return "the original docstring is visible in the prompt"
    return None


def examples_of(
    agent: str,
    source: str,
    episode: str,
    turns: Sequence[Turn],
    kept: Sequence[ToolCall | None] | None = None,
) -> list[TrainingExample]:
    """One example per turn, numbered by position; deliberate mistakes are left out, and
    so are the turns a judge's verdict ``kept`` marks None (the others answer with the
    call it gives)."""
    answers = [turn.call for turn in turns] if kept is None else kept
    return [
        TrainingExample(
            agent=agent,
            source=source,
            episode=episode,
            turn=index,
            prompt=render_request(turn.request),
            completion=render_completion(answer),
            request=turn.request.model_dump(mode="json"),
            call={"name": answer.name, "arguments": answer.arguments},
        )
        for index, (turn, answer) in enumerate(zip(turns, answers, strict=True))
        if not turn.mistake and answer is not None
    ]


def fits_context(
    example: TrainingExample, count_tokens: Callable[[str], int], context_size: int
) -> bool:
    """Whether the example's prompt and its longest answer fit the model's context: the
    runner budgets the history as message text, and a rendered prompt can come out longer
    (declarations, escapes), so a late turn of a long episode may not fit."""
    room = context_size - int(example.request.get("max_tokens", 0))
    return count_tokens(example.prompt) <= room


def full_text(example: TrainingExample) -> str:
    """The conversation with the example's call appended, rendered as the backend would:
    what ``prompt + completion`` must equal."""
    request = ModelRequest.model_validate(example.request)
    made = ToolCall(name=example.call["name"], arguments=example.call["arguments"])
    messages = [*request.messages, Message(role="assistant", content="", tool_calls=[made])]
    return render_prompt(messages, request.tools, ensure_trigger=True, add_generation_prompt=False)


# --- running ------------------------------------------------------------------------------


@dataclass
class Session:
    """What the episodes of a generation or an evaluation share: the agent, the tool
    runtime (one sandbox pool), the scratch directory and the token counter."""

    agent: SubagentDefinition
    config: RemoraConfig
    runtime: ToolRuntime
    scratch: Path
    run_id: str
    count_tokens: Callable[[str], int] | None
    options: dict[str, Any]
    roots: dict[str, Path] = field(default_factory=dict)
    number: int = 0

    def shared_root(self, file: CorpusFile) -> Path:
        """One copy of a corpus entry (its whole package, so its imports work) per run."""
        key = str(file.entry)
        if key not in self.roots:
            root = self.scratch / f"entry-{len(self.roots):04d}"
            target = root / file.entry.name
            if file.entry.is_dir():
                shutil.copytree(
                    file.entry,
                    target,
                    ignore=shutil.ignore_patterns("__pycache__", "test", "tests", "*.pyc"),
                )
            else:
                root.mkdir(parents=True)
                shutil.copy2(file.entry, target)
            self.roots[key] = root
        return self.roots[key]

    def package_root(self, file: CorpusFile) -> Path:
        """One copy per run of a corpus entry's project: its :meth:`shared_root` with its
        tests under ``tests/``, where a project keeps them (copied for each episode)."""
        key = f"{file.entry}#tests"
        if key not in self.roots:
            root = self.scratch / f"package-{len(self.roots):04d}"
            shutil.copytree(self.shared_root(file), root)
            for name, text in entry_test_texts(file.entry):
                if not (root / name).exists():
                    (root / name).parent.mkdir(parents=True, exist_ok=True)
                    (root / name).write_text(text, encoding="utf-8")
            self.roots[key] = root
        return self.roots[key]

    @contextlib.asynccontextmanager
    async def root_for(self, episode: PlannedEpisode) -> AsyncIterator[Path]:
        """The scratch project the episode runs in (its own, unless it shares its entry's)."""
        if episode.shared_root:
            yield self.shared_root(episode.file)
            return
        self.number += 1
        root = self.scratch / f"episode-{self.number:06d}"
        if episode.in_package:
            shutil.copytree(self.package_root(episode.file), root)
        path = root / episode.file.source
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(episode.text, encoding="utf-8")
        try:
            yield root
        finally:
            shutil.rmtree(root, ignore_errors=True)

    async def play(
        self, episode: PlannedEpisode, attempt: int, model: ModelClient
    ) -> tuple[Job, AgentResult] | Outcome:
        """Run one episode with ``model`` choosing the calls, in its scratch project: the
        job and its result, or an Outcome when the episode could not run to an end (its
        node is gone, the precheck skips it, the expert or a tool gave up)."""
        outcome = functools.partial(outcome_of, episode)
        async with self.root_for(episode) as root:
            found = [
                node
                for node in _nodes(root, episode.file.source)
                if node.node_type == episode.node_type
                and (episode.node_type == "file" or node.qualname == episode.qualname)
            ]
            if not found:
                return outcome("skipped", "the node is not found in the scratch copy")
            node = found[0]
            manager = WorkspaceManager(root)
            options = {**self.options, **episode.options}
            job = Job(
                agent=self.agent,
                node=node,
                operation=self.agent.name,
                options=options,
                attempt=attempt,
                run_id=self.run_id,
            )
            try:
                with open_job(
                    job, manager=manager, runtime=self.runtime, config=self.config
                ) as opened:
                    skipped = await opened.precheck()
                    if skipped is not None:
                        return outcome("skipped", f"precheck: {skipped.summary}")
                    result = await opened.run(model)
            except ExpertError as exc:
                return outcome("dropped", f"expert: {exc}")
            except RemoraError as exc:
                return outcome("dropped", exc.render()[:160])
        return job, result

    async def run(self, episode: PlannedEpisode, attempt: int) -> Outcome:
        """Record one expert episode: kept with its examples, or why not."""
        model = ExpertModel(episode.expert, self.count_tokens)
        played = await self.play(episode, attempt, model)
        if isinstance(played, Outcome):
            return played
        job, result = played
        problem = episode_problem(self.agent, job, result, model.turns, episode.docstring)
        if problem is not None:
            return outcome_of(episode, "dropped", problem)
        judged = None
        if episode.judge is not None:
            judged = episode.judge(result, [turn.call for turn in model.turns])
            if all(call is None for call in judged):
                return outcome_of(episode, "dropped", "the host measured no gain from any turn")
        kept = outcome_of(episode, "kept", "")
        examples = examples_of(
            self.agent.name, episode.file.source, episode.id, model.turns, judged
        )
        count = self.count_tokens or estimate_tokens
        context = self.config.model.context_size
        kept.examples = [e for e in examples if fits_context(e, count, context)]
        kept.over_context = len(examples) - len(kept.examples)
        kept.mistake = any(turn.mistake for turn in model.turns)
        kept.recovers = any(_refused(turn.request) for turn in model.turns)
        return kept


@contextlib.contextmanager
def open_session(
    agent: SubagentDefinition,
    config: RemoraConfig,
    run_id: str,
    count_tokens: Callable[[str], int] | None,
    options: Mapping[str, Any] | None = None,
) -> Iterator[Session]:
    """A session with its own scratch directory and tool runtime, both gone after it;
    ``options`` override the operation's own."""
    with (
        tempfile.TemporaryDirectory(prefix="remora-traces-") as scratch,
        ToolRuntime(config.tools) as runtime,
    ):
        yield Session(
            agent=agent,
            config=config,
            runtime=runtime,
            scratch=Path(scratch),
            run_id=run_id,
            count_tokens=count_tokens,
            options={**operation_options(config, agent), **(options or {})},
        )


class EpisodeWorker:
    """A session of its own in another process (a Ray worker): its scratch directory,
    sandbox pool and token counter, built once, then any number of episodes. The corpus
    must be where the driver has it (one machine, or a shared filesystem)."""

    def __init__(
        self,
        agent: SubagentDefinition,
        config: RemoraConfig,
        run_id: str,
        tokens: TokenCounting,
        options: Mapping[str, Any],
    ) -> None:
        counter, _ = _token_counter(tokens, config)
        self._stack = contextlib.ExitStack()
        self.session = self._stack.enter_context(
            open_session(agent, config, run_id, counter, options)
        )

    async def run(self, episode: PlannedEpisode, attempt: int) -> Outcome:
        return await self.session.run(episode, attempt)

    def close(self) -> None:
        self._stack.close()


def _reason_key(reason: str) -> str:
    """Reasons grouped for the report: without the line numbers, names and values."""
    head = reason.split(": ", 2)
    return ": ".join(head[:2]) if reason.startswith(("expert", "precheck")) else head[0]


def _state(agent: SubagentDefinition, seed: int, mistakes: float, counting: str) -> dict[str, Any]:
    """What must match for an earlier run's episodes to be reused."""
    return {
        "format": FORMAT_VERSION,
        "agent": agent.name,
        "definition": agent.definition_digest(),
        "seed": seed,
        "mistakes": mistakes,
        "token_counter": counting,
    }


def _resume(folder: Path, state: dict[str, Any]) -> dict[str, Outcome]:
    """The episodes recorded by an earlier run with the same state (else start afresh)."""
    state_path, episodes = folder / STATE_FILE, folder / EPISODES_FILE
    try:
        same = json.loads(state_path.read_text(encoding="utf-8")) == state
    except (OSError, ValueError):
        same = False
    done = {item.id: item for item in read_outcomes(folder)} if same else {}
    folder.mkdir(parents=True, exist_ok=True)
    kept = "".join(item.model_dump_json() + "\n" for item in done.values())
    episodes.write_text(kept, encoding="utf-8")
    state_path.write_text(json.dumps(state, indent=2), encoding="utf-8")
    return done


def read_outcomes(folder: Path) -> list[Outcome]:
    """The episodes a generation journaled in ``folder``, the last outcome of each."""
    done: dict[str, Outcome] = {}
    with contextlib.suppress(OSError):
        for line in (folder / EPISODES_FILE).read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                item = Outcome.model_validate_json(line)
                done[item.id] = item
    return list(done.values())


def held_out_episodes(
    agent: SubagentDefinition,
    corpus: Sequence[Path],
    folder: Path,
    *,
    limit: int | None = None,
    share: float = VALIDATION_SHARE,
    operations: OperationRegistry | None = None,
) -> list[PlannedEpisode]:
    """Up to ``limit`` validation episodes the expert completed in the generation journaled
    in ``folder``, planned again from ``corpus`` without deliberate mistakes: the same
    nodes, seeded defects and real inputs, from source files never trained on."""
    try:
        seed = int(json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))["seed"])
    except (OSError, ValueError, KeyError, TypeError):
        seed = 0
    sources = {
        o.id: o.source
        for o in read_outcomes(folder)
        if o.status == "kept" and is_validation(o.source, share)
    }
    kept = sorted(sources)
    random.Random(seed).shuffle(kept)
    chosen = set(kept[:limit])
    wanted = {sources[episode] for episode in chosen}
    planned = [
        episode
        for file in corpus_files(corpus)
        if file.source in wanted
        for episode in plan_file(agent, file, seed, Counter(), operations=operations)
        if episode.id in chosen
    ]
    return sorted(planned, key=lambda episode: kept.index(episode.id))


def split_examples(
    outcomes: Sequence[Outcome], share: float = VALIDATION_SHARE
) -> tuple[list[TrainingExample], list[TrainingExample], int]:
    """(train, validation, duplicates): the kept episodes' examples in episode order, each
    (prompt, completion) once, split by source file."""
    train: list[TrainingExample] = []
    validation: list[TrainingExample] = []
    seen: set[tuple[str, str]] = set()
    duplicates = 0
    for item in sorted(outcomes, key=lambda o: o.id):
        if item.status != "kept":
            continue
        for example in item.examples:
            pair = (example.prompt, example.completion)
            if pair in seen:
                duplicates += 1
                continue
            seen.add(pair)
            (validation if is_validation(example.source, share) else train).append(example)
    return train, validation, duplicates


def _progress(enabled: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.fields[agent]}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        disable=not enabled,
        transient=False,
    )


@dataclass
class _Tally:
    """The outcomes of a generation so far, shown on the progress bar as they come."""

    bar: Progress
    task: TaskID
    skipped: Counter[str] = field(default_factory=Counter)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    scheduled: set[str] = field(default_factory=set)
    reused: set[str] = field(default_factory=set)
    ran_now: int = 0

    def ran(self) -> int:
        return sum(o.status != "skipped" for o in self.outcomes.values())

    def kept(self) -> int:
        return sum(o.status == "kept" for o in self.outcomes.values())

    def in_flight(self) -> int:
        return len(self.scheduled - self.outcomes.keys())

    def record(self, item: Outcome) -> None:
        self.outcomes[item.id] = item
        if item.status == "skipped":
            self.skipped[_reason_key(item.reason)] += 1
        self.bar.update(
            self.task,
            completed=self.ran(),
            description=f"kept {self.kept()} / ran {self.ran()}, "
            f"skipped {sum(self.skipped.values())}",
        )


def _guarded(episodes: Iterator[PlannedEpisode], skipped: Counter[str]) -> Iterator[PlannedEpisode]:
    """A file's episodes; a file that cannot be planned is counted, not fatal."""
    try:
        yield from episodes
    except Exception as exc:  # one odd file costs its episodes, not the run
        skipped[f"planning failed: {type(exc).__name__}"] += 1


def _interleave(
    groups: Iterator[Iterator[PlannedEpisode]], width: int = 16
) -> Iterator[PlannedEpisode]:
    """Episodes taken in turn from ``width`` files at a time, so a limited run covers many
    files (and both sides of the split) rather than every node of a few."""
    window: deque[Iterator[PlannedEpisode]] = deque()
    while True:
        while len(window) < width and (group := next(groups, None)) is not None:
            window.append(group)
        if not window:
            return
        group = window.popleft()
        item = next(group, None)
        if item is not None:
            yield item
            window.append(group)


EpisodeRunner = Callable[[PlannedEpisode, int], Awaitable[Outcome]]
"""Runs one episode (its number is the attempt) to its outcome, here or on a worker."""


async def _run_all(
    runners: Sequence[EpisodeRunner],
    episodes: Iterator[PlannedEpisode],
    done: dict[str, Outcome],
    tally: _Tally,
    journal: TextIO,
    *,
    limit: int | None,
    late: Callable[[], bool],
) -> int:
    """Run the episodes not already ``done``, one per runner at a time, until ``limit``
    episodes ran or ``late()`` (the deadline passed, or Ctrl-C); each outcome is journaled
    as it comes. Returns how many episodes were planned."""
    queue: asyncio.Queue[tuple[PlannedEpisode, int] | None] = asyncio.Queue(maxsize=len(runners))

    async def worker(run: EpisodeRunner) -> None:
        while (work := await queue.get()) is not None:
            episode, attempt = work
            began = time.monotonic()
            try:
                item = await run(episode, attempt)
            except Exception as exc:  # a bug costs the episode, not the run
                reason = f"crashed: {type(exc).__name__}: {exc}"[:160]
                item = outcome_of(episode, "dropped", reason)
            item.seconds = round(time.monotonic() - began, 3)
            tally.ran_now += item.status != "skipped"
            journal.write(item.model_dump_json() + "\n")
            journal.flush()
            tally.record(item)

    workers = [asyncio.create_task(worker(run)) for run in runners]
    planned = 0

    try:
        # The deadline is checked before planning the next episode: planning a file
        # whose nodes all get skipped can take seconds.
        while not late() and (episode := next(episodes, None)) is not None:
            planned += 1
            previous = done.get(episode.id)
            if previous is not None and previous.digest == episode.digest:
                tally.reused.add(episode.id)
                tally.record(previous)
                continue
            # Episodes in flight may yet be skipped by their precheck: wait for them
            # before deciding that the limit is reached.
            while limit is not None and 0 < tally.in_flight() >= limit - tally.ran():
                await asyncio.sleep(0.05)
            if (limit is not None and tally.ran() >= limit) or late():
                break
            tally.scheduled.add(episode.id)
            await queue.put((episode, planned))
    finally:
        for _ in workers:
            await queue.put(None)
        await asyncio.gather(*workers)
    return planned


def _token_counter(
    tokens: TokenCounting, config: RemoraConfig
) -> tuple[Callable[[str], int] | None, str]:
    """The token counter episodes run with, and its name for the report."""
    if tokens == "model":
        try:
            from remora.model.defaults import resolve_model_path
            from remora.model.llama_cpp import VocabularyCounter

            return VocabularyCounter(resolve_model_path(config.model)), "model tokenizer"
        except (ImportError, RemoraError, OSError, ValueError) as exc:
            return None, f"estimate (model tokenizer unavailable: {exc})"
    return None, "estimate (4 characters per token)"


async def generate_traces_async(
    agent_name: str,
    corpus: Sequence[Path],
    out_dir: Path,
    *,
    limit: int | None = None,
    seed: int = 0,
    progress: bool = False,
    concurrency: int = 2,
    max_seconds: float | None = None,
    tokens: TokenCounting = "model",
    config: RemoraConfig | None = None,
    validation_share: float = VALIDATION_SHARE,
    mistakes: float = MISTAKES,
    operations: OperationRegistry | None = None,
    executor: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
) -> TraceReport:
    """:func:`generate_traces`, in a running event loop."""
    started = time.monotonic()
    operations = operations or installed_operations()
    config = config or RemoraConfig(operations=operations.default_configs())
    _planner(agent_name, operations)
    agent = operations.load_agents(config.agents.dirs)[agent_name]
    files = corpus_files(corpus)
    if not files:
        raise TrainingError(
            "TRAIN_013", "the corpus holds no Python file", "pass Python files or packages"
        )
    counter, counting = _token_counter(tokens, config)
    folder = out_dir / agent_name
    try:
        done = _resume(folder, _state(agent, seed, mistakes, counting))
    except OSError as exc:
        raise TrainingError(
            "TRAIN_014", f"cannot write to {folder}: {exc}", "choose a writable output directory"
        ) from None
    run_id = f"train-{seed}"
    options = training_options(agent_name, operations)
    async with contextlib.AsyncExitStack() as stack:
        if executor == "ray":
            from remora.orchestration.ray_executor import RayWorkers

            workers = await stack.enter_async_context(
                RayWorkers(
                    EpisodeWorker,
                    agent,
                    config,
                    run_id,
                    tokens,
                    options,
                    count=max(1, concurrency),
                    address=ray_address,
                )
            )
            runners: list[EpisodeRunner] = [
                functools.partial(workers.call, index, "run") for index in range(workers.size)
            ]
        else:
            session = stack.enter_context(open_session(agent, config, run_id, counter, options))
            runners = [session.run] * max(1, concurrency)
        journal = stack.enter_context((folder / EPISODES_FILE).open("a", encoding="utf-8"))
        bar = stack.enter_context(_progress(progress))
        tally = _Tally(bar, bar.add_task("", total=limit, agent=agent_name))
        order = list(files)
        random.Random(seed).shuffle(order)
        deadline = started + max_seconds if max_seconds is not None else None
        interrupt = asyncio.Event()

        def late() -> bool:
            return interrupt.is_set() or (deadline is not None and time.monotonic() > deadline)

        def stopped() -> bool:
            """Planning stops too: past the deadline or the limit, no file is opened."""
            return late() or (limit is not None and tally.ran() >= limit)

        episodes = _interleave(
            _guarded(
                plan_file(agent, file, seed, tally.skipped, mistakes, operations=operations),
                tally.skipped,
            )
            for file in order
            if not stopped()
        )
        with interrupt_on_sigint(interrupt):
            planned = await _run_all(
                runners, episodes, done, tally, journal, limit=limit, late=late
            )

    for item in journaled_unreached(done, tally.outcomes, files):
        tally.reused.add(item.id)
        tally.outcomes[item.id] = item
    outcomes = list(tally.outcomes.values())
    train, validation, duplicates = split_examples(outcomes, validation_share)
    write_examples(folder / TRAIN_FILE, train)
    write_examples(folder / VALIDATION_FILE, validation)
    seconds = time.monotonic() - started
    dropped = Counter(_reason_key(o.reason) for o in outcomes if o.status == "dropped")
    report = TraceReport(
        agent=agent_name,
        out_dir=str(folder),
        seed=seed,
        corpus_files=len(files),
        planned=planned,
        episodes_run=tally.ran(),
        episodes_kept=tally.kept(),
        resumed=len(tally.reused),
        interrupted=interrupt.is_set(),
        recoveries=sum(o.recovers for o in outcomes if o.status == "kept"),
        deliberate_mistakes=sum(o.mistake for o in outcomes if o.status == "kept"),
        skipped=dict(tally.skipped.most_common()),
        dropped=dict(dropped.most_common()),
        examples=len(train) + len(validation),
        over_context=sum(o.over_context for o in outcomes),
        duplicates=duplicates,
        train_examples=len(train),
        validation_examples=len(validation),
        train_sources=len({e.source for e in train}),
        validation_sources=len({e.source for e in validation}),
        train_packages=len({e.source.split("/", 1)[0] for e in train}),
        validation_packages=len({e.source.split("/", 1)[0] for e in validation}),
        decisions=dict(
            Counter(str(e.call.get("name")) for e in [*train, *validation]).most_common()
        ),
        seconds=round(seconds, 2),
        episodes_per_minute=round(tally.ran_now / seconds * 60, 2) if seconds else 0.0,
        token_counter=counting,
    )
    (folder / REPORT_FILE).write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return report


def generate_traces(
    agent_name: str,
    corpus: Sequence[Path],
    out_dir: Path,
    *,
    limit: int | None = None,
    seed: int = 0,
    progress: bool = False,
    concurrency: int = 2,
    max_seconds: float | None = None,
    tokens: TokenCounting = "model",
    config: RemoraConfig | None = None,
    validation_share: float = VALIDATION_SHARE,
    mistakes: float = MISTAKES,
    operations: OperationRegistry | None = None,
    executor: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
) -> TraceReport:
    """Record expert episodes of ``agent_name`` on ``corpus`` into ``out_dir/<agent>/``.

    ``limit`` caps the episodes the agent runs (resumed ones included), ``max_seconds``
    stops planning new ones after that long; ``concurrency`` episodes run at a time.
    ``executor="ray"`` runs them on ``concurrency`` Ray workers instead (each with its own
    sandbox pool and scratch copies; ``ray_address`` as for ``remora analyze``; the corpus
    must be at the same path on every worker), and gives the same examples.
    ``tokens="model"`` counts tokens with the embedded model's tokenizer, as the in-process
    backend does (falling back to the estimate when it cannot be loaded). Writes
    ``train.jsonl``, ``validation.jsonl``, ``episodes.jsonl`` (for resuming) and
    ``report.json``; raises TrainingError (TRAIN_010 to TRAIN_014) for unusable input.
    """
    return asyncio.run(
        generate_traces_async(
            agent_name,
            corpus,
            out_dir,
            limit=limit,
            seed=seed,
            progress=progress,
            concurrency=concurrency,
            max_seconds=max_seconds,
            tokens=tokens,
            config=config,
            validation_share=validation_share,
            mistakes=mistakes,
            operations=operations,
            executor=executor,
            ray_address=ray_address,
        )
    )
