"""What an operation is, and the episode material every operation's training part shares.

An :class:`Operation` is one thing ``remora analyze`` can do to a node (``lint``,
``docstring``, ``test``, ``sample_data``): the agent that does it, the capabilities its
scripts call beyond the generic toolkit, its default options, how it is measured against
the best deterministic tool (``remora eval``) and how training plans expert episodes for
it (``remora train traces``). Each bundled operation lives in its own package
(``remora.operations.<package>``); a user's operation is the same value, published through
the ``remora.operations`` entry point group (docs/writing-an-agent.md).

Training material: the corpus is real Python files, each known by its ``source``, its path
relative to the parent of the corpus entry it came from (``json/decoder.py``), which is
also the path the agents see in the scratch project and what splits go by. An operation's
planner turns one such file into :class:`PlannedEpisode` values: the text the episode runs
on, its node and the expert policy that plays it.
"""

from __future__ import annotations

import hashlib
import sysconfig
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from remora import pyast
from remora.discovery import CSTNode, discover
from remora.tools.capabilities import Capability

if TYPE_CHECKING:  # annotations only: the registry loads without the eval framework
    from remora.definitions import SubagentDefinition
    from remora.evaluation.context import Evaluator
    from remora.model.base import ToolCall
    from remora.operations.experts import Expert
    from remora.runner.result import AgentResult

__all__ = [
    "CorpusFile",
    "CorpusIndexer",
    "EpisodePlanner",
    "Operation",
    "PlannedEpisode",
    "TurnJudge",
    "digest",
    "entry_test_texts",
    "file_nodes",
    "in_tests",
    "read_source",
    "stable_draw",
    "stdlib_dir",
    "with_mistake",
]

_TEST_DIRS = frozenset({"test", "tests", "testing"})


@dataclass(frozen=True)
class CorpusFile:
    """One Python file of the corpus."""

    source: str
    path: Path
    entry: Path


TurnJudge = Callable[["AgentResult", Sequence["ToolCall"]], list["ToolCall | None"]]
"""Which of an episode's model turns (their calls, in order) are kept as examples, and with
what answer, judged on the host's own measure in the job's result: None for a turn the host
found to add nothing (it teaches nothing), else the call to learn, which may keep only the
part of the turn's call that the host found to work."""


@dataclass
class PlannedEpisode:
    """One episode to run: the scratch text of its file, its node and its expert.

    ``shared_root`` episodes run in one scratch copy of their corpus entry's file (their
    text is the file as it is); ``in_package`` ones in their own copy of that project (the
    whole entry, and its tests under ``tests/`` as :func:`entry_test_texts` finds them)
    with their file's text in place, so the host finds the calls and callees it would find
    in a real project; the others in a project of their file alone. ``docstring`` is the
    original docstring the episode's file lacks, which must not show in the prompt.
    ``judge`` keeps only some of the model's turns as examples (every turn when None); an
    episode where it keeps none is dropped. ``options`` are laid over the operation's own
    for this episode's job.
    """

    id: str
    file: CorpusFile
    qualname: str
    node_type: str
    text: str
    expert: Expert
    digest: str
    shared_root: bool = False
    docstring: str | None = None
    in_package: bool = False
    judge: TurnJudge | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


class EpisodePlanner(Protocol):
    """The episodes of one corpus file for ``agent``; nodes without one are counted in
    ``skipped`` by reason. A ``mistakes`` share of episodes may open with a deliberate
    mistake the tools refuse, to show recoveries."""

    def __call__(
        self,
        agent: SubagentDefinition,
        file: CorpusFile,
        text: str,
        seed: int,
        skipped: Counter[str],
        mistakes: float,
    ) -> Iterator[PlannedEpisode]: ...


class CorpusIndexer(Protocol):
    """Build an operation's index of corpus material (shipped as data) from the corpus
    ``files`` at ``path`` (None: where the operation ships it); a line saying what was
    written."""

    def __call__(self, files: Sequence[CorpusFile], path: Path | None = None) -> str: ...


