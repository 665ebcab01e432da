"""Hostile agent folders end as coded AGENT errors, quickly: YAML bombs (the config loader's
bound, reused), deep nesting, a FIFO or ``/dev/zero`` link as the YAML, a symlink loop."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from remora.config import YAML_ALIAS_EXPANSION_LIMIT
from remora.definitions import BUNDLED_AGENTS_DIR, check_agent, check_agents
from remora.errors import AgentDefinitionError
from tests.support.timed import run_timed


def billion_laughs(levels: int = 9) -> str:
    """Nine aliases of the level before, nine levels deep: 9**9 leaves from ~550 bytes."""
    lines = ["bomb:", "  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        lines.append(f"  a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def agent_with(root: Path, text: str) -> Path:
    """The harness copied to ``root/mine`` with ``text`` appended to its YAML."""
    folder = root / "mine"
    shutil.copytree(BUNDLED_AGENTS_DIR / "harness", folder)
    original = (folder / "harness.yaml").read_text(encoding="utf-8")
    (folder / "harness.yaml").unlink()
    path = folder / "mine.yaml"
    path.write_text(original.replace("name: harness", "name: mine") + text, encoding="utf-8")
    return path


def only_problem(path: Path, limit: float = 5.0) -> AgentDefinitionError:
    check, elapsed = run_timed(lambda: check_agent(path), limit=limit)
    assert elapsed < limit
    assert len(check.problems) == 1, [problem.render() for problem in check.problems]
    problem: AgentDefinitionError = check.problems[0]
    return problem


def test_billion_laughs_is_agent_002_quickly(tmp_path: Path) -> None:
    path = agent_with(tmp_path, billion_laughs())
    problem = only_problem(path)
    assert problem.code == "AGENT_002"
    assert str(path.resolve()) in problem.message
    assert "alias" in problem.message
    assert str(YAML_ALIAS_EXPANSION_LIMIT) in (problem.hint or "")


def test_billion_laughs_through_a_user_directory(tmp_path: Path) -> None:
    agent_with(tmp_path, billion_laughs())
    checks, elapsed = run_timed(lambda: check_agents([("user", tmp_path)]), limit=5)
    assert elapsed < 5
    assert [problem.code for check in checks for problem in check.problems] == ["AGENT_002"]


def test_self_referencing_alias_is_agent_002(tmp_path: Path) -> None:
    problem = only_problem(agent_with(tmp_path, "loop: &r\n  again: *r\n"))
    assert problem.code == "AGENT_002"
    assert "refers to itself" in problem.message


def test_deep_nesting_is_agent_002(tmp_path: Path) -> None:
    problem = only_problem(agent_with(tmp_path, "deep: " + "[" * 50_000 + "\n"))
    assert problem.code == "AGENT_002"
    assert "nested too deeply" in problem.message


def test_modest_anchors_still_work(tmp_path: Path) -> None:
    path = agent_with(tmp_path, "")
    text = path.read_text(encoding="utf-8").replace(
        "applies_to: [file, class, function, method]",
        "applies_to: &kinds [file, class, function, method]",
    )
    assert "&kinds" in text
    path.write_text(text, encoding="utf-8")
    check = check_agent(path)
    assert check.ok, [problem.render() for problem in check.problems]


def test_a_fifo_as_the_agent_yaml_is_agent_001(tmp_path: Path) -> None:
    path = agent_with(tmp_path, "")
    path.unlink()
    os.mkfifo(path)
    problem = only_problem(path.parent)
    assert problem.code == "AGENT_001"
    assert "FIFO" in problem.message


def test_a_dev_zero_link_as_the_agent_yaml_is_agent_001(tmp_path: Path) -> None:
    path = agent_with(tmp_path, "")
    path.unlink()
    path.symlink_to("/dev/zero")
    problem = only_problem(path)
    assert problem.code == "AGENT_001"


def test_a_symlink_loop_is_agent_001(tmp_path: Path) -> None:
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(tmp_path / "loop.yaml")
    problem = only_problem(loop)
    assert problem.code == "AGENT_001"


def test_an_unreadable_agent_directory_is_agent_001(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed = tmp_path / "closed"
    closed.mkdir()
    listing = Path.iterdir

    def refuse(self: Path) -> Any:
        if self == closed:
            raise PermissionError(13, "Permission denied", str(self))
        return listing(self)

    monkeypatch.setattr(Path, "iterdir", refuse)  # root reads any directory, so inject it
    checks = check_agents([("user", closed)])
    assert [problem.code for check in checks for problem in check.problems] == ["AGENT_001"]
