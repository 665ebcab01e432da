"""Characterization tests: observed behaviours written as pytest files, verified by running them."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.errors import ToolError
from remora.operations.characterize._testgen import MARKER
from remora.operations.characterize.characterization import (
    characterization_result,
    existing_tests,
    run_characterization_tests,
    verified_report,
    write_characterization_tests,
    write_custom_tests,
)
from remora.operations.characterize.inputs import observe_cases, propose_cases
from remora.tools.capabilities import CapabilityContext
from tests.stores import capability_context, write_tree

# grade's body: `if` (1), word = "big" (2), word = "small" (3), return (4): four statements,
# and two branches out of the `if`. The host's cases (0, 1, 3 and the project's 1) are all
# below LIMIT, a name the candidates cannot read, so only the "small" side runs.
MODULE = """LIMIT = 100
_calls = [0]


def grade(n):
    if n > LIMIT:
        word = "big"
    else:
        word = "small"
    return word


def tick(step=1):
    _calls[0] += step
    if _calls[0] > 2:
        return "many"
    return _calls[0]


def picky(x):
    raise TypeError("never with " + repr(x))
"""

PROJECT_TESTS = """from pkg.mod import grade


def test_labels():
    assert grade(1) == "small"


def test_unrelated():
    assert True
"""

PASSING = """from pkg.mod import grade


def test_small():
    assert grade(3) == "small"
"""

FAILING = """from pkg.mod import grade


def test_wrong():
    assert grade(3) == "big"
