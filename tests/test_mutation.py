"""Mutants of one function, run against a real test file by the pytest plugin in a real
pytest process: which tests kill which mutant, what survives, what loops forever."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from remora.operations.characterize._mutation import PLUGIN, MutationReport, measure_mutants
from remora.operations.characterize._mutator import mutants, mutated_code
from remora.operations.characterize.characterization import informative, select_tests
from remora.operations.characterize.inputs import Draft, Observation
from tests.stores import write_tree

MODULE = '''def bulk_price(quantity, unit):
    """Price with 5% off from 10 units."""
    total = quantity * unit
    if quantity >= 10:
        total = total * 95 // 100
    return total


def count_up(n):
    i = 0
    while i < n:
        i += 1
    return i
'''

TESTS = """from pkg.billing import bulk_price, count_up


def test_zero():
    assert bulk_price(0, 99) == 0


def test_one():
    assert bulk_price(1, 99) == 99


def test_bulk():
    assert bulk_price(10, 100) == 950


def test_count():
    assert count_up(3) == 3
"""


def test_points_follow_the_body_and_skip_the_docstring() -> None:
    listed = mutants(MODULE, "bulk_price")
    assert [(m.line, m.change) for m in listed] == [
        (3, "'*' to '/'"),
        (4, "10 to 11"),
        (4, "'>=' to '>'"),
        (5, "95 to 96"),
        (5, "'*' to '/'"),
        (5, "100 to 101"),
        (5, "'//' to '/'"),
        (6, "the returned value to None"),
    ]
    assert [m.index for m in mutants(MODULE, "bulk_price", limit=3)] == [0, 4, 7]


def test_a_mutant_compiles_to_the_function_with_one_change() -> None:
    namespace: dict[str, object] = {}
    exec(compile(MODULE, "billing.py", "exec"), namespace)
    function = namespace["bulk_price"]
    assert callable(function) and function(10, 100) == 950
    function.__code__ = mutated_code(MODULE, "billing.py", "bulk_price", 2)  # '>=' to '>'
    assert function(10, 100) == 1000 and function(11, 100) == 1045


def _launcher(root: Path, test_file: Path):  # type: ignore[no-untyped-def]
    def launch(request: Path, plugin: Path) -> str:
        env = {**os.environ, "REMORA_MUTANTS": str(request), "PYTHONPATH": f"{root}:{plugin}"}
        argv = [sys.executable, "-m", "pytest", "-p", PLUGIN, "-q", "-p", "no:cacheprovider"]
        result = subprocess.run(
            [*argv, str(test_file)], cwd=root, env=env, capture_output=True, text=True
        )
        return (result.stdout + result.stderr)[-300:]

    return launch


def _measure(tmp_path: Path, qualname: str, tests: str = TESTS) -> MutationReport:
    root = write_tree(
        tmp_path / "proj",
        {"pkg/__init__.py": "", "pkg/billing.py": MODULE, "test_billing.py": tests},
    )
    return measure_mutants(
        MODULE,
        qualname,
        module_file=root / "pkg/billing.py",
        workdir=tmp_path / "work",
        launch=_launcher(root, root / "test_billing.py"),
        test_timeout=1.0,
    )


def test_each_mutant_is_killed_by_the_tests_that_notice_it(tmp_path: Path) -> None:
    report = _measure(tmp_path, "bulk_price")
    assert report.error is None and report.baseline_failed == []
    by_change = {(m.line, m.change): m for m in report.mutants}
    # bulk_price(0, 99) == 0 notices only the missing return value
    assert by_change[(6, "the returned value to None")].killed_by == [
        "test_bulk",
        "test_one",
        "test_zero",
    ]
    assert by_change[(3, "'*' to '/'")].killed_by == ["test_bulk", "test_one"]
    # 95000 // 100 == 95000 / 100: no test has a total whose rounding tells them apart
    assert by_change[(5, "'//' to '/'")].status == "survived"
    assert report.survivors() == [by_change[(5, "'//' to '/'")]]
    assert report.kills()["test_zero"] == {7}
    assert report.summary() == "mutants killed 7/8 (88%)"


def test_a_mutant_that_loops_forever_is_stopped_and_counts_as_killed(tmp_path: Path) -> None:
    report = _measure(tmp_path, "count_up")
    looping = next(m for m in report.mutants if m.change == "'+=' to '-='")
    assert looping.status == "killed" and looping.timed_out
    assert looping.killed_by == ["test_count"]


def test_a_test_failing_without_mutants_kills_nothing(tmp_path: Path) -> None:
    broken = TESTS + "\n\ndef test_wrong():\n    assert bulk_price(1, 1) == 2\n"
    report = _measure(tmp_path, "bulk_price", broken)
    assert report.baseline_failed == ["test_wrong"]
    assert all("test_wrong" not in m.killed_by for m in report.mutants)


def test_tests_that_cannot_import_give_an_error_not_a_score(tmp_path: Path) -> None:
    report = _measure(tmp_path, "bulk_price", "from pkg.billing import nothing\n")
    assert report.score is None and report.error == "the tests could not be collected"
    assert report.summary().startswith("mutation score not measured")


def _observation(case: str, literal: str, arcs: list[tuple[int, int]]) -> Observation:
    return Observation(
        case=case,
        source="name",
        verdict="kept",
        returned={"literal": literal, "kind": "value", "type": "int"},
        arcs=arcs,
    )


def test_selection_keeps_tests_that_add_arcs_or_kills_most_telling_first() -> None:
    """``bulk_price(0, 99) == 0`` and ``(3, 99) == 297`` behave alike (same path, same
    kind of result); the second kills more mutants and says more, so the first is left
    out; ``(10, 100)`` takes another path and stays."""
    tests = {
        "test_a": _observation("0, 99", "0", [(3, 4), (4, 6)]),
        "test_b": _observation("3, 99", "297", [(3, 4), (4, 6)]),
        "test_c": _observation("10, 100", "950", [(3, 4), (4, 5), (5, 6)]),
    }
    report = MutationReport.model_validate(
        {
            "mutants": [
                {"index": 0, "line": 3, "change": "", "status": "killed", "killed_by": ["test_b"]},
                {
                    "index": 1,
                    "line": 6,
                    "change": "",
                    "status": "killed",
                    "killed_by": ["test_a", "test_b", "test_c"],
                },
            ]
        }
    )
    assert select_tests(tests, report) == ["test_b", "test_c"]
    assert informative(tests["test_b"]) > informative(tests["test_a"])


def _typed(case: str, arcs: list[tuple[int, int]]) -> Observation:
    return Observation(
        case=case,
        source="name",
        verdict="kept",
        returned={"kind": "value", "type": "function"},
        arcs=arcs,
    )


def test_behaviours_only_a_type_can_pin_earn_a_test_by_killing_a_mutant() -> None:
    """Three paths of ``memoize`` whose results (functions) can only be checked by type:
    one test (the most telling) is kept when nothing else is, and another only for the
    mutant it alone kills."""
    tests = {
        "test_a": _typed("f", [(1, 2)]),
        "test_b": _typed("f, {}", [(1, 3)]),
        "test_c": _typed("f, None, 1", [(1, 4)]),
    }

    def report(killed: dict[int, list[str]]) -> MutationReport:
        return MutationReport.model_validate(
            {
                "mutants": [
                    {"index": i, "line": 1, "change": "", "status": "killed", "killed_by": by}
                    for i, by in killed.items()
                ]
            }
        )

    assert select_tests(tests, report({0: ["test_a", "test_b", "test_c"]})) == ["test_c"]
    both = report({0: ["test_a", "test_b"], 1: ["test_c"]})
    assert select_tests(tests, both) == ["test_a", "test_c"]
    with_value = {**tests, "test_d": _observation("2", "4", [(1, 5)])}
    assert select_tests(with_value, report({0: ["test_d"]})) == ["test_d"]


def test_calls_the_project_already_checks_get_no_generated_test() -> None:
    """A call taken from the project's tests or from a docstring example (which doctest
    runs) would be a test the package already has: only the others are candidates."""
    draft = Draft()
    for case, source, value in (
        ("2", "doctest", "4"),
        ("3", "test", "6"),
        ("-1", "name", "-2"),
        ("0", "default", "0"),
    ):
        draft.observations.append(
            Observation(
                case=case,
                source=source,
                verdict="kept",
                returned={"literal": value, "kind": "value", "type": "int"},
                arcs=[(1, 2)],
            )
        )
    assert [observation.case for observation in draft.candidates()] == ["-1", "0"]
