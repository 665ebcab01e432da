"""Candidate inputs: host cases, model proposals and their observation in real subprocesses."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from remora.errors import ToolError
from remora.operations.characterize.inputs import (
    MODEL_LIMIT,
    Observation,
    characterizable,
    draft,
    observe_cases,
    propose_cases,
    signature_inputs,
)
from remora.tools.capabilities import CapabilityContext
from tests.stores import capability_context, write_tree

MODULE = '''import os
import random


def area(width, height=2):
    """The area of a rectangle.

    >>> area(3, 4)
    12
    """
    return width * height


def classify(n):
    if n > 0:
        return "positive"
    return "other"


def roll():
    return random.random()


def fruit_order():
    return list({"apple", "banana", "cherry", "damson", "elder", "fig", "grape", "kiwi"})


def spin():
    while True:
        pass


def exit_on(n):
    if n > 5:
        os._exit(3)
    return n * 10


def count(n):
    yield from range(n)


def fail_later(n):
    yield n
    raise ValueError("broke after one")


def shout(word):
    print("said", word)
    return len(word)


def touch(name):
    with open(name, "w") as handle:
        handle.write("made by the case")
    return name


class Counter:
    def __init__(self, start=0):
        self.start = start

    def __repr__(self):
        return f"Counter({self.start})"

    def bump(self, by=1):
        return self.start + by

    @property
    def double(self):
        return self.start * 2


class Broken:
    def __init__(self):
        raise RuntimeError("cannot build")

    def go(self):
        return 1


def outer():
    def inner():
        return 1

    return inner


def _private(x):
    return x
'''

BROKEN = 'raise RuntimeError("cannot start here")\n\n\ndef f(x):\n    return x\n'

TESTS = """from pkg.mod import area


def test_area():
    assert area(5, 6) == 30
"""


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    root = write_tree(
        tmp_path / "proj",
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": MODULE,
            "pkg/broken.py": BROKEN,
            "tests/test_mod.py": TESTS,
            "tests/helpers.py": "def make(x):\n    return x\n",
        },
    )
    return capability_context(root, {"workspace_id": str(tmp_path)})


def observations(ctx: CapabilityContext, qualname: str) -> dict[str, Observation]:
    """The job's observations of ``qualname`` by case text."""
    return {o.case: o for o in draft(ctx, "pkg/mod.py", qualname).observations}


def test_signature_inputs_lists_params_and_doctest_cases_first(ctx: CapabilityContext) -> None:
    """Doctest examples lead, then project tests, then synthesized cases."""
    result = signature_inputs(ctx, "pkg/mod.py", "area")
    assert [p["name"] for p in result["params"]] == ["width", "height"]
    assert result["params"][1]["default"] == "2"
    assert (result["needs_receiver"], result["receivers"], result["is_generator"]) == (
        False,
        [],
        False,
    )
    cases = result["cases"]
    assert cases[0] == {"case": "3, 4", "source": "doctest"}
    assert cases[1] == {"case": "5, 6", "source": "test"}
    assert {c["source"] for c in cases[2:]} <= {"default", "literal", "annotation", "name"}
    assert signature_inputs(ctx, "pkg/mod.py", "count")["is_generator"] is True


def test_the_host_leaves_out_the_lists_its_options_withhold(tmp_path: Path) -> None:
    """``options.withhold_cases`` (set by training material) takes argument lists out of
    the host's own, whatever source found them, and nothing else; observing runs none."""
    root = write_tree(tmp_path / "proj", {"pkg/mod.py": MODULE, "tests/test_mod.py": TESTS})
    every = [
        c["case"] for c in signature_inputs(capability_context(root), "pkg/mod.py", "area")["cases"]
    ]
    withheld = ["5, 6", every[-1]]  # the project's test, and the host's last guess
    ctx = capability_context(root, {"workspace_id": "w", "options": {"withhold_cases": withheld}})
    cases = [c["case"] for c in signature_inputs(ctx, "pkg/mod.py", "area")["cases"]]
    assert "5, 6" in every and cases == [c for c in every if c not in withheld]
    assert len(cases) == len(every) - 2
    observe_cases(ctx, "pkg/mod.py", "area", model_inputs=False)
    ran = {o.case for o in draft(ctx, "pkg/mod.py", "area").observations}
    assert ran == set(cases)


