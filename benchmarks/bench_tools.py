"""Per-call overhead of a .pym tool in the Monty sandbox versus calling its capability directly.

The tool is the smallest useful script: one model-facing input, one ``@external`` stub and
the call (``read_file(path)``). The baseline calls the same registered capability with the
same context in-process. Both run in this process, interleaved call by call, so the figure
that matters is the difference (and ratio) of medians measured side by side; the target is
under 2 ms of median overhead per call.

    python benchmarks/bench_tools.py [--calls 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from remora.config import ToolsConfig
from remora.definitions import ToolDefinition
from remora.operations import installed_operations
from remora.tools.capabilities import CapabilityContext
from remora.tools.runtime import ToolRuntime
from remora.workspace.base import normalize_path

SCRIPT = '''"""Read one file of the workspace."""
from remora.pym import Input, external

path: str = Input("path", description="File to read, relative to the project.")


@external
def read_file(path: str) -> str:
    """The file's text."""
    ...


read_file(path)
'''
TARGET_MS = 2.0


class ReadOnlyStore:
    """The smallest FileStore: files of a directory, no writes (the tool only reads)."""

    def __init__(self, root: Path) -> None:
        self._root = root

    @property
    def root(self) -> Path:
        return self._root

    def read(self, path: str) -> bytes:
        return (self._root / normalize_path(path)).read_bytes()

    def write(self, path: str, data: bytes) -> None:
        raise PermissionError(path)

    def delete(self, path: str) -> None:
        raise PermissionError(path)

    def exists(self, path: str) -> bool:
        return (self._root / normalize_path(path)).exists()

    def list_dir(self, path: str = "") -> list[str]:
        folder = self._root / normalize_path(path) if path else self._root
        return sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())

    def changed_paths(self) -> list[str]:
        return []

    @contextmanager
    def materialize(self, writable: Iterable[str] = ()) -> Iterator[Path]:
        del writable  # nothing is written
        yield self._root


def timed_ms(func: Callable[[], object]) -> float:
    start = time.perf_counter()
    func()
    return (time.perf_counter() - start) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=1000, help="calls per variant")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        (root / "pkg").mkdir()
        (root / "pkg" / "mod.py").write_text("def f():\n    return 1\n" * 20, encoding="utf-8")
        (root / "read.pym").write_text(SCRIPT, encoding="utf-8")
        config = ToolsConfig()
        capabilities = installed_operations().capabilities
        context = CapabilityContext(
            store=ReadOnlyStore(root), config=config, system={}, capabilities=capabilities
        )
        tool = ToolDefinition(name="read", pym=root / "read.pym", effect="read")
        capability = capabilities["read_file"]
        arguments = {"path": "pkg/mod.py"}

        with ToolRuntime(config) as runtime:
            first = runtime.run_sync(tool, arguments, context)
            expected = capability.func(context, **arguments)
            if first.outcome != "success" or first.result != expected:
                print(f"sandboxed tool did not return the capability's value: {first}")
                return 1

            async def through_event_loop() -> None:
                await runtime.run(tool, arguments, context)

            loop = asyncio.new_event_loop()
            direct: list[float] = []
            sandboxed: list[float] = []
            awaited: list[float] = []
            try:
                for _ in range(args.calls):
                    direct.append(timed_ms(lambda: capability.func(context, **arguments)))
                    sandboxed.append(timed_ms(lambda: runtime.run_sync(tool, arguments, context)))
                    awaited.append(timed_ms(lambda: loop.run_until_complete(through_event_loop())))
            finally:
                loop.close()

    direct_ms = statistics.median(direct)
    sandbox_ms = statistics.median(sandboxed)
    awaited_ms = statistics.median(awaited)
    overhead = sandbox_ms - direct_ms
    awaited_overhead = awaited_ms - direct_ms
    print(f"calls          {args.calls} per variant, interleaved call by call (medians)")
    print(f"direct         {direct_ms * 1000:8.1f} us/call  read_file(ctx, path=...)")
    print(f"sandbox        {sandbox_ms * 1000:8.1f} us/call  ToolRuntime.run_sync, same capability")
    print(f"sandbox+async  {awaited_ms * 1000:8.1f} us/call  await ToolRuntime.run (to_thread)")
    print(f"overhead       {overhead:8.3f} ms/call  (ratio {sandbox_ms / direct_ms:.1f}x)")
    print(f"overhead async {awaited_overhead:8.3f} ms/call  (ratio {awaited_ms / direct_ms:.1f}x)")
    verdict = "PASS" if awaited_overhead < TARGET_MS else "FAIL"
    print(f"target         < {TARGET_MS} ms median overhead: {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
