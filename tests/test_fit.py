"""fit_node_text and node_budget: small nodes pass whole, large ones are outlined in budget."""

from __future__ import annotations

import inspect
import textwrap

import pytest

from remora.discovery.outline import number_lines
from remora.orchestration.fit import fit_node_text, node_budget
from remora.runner.history import estimate_tokens
from remora.tools.capabilities.files import MAX_READ_LINES

SOURCE = inspect.getsource(textwrap)
LINES = SOURCE.splitlines()


def words(text: str) -> int:
    """A stand-in tokenizer: one token per whitespace-separated word, plus one per line."""
    return len(text.split()) + text.count("\n")


def test_node_budget_is_half_of_what_the_fixed_parts_leave() -> None:
    assert node_budget(8000, fixed_tokens=1000) == 3500
    assert node_budget(1664, fixed_tokens=265) == 699
    assert node_budget(100, fixed_tokens=500) == 0


def test_small_text_is_left_alone() -> None:
    text = "def f():\n    return 1\n"
    fitted = fit_node_text(text, path="a.py", start_line=3, budget_tokens=100)
    assert not fitted.cut
    assert fitted.text == text
    assert fitted.tokens == estimate_tokens(text)
    assert fitted.shown_lines == fitted.total_lines == 2
    exact = fit_node_text(
        text, path="a.py", start_line=3, budget_tokens=words(text), count_tokens=words
    )
    assert not exact.cut


@pytest.mark.parametrize("count", [None, words], ids=["estimate", "count_tokens"])
@pytest.mark.parametrize("budget", [400, 900, 2500])
def test_large_text_is_outlined_within_budget(count: object, budget: int) -> None:
    counter = count if callable(count) else None
    measure = counter or estimate_tokens
    fitted = fit_node_text(
        SOURCE, path="lib/textwrap.py", start_line=1, budget_tokens=budget, count_tokens=counter
    )
    assert fitted.cut
    assert measure(fitted.text) <= budget
    assert fitted.tokens == measure(SOURCE) > budget
    assert fitted.total_lines == len(LINES)
    lines = fitted.text.splitlines()
    header = lines[0] + "\n" + lines[1]
    assert "too large" in header
    assert f"lines 1-{len(LINES)}" in header
    first_unshown = fitted.shown_lines + 1
    expected_end = min(first_unshown + MAX_READ_LINES - 1, len(LINES))
    assert f'read_lines(path="lib/textwrap.py", start={first_unshown}, end={expected_end})' in (
        header
    )
    assert fitted.outline_lines > 0
    # The outline comes first, then the leading lines, numbered as in the file.
    assert "| class TextWrapper:" in fitted.text
    if fitted.shown_lines:
        start = lines.index(f"# Lines 1-{fitted.shown_lines}:") + 1
        head = lines[start : start + fitted.shown_lines]
        assert head == number_lines(LINES[: fitted.shown_lines], 1, width=len(str(len(LINES))))
        assert head[0].endswith('| """Text wrapping and filling.')
    # More budget never shows less.
    more = fit_node_text(
        SOURCE, path="lib/textwrap.py", start_line=1, budget_tokens=budget * 2, count_tokens=counter
    )
    assert more.shown_lines >= fitted.shown_lines
    assert not more.cut or more.outline_lines >= fitted.outline_lines


def test_whole_outline_then_as_many_lines_as_fit() -> None:
    fitted = fit_node_text(SOURCE, path="textwrap.py", start_line=1, budget_tokens=2500)
    assert "more outline line(s) not shown" not in fitted.text
    assert fitted.shown_lines > 20
    assert f"# Lines 1-{fitted.shown_lines}:" in fitted.text
    assert f"# ... lines {fitted.shown_lines + 1}-{len(LINES)} not shown" in fitted.text
    assert "| def indent(text, prefix, predicate=None):" in fitted.text
    # Lines past the head are only outlined, not shown.
    assert "def predicate(line):" in fitted.text
    assert "return ''.join(prefixed_lines())" not in fitted.text


def test_outline_itself_is_cut_when_the_budget_is_tiny() -> None:
    fitted = fit_node_text(SOURCE, path="textwrap.py", start_line=1, budget_tokens=200)
    assert estimate_tokens(fitted.text) <= 200
    assert fitted.shown_lines == 0
    assert "none of its lines" in fitted.text
    assert 'read_lines(path="textwrap.py", start=1, end=200)' in fitted.text
    assert "more outline line(s) not shown" in fitted.text


def test_node_inside_a_file_uses_file_line_numbers() -> None:
    method = inspect.getsource(textwrap.TextWrapper._wrap_chunks)
    start = 238
    fitted = fit_node_text(method, path="textwrap.py", start_line=start, budget_tokens=250)
    assert fitted.cut
    end = start + len(method.splitlines()) - 1
    assert f"lines {start}-{end}" in fitted.text
    assert f"{start}| def _wrap_chunks(self, chunks):" in fitted.text
    assert estimate_tokens(fitted.text) <= 250


def test_unparsable_text_shows_leading_lines_only() -> None:
    broken = "def f(:\n" + "x = 1\n" * 2000
    fitted = fit_node_text(broken, path="bad.py", start_line=1, budget_tokens=300)
    assert fitted.cut
    assert fitted.outline_lines == 0
    assert "does not parse" in fitted.text
    assert "# Lines 1-" in fitted.text
    assert estimate_tokens(fitted.text) <= 300


def test_an_agent_without_a_read_tool_is_not_told_to_call_one() -> None:
    fitted = fit_node_text(
        SOURCE, path="textwrap.py", start_line=1, budget_tokens=300, read_tool=None
    )
    assert fitted.cut and "too large to show whole" in fitted.text
    assert "read_lines" not in fitted.text and "To read more" not in fitted.text
    assert fitted.outline_lines > 0
    assert estimate_tokens(fitted.text) <= 300
