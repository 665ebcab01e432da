"""PYM014 refuses any reference to a forbidden builtin, so aliasing cannot slip one past."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remora.config import ToolsConfig
from remora.tools.pym import FORBIDDEN_NAMES, check_pym, parse_pym
from remora.tools.sandbox import Sandbox

ALIASES = [
    ("alias eval", "e = eval\ne('1')\n", 1),
    ("alias open", "o = open\no('/etc/passwd').read()\n", 1),
    ("alias getattr", "g = getattr\ng('a', 'upper')()\n", 1),
    ("alias vars", "v = vars\nv()\n", 1),
    ("list index", "[open][0]('/etc/passwd').read()\n", 1),
    ("dict value", "d = {'f': exec}\nd['f']('1')\n", 1),
    ("default argument", "def f(x=compile):\n    return x\nf()\n", 1),
    ("inside f-string", "f'{globals}'\n", 1),
    ("lambda", "(lambda: __import__)()('os')\n", 1),
    ("later line", "x = 1\ny = [breakpoint]\ny\n", 2),
]


def forbidden(source: str) -> list[tuple[str, int]]:
    parsed = parse_pym(source, Path("tool.pym"))
    return [(p.code, p.line) for p in check_pym(parsed, {}) if p.code == "PYM014"]


@pytest.mark.parametrize(
    ("source", "line"),
    [(source, line) for _, source, line in ALIASES],
    ids=[name for name, *_ in ALIASES],
)
def test_aliasing_a_forbidden_builtin_is_refused(source: str, line: int) -> None:
    assert ("PYM014", line) in forbidden(source)


@pytest.mark.parametrize("name", sorted(FORBIDDEN_NAMES))
def test_every_forbidden_name_is_refused_as_a_bare_reference(name: str) -> None:
    assert forbidden(f"x = [{name}]\nx\n") == [("PYM014", 1)]


def test_a_direct_call_is_reported_once() -> None:
    assert forbidden("eval('1')\n") == [("PYM014", 1)]


def test_names_that_only_look_alike_are_fine() -> None:
    source = "opened = 1\nd = {'open': 2, 'eval': 3}\nd.get('open', opened)\n"
    assert forbidden(source) == []


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    config = ToolsConfig(timeout=0.5, max_memory_mb=32, max_recursion_depth=60, workers=1)
    with Sandbox(config, max_print_bytes=2000) as box:
        yield box


def test_sandbox_still_blocks_an_aliased_open(sandbox: Sandbox) -> None:
    """Defence in depth: the run-time sandbox refuses what the checker refuses."""
    run = sandbox.run(
        "o = open\no('/etc/passwd').read()",
        script_name="probe.pym",
        inputs={},
        functions={},
    )
    assert run.failure is not None
    assert "PermissionError" in run.failure.message
