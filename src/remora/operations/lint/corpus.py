"""Lint episodes: a corpus file's real issues, and the same file with defects injected.

Defects come from the lint evaluation's catalogue (an unused import, ``== None``, a bare
``except``, ...), injected deterministically (:func:`inject_defects`).
"""

from __future__ import annotations

import json
import random
import subprocess
from collections import Counter
from collections.abc import Iterator, Sequence

from remora import pyast
from remora.definitions import SubagentDefinition
from remora.operations.base import CorpusFile, PlannedEpisode, digest, with_mistake
from remora.operations.lint._injections import CATALOGUE, Source
from remora.operations.lint.expert import LintExpert
from remora.operations.lint.rules import DEFAULT_RULES
from remora.tools.capabilities.ruff import ruff_command


def lint_issue_count(text: str, rules: Sequence[str] = DEFAULT_RULES) -> int | None:
    """How many issues ruff reports in ``text`` with the lint agent's pinned rules (None
    when ruff cannot tell): a file with more than the agent has turns for cannot be
    finished, and its episode would cost minutes."""
    argv = [*ruff_command(), "check", "--isolated", "--no-cache", "--output-format=json"]
    argv += [f"--select={','.join(rules)}", "--stdin-filename=module.py", "-"]
    try:
        done = subprocess.run(
            argv, input=text, capture_output=True, text=True, timeout=60, check=False
        )
        found = json.loads(done.stdout or "[]")
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return len(found) if isinstance(found, list) else None


def inject_defects(text: str, source: str, seed: int, count: int = 3) -> tuple[str, list[str]]:
    """``text`` with up to ``count`` defects of the lint evaluation's catalogue (an unused
    import, ``== None``, a bare ``except``, ...) at seeded sites that touch no line twice,
    and the catalogue keys applied. The same (text, source, seed) gives the same result."""
    rng = random.Random(f"{seed}:{source}")
    order = list(CATALOGUE)
    rng.shuffle(order)
    applied: list[str] = []
    touched: set[int] = set()
    for injection in order:
        if len(applied) >= count:
            break
        try:
            src = Source(text)
        except (SyntaxError, ValueError):
            break
        edits = [
            edit
            for edit in injection.find(src)
            if not touched & set(range(src.line_of(edit.start) - 1, src.line_of(edit.end) + 2))
        ]
        if not edits:
            continue
        edit = rng.choice(edits)
        changed = text[: edit.start] + edit.new + text[edit.end :]
        try:
            pyast.parse(changed)
        except SyntaxError:
            continue
        first, last = src.line_of(edit.start), src.line_of(edit.end)
        delta = edit.new.count("\n") - text[edit.start : edit.end].count("\n")
        touched = {line + delta if line > last else line for line in touched}
        touched.update(range(first, last + delta + 1))
        applied.append(injection.key)
        text = changed
    return text, applied


def plan_episodes(
    agent: SubagentDefinition,
    file: CorpusFile,
    text: str,
    seed: int,
    skipped: Counter[str],
    mistakes: float,
) -> Iterator[PlannedEpisode]:
    """Two episodes per file: as it is and with defects injected (when a site exists),
    unless it has more issues than the agent has turns for."""
    count = lint_issue_count(text)
    if count is not None and count + 3 > agent.max_turns - 2:
        skipped["lint: more issues than the agent has turns for"] += 1
        return
    injected, keys = inject_defects(text, file.source, seed)
    if not keys:
        skipped["lint: no site to inject a defect"] += 1
    for variant, body in (("real", text), ("injected", injected if keys else None)):
        if body is None:
            continue
        name = f"{file.source}#{variant}"
        expert = LintExpert(mistake=with_mistake(seed, name, mistakes))
        yield PlannedEpisode(name, file, "", "file", body, expert, digest(body, str(expert)))
