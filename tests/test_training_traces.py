"""Training traces: expert policies drive the real agents' tools; every turn is recorded.

A tiny real corpus (the standard library's fnmatch with its own tests, and textwrap) runs
through the real runner, tools and workspaces for each agent once per module; the tests
then check what was recorded: valid calls, expected episodes, the renderer's identity,
real words and values, the split and the deduplication. The experts' recoveries are
checked on hand-made conversations.
"""

from __future__ import annotations

import ast
import inspect
import json
import shutil
import sysconfig
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from jsonschema.validators import validator_for

from remora.contracts import SUBMIT_TOOL
from remora.errors import TrainingError
from remora.harness import check_episode
from remora.model.base import Message, ModelRequest, ToolCall
from remora.model.functiongemma import render_request
from remora.operations import load_agents
from remora.operations.characterize.corpus import gaining_proposals, withheld_cases
from remora.operations.characterize.expert import TestExpert
from remora.operations.docstring.corpus import find_definition, strip_docstring, summary_problem
from remora.operations.docstring.expert import (
    DocstringExpert,
    imperative,
    original_descriptions,
)
from remora.operations.experts import ExpertError
from remora.runner.result import AgentResult
from remora.training.corpus import corpus_files
from remora.training.dataset import TrainingExample, read_examples
from remora.training.traces import (
    TRAIN_FILE,
    VALIDATION_FILE,
    Outcome,
    TraceReport,
    Turn,
    examples_of,
    fits_context,
    full_text,
    generate_traces,
    is_validation,
    split_examples,
)

STDLIB = Path(sysconfig.get_paths()["stdlib"])
LIMITS = {"docstring": 4, "test": 2, "sample_data": 2}
"""The agents traced here (lint's residue episodes: tests/test_training_lint.py)."""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """``kit/`` (fnmatch and its standard-library tests) and ``textwrap.py``."""
    root = tmp_path_factory.mktemp("corpus")
    (root / "kit" / "tests").mkdir(parents=True)
    (root / "kit" / "__init__.py").write_text("", encoding="utf-8")
    shutil.copy(STDLIB / "fnmatch.py", root / "kit" / "fnmatch.py")
    shutil.copy(STDLIB / "test" / "test_fnmatch.py", root / "kit" / "tests" / "test_fnmatch.py")
    shutil.copy(STDLIB / "textwrap.py", root / "textwrap.py")
    return [root / "kit", root / "textwrap.py"]


