"""The training corpus: real Python files, and the real material each agent learns from.

Files come from the standard library and installed packages (never the packages kept for
evaluation, :data:`HELD_OUT`). Each is known by its ``source``, its path relative to the
parent of the corpus entry it came from (``json/decoder.py``, ``textwrap.py``), which is
also the path the agents see in the scratch project and what splits go by.

What the experts need that the agents' tools do not give them is taken from the files
themselves, never invented, by each operation's planner (``remora.operations.<op>.corpus``):
a docstring's first line, argument lists from real calls, a file's real lint issues plus a
few realistic defects injected deterministically.
"""

from __future__ import annotations

import sysconfig
from collections.abc import Sequence
from pathlib import Path

from remora.errors import TrainingError
from remora.operations.base import CorpusFile, in_tests, stdlib_dir

HELD_OUT = frozenset({"more_itertools", "boltons", "toolz", "inflection", "humanize"})
"""Packages the evaluation measures on: never trained on (more-itertools and boltons for the
independent evaluation, toolz for development, inflection and humanize held out for the
adapters' gate)."""

DEFAULT_STDLIB = (
    "_pydecimal.py",
    "argparse.py",
    "base64.py",
    "bisect.py",
    "calendar.py",
    "colorsys.py",
    "configparser.py",
    "csv.py",
    "dataclasses.py",
    "difflib.py",
    "email",
    "fnmatch.py",
    "fractions.py",
    "ftplib.py",
    "getopt.py",
    "gettext.py",
    "graphlib.py",
    "heapq.py",
    "html",
    "ipaddress.py",
    "json",
    "locale.py",
    "netrc.py",
    "optparse.py",
    "plistlib.py",
    "pprint.py",
    "quopri.py",
    "reprlib.py",
    "shlex.py",
    "smtplib.py",
    "statistics.py",
    "string.py",
    "textwrap.py",
    "tomllib",
    "urllib",
    "wave.py",
)
"""Standard-library modules and packages of the default corpus (pure Python, no side
effects on import, none the interpreter itself imports at start-up)."""

DEFAULT_PACKAGES = (
    "attr",
    "click",
    "docstring_parser",
    "dotenv",
    "filelock",
    "h11",
    "idna",
    "iniconfig",
    "jinja2",
    "markdown_it",
    "markupsafe",
    "mdurl",
    "mpmath",
    "packaging",
    "pathspec",
    "platformdirs",
    "pluggy",
    "sortedcontainers",
    "yaml",
)
"""Installed packages of the default corpus (pure Python sources)."""


def site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def default_corpus() -> list[Path]:
    """The default corpus entries that exist in this installation."""
    found = [stdlib_dir() / name for name in DEFAULT_STDLIB]
    found += [site_packages() / name for name in DEFAULT_PACKAGES]
    return [path for path in found if path.exists()]


def check_entry(entry: Path) -> None:
    """TRAIN_010 for a held-out package, TRAIN_011 for a path that is not there."""
    held = HELD_OUT.intersection(part.replace("-", "_") for part in entry.parts)
    if held:
        raise TrainingError(
            "TRAIN_010",
            f"{entry} belongs to {', '.join(sorted(held))}, kept for evaluation",
            "leave the evaluation packages (more_itertools, boltons, toolz, inflection, humanize) "
            "out of the corpus",
        )
    if not entry.exists():
        raise TrainingError(
            "TRAIN_011",
            f"corpus entry {entry} does not exist",
            "pass Python files or package directories",
        )


def corpus_files(corpus: Sequence[Path]) -> list[CorpusFile]:
    """Every Python file of the corpus entries (tests and caches left out), by source.

    A file given twice, or two entries giving the same source, counts once (the first).
    """
    files: dict[str, CorpusFile] = {}
    for raw in corpus:
        entry = raw.resolve()
        check_entry(entry)
        paths = [entry] if entry.is_file() else sorted(entry.rglob("*.py"))
        for path in paths:
            relative = path.relative_to(entry.parent)
            if "__pycache__" in relative.parts or (entry.is_dir() and in_tests(relative)):
                continue
            if path.suffix != ".py" or not path.is_file():
                continue
            files.setdefault(relative.as_posix(), CorpusFile(relative.as_posix(), path, entry))
    return [files[source] for source in sorted(files)]