def test_signature_inputs_of_an_instance_method_names_a_receiver(
    ctx: CapabilityContext,
) -> None:
    """An instance method needs a receiver built from its class's __init__ defaults."""
    result = signature_inputs(ctx, "pkg/mod.py", "Counter.bump")
    assert result["name"] == "bump"
    assert result["method_kind"] == "instance"
    assert result["needs_receiver"] is True
    assert result["receivers"] == ["Counter(0)"]
    assert [p["name"] for p in result["params"]] == ["by"]


def test_an_instance_is_built_as_the_project_builds_it(tmp_path: Path) -> None:
    """The receivers come from the class's constructor calls in files that never call the
    method itself, before its defaults."""
    root = write_tree(
        tmp_path / "proj",
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": MODULE,
            "app.py": "from pkg.mod import Counter\n\nCOUNTER = Counter(41)\n",
        },
    )
    ctx = capability_context(root, {"workspace_id": str(tmp_path)})
    result = signature_inputs(ctx, "pkg/mod.py", "Counter.bump")
    assert result["receivers"][0] == "Counter(41)"


def test_propose_cases_normalizes_rejects_and_deduplicates(ctx: CapabilityContext) -> None:
    """Proposals are normalized; unsafe ones get a reason; repeats are not added twice."""
    result = propose_cases(
        ctx, "pkg/mod.py", "area", ["1,2", "width=[1,2]", "open('x')", "1, 2", "x.__class__"]
    )
    assert result["accepted"] == ["1, 2", "width=[1, 2]"]
    assert result["proposed"] == 2
    reasons = {r["case"]: r["reason"] for r in result["rejected"]}
    assert set(reasons) == {"open('x')", "x.__class__"}
    assert "'open' is not available" in reasons["open('x')"]
    again = propose_cases(ctx, "pkg/mod.py", "area", "1, 2")
    assert again == {"accepted": [], "rejected": [], "proposed": 2}


def test_propose_cases_caps_at_model_limit(ctx: CapabilityContext) -> None:
    """No more than MODEL_LIMIT proposals are kept for one function."""
    first = propose_cases(ctx, "pkg/mod.py", "area", [str(n) for n in range(10, 20)])
    assert first["accepted"] == [str(n) for n in range(10, 10 + MODEL_LIMIT)]
    assert first["proposed"] == MODEL_LIMIT
    assert propose_cases(ctx, "pkg/mod.py", "area", "99")["accepted"] == []


def test_kept_values_and_misuse(ctx: CapabilityContext) -> None:
    """Returned values are kept with a literal; a wrong arity is misuse, not behaviour."""
    propose_cases(ctx, "pkg/mod.py", "area", ["1, 2, 3"])
    result = observe_cases(ctx, "pkg/mod.py", "area")
    seen = observations(ctx, "area")
    doctest = seen["3, 4"]
    assert (doctest.verdict, doctest.source) == ("kept", "doctest")
    assert doctest.returned is not None and doctest.returned["literal"] == "12"
    misuse = seen["1, 2, 3"]
    assert (misuse.verdict, misuse.source) == ("misuse", "model")
    assert misuse.reason.startswith("TypeError:")
    assert result["verdicts"]["misuse"] == 1
    assert {"call": "area(1, 2, 3)", "verdict": "misuse", "reason": misuse.reason} in result[
        "problems"
    ]
    assert {"call": "area(3, 4)", "source": "doctest", "outcome": "returns 12"} in result["kept"]


def test_model_inputs_false_ignores_proposals(ctx: CapabilityContext) -> None:
    """With model_inputs=False only the host's cases run."""
    propose_cases(ctx, "pkg/mod.py", "area", ["1, 2, 3"])
    result = observe_cases(ctx, "pkg/mod.py", "area", model_inputs=False)
    assert result["model_inputs"] is False
    assert "misuse" not in result["verdicts"]
    assert all(o.source != "model" for o in observations(ctx, "area").values())


def test_behaviours_count_distinct_paths(ctx: CapabilityContext) -> None:
    """Two inputs that take the same path and return the same type are one behaviour."""
    result = observe_cases(ctx, "pkg/mod.py", "classify")
    assert result["observed"] == 3 and result["verdicts"] == {"kept": 3}
    assert result["behaviours"] == 2
    assert [k["call"] for k in result["kept"]] == ["classify(0)", "classify(1)"]
    assert (
        observations(ctx, "classify")["3"].returned == observations(ctx, "classify")["1"].returned
    )


def test_set_order_under_another_hash_seed_is_not_kept(ctx: CapabilityContext) -> None:
    result = observe_cases(ctx, "pkg/mod.py", "fruit_order")
    assert result["verdicts"] == {"nondeterministic": 1}
    assert result["behaviours"] == 0
    assert result["problems"][0]["reason"].startswith("two runs gave different results")