@pytest.fixture(scope="module")
def generated(
    corpus: list[Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[TraceReport, list[TrainingExample], list[TrainingExample]]]:
    """Each agent's report, train and validation examples (half the files in validation)."""
    out = tmp_path_factory.mktemp("traces")
    found = {}
    for agent, limit in LIMITS.items():
        report = generate_traces(
            agent,
            corpus,
            out,
            limit=limit,
            seed=1,
            tokens="estimate",
            validation_share=0.5,
            mistakes=0.5,
        )
        train = list(read_examples(out / agent / TRAIN_FILE))
        validation = list(read_examples(out / agent / VALIDATION_FILE))
        found[agent] = (report, train, validation)
    return found


def examples(generated: Any, agent: str) -> list[TrainingExample]:
    _, train, validation = generated[agent]
    return [*train, *validation]


def episodes(items: list[TrainingExample]) -> dict[str, list[TrainingExample]]:
    grouped: dict[str, list[TrainingExample]] = {}
    for item in sorted(items, key=lambda e: (e.episode, e.turn)):
        grouped.setdefault(item.episode, []).append(item)
    return grouped


# --- what was recorded -------------------------------------------------------------------


@pytest.mark.parametrize("agent", list(LIMITS))
def test_every_kept_episode_is_valid_and_as_expected(generated: Any, agent: str) -> None:
    report, _, _ = generated[agent]
    assert report.episodes_kept >= 1, report
    made = examples(generated, agent)
    # The report counts the examples per decision (the tool each expected call names).
    assert sum(report.decisions.values()) == report.examples == len(made)
    assert report.decisions == dict(Counter(e.call["name"] for e in made).most_common())
    assert report.train_packages + report.validation_packages >= 1
    definition = load_agents()[agent]
    assert definition.expectation is not None
    grouped = episodes(examples(generated, agent))
    assert len(grouped) == report.episodes_kept
    for name, turns in grouped.items():
        numbers = [t.turn for t in turns]
        assert numbers == sorted(set(numbers)), name
        mistaken = agent == "docstring" and numbers[0] == 1  # a deliberate first mistake
        assert numbers[0] == 0 or mistaken, name
        calls = [ToolCall(name=t.call["name"], arguments=t.call["arguments"]) for t in turns]
        if calls[-1].name != SUBMIT_TOOL:  # the host submitted: nothing was left to decide
            assert definition.tool(SUBMIT_TOOL).host_step, name
            calls.append(ToolCall(name=SUBMIT_TOOL, arguments={}))
        for turn, made in zip(turns, calls[: len(turns)], strict=True):
            request = ModelRequest.model_validate(turn.request)
            spec = next(s for s in request.allowed_specs() if s.name == made.name)
            validator = validator_for(spec.parameters)(spec.parameters)
            assert not list(validator.iter_errors(made.arguments)), (name, made)
        expected = definition.expectation.render({})
        checked = check_episode(definition, expected, calls)
        assert checked.correct, (name, checked.problem)


@pytest.mark.parametrize("agent", list(LIMITS))
def test_prompt_and_completion_are_what_the_backend_renders(generated: Any, agent: str) -> None:
    for example in examples(generated, agent):
        request = ModelRequest.model_validate(example.request)
        assert example.prompt == render_request(request)
        assert example.prompt + example.completion == full_text(example)
        assert example.completion.endswith("<start_function_response>")


def test_docstring_summaries_are_the_authors_first_lines(
    generated: Any, corpus: list[Path]
) -> None:
    files = {file.source: file for file in corpus_files(corpus)}
    grouped = episodes(examples(generated, "docstring"))
    assert grouped
    for name, turns in grouped.items():
        source, qualname = name.split("::")
        original = files[source].path.read_text(encoding="utf-8")
        node = find_definition(ast.parse(original), qualname)
        assert node is not None
        docstring = ast.get_docstring(node)
        assert docstring is not None
        first_line = inspect.cleandoc(docstring).splitlines()[0].strip()
        writes = [t.call for t in turns if t.call["name"] == "write_docstring"]
        assert writes[0]["arguments"]["summary"] == first_line, name
        # until the model writes it, the docstring is nowhere in what the model reads
        first_write = next(t.turn for t in turns if t.call["name"] == "write_docstring")
        for turn in [t for t in turns if t.turn <= first_write]:
            assert docstring not in turn.prompt, name
            assert first_line not in turn.prompt, name


def test_docstring_episodes_show_the_calls_of_the_projects_tests(generated: Any) -> None:
    """A docstring episode runs in a copy of its whole package with the package's tests, so
    the summary's prompt shows how the tests call the function, as the agent shows it in
    a real project (what such calls return is shown where they run on their own line:
    tests/test_docstring_grounding.py)."""
    prompts = [
        turn.prompt
        for turn in examples(generated, "docstring")
        if turn.source.startswith("kit/") and turn.call["name"] == "write_docstring"
    ]
    assert prompts
    shown = [prompt for prompt in prompts if "How the project calls it:" in prompt]
    assert shown and all("tests/test_fnmatch.py:" in prompt for prompt in shown)


def test_a_deliberate_mistake_shows_the_recovery_but_is_never_a_target(generated: Any) -> None:
    agent, refusal = "docstring", "The summary only repeats the name"
    report = generated[agent][0]
    assert report.deliberate_mistakes >= 1 and report.recoveries >= report.deliberate_mistakes
    recovered = 0
    for name, turns in episodes(examples(generated, agent)).items():
        numbers = [t.turn for t in turns]
        gaps = [n for n in range(numbers[-1]) if n not in numbers]
        if not gaps:
            continue
        assert gaps == [0], name  # the mistake is the first call
        after = turns[0]
        assert refusal in after.prompt, name
        made = ModelRequest.model_validate(after.request).messages[-2].tool_calls[0]
        assert made.name == after.call["name"], name  # the same tool, now called right
        recovered += 1
    assert recovered == report.deliberate_mistakes


def test_test_and_sample_data_propose_values_from_real_calls(generated: Any) -> None:
    test_text = (STDLIB / "test" / "test_fnmatch.py").read_text(encoding="utf-8")
    for agent, tool, argument in (
        ("test", "propose_inputs", "cases"),
        ("sample_data", "propose_fixtures", "fixtures"),
    ):
        proposed = [
            case
            for e in examples(generated, agent)
            if e.call["name"] == tool
            for case in e.call["arguments"][argument]
        ]
        assert proposed, agent
        if agent == "test":  # only proposals the host measured adding reach are examples
            assert {e.call["name"] for e in examples(generated, agent)} == {tool}
        for case in proposed:  # each value was written in the tests (quotes may differ)
            assert any(v.strip("'\"b") in test_text for v in case.split(", ")), case
        report = generated[agent][0]
        assert report.skipped.get("no real argument values (doctests or tests)", 0) >= 1


def test_the_split_keeps_each_source_on_one_side_and_drops_duplicates(generated: Any) -> None:
    sides: dict[str, set[str]] = {"train": set(), "validation": set()}
    for agent in LIMITS:
        _, train, validation = generated[agent]
        sides["train"] |= {e.source for e in train}
        sides["validation"] |= {e.source for e in validation}
        pairs = [(e.prompt, e.completion) for e in [*train, *validation]]
        assert len(pairs) == len(set(pairs)), agent
        assert all(not is_validation(e.source, 0.5) for e in train)
        assert all(is_validation(e.source, 0.5) for e in validation)
    assert not sides["train"] & sides["validation"]


def example(source: str, episode: str, turn: int, prompt: str) -> TrainingExample:
    return TrainingExample(
        agent="lint",
        source=source,
        episode=episode,
        turn=turn,
        prompt=prompt,
        completion="c",
        request={},
        call={"name": "run_linter", "arguments": {}},
    )


def test_split_examples_drops_identical_pairs_and_splits_by_package() -> None:
    sources = [f"pkg{i % 20}/mod{i}.py" for i in range(40)]
    outcomes = [
        Outcome(
            id=f"{source}#real",
            source=source,
            digest="d",
            status="kept",
            examples=[
                example(source, f"{source}#real", 0, "same"),
                example(source, "e", 1, source),
            ],
        )
        for source in sources
    ]
    outcomes.append(Outcome(id="x#real", source="x.py", digest="d", status="dropped"))
    train, validation, duplicates = split_examples(outcomes, 0.5)
    assert duplicates == 39  # "same" is kept once, for the first episode in order
    assert len(train) + len(validation) == 41
    assert train and validation
    assert not {e.source for e in train} & {e.source for e in validation}
    packages = {e.source.split("/")[0] for e in train}
    assert not packages & {e.source.split("/")[0] for e in validation}


def test_a_prompt_longer_than_the_context_is_no_example() -> None:
    item = example("a.py", "a.py#real", 0, "x" * 400)
    item.request = {"max_tokens": 100}
    assert fits_context(item, len, 500)
    assert not fits_context(item, len, 499)


def test_a_second_run_resumes_from_the_recorded_episodes(
    corpus: list[Path], tmp_path: Path
) -> None:
    first = generate_traces("docstring", corpus, tmp_path, limit=2, seed=3, tokens="estimate")
    before = (tmp_path / "docstring" / TRAIN_FILE).read_text(encoding="utf-8")
    again = generate_traces("docstring", corpus, tmp_path, limit=2, seed=3, tokens="estimate")
    assert again.resumed >= first.episodes_run and again.episodes_per_minute == 0.0
    assert (tmp_path / "docstring" / TRAIN_FILE).read_text(encoding="utf-8") == before
    recorded = (tmp_path / "docstring" / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(recorded) == len({json.loads(line)["id"] for line in recorded})


def test_a_shorter_rerun_keeps_the_episodes_it_did_not_reach_while_their_files_are_unchanged(
    corpus: list[Path], tmp_path: Path
) -> None:
    """A rerun cut short by its time or limit writes the data made before, not only what
    it reached; an episode whose file changed since is left out."""
    copied = []
    for entry in corpus:
        target = tmp_path / "corpus" / entry.name
        if entry.is_dir():
            shutil.copytree(entry, target)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(entry, target)
        copied.append(target)
    out = tmp_path / "out"

    def episodes_written() -> set[str]:
        folder = out / "docstring"
        found = [*read_examples(folder / TRAIN_FILE), *read_examples(folder / VALIDATION_FILE)]
        return {example.episode for example in found}

    first = generate_traces("docstring", copied, out, limit=3, seed=3, tokens="estimate")
    before = episodes_written()
    assert first.episodes_kept >= 2 and len(before) == first.episodes_kept
    again = generate_traces("docstring", copied, out, limit=1, seed=3, tokens="estimate")
    assert episodes_written() == before and again.episodes_kept == first.episodes_kept
    assert again.episodes_per_minute == 0.0  # nothing ran: all reused or kept from before
    for path in [copied[1], *copied[0].rglob("*.py")]:
        path.write_text(path.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    changed = generate_traces("docstring", copied, out, limit=1, seed=3, tokens="estimate")
    assert changed.episodes_kept <= 1 and len(episodes_written()) <= 1


# --- refused input -------------------------------------------------------------------------


def test_held_out_packages_and_unknown_agents_are_refused(tmp_path: Path) -> None:
    held = tmp_path / "more_itertools"
    held.mkdir()
    (held / "more.py").write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(TrainingError) as caught:
        generate_traces("docstring", [held], tmp_path / "out", tokens="estimate")
    assert caught.value.code == "TRAIN_010"
    with pytest.raises(TrainingError) as caught:
        generate_traces("harness", [held], tmp_path / "out", tokens="estimate")
    assert caught.value.code == "TRAIN_012"
    with pytest.raises(TrainingError) as caught:
        generate_traces("docstring", [tmp_path / "nowhere"], tmp_path / "out", tokens="estimate")
    assert caught.value.code == "TRAIN_011"
    with pytest.raises(TrainingError) as caught:
        generate_traces("lint", [tmp_path / "nowhere"], tmp_path / "out", tokens="estimate")
    assert caught.value.code == "TRAIN_011"  # lint has an expert: the corpus is the problem


# --- the corpus helpers ---------------------------------------------------------------------


def test_strip_docstring_removes_only_that_docstring_and_says_why_not() -> None:
    text = '''def good(x):
    """Return twice the value.

    More words.
    """

    return 2 * x


def only():
    """Do nothing at all."""


def long(x):
    """Return a value that is described over
    two lines."""
    return x
'''
    stripped = strip_docstring(text, "good")
    assert not isinstance(stripped, str)
    assert stripped.summary == "Return twice the value."
    assert '"""' not in stripped.text.split("def only")[0]
    assert "def good(x):\n    return 2 * x" in stripped.text
    assert strip_docstring(text, "only") == "the body is only the docstring"
    assert strip_docstring(text, "long") == "the summary spans several lines"
    assert strip_docstring(text, "missing") == "not a class or function of the module"
    for line in ("96 dpi, 72 points to the inch", "'*' or '_' for emphasis"):
        assert summary_problem(f"{line}\n") == "the summary does not start with a word"
    assert summary_problem("`cents` of an amount, rounded half up.") is None


# --- the experts on hand-made conversations ---------------------------------------------------


def conversation(
    *turns: tuple[str, dict[str, Any], dict[str, Any]], agent: str = "docstring"
) -> ModelRequest:
    """A request of ``agent`` after ``turns`` of (tool, arguments, response)."""
    messages = [Message(role="system", content="s"), Message(role="user", content="u")]
    for index, (name, arguments, response) in enumerate(turns):
        made = ToolCall(id=f"call_{index}", name=name, arguments=arguments)
        messages.append(Message(role="assistant", tool_calls=[made]))
        content = json.dumps({"name": name, "response": response})
        messages.append(Message(role="tool", content=content, name=name, tool_call_id=made.id))
    tools = load_agents()[agent].tool_specs()
    return ModelRequest(messages=messages, tools=tools)


def test_docstring_expert_rewrites_what_the_check_complains_about() -> None:
    agent = "docstring"
    expert = DocstringExpert("Returns the sum of the prices", "total")
    problem = {
        "outcome": "success",
        "summary": "Docstring inserted: ...\nProblems: D401: First line of docstring should be "
        "in imperative mood; D400: First line should end with a period. Call write_docstring "
        "again with a better summary, or submit_result to leave them for the person.",
    }
    assert expert(conversation(agent=agent)).arguments == {
        "summary": "Returns the sum of the prices"
    }
    steps: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("write_docstring", {"summary": "Returns the sum of the prices"}, problem),
    ]
    rewrite = expert(conversation(*steps, agent=agent))
    assert rewrite.arguments == {"summary": "Return the sum of the prices."}
    steps += [("write_docstring", rewrite.arguments, problem)]
    with pytest.raises(ExpertError):
        expert(conversation(*steps, agent=agent))  # nothing left to reword: the episode is dropped
    assert imperative("Applies the rule.") == "Apply the rule."
    assert imperative("Matches a glob.") == "Match a glob."
    assert imperative("This is it.") == "This is it."


def test_docstring_expert_describes_what_is_asked_in_the_authors_words() -> None:
    agent = "docstring"
    docstring = (
        "Return the sum of the prices.\n\nArgs:\n    prices: Amounts in cents, one per item."
        "\n\nReturns:\n    The total in cents."
    )
    descriptions = original_descriptions(docstring)
    assert descriptions == {
        "prices": "Amounts in cents, one per item.",
        "return": "The total in cents.",
    }
    expert = DocstringExpert("Return the sum of the prices.", "total", descriptions)
    written = {"outcome": "success", "summary": "Docstring inserted: ...\nNow call describe."}
    request = conversation(
        ("write_docstring", {"summary": "Return the sum of the prices."}, written), agent=agent
    )
    request.allowed_tools = ["describe", SUBMIT_TOOL]
    request.choices = {"item": ["prices"]}
    made = expert(request)
    assert (made.name, made.arguments) == (
        "describe",
        {"item": "prices", "text": "Amounts in cents, one per item."},
    )
    request.choices = {"item": ["discount"]}  # the author did not describe it: leave it
    assert expert(request).name == SUBMIT_TOOL
    # The host refused the author's words: they are not offered again, the item is left.
    refused = {
        "outcome": "success",
        "summary": "Not written (it only restates the name). Describe `prices` in other words.",
    }
    request = conversation(
        ("write_docstring", {"summary": "Return the sum of the prices."}, written),
        ("describe", {"item": "prices", "text": "Amounts in cents, one per item."}, refused),
        agent=agent,
    )
    request.allowed_tools = ["describe", SUBMIT_TOOL]
    request.choices = {"item": ["prices"]}
    assert expert(request).name == SUBMIT_TOOL


def test_test_expert_proposes_other_real_values_after_a_rejection() -> None:
    agent = "test"
    cases = [f"'{letter}'" for letter in "abcdefgh"]
    expert = TestExpert(cases, "translate")
    first = expert(conversation(agent=agent))
    assert first.arguments == {"cases": cases[:6]}  # six at most
    rejected = {"outcome": "error", "summary": "No argument list gave a usable behaviour."}
    steps: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("propose_inputs", first.arguments, rejected)
    ]
    assert expert(conversation(*steps, agent=agent)).arguments == {"cases": ["'g'", "'h'"]}
    steps.append(("propose_inputs", {"cases": ["'g'", "'h'"]}, rejected))
    with pytest.raises(ExpertError):
        expert(conversation(*steps, agent=agent))


def test_test_expert_proposes_more_while_coverage_grows_then_submits() -> None:
    agent = "test"
    cases = [f"{n}" for n in range(8)]
    expert = TestExpert(cases, "double")
    ran = {"outcome": "success", "summary": "Lines never run ... Call propose_inputs ..."}
    steps: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("propose_inputs", {"cases": cases[:6]}, {"outcome": "success", "summary": "Ran 6"}),
        ("write_tests", {}, {"outcome": "success", "summary": "Wrote 3 test(s)"}),
        ("run_tests", {}, ran),
    ]
    assert expert(conversation(*steps, agent=agent)).arguments == {"cases": ["6", "7"]}
    steps += [("propose_inputs", {"cases": ["6", "7"]}, ran), ("run_tests", {}, ran)]
    assert expert(conversation(*steps, agent=agent)).name == SUBMIT_TOOL  # nothing left


