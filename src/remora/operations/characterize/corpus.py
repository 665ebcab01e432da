"""Test and sample_data episodes: argument lists from real calls are what the expert proposes.

Real calls come from the function's doctests or from its corpus entry's tests
(:func:`real_cases`), never invented; an argument list the host already shows is not
proposed again. The test agent also learns from the host's own argument lists: an episode
withholds some of them from the host and proposes them (:func:`withheld_cases`), and those
the host measures closing a gap are kept.
"""

from __future__ import annotations

import ast
import contextlib
from collections import Counter
from collections.abc import Iterator, Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from remora import pyast
from remora.definitions import SubagentDefinition
from remora.operations.base import (
    CorpusFile,
    PlannedEpisode,
    TurnJudge,
    digest,
    entry_test_texts,
    file_nodes,
    stable_draw,
)
from remora.operations.characterize.expert import (
    MAX_CASE_CHARS,
    SampleDataExpert,
    TestExpert,
    case_batches,
)
from remora.operations.characterize.inputs import HOST_LIMIT
from remora.operations.experts import Expert
from remora.tools.capabilities.candidates import candidate_inputs

if TYPE_CHECKING:
    from remora.model.base import ToolCall
    from remora.runner.result import AgentResult

REAL_SOURCES = ("doctest", "test")
"""Where real calls come from: the function's own ``>>>`` examples and the corpus's tests."""


@cache
def _test_calls(entry: Path) -> dict[str, tuple[str, ...]]:
    """Every call in the entry's tests, as one-line source, by the name it calls: each
    test module is parsed once, not once per function of the corpus."""
    found: dict[str, dict[str, None]] = {}
    for _, text in entry_test_texts(entry):
        try:
            tree = pyast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if isinstance(name, str):
                with contextlib.suppress(ValueError, RecursionError):
                    found.setdefault(name, {})[ast.unparse(node)] = None
    return {name: tuple(calls) for name, calls in found.items()}


def real_cases(text: str, qualname: str, test_calls: Sequence[str] = ()) -> list[str]:
    """Argument lists of real calls of ``qualname``: its doctests, then ``test_calls``
    (calls of its name in tests, as source), those that fit its signature."""
    project = {"tests/test_calls.py": "\n".join(test_calls)} if test_calls else {}
    try:
        found = candidate_inputs(text, qualname, project, limit=HOST_LIMIT)
    except (ValueError, SyntaxError, RecursionError):
        return []
    return [item.case.text for item in found if item.source in REAL_SOURCES]


def cases_for(file: CorpusFile, text: str, qualname: str, node_text: str) -> list[str]:
    """:func:`real_cases` of a corpus function, with the tests of its corpus entry (not
    looked for when neither its text has a doctest nor a test calls its name)."""
    calls = _test_calls(file.entry).get(qualname.rsplit(".", 1)[-1], ())
    if not calls and ">>>" not in node_text:
        return []
    return real_cases(text, qualname, calls)


def host_shown(text: str, qualname: str, shown: int = 4) -> list[str]:
    """The argument lists the agents' ``analyze_signature`` will show as found (the host's
    first candidates, from the module alone): proposing them again adds nothing."""
    return list(_host_candidates(text, qualname)[:shown])


@lru_cache(maxsize=64)
def _host_candidates(text: str, qualname: str) -> tuple[str, ...]:
    """The host's candidates from the module alone, found once per function: a test
    function's real and withheld episodes both ask for them (each search parses the
    module)."""
    try:
        found = candidate_inputs(text, qualname, {}, limit=HOST_LIMIT)
    except (ValueError, SyntaxError, RecursionError):
        return ()
    return tuple(item.case.text for item in found)


