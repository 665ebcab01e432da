"""The pinned packages of the training corpus: real code at scale, fetched by pip when training.

``packages.txt`` (beside this module) pins pure-Python packages by exact version. Each is
fetched once as its sdist (:func:`~remora.evaluation.package.resolve_package`, the same
fetch ``remora eval`` uses) into a cache folder and its import packages become corpus
entries. Nothing is bundled, and none of the evaluation packages can be pinned
(:data:`~remora.training.corpus.HELD_OUT`).

A line pins exactly one package to one concrete version, ``name==version``: no wildcard
(``==1.*``), other specifier, environment marker, extras or URL, and a name of at most
:data:`MAX_NAME` characters (a longer one is no package and makes no cache folder).

Codes: TRAIN_010 a pinned package is kept for evaluation, TRAIN_015 the list is unusable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from remora.errors import EvalError, TrainingError
from remora.evaluation.package import resolve_package
from remora.training.corpus import HELD_OUT

PINNED_FILE = Path(__file__).with_name("packages.txt")
MAX_NAME = 100
"""The longest package name a pin may give (PyPI's longest are far shorter)."""
MAX_VERSION = 64
"""The longest version a pin may give."""
_DONE = "entries.json"
_PIN_HINT = "write name==version, so every training run reads the same code"


@dataclass
class PinnedCorpus:
    """The corpus entries of the fetched packages, by requirement, and what could not be
    fetched (with why)."""

    entries: dict[str, list[Path]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def paths(self) -> list[Path]:
        return [path for paths in self.entries.values() for path in paths]


def pinned_specs(path: Path | None = None) -> list[str]:
    """The pinned requirements of ``path`` (default :data:`PINNED_FILE`; ``name==version``,
    one a line, ``#`` comments), checked, each as ``name==version``."""
    path = PINNED_FILE if path is None else path
    specs: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        spec = _pin(text, f"{path.name}:{number}")
        if _module_name(spec.partition("==")[0]) in HELD_OUT:
            raise TrainingError(
                "TRAIN_010",
                f"{spec.partition('==')[0]} is kept for evaluation and cannot be trained on",
                f"remove it from {path.name}",
            )
        specs.append(spec)
    return specs


def _pin(text: str, where: str) -> str:
    """``text`` as ``name==version`` when it pins one package to one concrete version;
    TRAIN_015 (naming ``where``, the file and line) otherwise."""
    shown = text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"

    def refuse(why: str, hint: str = _PIN_HINT) -> TrainingError:
        return TrainingError("TRAIN_015", f"{where}: {shown!r} {why}", hint)

    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        raise refuse("is not a requirement", "write name==version") from None
    if len(requirement.name) > MAX_NAME:
        raise refuse(
            f"names a package of {len(requirement.name)} characters, more than {MAX_NAME}",
            "write the package's real name, as PyPI spells it",
        )
    if requirement.marker is not None:
        raise refuse("has an environment marker", f"{_PIN_HINT}, with no '; ...'")
    if requirement.extras:
        raise refuse("asks for extras", f"{_PIN_HINT}, with no [extras]")
    if requirement.url is not None:
        raise refuse("is a URL", f"{_PIN_HINT}, fetched from the package index")
    specifiers = list(requirement.specifier)
    if len(specifiers) != 1 or specifiers[0].operator != "==":
        raise refuse("is not pinned to one version")
    version = specifiers[0].version
    if version.endswith(".*"):
        raise refuse("is a wildcard, not one version")
    if len(version) > MAX_VERSION:
        raise refuse(f"has a version of {len(version)} characters, more than {MAX_VERSION}")
    try:
        Version(version)
    except InvalidVersion:
        raise refuse("is not pinned to a valid version") from None
    return f"{requirement.name}=={version}"


def _module_name(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def fetch_pinned(
    cache: Path,
    specs: Sequence[str] | None = None,
    on_package: Callable[[str, int, int], None] | None = None,
) -> PinnedCorpus:
    """Fetch each pinned sdist into ``cache`` (once: a fetched one is reused) and return
    its import packages and modules as corpus entries; a package that cannot be fetched is
    listed in ``failed`` and the rest go on. ``on_package(spec, index, total)`` reports
    progress."""
    chosen = list(specs) if specs is not None else pinned_specs()
    corpus = PinnedCorpus()
    for index, spec in enumerate(chosen, 1):
        if on_package is not None:
            on_package(spec, index, len(chosen))
        folder = cache / re.sub(r"[^\w.-]+", "-", spec)
        done = folder / _DONE
        cached = _cached_entries(done)
        if cached is not None:
            corpus.entries[spec] = cached
            continue
        try:
            source = resolve_package(spec, folder)
        except EvalError as exc:
            corpus.failed[spec] = exc.message
            continue
        except OSError as exc:  # e.g. a name too long for a folder (ENAMETOOLONG)
            corpus.failed[spec] = f"cannot fetch it into {cache}: {exc.strerror or exc}"
            continue
        base = source.root / source.path_entry if source.path_entry else source.root
        paths = [base / entry for entry in source.entries]
        kept = [path for path in paths if _module_name(path.stem) not in HELD_OUT]
        folder.mkdir(parents=True, exist_ok=True)
        home = folder.resolve()
        recorded = [
            path.relative_to(home).as_posix() if path.is_relative_to(home) else str(path)
            for path in kept
        ]
        done.write_text(json.dumps(recorded), encoding="utf-8")
        corpus.entries[spec] = kept
    return corpus


def _cached_entries(done: Path) -> list[Path] | None:
    """The entries an earlier fetch recorded (relative to its folder where they lie in it,
    so a moved cache still works), or None when there is none or one is gone: fetch
    again."""
    try:
        recorded = json.loads(done.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    paths = [done.parent.resolve() / path for path in recorded]
    return paths if all(path.exists() for path in paths) else None
