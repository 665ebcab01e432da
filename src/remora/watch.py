"""``remora watch``: re-run the agents on exactly the nodes whose source changed.

Once the watcher is live, every node's ``source_hash`` becomes the baseline
(``initial=True`` runs everything once instead). Each batch of saved files (debounced,
``watch.debounce_ms``) is rediscovered; nodes that are new or whose hash differs run
through the same scheduler as ``remora analyze``, for the jobs their changed lines call
for (:mod:`remora.orchestration.changes`, shared with ``analyze --changed``: a changed
method runs the method's operations, not its class's docstring), and their hashes become
the new baseline. What is not a reason to run:

* Remora's own writes: a file whose content is exactly what an accepted workspace wrote
  (the accept's ``applied_sha256``) moves the baseline without a run, so accepting a
  change never triggers a new one;
* Remora's state directory and anything discovery ignores;
* a file mid-edit with a syntax error: reported, left out until the next save;
* a file deleted between its event and its reading (a create/delete loop): reported as
  DISC_105 and skipped, the watch goes on.

The loop ends when ``stop`` is set (Ctrl-C); a run in progress stops between steps and
is recorded ``interrupted``.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from watchfiles import Change, awatch

from remora.config import RemoraConfig
from remora.definitions import SubagentDefinition
from remora.discovery import CSTNode, DiscoveryProblem, DiscoveryResult, discover
from remora.discovery.walker import relative_to_root
from remora.errors import DiscoveryError, RemoraError
from remora.events import Emitter
from remora.model.base import ModelClient
from remora.orchestration import Job, RunResult, plan_jobs, run_jobs
from remora.orchestration.changes import ChangedLines, changed_between, changed_jobs
from remora.regular_files import read_regular_file
from remora.runner import AgentResult
from remora.workspace import WorkspaceManager

SYNTAX_ERROR = "DISC_101"
MISSING = "DISC_001"


@dataclass
class WatchCallbacks:
    """How the watcher reports; every callback is optional."""

    on_ready: Callable[[int, int], Any] | None = None  # (nodes, files)
    on_problem: Callable[[DiscoveryProblem], Any] | None = None
    on_own_write: Callable[[str], Any] | None = None
    on_done: Callable[[Job, AgentResult], Any] | None = None
    on_run: Callable[[RunResult], Any] | None = None
    on_start: Callable[[Sequence[Job]], Any] | None = None  # a re-run begins


@dataclass
class Watcher:
    """The baseline of node hashes and the run of whatever changed since."""

    config: RemoraConfig
    root: Path
    targets: Sequence[Path]
    agents: dict[str, SubagentDefinition]
    model: ModelClient
    manager: WorkspaceManager
    ops: Sequence[str] | None = None
    emitter: Emitter | None = None
    callbacks: WatchCallbacks = field(default_factory=WatchCallbacks)
    baseline: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    """Each file's text at the baseline, so a save's changed lines can be told apart."""
    runs: list[RunResult] = field(default_factory=list)

    def discover(self, paths: Iterable[Path]) -> tuple[list[CSTNode], set[str]]:
        """Nodes of ``paths`` and the files (project-relative) left out for syntax errors.

        The batch is discovered in one pass. When a path was deleted after its event
        arrived (DISC_001 from discovery), the batch is discovered again path by path, so
        the vanished one is reported and skipped without losing the rest.
        """
        existing = [path for path in paths if path.exists()]
        if not existing:
            return [], set()
        try:
            results = [discover(existing, self.config.discovery, root=self.root)]
        except DiscoveryError as exc:
            if exc.code != MISSING:
                raise
            results = [found for path in existing if (found := self._discover_one(path))]
        nodes: list[CSTNode] = []
        broken: set[str] = set()
        for found in results:
            for problem in found.problems:
                if problem.code == SYNTAX_ERROR:
                    broken.add(problem.path)
                self._report(problem)
            nodes.extend(node for node in found.nodes if node.file_path not in broken)
        return nodes, broken

    def _discover_one(self, path: Path) -> DiscoveryResult | None:
        """``path`` discovered alone; None, reported as DISC_105, when it is gone."""
        try:
            return discover([path], self.config.discovery, root=self.root)
        except DiscoveryError as exc:
            if exc.code != MISSING:
                raise
        # It existed a moment ago: it was deleted (maybe created again) since.
        self._report(
            DiscoveryProblem(
                code="DISC_105",
                path=relative_to_root(path, self.root),
                message="deleted before it could be read; skipped",
                hint="it is read again when it is saved",
            )
        )
        return None

    def _report(self, problem: DiscoveryProblem) -> None:
        if self.callbacks.on_problem is not None:
            self.callbacks.on_problem(problem)

    def changed(self, nodes: Iterable[CSTNode]) -> list[CSTNode]:
        return [node for node in nodes if self.baseline.get(node.node_id) != node.source_hash]

    async def run(
        self, nodes: Sequence[CSTNode], stop: asyncio.Event, changes: ChangedLines | None = None
    ) -> RunResult | None:
        """Run the operations on ``nodes`` (with ``changes``, only the jobs the changed
        lines call for, as ``remora analyze --changed`` chooses them); their hashes and
        files' texts become the baseline."""
        self.remember(nodes)
        plan = plan_jobs(self.config, self.agents, nodes, self.ops)
        if changes is not None:
            plan.jobs = changed_jobs(plan.jobs, nodes, changes)
        if not plan.jobs:
            return None
        if self.callbacks.on_start is not None:
            self.callbacks.on_start(plan.jobs)
        result = await run_jobs(
            plan.jobs,
            model=self.model,
            config=self.config,
            manager=self.manager,
            targets=sorted({node.file_path for node in nodes}),
            operations=plan.operations,
            emitter=self.emitter,
            cancel=stop,
            on_done=self.callbacks.on_done,
        )
        self.runs.append(result)
        if self.callbacks.on_run is not None:
            self.callbacks.on_run(result)
        return result

    async def handle(self, paths: set[Path], stop: asyncio.Event) -> RunResult | None:
        """One batch of saved files: skip Remora's own writes, run what changed."""
        own = self.accepted_writes()
        own_files: set[str] = set()
        for path in paths:
            relative = relative_to_root(path, self.root)
            digest = _sha256(path, self.config.discovery.max_file_bytes)
            if digest is not None and (relative, digest) in own:
                own_files.add(relative)
                if self.callbacks.on_own_write is not None:
                    self.callbacks.on_own_write(relative)
        nodes, _broken = self.discover(sorted(paths))
        for node in nodes:
            if node.file_path in own_files:
                self.baseline[node.node_id] = node.source_hash
        for node in nodes:
            if node.file_path in own_files and node.node_type == "file":
                self.texts[node.file_path] = node.text
        changed = self.changed(node for node in nodes if node.file_path not in own_files)
        if not changed:
            return None
        lines = {
            node.file_path: (
                changed_between(self.texts[node.file_path], node.text)
                if node.file_path in self.texts
                else None
            )
            for node in changed
            if node.node_type == "file"
        }
        return await self.run(changed, stop, lines)

    def remember(self, nodes: Iterable[CSTNode]) -> None:
        """``nodes`` as the baseline: their hashes, and their files' texts."""
        for node in nodes:
            self.baseline[node.node_id] = node.source_hash
            if node.node_type == "file":
                self.texts[node.file_path] = node.text

    def accepted_writes(self) -> set[tuple[str, str]]:
        """(path, sha256) of every file content an accept wrote into the project."""
        written: set[tuple[str, str]] = set()
        for info in self.manager.list():
            if info.status != "accepted":
                continue
            try:
                with self.manager.open(info.workspace_id) as workspace:
                    for backup in workspace.backups():
                        if backup.applied_sha256:
                            written.add((backup.path, backup.applied_sha256))
            except RemoraError:
                continue
        return written

    def watched_dirs(self) -> list[Path]:
        """The directories watched: each target directory, and the directory of each
        target file. An editor that saves by writing a new file and renaming it over the
        old one (``sed -i``, vim, many IDEs) replaces the file's inode, so watching the
        file itself would go deaf after the first such save."""
        dirs = {target if target.is_dir() else target.parent for target in self.targets}
        return sorted(dirs)

    def wanted(self, change: Change, path: str) -> bool:
        """Python files under a target directory or named as a target, never inside
        Remora's state directory."""
        if not path.endswith(".py"):
            return False
        resolved = Path(path).resolve()
        if resolved.is_relative_to(self.manager.state_path):
            return False
        folders, files = self._target_paths
        return resolved in files or any(resolved.is_relative_to(folder) for folder in folders)

    @functools.cached_property
    def _target_paths(self) -> tuple[list[Path], frozenset[Path]]:
        """The target directories and files, resolved once (not per filesystem event)."""
        resolved = [target.resolve() for target in self.targets]
        return [path for path in resolved if path.is_dir()], frozenset(
            path for path in resolved if not path.is_dir()
        )

    async def watch(self, stop: asyncio.Event, *, initial: bool = False) -> None:
        """Until ``stop`` is set: wait for saves, run what changed.

        The baseline is taken at the watcher's first idle tick, once it is really watching,
        so no save between start-up and watching is missed; ``on_ready`` is called then.
        """
        ready = False
        async for changes in awatch(
            *self.watched_dirs(),
            watch_filter=self.wanted,
            debounce=self.config.watch.debounce_ms,
            step=min(50, max(1, self.config.watch.debounce_ms)),
            stop_event=stop,
            rust_timeout=_IDLE_TICK_MS,
            yield_on_timeout=True,
        ):
            if stop.is_set():
                break
            if not ready:
                ready = True
                current, _broken = self.discover(self.targets)
                if self.callbacks.on_ready is not None:
                    files = {node.file_path for node in current}
                    self.callbacks.on_ready(len(current), len(files))
                if initial:
                    await self.run(current, stop)
                else:
                    self.remember(current)
            if changes:
                await self.handle({Path(path) for _change, path in changes}, stop)
            if stop.is_set():
                break


_IDLE_TICK_MS = 500


def _sha256(path: Path, limit: int) -> str | None:
    """The content's hash, or None for a file that is gone, unreadable, no regular file
    (a FIFO would block) or over ``limit`` bytes: none of those is an accept's write."""
    try:
        return hashlib.sha256(read_regular_file(path, limit)).hexdigest()
    except OSError:
        return None