def gaining_proposals(result: AgentResult, calls: Sequence[ToolCall]) -> list[ToolCall | None]:
    """The test agent's judge: a proposal is an example only when the tests its argument
    lists brought added lines, branches or killed mutants, as the host measured after it
    (``proposal_gains`` of the verdict), and its answer keeps only the lists whose tests
    the host kept (``proposal_cases``), not those that failed or repeated another; the
    other turns are not decisions."""
    gains = iter(result.details.get("proposal_gains") or [])
    brought = iter(result.details.get("proposal_cases") or [])
    judged: list[ToolCall | None] = []
    for call in calls:
        if call.name != "propose_inputs":
            judged.append(None)
            continue
        gain, useful = next(gains, 0), set(next(brought, ()))
        cases = [case for case in call.arguments.get("cases") or () if case in useful]
        answer = call.model_copy(update={"arguments": {**call.arguments, "cases": cases}})
        judged.append(answer if gain > 0 and cases else None)
    return judged


def withheld_cases(text: str, qualname: str, seed: int) -> tuple[list[str], list[str]]:
    """The host's own argument lists split in two: those it keeps, and those withheld from
    it so that they become the model's answers (the first one to three kept, by a stable
    draw per function; nothing withheld when the host has fewer than two)."""
    found = host_shown(text, qualname, shown=HOST_LIMIT)
    if len(found) < 2:
        return found, []
    keep = 1 + stable_draw(seed, qualname) % min(3, len(found) - 1)
    return found[:keep], found[keep:]


def plan_episodes(
    agent: SubagentDefinition,
    file: CorpusFile,
    text: str,
    seed: int,
    skipped: Counter[str],
    mistakes: float,
) -> Iterator[PlannedEpisode]:
    """Per public function, an episode with its real argument lists the host does not show;
    the test agent gets the test expert (its proposals judged by :func:`gaining_proposals`),
    any other the sample_data expert. The test agent also gets an episode where the host
    withholds some of its own argument lists (:func:`withheld_cases`) and the expert
    proposes them: the ones the host measures closing a gap are gap-closing inputs shown
    the state before them."""
    del mistakes  # the cases are the material; no deliberate mistakes here
    for node in file_nodes(file, text, agent):
        if node.name.startswith("_"):
            skipped["private or special name (the precheck skips it)"] += 1
            continue
        yield from _real_episodes(
            agent, file, text, node.qualname, node.node_type, node.text, skipped
        )
        if agent.name == "test":
            yield from _withheld_episode(file, text, node.qualname, node.node_type, seed, skipped)


def _real_episodes(
    agent: SubagentDefinition,
    file: CorpusFile,
    text: str,
    qualname: str,
    node_type: str,
    node_text: str,
    skipped: Counter[str],
) -> Iterator[PlannedEpisode]:
    """The episode whose answers are the function's real calls (doctests, tests)."""
    cases = cases_for(file, text, qualname, node_text)
    if not cases:
        skipped["no real argument values (doctests or tests)"] += 1
        return
    if not case_batches(cases):
        skipped[f"real argument values longer than {MAX_CASE_CHARS} characters"] += 1
        return
    if not case_batches(cases, host_shown(text, qualname)):
        skipped["every real argument list is among those the host shows"] += 1
        return
    expert: Expert
    judge: TurnJudge | None = None
    if agent.name == "test":
        expert, judge = TestExpert(cases, qualname), gaining_proposals
    else:
        expert = SampleDataExpert(cases, qualname)
    yield PlannedEpisode(
        f"{file.source}::{qualname}",
        file,
        qualname,
        node_type,
        text,
        expert,
        digest(text, qualname, *cases),
        shared_root=True,
        judge=judge,
    )


def _withheld_episode(
    file: CorpusFile, text: str, qualname: str, node_type: str, seed: int, skipped: Counter[str]
) -> Iterator[PlannedEpisode]:
    """The test episode whose answers are the host's own withheld argument lists."""
    _, withheld = withheld_cases(text, qualname, seed)
    if not withheld:
        skipped["fewer than two host argument lists to withhold from"] += 1
        return
    if not case_batches(withheld):
        skipped[f"withheld host argument lists longer than {MAX_CASE_CHARS} characters"] += 1
        return
    yield PlannedEpisode(
        f"{file.source}::{qualname}#withheld",
        file,
        qualname,
        node_type,
        text,
        TestExpert(withheld, qualname),
        digest(text, qualname, "withheld", *withheld),
        shared_root=True,
        judge=gaining_proposals,
        options={"withhold_cases": withheld},
    )