@dataclass(frozen=True)
class Operation:
    """One operation: its agent folders and capabilities, its defaults, how it is measured
    and how its expert episodes are planned.

    ``agent`` names the agent that runs it (the operation's own name unless said);
    ``agent_dirs`` are folders of agent folders, loaded with the bundled ones. An operation
    without ``evaluate`` cannot be measured by ``remora eval``; one without
    ``plan_episodes`` has no expert and cannot be traced for training. ``training_options``
    override ``options`` when episodes are traced: where the default leaves a model decision
    to the host, training still exercises it. ``options_model`` (extra keys forbidden)
    checks the user's options when the configuration loads, so a typo such as
    ``style: googel`` is an error at once, not a failed job later. ``gate_metric`` is
    the evaluation column (higher is better) by which ``remora train gate`` compares the
    agent's adapter with the base model; without one an adapter cannot be gated.
    ``build_index`` builds the corpus index the operation ships (``remora train index``).
    """

    name: str
    agent_dirs: tuple[Path, ...] = ()
    capabilities: Mapping[str, Capability] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    options_model: type[BaseModel] | None = None
    evaluate: Evaluator | None = None
    plan_episodes: EpisodePlanner | None = None
    summary: str = ""
    agent: str | None = None
    training_options: Mapping[str, Any] = field(default_factory=dict)
    gate_metric: str | None = None
    build_index: CorpusIndexer | None = None

    @property
    def agent_name(self) -> str:
        return self.agent or self.name


def digest(*parts: str) -> str:
    """A short stable hash of an episode's input, so a changed one runs again."""
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:16]


def stable_draw(seed: int, label: str) -> int:
    """A number drawn from ``seed`` and ``label`` alone: the same in every run and process
    (unlike ``hash``), so a planner's choices repeat and a rerun resumes them."""
    return int(hashlib.sha256(f"{seed}:{label}".encode()).hexdigest()[:8], 16)


def with_mistake(seed: int, episode: str, share: float) -> bool:
    """Whether an episode opens with a deliberate mistake (a stable draw per episode)."""
    return stable_draw(seed, episode) % 10_000 < share * 10_000


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def in_tests(relative: Path) -> bool:
    """Whether a path relative to a corpus entry is test code (left out of the corpus)."""
    return bool(_TEST_DIRS.intersection(relative.parts[:-1])) or relative.name.startswith("test_")


def read_source(path: Path) -> str | None:
    """The file's text, or None when it is not UTF-8 Python that parses."""
    try:
        text = path.read_text(encoding="utf-8")
        pyast.parse(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    return text


@cache
def entry_test_texts(entry: Path) -> tuple[tuple[str, str], ...]:
    """The test modules of a corpus entry, as (``tests/<name>``, text): the standard
    library's ``test/test_<name>*`` for its modules; otherwise a package's own tests and
    those of the source distribution it was unpacked from (``tests/`` or ``test/`` beside
    its ``pyproject.toml``, ``setup.py`` or ``PKG-INFO``)."""
    stdlib = stdlib_dir().resolve()
    paths: list[Path] = []
    if entry.parent == stdlib:
        stem = entry.stem if entry.is_file() else entry.name
        tests = stdlib / "test"
        paths += sorted(tests.glob(f"test_{stem}.py")) + sorted(tests.glob(f"test_{stem}/**/*.py"))
    else:
        if entry.is_dir():
            paths += sorted(p for p in entry.rglob("*.py") if in_tests(p.relative_to(entry)))
        root = _distribution_root(entry)
        if root is not None:
            for folder in (root / "tests", root / "test"):
                if folder.is_dir() and not folder.is_relative_to(entry):
                    paths += sorted(folder.rglob("*.py"))
    found: dict[str, str] = {}
    for path in paths:
        try:
            found.setdefault(f"tests/{path.name}", path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return tuple(found.items())


_DISTRIBUTION_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "PKG-INFO")


def _distribution_root(entry: Path) -> Path | None:
    """The source distribution ``entry`` lies in (``pkg`` or ``src/pkg`` below a folder
    with its build files), or None (an installed package)."""
    for folder in (entry.parent, entry.parent.parent):
        if any((folder / name).is_file() for name in _DISTRIBUTION_FILES):
            return folder
    return None


def file_nodes(file: CorpusFile, text: str, agent: SubagentDefinition) -> list[CSTNode]:
    """The nodes of ``text`` (as ``file.source``) the agent applies to, as discovery finds
    them in a scratch copy."""
    with tempfile.TemporaryDirectory(prefix="remora-plan-") as scratch:
        root = Path(scratch)
        (root / file.source).parent.mkdir(parents=True, exist_ok=True)
        (root / file.source).write_text(text, encoding="utf-8")
        found = discover([root / file.source], root=root).nodes
    return [node for node in found if node.node_type in agent.applies_to]
