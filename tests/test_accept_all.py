"""Accept every change Remora proposes, as a user pressing ``A`` would: nothing of the
authors' is lost.

On copies of the bundled example and of ``tests/data/documented_pkg`` (a package documented
in prose with doctests, literal blocks, a directive and a list, some definitions left
undocumented, and its own tests), the real ``remora analyze --auto-accept`` runs every
operation with the embedded model. Afterwards the package's tests and doctests pass, every
docstring sentence, example and literal block its authors wrote is still there (summaries
changed only by a mechanical fix are counted apart), and so is every line of code that is
not a lint fix's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from remora.evaluation.published import compare_docstrings
from tests.support.cli_process import run_remora

REPOSITORY = Path(__file__).resolve().parents[1]
FIXTURES = {
    "sample_project": (REPOSITORY / "examples" / "sample_project", "inventory"),
    "documented_pkg": (REPOSITORY / "tests" / "data" / "documented_pkg", "ledgerkit"),
}


def _sources(root: Path, package: str) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted((root / package).rglob("*.py"))
    }


def _pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.model
@pytest.mark.parametrize("fixture", sorted(FIXTURES))
def test_accepting_every_change_keeps_the_authors_work(tmp_path: Path, fixture: str) -> None:
    source, package = FIXTURES[fixture]
    root = tmp_path / fixture
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("__pycache__", ".remora"))
    before = _sources(root, package)
    doctests_before = _pytest(root, "--doctest-modules", package)
    assert doctests_before.returncode in (0, 5), doctests_before.stdout[-2000:]

    ran = run_remora("analyze", ".", "--auto-accept", "--format", "json", cwd=root, timeout=900)
    # 2: a job failed (a summary left for the person, no test worth writing), as ruff's exit
    assert ran.returncode in (0, 2), ran.stderr[-2000:]
    jobs = json.loads(ran.stdout)["jobs"]
    assert {job["operation"] for job in jobs} == {"lint", "docstring", "test", "sample_data"}
    accepted = [line for line in ran.stderr.splitlines() if line.startswith("accepted ")]
    assert any(line.startswith("accepted docstring-") for line in accepted), ran.stderr[-3000:]

    after = _sources(root, package)
    assert set(after) == set(before)
    for path, text in before.items():
        harm = compare_docstrings(text, after[path])
        lost = [loss for loss in harm.details if loss.harm]
        assert harm.harms == 0 and not lost, (path, lost)
    suite = _pytest(root, "tests")
    assert suite.returncode == 0, suite.stdout[-3000:]
    doctests = _pytest(root, "--doctest-modules", package)
    assert doctests.returncode == doctests_before.returncode, doctests.stdout[-3000:]
    generated = sorted(path.name for path in (root / "tests").glob("*remora*.py")) + sorted(
        path.name
        for path in (root / "tests").glob("test_*.py")
        if not (source / "tests" / path.name).exists()
    )
    assert generated, "the test operation accepted no test"