def test_a_test_proposal_is_an_example_only_when_its_tests_added_reach() -> None:
    """The test agent's judge keeps the proposals whose measured gain is positive, in
    order, answering with only their lists whose tests the host kept, and never the
    host's or submit calls; without gains it keeps nothing."""
    calls = [
        ToolCall(name="propose_inputs", arguments={"cases": ["1", "'x'"]}),
        ToolCall(name="propose_inputs", arguments={"cases": ["2"]}),
        ToolCall(name="propose_inputs", arguments={"cases": ["3"]}),
        ToolCall(name=SUBMIT_TOOL, arguments={}),
    ]
    details = {"proposal_gains": [3, 0, 1], "proposal_cases": [["1"], [], ["3"]]}
    result = AgentResult(status="success", operation="test", node_id="n", details=details)
    judged = gaining_proposals(result, calls)
    assert [None if c is None else c.arguments["cases"] for c in judged] == [
        ["1"],  # 'x' failed or repeated a behaviour: not part of the answer
        None,
        ["3"],
        None,
    ]
    assert all(
        c is None for c in gaining_proposals(result.model_copy(update={"details": {}}), calls)
    )
    turns = [Turn(conversation(agent="test"), call) for call in calls]
    kept = examples_of("test", "m.py", "m.py::f", turns, judged)
    assert [e.turn for e in kept] == [0, 2]  # numbered by position, as without a judge
    assert kept[0].call == {"name": "propose_inputs", "arguments": {"cases": ["1"]}}
    assert "cases:[<escape>1<escape>]}" in kept[0].completion  # the answer it is taught


