"""The lint model step measured on a package as published (``remora eval --as-published``):
its real residue, an issue no tool may fix, asked about, the rewrite verified and counted,
host alone beside host and model in the same run."""

from __future__ import annotations

from pathlib import Path

from remora.evaluation.published import job_counts
from remora.evaluation.run import EvalOptions, run_eval
from remora.model.base import ModelRequest
from remora.orchestration import JobRecord
from remora.testing import Step, call
from tests.support.eval_context import scripted_session

CONVERT = '''\
"""Conversions."""


def to_int(text):
    """The integer ``text`` spells."""
    try:
        return int(text)
    except ValueError:
        raise TypeError("not a number: " + text)
'''
TESTS = """\
import pytest

from convpkg.convert import to_int


def test_to_int():
    assert to_int("3") == 3


def test_not_a_number():
    with pytest.raises(TypeError):
        to_int("x")
"""


def write_package(root: Path) -> Path:
    """A package as its authors published it: B904 in a handler without a name, which no
    tool may fix (the host's rewrite needs ``except ... as err``)."""
    (root / "convpkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "convpkg"\nversion = "0.1"\n')
    (root / "convpkg" / "__init__.py").write_text('"""Conversions."""\n')
    (root / "convpkg" / "convert.py").write_text(CONVERT)
    (root / "tests" / "test_convert.py").write_text(TESTS)
    return root


def chain(request: ModelRequest) -> Step:
    """The model: the raise of the issue asked about, chained with ``from None``."""
    assert request.choices == {"code": ["B904"], "line": [9]}
    return call(
        "rewrite_lines",
        code="B904",
        line=9,
        text='raise TypeError("not a number: " + text) from None',
    )


def test_the_model_row_keeps_a_verified_rewrite_of_the_real_residue(tmp_path: Path) -> None:
    package = write_package(tmp_path / "convpkg-project")
    options = EvalOptions(
        spec=str(package), operations=["lint"], limit=2, out=tmp_path / "out", as_published=True
    )
    session = scripted_session(chain, "operations.lint.options.use_model=true")
    [lint] = run_eval(options, evaluators={}, session=session).reports

    assert lint.error is None and lint.selection == ["convpkg/convert.py"]
    rows = {score.tool: score for score in lint.scores}
    assert list(rows) == ["remora", "remora (host only)"]
    model, host = rows["remora"].values, rows["remora (host only)"].values
    # Every change accepted: the model's rewrite is the one change and breaks nothing.
    assert (model["changes"], model["tests_broken"], model["harm"]) == (1, 0, 0)
    assert (host["changes"], host["tests_broken"], host["harm"]) == (0, 0, 0)
    changed = tmp_path / "out" / "work" / "lint" / "as-published" / "convpkg" / "convert.py"
    assert changed.read_text() == CONVERT.replace("+ text)\n", "+ text) from None\n")
    details = lint.details["remora"]
    assert details["job_counts"] == {
        "manual": 1,
        "left_for_a_person": 0,
        "model_asked": 1,
        "model_kept": 1,
        "model_refused": 0,
    }
    [job] = details["jobs"]
    assert job["details"]["model_rewrites"][0]["after"] == (
        '        raise TypeError("not a number: " + text) from None'
    )
    # The host alone leaves the residue for the person: the job is skipped, nothing counted.
    assert lint.details["remora (host only)"]["job_counts"] == {}
    assert (
        "remora: the jobs counted left_for_a_person 0, manual 1, model_asked 1, "
        "model_kept 1, model_refused 0"
    ) in lint.notes
    assert (package / "convpkg" / "convert.py").read_text() == CONVERT


def record(counts: object) -> JobRecord:
    return JobRecord(job_id="j", operation="lint", node_id="n", details={"counts": counts})


def test_job_counts_sum_what_each_job_counted_and_nothing_else() -> None:
    jobs = [
        record({"manual": 2, "model_kept": 1}),
        record({"manual": 1, "model_kept": 0, "model_asked": 3}),
        record({"flag": True, "name": "x", "manual": 1.5}),  # not counts: left out
        record("three"),
        JobRecord(job_id="j", operation="lint", node_id="n"),
    ]
    assert job_counts(jobs) == {"manual": 3, "model_kept": 1, "model_asked": 3}
