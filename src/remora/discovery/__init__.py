"""Node discovery: which files, classes, functions and methods a run works on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from remora.config import DiscoveryConfig
from remora.discovery.models import CSTNode, DiscoveryProblem, DiscoveryResult, make_node_id
from remora.discovery.parser import load_query_pack, parse_source
from remora.discovery.walker import (
    WalkOptions,
    find_project_root,
    iter_python_files,
    relative_to_root,
)

__all__ = [
    "CSTNode",
    "DiscoveryProblem",
    "DiscoveryResult",
    "discover",
    "find_project_root",
    "make_node_id",
]

_BINARY_SNIFF = 8192


def discover(
    targets: Sequence[Path], config: DiscoveryConfig | None = None, root: Path | None = None
) -> DiscoveryResult:
    """Every node under ``targets``; bad files become problems, never exceptions.

    ``root`` anchors relative paths and node ids; by default it is the project root of
    the first target (nearest directory with pyproject.toml, remora.yaml, .git, ...).
    Raises DiscoveryError only when a target itself is unusable.
    """
    config = config or DiscoveryConfig()
    paths = [Path(target) for target in targets] or [Path.cwd()]
    root = (root or find_project_root(paths[0])).resolve()
    pack = load_query_pack(tuple(config.query_packs))
    node_types = frozenset(config.node_types)
    options = WalkOptions(
        respect_gitignore=config.respect_gitignore,
        ignore=tuple(config.ignore),
        follow_symlinks=config.follow_symlinks,
    )
    result = DiscoveryResult(root=root)
    for path in iter_python_files(paths, root, options, result.problems):
        relative = relative_to_root(path, root)
        source = _read(path, relative, config.max_file_bytes, result.problems)
        if source is None:
            continue
        result.files += 1
        nodes, problems = parse_source(source, relative, pack, node_types)
        result.nodes.extend(nodes)
        result.problems.extend(problems)
    return result


def _read(
    path: Path, relative: str, max_bytes: int, problems: list[DiscoveryProblem]
) -> bytes | None:
    try:
        size = path.stat().st_size
        if size > max_bytes:
            problems.append(
                DiscoveryProblem(
                    code="DISC_104",
                    path=relative,
                    message=f"{size} bytes is over the {max_bytes}-byte limit; skipped",
                )
            )
            return None
        data = path.read_bytes()
    except OSError as exc:
        problems.append(
            DiscoveryProblem(code="DISC_105", path=relative, message=f"cannot read: {exc.strerror}")
        )
        return None
    if b"\x00" in data[:_BINARY_SNIFF]:
        problems.append(
            DiscoveryProblem(code="DISC_103", path=relative, message="binary file; skipped")
        )
        return None
    return data