SIDES = """def sign(n):
    \"\"\"Say which side of zero n is on.\"\"\"
    if n > 0:
        return "positive"
    if n < 0:
        return "negative"
    return "zero"
"""


def test_the_host_withholds_its_own_lists_and_those_that_close_a_gap_are_examples(
    tmp_path: Path,
) -> None:
    """A function with no real calls still teaches the test agent: the host keeps only
    some of its own argument lists (``0`` here, by the seed's draw), the expert proposes
    the withheld ones, and the example is the proposal shown the gap it closed."""
    module = tmp_path / "sides.py"
    module.write_text(SIDES, encoding="utf-8")
    kept, withheld = withheld_cases(SIDES, "sign", seed=1)
    assert (kept, withheld) == (["0"], ["1", "-1", "3"])
    report = generate_traces(
        "test", [module], tmp_path / "out", limit=4, seed=1, tokens="estimate", mistakes=0.0
    )
    assert report.skipped["no real argument values (doctests or tests)"] == 1
    assert report.episodes_kept == 1
    (example,) = [
        *read_examples(tmp_path / "out" / "test" / TRAIN_FILE),
        *read_examples(tmp_path / "out" / "test" / VALIDATION_FILE),
    ]
    assert example.episode == "sides.py::sign#withheld"
    # 1 and -1 each take a path the host's 0 never took; 3's test adds nothing 1's does not
    assert example.call == {"name": "propose_inputs", "arguments": {"cases": ["1", "-1"]}}
    shown = example.prompt.split("<start_of_turn>user", 1)[1]
    # the state before: the host's one list, 0, pinned one path and left the other two
    assert "1 test(s) pass twice: lines 3/5 (60%), branches 2/4 (50%)" in shown
    assert 'return "positive"  # never run' in shown
    assert 'return "negative"  # never run' in shown


def test_every_example_names_its_episode_source(generated: Any) -> None:
    for agent in LIMITS:
        for item in examples(generated, agent):
            assert item.agent == agent
            assert item.episode.startswith(item.source)
