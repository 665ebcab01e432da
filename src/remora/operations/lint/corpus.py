"""Lint episodes: one issue no tool may fix, injected into real code; the authors' lines are
the answer.

For a corpus file that ruff (the pinned rules) finds nothing for that the host would ask the
model about, each residue entry of the injection catalogue (:data:`RESIDUE_INJECTIONS`:
rules ruff has no fix for) is tried at one seeded site. The episode runs on the file with
that one issue; the host applies what it can, shows the model the issue and its lines,
and the expert (:class:`~remora.operations.lint.expert.ResidueExpert`) answers with the
original lines. The host keeps the rewrite only when it removes the issue, adds none and
keeps the package's tests passing (the episode runs in a copy of the whole package with
its tests), so every kept example is verified by the same checks as the model's rewrites.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator

from remora.definitions import SubagentDefinition
from remora.operations.base import CorpusFile, PlannedEpisode, digest, file_nodes
from remora.operations.lint.expert import ResidueExpert
from remora.operations.lint.residue import MAX_LINES, MODEL_CODES, involved_lines
from remora.tools.capabilities.ruff import ruff_command

RESIDUE_INJECTIONS = ("raise-without-from", "type-compare", "lambda-assign")
"""Catalogue entries that rewrite a statement in place (the answer is the original
statement) into a rule ruff has no fix for, or only sometimes (B904, E721, E731).
Remora's own rewrites fix many of them (an ``except ... as`` name to chain from, a
builtin ``type``): those episodes ask the model nothing and are left out, so the kept
ones are the true residue. E722 (a bare ``except:``) is not used: the host rewrites
nearly every one itself (34 of 35 tried on the pinned packages). Entries that insert a
statement are not used either: their answer would be to delete it, which a rewrite of the
lines shown cannot say."""
MAX_ANSWER_CHARS = 400
"""``rewrite_lines``'s ``text`` limit."""
RUFF_TIMEOUT_S = 60.0


def plan_episodes(
    agent: SubagentDefinition,
    file: CorpusFile,
    text: str,
    seed: int,
    skipped: Counter[str],
    mistakes: float,
) -> Iterator[PlannedEpisode]:
    """Up to one episode per residue entry for ``file``: the entry injected at a seeded
    site whose lines the host would show, the original lines the expert's answer."""
    del mistakes  # the answer is the authors' code; no deliberate mistakes here
    from remora.operations.lint._injections import CATALOGUE, Source

    nodes = [node for node in file_nodes(file, text, agent) if node.node_type == "file"]
    if not nodes:
        skipped["not a module the lint agent applies to"] += 1
        return
    try:
        source = Source(text)
    except (SyntaxError, ValueError):
        skipped["does not parse"] += 1
        return
    present = residue_codes(text, file)
    if present is None:
        skipped["ruff cannot lint it"] += 1
        return
    if present:
        skipped["has an issue of its own the model would be asked about"] += 1
        return
    entries = [entry for entry in CATALOGUE if entry.key in RESIDUE_INJECTIONS]
    for entry in entries:
        edits = list(entry.find(source))
        if not edits:
            skipped[f"{entry.code}: no site"] += 1
            continue
        edit = random.Random(f"{seed}:{file.source}:{entry.key}").choice(edits)
        injected = text[: edit.start] + edit.new + text[edit.end :]
        first = source.line_of(edit.start)
        last = injected.count("\n", 0, edit.start + max(len(edit.new) - 1, 0)) + 1
        delta = injected.count("\n") - text.count("\n")
        span = involved_lines(injected, edit.anchor)
        if span is None or not span[0] <= first <= last <= span[1]:
            skipped[f"{entry.code}: the lines shown would not hold the injected ones"] += 1
            continue
        if span[1] - span[0] + 1 > MAX_LINES:
            skipped[f"{entry.code}: more lines than the host shows"] += 1
            continue
        answer = "\n".join(text.splitlines()[span[0] - 1 : span[1] - delta])
        if not 4 <= len(answer.strip()) <= MAX_ANSWER_CHARS:
            skipped[f"{entry.code}: the original lines do not fit rewrite_lines"] += 1
            continue
        expert = ResidueExpert(entry.code, text, first, last, delta)
        yield PlannedEpisode(
            f"{file.source}::{entry.key}",
            file,
            nodes[0].qualname,
            nodes[0].node_type,
            injected,
            expert,
            digest(injected, entry.key),
            in_package=True,
        )


def residue_codes(text: str, file: CorpusFile) -> set[str] | None:
    """The codes ruff (the pinned rules) reports in ``text`` that the host would ask the
    model about, were nothing injected; None when ruff fails."""
    from remora.evaluation.commands import run_command
    from remora.operations.lint._injections import SELECT

    argv = [*ruff_command(), "check", "--isolated", "--no-cache", "--output-format", "json"]
    done = run_command(
        [*argv, SELECT, "--stdin-filename", file.source, "-"],
        file.path.parent,
        RUFF_TIMEOUT_S,
        stdin=text,
    )
    if done.timed_out or done.returncode not in (0, 1):
        return None
    try:
        items = json.loads(done.stdout or "[]")
    except ValueError:
        return None
    if not isinstance(items, list):
        return None
    return {
        str(item.get("code"))
        for item in items
        if item.get("code") in MODEL_CODES and not item.get("fix")
    }
