"""What isolation costs: ``call_function`` isolated vs a bare subprocess, and view cost vs size.

Side by side, rounds interleaved, medians compared (this machine is shared and noisy):

* call: ``call_function`` on a trivial function through the bubblewrap sandbox and through
  the Landlock sandbox, next to a bare subprocess running the same child script with the
  same scrubbed environment and no isolation at all (what the call cost before isolation,
  minus the view). Target: isolation adds under 30 ms per call.
* view: open a sandbox over a workspace with 3 changed files, run ``true`` in it, harvest
  and clean up, on a 5,000-file project and on a 50-file one. Target: within 1.5x.
* eval: one command of ``remora eval`` on the package's code (``import`` of a module), in
  the project sandbox (bubblewrap, Landlock) next to the same command on the host, as eval
  ran it before: what isolating the evaluated package adds per command.

    python benchmarks/bench_isolation.py [--rounds 15] [--files 5000] [--small-files 50]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_workspace import generate
from remora.config import ToolsConfig
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.call import CHILD, call_function
from remora.tools.isolation import project_sandbox
from remora.tools.process import python_command, run_command, scrubbed_env
from remora.workspace import WorkspaceManager
from remora.workspace.overlay import OverlayWorkspace

TRIVIAL = "def add(a, b):\n    return a + b\n"


def context(root: Path, isolation: str, name: str) -> CapabilityContext:
    store = WorkspaceManager(root).create("bench", name)
    config = ToolsConfig(isolation=isolation)  # type: ignore[arg-type]
    return CapabilityContext(store=store, config=config, system={})


def bare_call(root: Path, scratch: Path) -> Callable[[], object]:
    """The call child run directly: no sandbox, no view, no launcher."""
    request, result = scratch / "request.json", scratch / "result.json"
    home = scratch / "home"
    home.mkdir(exist_ok=True)
    request.write_text(
        json.dumps(
            {
                "file": str(root / "trivial.py"),
                "roots": [str(root)],
                "qualname": "add",
                "args": [1, 2],
                "kwargs": {},
            }
        )
    )

    def run() -> object:
        argv = python_command("-P", "-s", str(CHILD), str(request), str(result))
        done = run_command(
            argv, cwd=root, env=scrubbed_env(home, [root]), timeout=30, what="bare call"
        )
        assert json.loads(result.read_text())["returned"]["json"] == 3, done.stderr
        return done

    return run


def isolated_call(ctx: CapabilityContext) -> Callable[[], object]:
    def run() -> object:
        outcome = call_function(ctx, "trivial.py", "add", "[1, 2]")
        assert outcome["returned"]["json"] == 3
        return outcome

    return run


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def sandbox_cycle(store: OverlayWorkspace, config: ToolsConfig) -> Callable[[], object]:
    def run() -> object:
        with project_sandbox(store, config) as box:
            box.run(["true"], timeout=30, what="true")
        return box

    return run


def changed_workspace(root: Path, paths: list[str], name: str) -> OverlayWorkspace:
    store = WorkspaceManager(root).create("bench", name)
    store.write(paths[0], b"X = 'changed'\n")
    store.write(paths[-1], b"Y = 'changed'\n")
    store.write("tests/test_new.py", b"def test_ok():\n    assert True\n")
    return store


def measure(actions: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds of each action, rounds interleaved after one warm-up each."""
    for action in actions.values():
        action()
    samples: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(rounds):
        for name, action in actions.items():
            samples[name].append(timed(action))
    return {name: statistics.median(values) for name, values in samples.items()}


def call_rows(root: Path, scratch: Path, rounds: int) -> dict[str, float]:
    """Medians for the bare call and the two isolated ones on the project at ``root``."""
    (root / "trivial.py").write_text(TRIVIAL)
    return measure(
        {
            "bare": bare_call(root, scratch),
            "bwrap": isolated_call(context(root, "bwrap", "call-bwrap")),
            "landlock": isolated_call(context(root, "landlock", "call-landlock")),
        },
        rounds,
    )


def eval_rows(root: Path, rounds: int) -> dict[str, float]:
    """Medians of one eval command on the host and in each sandbox level."""
    from remora.evaluation.commands import run_command as host_command
    from remora.evaluation.package import resolve_package

    package = root / "evalpkg"
    (package / "pkg").mkdir(parents=True)
    (package / "pkg" / "__init__.py").write_text(TRIVIAL)
    source = resolve_package(str(package), root / "eval-work")
    argv = [sys.executable, "-c", "import pkg"]
    actions: dict[str, Callable[[], object]] = {
        "host": lambda: host_command(
            argv, package, 30, env={"PYTHONPATH": str(package), "PATH": "/usr/bin:/bin"}
        )
    }
    for level in ("bwrap", "landlock"):
        project = dataclasses.replace(
            source,
            tools=ToolsConfig(isolation=level),  # type: ignore[arg-type]
        ).copy_to(root / f"eval-{level}")
        actions[level] = lambda project=project: project.run(argv, 30)
    return measure(actions, rounds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--small-files", type=int, default=50)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="remora-bench-") as temp:
        scratch = Path(temp)
        large, small = scratch / "large", scratch / "small"
        large_paths = generate(large, args.files)
        small_paths = generate(small, args.small_files)
        calls = call_rows(small, scratch, args.rounds)
        evals = eval_rows(scratch, args.rounds)
        views: dict[str, float] = {}
        for isolation in ("bwrap", "landlock"):
            config = ToolsConfig(isolation=isolation)  # type: ignore[arg-type]
            views.update(
                {
                    f"{isolation} {label}": value
                    for label, value in measure(
                        {
                            "large": sandbox_cycle(
                                changed_workspace(large, large_paths, f"view-{isolation}"),
                                config,
                            ),
                            "small": sandbox_cycle(
                                changed_workspace(small, small_paths, f"view-{isolation}"),
                                config,
                            ),
                        },
                        args.rounds,
                    ).items()
                }
            )

    bare = calls["bare"]
    print(f"call_function on a trivial function, {args.rounds} rounds interleaved (medians)")
    print(f"  bare subprocess   {bare * 1000:7.1f} ms")
    for level in ("bwrap", "landlock"):
        extra = (calls[level] - bare) * 1000
        print(
            f"  {level:<9} isolated {calls[level] * 1000:7.1f} ms"
            f"  {extra:+5.1f} ms, {calls[level] / bare:.2f}x bare  (target: +30 ms)"
        )
    print(f"sandbox view + run 'true' + harvest, {args.files} vs {args.small_files} files")
    for level in ("bwrap", "landlock"):
        big, little = views[f"{level} large"], views[f"{level} small"]
        print(
            f"  {level:<9} {big * 1000:7.1f} ms vs {little * 1000:7.1f} ms"
            f"  ratio {big / little:.2f}x  (target <= 1.5x)"
        )
    host = evals["host"]
    print(f"one eval command on the package's code, {args.rounds} rounds interleaved (medians)")
    print(f"  host (before)     {host * 1000:7.1f} ms")
    for level in ("bwrap", "landlock"):
        print(
            f"  {level:<9} sandbox {evals[level] * 1000:7.1f} ms"
            f"  {(evals[level] - host) * 1000:+5.1f} ms, {evals[level] / host:.2f}x host"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