"""

GENERATED = "tests/test_mod_remora.py"  # beside the project's own tests/test_mod.py


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    root = write_tree(
        tmp_path / "proj",
        {"pkg/__init__.py": "", "pkg/mod.py": MODULE, "tests/test_mod.py": PROJECT_TESTS},
    )
    return capability_context(root, {"workspace_id": str(tmp_path)})


def read(ctx: CapabilityContext, path: str) -> str:
    return ctx.store.read(path).decode("utf-8")


def test_generated_tests_pin_one_branch_with_exact_coverage(ctx: CapabilityContext) -> None:
    """A test per call observed (not the project's own: ``grade(1)`` is in its tests),
    written formatted in the workspace; running them keeps the one that says most (``3``
    over ``0``), since the other adds no arc and no killed mutant; coverage and mutants count
    the function alone."""
    observe_cases(ctx, "pkg/mod.py", "grade")
    written = write_characterization_tests(ctx, "pkg/mod.py", "grade")
    assert written == {
        "path": GENERATED,
        "tests": ["test_grade_returns_small_for_0", "test_grade_returns_small_for_3"],
        "behaviours": 2,
    }
    text = read(ctx, GENERATED)
    assert MARKER in text and "from pkg.mod import grade" in text
    assert 'assert grade(0) == "small"' in text and "grade(1)" not in text
    assert not (ctx.store.root / GENERATED).exists()
    report = run_characterization_tests(ctx, "pkg/mod.py", "grade")
    assert report["kept"] == ["test_grade_returns_small"] and report["dropped"] == []
    assert 'assert grade(3) == "small"' in read(ctx, GENERATED)
    assert "grade(0)" not in read(ctx, GENERATED)
    assert report["coverage"] == {
        "lines_covered": 3,
        "lines_total": 4,
        "branches_covered": 1,
        "branches_total": 2,
        "missing_lines": [7],  # word = "big"
        "missing_branches": [(6, 7)],  # the `if` never goes there
    }
    assert (report["line_rate"], report["branch_rate"]) == (0.75, 0.5)
    assert report["coverage_summary"] == "lines 3/4 (75%), branches 1/2 (50%)"
    # '>' to '>=' and "big" changed survive: nothing reaches the limit or the big side
    assert (report["mutants_killed"], report["mutants_measured"]) == (2, 4)
    assert verified_report(ctx, "pkg/mod.py", "grade") == report


def test_both_branches_give_full_coverage(ctx: CapabilityContext) -> None:
    """A proposal reaching the other branch adds a behaviour and completes the coverage."""
    propose_cases(ctx, "pkg/mod.py", "grade", ["500"])
    assert observe_cases(ctx, "pkg/mod.py", "grade")["behaviours"] == 2
    written = write_characterization_tests(ctx, "pkg/mod.py", "grade")
    assert len(written["tests"]) == 3  # 500, then 0 and 3 (both "small")
    assert 'assert grade(500) == "big"' in read(ctx, GENERATED)
    report = run_characterization_tests(ctx, "pkg/mod.py", "grade")
    assert report["kept"] == ["test_grade_returns_big", "test_grade_returns_small"]
    assert report["dropped"] == []
    assert report["coverage"] == {
        "lines_covered": 4,
        "lines_total": 4,
        "branches_covered": 2,
        "branches_total": 2,
        "missing_lines": [],
        "missing_branches": [],
    }
    assert (report["line_rate"], report["branch_rate"]) == (1.0, 1.0)


def test_failing_test_is_dropped_and_the_file_re_rendered(ctx: CapabilityContext) -> None:
    """A test that fails is reported in ``dropped``; the file is rebuilt from the draft."""
    propose_cases(ctx, "pkg/mod.py", "grade", ["500"])
    observe_cases(ctx, "pkg/mod.py", "grade")
    written = write_characterization_tests(ctx, "pkg/mod.py", "grade")
    big = 'assert grade(500) == "big"'
    broken = read(ctx, GENERATED).replace(big, 'assert grade(500) == "bigger"')
    ctx.store.write(GENERATED, broken.encode())
    report = run_characterization_tests(ctx, "pkg/mod.py", "grade")
    assert [d["test"] for d in report["dropped"]] == ["test_grade_returns_big"]
    assert report["dropped"][0]["reason"].startswith("failed:")
    assert report["dropped"][0]["reason"].endswith("(run 1)")
    assert len(report["kept"]) < len(written["tests"])  # renamed once alone: no "_for_3"
    assert "bigger" not in read(ctx, GENERATED) and big not in read(ctx, GENERATED)
    assert report["coverage"]["lines_covered"] == 3


def test_state_shared_between_cases_cannot_keep_a_failing_test(ctx: CapabilityContext) -> None:
    """Cases run in one process, so a module-level counter leaks between them; whatever the
    tool keeps passes on a fresh run, and what fails is dropped with a reason."""
    propose_cases(ctx, "pkg/mod.py", "tick", ["step=1", "1.0"])
    observe_cases(ctx, "pkg/mod.py", "tick")
    written = write_characterization_tests(ctx, "pkg/mod.py", "tick")
    report = run_characterization_tests(ctx, "pkg/mod.py", "tick")
    dropped = [d["test"] for d in report["dropped"]]
    assert report["kept"], "at least the first call's behaviour holds on a fresh run"
    assert sorted(report["kept"] + dropped) == sorted(written["tests"])
    assert all(d["reason"] for d in report["dropped"])
    text = read(ctx, report["path"])
    assert all(f"def {name}(" in text for name in report["kept"])
    assert not any(f"def {name}(" in text for name in dropped)
    # tick(1.0) saw the counter at 2 while observed, but starts from 1 in a fresh process.
    assert "assert tick(1.0) == 'many'" not in text


def test_custom_tests_are_kept_only_when_they_pass(ctx: CapabilityContext) -> None:
    """A passing file is kept and verified; a failing one is refused and the old file restored."""
    report = write_custom_tests(ctx, "pkg/mod.py", "grade", PASSING)
    assert report["path"] == GENERATED and report["kept"] == ["test_small"]
    assert report["coverage"]["lines_covered"] == 3
    assert read(ctx, GENERATED) == PASSING
    assert verified_report(ctx, "pkg/mod.py", "grade") == report
    with pytest.raises(ToolError) as info:
        write_custom_tests(ctx, "pkg/mod.py", "grade", FAILING)
    assert info.value.code == "TOOL_706" and "test_wrong" in info.value.message
    assert read(ctx, GENERATED) == PASSING
    assert verified_report(ctx, "pkg/mod.py", "grade") == report


def test_failing_custom_tests_leave_no_file(ctx: CapabilityContext) -> None:
    """Without an earlier file, a refused one is deleted again."""
    with pytest.raises(ToolError) as info:
        write_custom_tests(ctx, "pkg/mod.py", "grade", FAILING)
    assert info.value.code == "TOOL_706"
    assert not ctx.store.exists(GENERATED)
    assert verified_report(ctx, "pkg/mod.py", "grade") is None


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("def test_x(:\n    pass\n", "not valid Python"),
        ("from pkg.mod import grade\n\nVALUE = grade(1)\n", "no test function"),
    ],
)
def test_custom_tests_must_be_a_test_module(
    ctx: CapabilityContext, content: str, words: str
) -> None:
    """Invalid Python or a file without test functions is TOOL_707 and never written."""
    with pytest.raises(ToolError) as info:
        write_custom_tests(ctx, "pkg/mod.py", "grade", content)
    assert info.value.code == "TOOL_707" and words in info.value.message
    assert ctx.store.changed_paths() == []


def test_result_runs_the_whole_chain(ctx: CapabilityContext) -> None:
    """With nothing done yet, the result observes, writes and verifies before reporting."""
    result = characterization_result(ctx, "pkg/mod.py", "grade")
    assert result["ok"] is True
    assert result["path"] == GENERATED and result["kept"] == ["test_grade_returns_small"]
    assert result["coverage_summary"] == "lines 3/4 (75%), branches 1/2 (50%)"
    assert ctx.store.exists(GENERATED)
    assert characterization_result(ctx, "pkg/mod.py", "grade") == result


def test_result_without_usable_behaviour_is_a_reason(ctx: CapabilityContext) -> None:
    """When every case is a TypeError the result says why instead of raising."""
    result = characterization_result(ctx, "pkg/mod.py", "picky")
    assert result == {
        "ok": False,
        "reason": "no input gave a behaviour worth a test (misuse)",
        "code": "TOOL_705",
    }
    assert ctx.store.changed_paths() == []


def test_a_foreign_file_at_the_path_is_not_replaced(tmp_path: Path) -> None:
    """Same-named test files Remora did not write are left alone: the project's own
    ``test_mod.py`` and a ``test_mod_remora.py`` of its own; ``_remora_2.py`` is used."""
    foreign = "def test_mine():\n    assert True\n"
    root = write_tree(
        tmp_path / "proj",
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": MODULE,
            "tests/test_mod.py": PROJECT_TESTS,
            GENERATED: foreign,
        },
    )
    ctx = capability_context(root, {"workspace_id": str(tmp_path)})
    observe_cases(ctx, "pkg/mod.py", "grade")
    written = write_characterization_tests(ctx, "pkg/mod.py", "grade")
    assert written["path"] == "tests/test_mod_remora_2.py"
    assert read(ctx, GENERATED) == foreign and read(ctx, "tests/test_mod.py") == PROJECT_TESTS
    assert ctx.store.changed_paths() == ["tests/test_mod_remora_2.py"]
    again = write_characterization_tests(ctx, "pkg/mod.py", "grade")
    assert again["path"] == "tests/test_mod_remora_2.py"


def test_existing_tests_lists_project_tests_that_use_the_function(
    ctx: CapabilityContext,
) -> None:
    """Only tests mentioning the function count; Remora's own generated files are skipped."""
    expected = {
        "files": [{"path": "tests/test_mod.py", "tests": ["test_labels"], "count": 1}],
        "tests_using_function": 1,
    }
    assert existing_tests(ctx, "pkg/mod.py", "grade") == expected
    observe_cases(ctx, "pkg/mod.py", "grade")
    write_characterization_tests(ctx, "pkg/mod.py", "grade")
    assert existing_tests(ctx, "pkg/mod.py", "grade") == expected
    assert existing_tests(ctx, "pkg/mod.py", "tick")["tests_using_function"] == 0


def test_the_model_is_shown_the_mutants_no_test_notices(ctx: CapabilityContext) -> None:
    """After the host's tests, the evidence marks the side never run and lists each
    surviving mutant with its line as written."""
    from remora.operations.characterize.steps import coverage_evidence

    characterization_result(ctx, "pkg/mod.py", "grade")
    evidence = coverage_evidence(ctx, "pkg/mod.py", "grade")
    assert not evidence["complete"] and evidence["grew"]
    text = evidence["text"]
    assert "mutants killed 2/4 (50%)" in text
    assert '   7         word = "big"  # never run' in text
    assert "  line 6: if n > LIMIT:    <- '>' to '>='" in text
    assert coverage_evidence(ctx, "pkg/mod.py", "grade")["grew"] is False


def test_the_verdict_says_what_each_proposal_added(ctx: CapabilityContext) -> None:
    """Each proposal's gain is measured after its tests ran, from the host's own tests: one
    that reaches the side never run adds to the reach, one that repeats a behaviour adds
    nothing; the summary says what the model added."""
    from remora.operations.characterize.steps import coverage_evidence, test_verdict

    def propose_and_measure(cases: list[str]) -> str:
        propose_cases(ctx, "pkg/mod.py", "grade", cases)
        observe_cases(ctx, "pkg/mod.py", "grade")
        write_characterization_tests(ctx, "pkg/mod.py", "grade")
        run_characterization_tests(ctx, "pkg/mod.py", "grade")
        return str(coverage_evidence(ctx, "pkg/mod.py", "grade")["text"])

    host = test_verdict(ctx, "pkg/mod.py", "grade")
    assert host["details"]["proposal_gains"] == [] and "model" not in host["summary"]
    shown = coverage_evidence(ctx, "pkg/mod.py", "grade")["text"]  # what the model is shown
    assert shown.startswith("The host's argument lists ran; ")
    assert propose_and_measure(["500"]).startswith("The host's and your argument lists ran; ")
    propose_and_measure(["2"])
    verdict = test_verdict(ctx, "pkg/mod.py", "grade")
    first, second = verdict["details"]["proposal_gains"]
    assert verdict["details"]["proposal_cases"] == [["500"], []]  # 2 repeats the host's 3
    assert first >= 2  # the "big" line and the branch to it, at least
    assert second == 0
    assert (
        f"the model's 2 proposal(s) added {first} to what the tests reach" in (verdict["summary"])
    )


def test_the_functions_of_one_module_share_one_test_module(tmp_path: Path) -> None:
    """A job whose module already has a generated test module (another function's tests,
    accepted earlier) adds its tests to it: imports joined, names kept apart; its runs and
    mutants see its own tests only, and when none is kept the module is restored."""
    root = write_tree(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/mod.py": MODULE})
    first = capability_context(root, {"workspace_id": "first"})
    propose_cases(first, "pkg/mod.py", "grade", ["500"])
    observe_cases(first, "pkg/mod.py", "grade")
    write_characterization_tests(first, "pkg/mod.py", "grade")
    graded = run_characterization_tests(first, "pkg/mod.py", "grade")
    accepted = read(first, "tests/test_mod.py")
    (root / "tests").mkdir()
    (root / "tests/test_mod.py").write_text(accepted)  # as an accept would leave it

    second = capability_context(root, {"workspace_id": "second"})
    observe_cases(second, "pkg/mod.py", "tick")
    written = write_characterization_tests(second, "pkg/mod.py", "tick")
    assert written["path"] == "tests/test_mod.py"
    report = run_characterization_tests(second, "pkg/mod.py", "tick")
    assert report["kept"] and set(report["kept"]) <= set(written["tests"])
    text = read(second, "tests/test_mod.py")
    assert text.count('"""Characterization tests for pkg.mod.') == 1
    assert "from pkg.mod import grade, tick\n" in text
    assert all(f"def {name}(" in text for name in graded["kept"] + report["kept"])
    assert text.startswith(accepted.split("from pkg.mod import")[0])
    assert {d["test"] for d in report["dropped"]} <= set(written["tests"])

    third = capability_context(root, {"workspace_id": "third"})
    observe_cases(third, "pkg/mod.py", "tick")
    write_characterization_tests(third, "pkg/mod.py", "tick")
    broken = read(third, "tests/test_mod.py").replace("assert tick(", "assert not tick(")
    third.store.write("tests/test_mod.py", broken.encode())
    with pytest.raises(ToolError) as info:
        run_characterization_tests(third, "pkg/mod.py", "tick")
    assert info.value.code == "TOOL_706"
    assert read(third, "tests/test_mod.py") == accepted
