"""Changed code only: git diff hunks (and a save's changed lines) mapped onto the nodes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from remora.config import RemoraConfig
from remora.discovery import discover
from remora.errors import RunnerError
from remora.operations import installed_operations
from remora.orchestration import plan_jobs
from remora.orchestration.changes import changed_between, changed_jobs, git_changes
from tests.stores import write_tree
from tests.test_analyze_cli import MARKER, remora
from tests.test_sarif import validate

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SHOP = '''"""Shop."""


class Basket:
    """A basket."""

    def add(self, item):
        self.items.append(item)

    def total(self):
        return sum(self.items)


def checkout(basket):
    return basket.total()
'''


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def repository(tmp_path: Path, files: dict[str, str]) -> Path:
    root = write_tree(tmp_path / "repo", {"pyproject.toml": "[project]\nname = 'shop'\n", **files})
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def jobs_for(root: Path, changes: dict[str, frozenset[int] | None]) -> set[tuple[str, str]]:
    config = RemoraConfig(operations=installed_operations().default_configs())
    nodes = discover([root], config.discovery, root=root).nodes
    agents = installed_operations().load_agents([])
    plan = plan_jobs(config, agents, nodes, ["lint", "docstring", "test"])
    return {(job.operation, job.node.qualname) for job in changed_jobs(plan.jobs, nodes, changes)}


def test_a_changed_method_selects_the_method_and_its_file_not_its_class(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "p", {"shop.py": SHOP})
    line = SHOP.splitlines().index("        self.items.append(item)") + 1
    assert jobs_for(root, {"shop.py": frozenset({line})}) == {
        ("lint", "shop.py"),
        ("docstring", "Basket.add"),
        ("test", "Basket.add"),
    }


def test_a_changed_class_line_outside_its_methods_selects_the_class(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "p", {"shop.py": SHOP})
    line = SHOP.splitlines().index('    """A basket."""') + 1
    assert jobs_for(root, {"shop.py": frozenset({line})}) == {
        ("lint", "shop.py"),
        ("docstring", "Basket"),
    }


def test_a_new_file_counts_whole_and_an_unchanged_one_not_at_all(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "p", {"shop.py": SHOP, "other.py": "def f(x):\n    return x\n"})
    selected = jobs_for(root, {"other.py": None})
    assert selected == {("lint", "other.py"), ("docstring", "f"), ("test", "f")}


def test_the_lines_a_save_changed() -> None:
    before = "a\nb\nc\nd\n"
    assert changed_between(before, "a\nB\nc\nd\n") == {2}
    assert changed_between(before, "a\nb\nx\ny\nc\nd\n") == {3, 4}
    assert changed_between(before, "a\nd\n") == {1, 2}  # lines cut: around the cut


def test_git_changes_read_hunks_untracked_files_and_renames(tmp_path: Path) -> None:
    root = repository(tmp_path, {"shop.py": SHOP, "moved.py": "def g():\n    return 1\n"})
    (root / "shop.py").write_text(
        SHOP.replace("return sum(self.items)", "return sum(self.items) + 1")
    )
    git(root, "mv", "moved.py", "renamed.py")
    (root / "new.py").write_text("def h():\n    return 2\n")
    changes = git_changes(root)
    line = SHOP.splitlines().index("        return sum(self.items)") + 1
    assert changes["shop.py"] == {line}
    assert changes["new.py"] is None
    assert not changes.get("renamed.py")  # renamed, not edited: nothing changed
    assert "moved.py" not in changes


def test_another_revision_is_compared_from_where_the_branch_left_it(tmp_path: Path) -> None:
    root = repository(tmp_path, {"shop.py": SHOP})
    git(root, "checkout", "-q", "-b", "feature")
    (root / "shop.py").write_text(
        SHOP.replace("def checkout(basket):", "def checkout(basket, n=1):")
    )
    git(root, "commit", "-q", "-am", "feature")
    git(root, "checkout", "-q", "main")
    (root / "main.py").write_text("def later():\n    return 3\n")
    git(root, "add", "main.py")
    git(root, "commit", "-q", "-m", "main moves on")
    git(root, "checkout", "-q", "feature")
    changes = git_changes(root, "main")
    assert set(changes) == {"shop.py"}  # main.py is main's change, not the branch's


def test_no_repository_and_an_unknown_revision_are_clear_errors(tmp_path: Path) -> None:
    plain = write_tree(tmp_path / "plain", {"a.py": "x = 1\n"})
    with pytest.raises(RunnerError) as raised:
        git_changes(plain)
    assert raised.value.code == "RUN_023"
    root = repository(tmp_path, {"shop.py": SHOP})
    with pytest.raises(RunnerError) as unknown:
        git_changes(root, "origin/nope")
    assert unknown.value.code == "RUN_024"


def test_analyze_changed_runs_only_the_changed_functions(tmp_path: Path) -> None:
    source = "def first():\n    return 1\n\n\ndef second():\n    return 2\n"
    root = repository(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": source})
    (root / "pkg" / "mod.py").write_text(source.replace("return 2", "return 22"))
    done = remora(*MARKER, "analyze", "--ops", "marker", "--format", "json", "--changed", cwd=root)
    assert done.returncode == 0, done.stderr
    ran = [job["qualname"] for job in json.loads(done.stdout)["jobs"]]
    assert ran == ["second"]
    git(root, "commit", "-q", "-am", "second")
    clean = remora(*MARKER, "analyze", "--ops", "marker", "--changed", cwd=root)
    assert clean.returncode == 0, clean.stderr
    assert "nothing to run" in clean.stdout
    for form in ("sarif", "json"):
        machine = remora(*MARKER, "analyze", "--ops", "marker", "-f", form, "--changed", cwd=root)
        assert machine.returncode == 0, machine.stderr
        read = json.loads(machine.stdout)  # still a document a CI step can read
        assert "nothing to run" in machine.stderr
        if form == "sarif":
            validate(read)
            assert read["runs"][0]["results"] == []
        else:
            assert read["jobs"] == []
    outside = remora(*MARKER, "analyze", "--ops", "marker", "--changed", cwd=tmp_path)
    assert outside.returncode == 2
    assert "RUN_023" in outside.stderr
    bad = remora(*MARKER, "analyze", "--ops", "marker", "--changed", "nope", cwd=root)
    assert bad.returncode == 2 and "RUN_024" in bad.stderr


def test_a_file_that_does_not_parse_is_reported_and_fails_check(tmp_path: Path) -> None:
    broken = "def skip_this():\n    return 3\n\n\ndef g(:\n"
    root = write_tree(
        tmp_path / "proj", {"pyproject.toml": "[project]\nname = 'p'\n", "broken.py": broken}
    )
    # The marker agent skips skip_this: nothing to change, yet the file is not checked.
    done = remora(*MARKER, "analyze", "broken.py", "--ops", "marker", "--check", cwd=root)
    assert "DISC_101: broken.py" in done.stderr
    assert done.returncode == 1, done.stderr
    unchecked = remora(*MARKER, "analyze", "broken.py", "--ops", "marker", cwd=root)
    assert "DISC_101: broken.py" in unchecked.stderr
    assert unchecked.returncode == 0, unchecked.stderr


def test_without_a_terminal_each_job_is_one_line_and_colour_follows_the_flag(
    tmp_path: Path,
) -> None:
    long_name = "a_function_with_a_rather_long_name_that_a_narrow_table_would_fold"
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": "[project]\nname = 'p'\n",
            "mod.py": f"def {long_name}():\n    return 1\n",
        },
    )
    done = remora(*MARKER, "analyze", "mod.py", "--ops", "marker", cwd=root)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if long_name in line]
    assert len(lines) == 1 and lines[0].startswith("success")
    assert lines[0].endswith("[changed: mod.py]") and "\\[" not in lines[0]
    assert "│" not in done.stdout and "\x1b[" not in done.stdout
    coloured = remora(
        "--color", "always", *MARKER, "analyze", "mod.py", "--ops", "marker", cwd=root
    )
    assert "\x1b[" in coloured.stdout + coloured.stderr
    plain = remora(*MARKER, "analyze", "mod.py", "--ops", "marker", "--color", "never", cwd=root)
    assert "\x1b[" not in plain.stdout + plain.stderr


def test_a_repositorys_own_git_config_runs_nothing(tmp_path: Path) -> None:
    """git runs outside the sandbox: a command the project's .git/config names (a
    filesystem monitor) must not run when --changed reads the diff."""
    root = repository(tmp_path, {"shop.py": SHOP})
    marker = tmp_path / "ran"
    git(root, "config", "core.fsmonitor", f"touch {marker}; false")
    (root / "shop.py").write_text(SHOP.replace("return basket.total()", "return 0"))
    changes = git_changes(root)
    assert set(changes) == {"shop.py"}
    assert not marker.exists()