def test_a_random_result_is_kept_only_for_what_held_in_every_run(ctx: CapabilityContext) -> None:
    """random() draws from the global generator: the case is rerun with other seeds, and
    only its type held."""
    assert observe_cases(ctx, "pkg/mod.py", "roll")["verdicts"] == {"kept": 1}
    (observation,) = draft(ctx, "pkg/mod.py", "roll").observations
    assert observation.varies == {"runs": 9, "type": "float"}


def test_infinite_loop_times_out(ctx: CapabilityContext) -> None:
    """A case that never returns is stopped at CASE_TIMEOUT and reported, not hung on."""
    started = time.monotonic()
    result = observe_cases(ctx, "pkg/mod.py", "spin")
    assert result["verdicts"] == {"timed_out": 1}
    assert result["problems"][0]["reason"] == "ran longer than 2 s"
    assert time.monotonic() - started < 15


def test_crash_loses_only_its_own_case(ctx: CapabilityContext) -> None:
    """os._exit in one case marks it crashed; the cases before and after are still observed."""
    result = observe_cases(ctx, "pkg/mod.py", "exit_on")
    seen = observations(ctx, "exit_on")
    assert list(seen) == ["5", "6", "0", "1", "3"]
    assert seen["6"].verdict == "crashed" and seen["6"].reason
    for case in ("5", "0", "1", "3"):
        observed = seen[case]
        assert observed.verdict == "kept", case
        assert observed.returned is not None and observed.returned["literal"] == str(int(case) * 10)
    assert result["verdicts"] == {"kept": 4, "crashed": 1}


def test_receiver_that_cannot_be_built_is_setup_failed(ctx: CapabilityContext) -> None:
    """An __init__ that raises fails the setup, not the method."""
    result = observe_cases(ctx, "pkg/mod.py", "Broken.go")
    assert result["verdicts"] == {"setup_failed": 1}
    problem = result["problems"][0]
    assert problem["call"] == "Broken().go()"
    assert problem["reason"] == "building Broken() raised RuntimeError: cannot build"


def test_instance_method_is_called_on_its_receiver(ctx: CapabilityContext) -> None:
    """The receiver is built in the child and the method called on it."""
    observe_cases(ctx, "pkg/mod.py", "Counter.bump")
    seen = observations(ctx, "Counter.bump")
    assert seen["1"].receiver == "Counter(0)"
    assert seen["1"].call("bump") == "Counter(0).bump(1)"
    assert seen["1"].returned is not None and seen["1"].returned["literal"] == "1"


def test_generator_is_observed_as_its_items(ctx: CapabilityContext) -> None:
    """A generator's items are consumed and recorded as a list literal."""
    observe_cases(ctx, "pkg/mod.py", "count")
    three = observations(ctx, "count")["3"]
    assert three.verdict == "kept" and three.stage == "iterate"
    assert three.returned is not None
    assert (three.returned["kind"], three.returned["literal"]) == ("iterator", "[0, 1, 2]")


def test_exception_while_iterating_has_stage_iterate(ctx: CapabilityContext) -> None:
    """An exception raised by the generator's body is recorded at the iterate stage."""
    result = observe_cases(ctx, "pkg/mod.py", "fail_later")
    observed = observations(ctx, "fail_later")["1"]
    assert (observed.verdict, observed.stage) == ("kept", "iterate")
    assert observed.raised is not None and observed.raised["type"] == "ValueError"
    assert observed.returned is None
    assert result["kept"][0]["outcome"] == "raises ValueError: broke after one"


def test_stdout_is_captured(ctx: CapabilityContext) -> None:
    """What the function prints is recorded per case."""
    observe_cases(ctx, "pkg/mod.py", "shout")
    seen = observations(ctx, "shout")
    assert seen["'abc'"].stdout == "said abc\n"
    assert seen["'abc'"].returned is not None and seen["'abc'"].returned["literal"] == "3"


def test_written_files_are_noted_but_not_kept(ctx: CapabilityContext) -> None:
    """A case writing into its cwd is flagged; nothing reaches the workspace or the project."""
    result = observe_cases(ctx, "pkg/mod.py", "touch")
    assert result["verdicts"] == {"kept": 2}
    seen = observations(ctx, "touch")
    assert all(o.wrote_files for o in seen.values())
    assert ctx.store.changed_paths() == []
    assert not (ctx.store.root / "abc").exists()
    pure = observe_cases(ctx, "pkg/mod.py", "area")
    assert pure["verdicts"]["kept"] >= 1
    assert not any(o.wrote_files for o in observations(ctx, "area").values())


