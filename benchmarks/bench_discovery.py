"""Discovery over the standard library: Remora (tree-sitter packs) vs a plain ``ast`` walk.

Both run in the same process, one after the other, over the same files, several
rounds interleaved; the figure that matters is the ratio of medians, since this
machine is shared and absolute times drift.

    python benchmarks/bench_discovery.py [--lib PATH] [--rounds 3]
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import sysconfig
import time
from pathlib import Path

from remora.config import DiscoveryConfig
from remora.discovery import discover


def ast_discover(files: list[Path]) -> int:
    """The baseline: read, parse and collect function/class definitions with ast."""
    count = 0
    for path in files:
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        count += 1
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                count += 1
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lib", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    config = DiscoveryConfig(ignore=["site-packages/"], respect_gitignore=False)

    result = discover([args.lib], config, root=args.lib)
    files = [args.lib / node.file_path for node in result.nodes if node.node_type == "file"]
    remora_times: list[float] = []
    ast_times: list[float] = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        discover([args.lib], config, root=args.lib)
        remora_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        ast_nodes = ast_discover(files)
        ast_times.append(time.perf_counter() - start)
    remora_median = statistics.median(remora_times)
    ast_median = statistics.median(ast_times)
    print(f"library        {args.lib}")
    print(f"files          {result.files} read, {len(files)} parsed cleanly")
    print(f"nodes          remora {len(result.nodes)}  ast {ast_nodes}")
    print(f"problems       {len(result.problems)}")
    print(
        f"median time    remora {remora_median:.2f}s  ast {ast_median:.2f}s  ({args.rounds} rounds)"
    )
    print(f"ratio          remora/ast = {remora_median / ast_median:.2f}  (target <= 0.50)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
