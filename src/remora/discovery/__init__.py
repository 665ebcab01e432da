"""Node discovery: which files, classes, functions and methods a run works on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from remora.config import DiscoveryConfig
from remora.discovery.encoding import DecodedSource, SourceDecodeError, decode_source
from remora.discovery.models import CSTNode, DiscoveryProblem, DiscoveryResult, make_node_id
from remora.discovery.parser import load_query_pack, parse_decoded
from remora.discovery.walker import (
    WalkOptions,
    find_project_root,
    iter_python_files,
    relative_to_root,
)
from remora.errors import DiscoveryError
from remora.regular_files import FileTooLargeError, NotRegularFileError, read_regular_file

__all__ = [
    "CSTNode",
    "DiscoveryProblem",
    "DiscoveryResult",
    "discover",
    "find_project_root",
    "make_node_id",
    "target_path",
]

_BINARY_SNIFF = 8192


def discover(
    targets: Sequence[Path],
    config: DiscoveryConfig | None = None,
    root: Path | None = None,
    *,
    members: bool = True,
) -> DiscoveryResult:
    """Every node under ``targets``; bad files become problems, never exceptions.

    ``root`` anchors relative paths and node ids; by default it is the project root of
    the first target (nearest directory with pyproject.toml, remora.yaml, .git, ...).
    A target ``file.py::name`` (pytest's node-id form) keeps only the node ``name`` of
    that file and its members (``Class`` selects the class and its methods; with
    ``members=False`` only the named node).
    Each file gets ``config.parse_timeout`` seconds to be parsed and queried (DISC_108).
    Raises DiscoveryError when a target itself is unusable (DISC_004: a selector names
    no node of its file).
    """
    config = config or DiscoveryConfig()
    paths, selectors = _split_selectors(targets)
    paths = paths or [Path.cwd()]
    root = (root or find_project_root(paths[0])).resolve()
    pack = load_query_pack(tuple(config.query_packs))
    node_types = frozenset(config.node_types)
    options = WalkOptions(
        respect_gitignore=config.respect_gitignore,
        ignore=tuple(config.ignore),
        follow_symlinks=config.follow_symlinks,
        max_file_bytes=config.max_file_bytes,
    )
    result = DiscoveryResult(root=root)
    for path in iter_python_files(paths, root, options, result.problems):
        relative = relative_to_root(path, root)
        source = _read(path, relative, config.max_file_bytes, result.problems)
        if source is None:
            continue
        result.files += 1
        nodes, problems = parse_decoded(
            source, relative, pack, node_types, timeout=config.parse_timeout
        )
        result.nodes.extend(nodes)
        result.problems.extend(problems)
    if selectors:
        result.nodes = _selected(result.nodes, selectors, root, members)
    return result


def target_path(target: Path) -> Path:
    """The file or directory of a target, without its ``::qualname`` selector."""
    return Path(str(target).partition("::")[0])


def _split_selectors(targets: Sequence[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The paths to walk, and the ``(file, qualname)`` pairs of ``file.py::qualname`` targets."""
    paths: list[Path] = []
    selectors: list[tuple[Path, str]] = []
    for target in targets:
        file, sep, name = str(target).partition("::")
        if sep:
            qualname = name.replace("::", ".").strip(".")
            if not qualname:
                raise DiscoveryError(
                    "DISC_004", f"{target} names no node", "write FILE.py::function"
                )
            selectors.append((Path(file), qualname))
        paths.append(Path(file) if sep else Path(target))
    return list(dict.fromkeys(paths)), selectors


def _selected(
    nodes: list[CSTNode], selectors: list[tuple[Path, str]], root: Path, members: bool
) -> list[CSTNode]:
    """Nodes of selected files restricted to the selected names (and their members, when
    ``members``); other files keep all."""
    wanted: dict[str, set[str]] = {}
    for file, qualname in selectors:
        wanted.setdefault(relative_to_root(file.resolve(), root), set()).add(qualname)
    kept = [
        node
        for node in nodes
        if node.file_path not in wanted
        or any(
            node.qualname == name or (members and node.qualname.startswith(name + "."))
            for name in wanted[node.file_path]
        )
    ]
    for path, names in wanted.items():
        for name in sorted(names):
            if not any(n.file_path == path and n.qualname == name for n in kept):
                raise DiscoveryError(
                    "DISC_004",
                    f"{path} has no function, class or method named '{name}'",
                    f"list its nodes with 'remora discover {path}'",
                )
    return kept


def _read(
    path: Path, relative: str, max_bytes: int, problems: list[DiscoveryProblem]
) -> DecodedSource | None:
    """The file's text, decoded as Python does; None (and a problem) for a file that is
    unreadable, no regular file, too large, binary or not decodable, all alike skipped."""
    try:
        data = read_regular_file(path, max_bytes, relative)
    except FileTooLargeError:
        size = _size(path)
        problems.append(
            DiscoveryProblem(
                code="DISC_104",
                path=relative,
                message=f"{size} is over discovery.max_file_bytes ({max_bytes}); skipped",
            )
        )
        return None
    except NotRegularFileError as exc:
        problems.append(
            DiscoveryProblem(code="DISC_105", path=relative, message=f"{exc.strerror}; skipped")
        )
        return None
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
    try:
        return decode_source(data)
    except SourceDecodeError as exc:
        problems.append(
            DiscoveryProblem(
                code="DISC_102", path=relative, message=f"{exc.message}; skipped", line=exc.line
            )
        )
        return None


def _size(path: Path) -> str:
    try:
        return f"{path.stat().st_size} bytes"
    except OSError:
        return "its size"