def test_module_that_fails_to_import_is_tool_106(ctx: CapabilityContext) -> None:
    """The exception raised at import is reported with its text."""
    with pytest.raises(ToolError) as info:
        observe_cases(ctx, "pkg/broken.py", "f")
    assert info.value.code == "TOOL_106"
    assert "RuntimeError: cannot start here" in info.value.message


@pytest.mark.parametrize(
    ("qualname", "words"),
    [
        ("outer.inner", "local to a function"),
        ("inner", "it is 'outer.inner'"),
        ("bump", "it is 'Counter.bump'"),
        ("Counter.double", "property"),
        ("Counter", "not a function"),
        ("missing", "cannot be found"),
    ],
)
def test_uncallable_qualnames_are_tool_106(
    ctx: CapabilityContext, qualname: str, words: str
) -> None:
    """Nested functions, bare method names, properties and classes cannot be studied."""
    for capability in (observe_cases, signature_inputs):
        with pytest.raises(ToolError) as info:
            capability(ctx, "pkg/mod.py", qualname)
        assert info.value.code == "TOOL_106"
        assert words in info.value.message


def test_characterizable_skips_with_reasons(ctx: CapabilityContext) -> None:
    """Private names and test code are opt-in; uncallable names are always skipped."""
    assert characterizable(ctx, "pkg/mod.py", "area") == {"skip": False, "reason": ""}
    private = characterizable(ctx, "pkg/mod.py", "_private")
    assert private["skip"] and "include_private" in private["reason"]
    assert not characterizable(ctx, "pkg/mod.py", "_private", {"include_private": True})["skip"]
    for path, name in (("tests/test_mod.py", "test_area"), ("tests/helpers.py", "make")):
        skipped = characterizable(ctx, path, name)
        assert skipped["skip"] and "include_tests" in skipped["reason"], path
        assert characterizable(ctx, path, name, {"include_tests": True})["skip"] is False
    nested = characterizable(ctx, "pkg/mod.py", "outer.inner")
    assert nested == {
        "skip": True,
        "reason": "'outer.inner' is local to a function and cannot be called",
    }
    prop = characterizable(ctx, "pkg/mod.py", "Counter.double")
    assert prop["skip"] and "property" in prop["reason"]


def test_a_case_that_exhausts_memory_or_recursion_is_not_a_behaviour(tmp_path: Path) -> None:
    """A MemoryError or RecursionError depends on the runner's limits: never pinned in a test."""
    source = "def deep(n):\n    return deep(n + 1)\n\n\ndef big(n):\n    return bytearray(n)\n"
    ctx = capability_context(write_tree(tmp_path, {"m.py": source}))
    propose_cases(ctx, "m.py", "deep", ["0"])
    [deep] = [o for o in draft_observations(ctx, "deep") if o.case == "0"]
    assert deep.verdict == "crashed" and "RecursionError" in deep.reason
    propose_cases(ctx, "m.py", "big", ["10 ** 12"])
    [big] = [o for o in draft_observations(ctx, "big") if o.case == "10 ** 12"]
    assert big.verdict == "crashed" and "MemoryError" in big.reason


def draft_observations(ctx: CapabilityContext, qualname: str) -> list[Observation]:
    observe_cases(ctx, "m.py", qualname)
    return draft(ctx, "m.py", qualname).observations


DATED = """import datetime


def invoice_number(prefix, sequence, year=None):
    year = year or datetime.date.today().year
    return f"{prefix.upper()}-{year}-{sequence:05d}"
"""


def test_a_result_that_depends_on_the_date_is_not_kept(tmp_path: Path) -> None:
    """The second run reads another wall clock (year, month, day): the invoice number of
    this year is not pinned, the one of a given year is."""
    ctx = capability_context(write_tree(tmp_path, {"dated.py": DATED}))
    propose_cases(ctx, "dated.py", "invoice_number", ["'a', 1", "'a', 1, 2024"])
    observe_cases(ctx, "dated.py", "invoice_number")
    verdicts = {o.case: o for o in observations_of(ctx, "dated.py", "invoice_number")}
    assert verdicts["'a', 1"].verdict == "nondeterministic"
    assert "another date" in verdicts["'a', 1"].reason
    assert verdicts["'a', 1, 2024"].verdict == "kept"
    assert verdicts["'a', 1, 2024"].returned["literal"] == "'A-2024-00001'"


def observations_of(ctx: CapabilityContext, path: str, qualname: str) -> list[Observation]:
    return draft(ctx, path, qualname).observations
