"""The ``remora-lint`` pre-commit hook, as a user installs it: the real ``pre-commit`` package
in a real git repository, the hook taken from this checkout's committed
``.pre-commit-hooks.yaml``. A commit of a file with an issue the host fixes is refused,
with the diff and the commands to accept it; after ``remora accept --all`` the commit passes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pre_commit")

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _committed_hooks_rev() -> str:
    """This checkout's HEAD, where pre-commit clones the hook from; skip when the checkout is
    no git repository or its HEAD has no hook definition yet."""
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    if head.returncode != 0:
        pytest.skip("the checkout is no git repository: pre-commit clones hooks from one")
    rev = head.stdout.strip()
    shown = subprocess.run(
        ["git", "-C", str(REPO), "cat-file", "-e", f"{rev}:.pre-commit-hooks.yaml"],
        capture_output=True,
        check=False,
    )
    if shown.returncode != 0:
        pytest.skip("HEAD has no .pre-commit-hooks.yaml")
    return rev


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The remora and pre-commit of this environment first on PATH (the hook is language
    system: it runs the remora on PATH), pre-commit's cache and git's identity in tmp_path."""
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
        "COLUMNS": "200",
    }


def test_a_commit_remora_would_change_is_refused_until_the_change_is_accepted(
    tmp_path: Path, env: dict[str, str]
) -> None:
    rev = _committed_hooks_rev()
    project = tmp_path / "project"
    project.mkdir()
    assert _run(["git", "init", "-q", "-b", "main"], project, env).returncode == 0
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {REPO}\n    rev: {rev}\n    hooks:\n      - id: remora-lint\n",
        encoding="utf-8",
    )
    (project / "mod.py").write_text(
        "import os\n\n\ndef answer():\n    return 42\n", encoding="utf-8"
    )
    installed = _run([str(BIN / "pre-commit"), "install"], project, env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    _run(["git", "add", "mod.py", ".pre-commit-config.yaml"], project, env)

    refused = _run(["git", "commit", "-m", "first"], project, env)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0, said
    assert "remora lint" in said and "Failed" in said
    assert "Fixed F401" in said and "mod.py" in said
    assert "-import os" in said  # the diff of what Remora would change
    assert "review with: remora review" in said and "remora accept --all" in said
    assert _run(["git", "rev-parse", "--verify", "HEAD"], project, env).returncode != 0
    assert (project / "mod.py").read_text(encoding="utf-8").startswith("import os")

    accepted = _run([str(BIN / "remora"), "accept", "--all"], project, env)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "import os" not in (project / "mod.py").read_text(encoding="utf-8")
    _run(["git", "add", "mod.py"], project, env)

    passed = _run(["git", "commit", "-m", "first"], project, env)
    said = passed.stdout + passed.stderr
    assert passed.returncode == 0, said
    assert "remora lint" in said and "Passed" in said
    assert _run(["git", "rev-parse", "--verify", "HEAD"], project, env).returncode == 0
