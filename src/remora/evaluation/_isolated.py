"""Commands that run the evaluated package's code, inside the project sandbox.

``remora eval`` imports the package, runs its test suite, Remora's generated tests and the
Hypothesis baselines: all of it is code nobody reviewed. It runs the way Remora runs any
project code (:mod:`remora.tools.isolation`): a scrubbed environment with a scratch
``HOME`` and ``TMPDIR``, no network, limits on processes, memory and file size, and every
process it started killed when the command ends. The sandbox's root is the scratch
directory the command works in (a throwaway copy of the package and the eval's own scratch
files), kept as a :class:`ScratchStore`: what the command writes there is written straight
back, because the evaluation reads its reports (junit, coverage) from there.

Static tools (ruff, pydoclint) and ``pip download`` run on the host through
:func:`remora.evaluation.commands.run_command`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from remora.config import ToolsConfig
from remora.errors import RemoraError
from remora.evaluation.commands import CommandResult
from remora.tools.isolation import project_sandbox
from remora.tools.process import DEFAULT_OUTPUT_LIMIT
from remora.workspace.base import normalize_path, resolve_inside


class ScratchStore:
    """A FileStore whose files are the directory itself: for throwaway copies only.

    Reads and writes go straight to disk and nothing is pending, so a sandbox over it shows
    the directory as it is and puts what the command wrote back into it.
    """

    def __init__(self, root: Path) -> None:
        self._root = root.resolve()

    @property
    def root(self) -> Path:
        return self._root

    @property
    def hidden(self) -> str | None:
        return None

    def _disk(self, path: str) -> Path:
        return resolve_inside(self._root, normalize_path(path))

    def read(self, path: str) -> bytes:
        target = self._disk(path)
        if target.is_dir():
            raise IsADirectoryError(path)
        return target.read_bytes()

    def write(self, path: str, data: bytes) -> None:
        target = self._disk(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def delete(self, path: str) -> None:
        target = self._disk(path)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink()

    def exists(self, path: str) -> bool:
        try:
            return self._disk(path).is_file()
        except RemoraError:
            return False

    def list_dir(self, path: str = "") -> list[str]:
        directory = self._disk(path) if path else self._root
        return sorted(child.name + ("/" if child.is_dir() else "") for child in directory.iterdir())

    def changed_paths(self) -> list[str]:
        return []

    @contextmanager
    def materialize(self, writable: Iterable[str] = (), *, capture: bool = True) -> Iterator[Path]:
        """The directory itself: the copy is the command's to change."""
        yield self._root


def run_isolated(
    argv: Sequence[str],
    *,
    cwd: Path,
    within: Sequence[Path],
    timeout: float,
    tools: ToolsConfig,
    pythonpath: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
    what: str = "the evaluated package",
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
) -> CommandResult:
    """Run ``argv`` in ``cwd`` inside a sandbox whose root holds ``cwd`` and ``within``.

    Never raises for the command's own failures: a timeout, a sandbox that cannot be set up
    or a process storm come back as a failed :class:`CommandResult` for the report.
    """
    start = cwd.resolve()
    root = Path(os.path.commonpath([str(start), *(str(p.resolve()) for p in within)]))
    try:
        with project_sandbox(ScratchStore(root), tools, harvest=True) as box:
            result = box.run(
                argv,
                timeout=timeout,
                what=what,
                pythonpath=list(pythonpath),
                env=dict(env or {}),
                cwd=start,
                output_limit=output_limit,
            )
    except RemoraError as exc:
        timed_out = exc.code == "TOOL_201"
        return CommandResult(list(argv), -1, "", exc.render(), timeout, timed_out=timed_out)
    return CommandResult(
        list(argv), result.returncode, result.stdout, result.stderr, result.duration
    )
