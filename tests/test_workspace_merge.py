"""Three-way merge: clean merges, conflicts, identical edits, line endings, binary files."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from remora.workspace import merge3

BASE = b"".join(f"line {i}\n".encode() for i in range(1, 11))


def edit(data: bytes, line: int, new: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    lines[line - 1] = new
    return b"".join(lines)


def test_non_overlapping_edits_merge() -> None:
    theirs = edit(BASE, 2, b"THEIRS 2\n")
    ours = edit(BASE, 8, b"OURS 8\n")
    result = merge3(BASE, theirs, ours)
    assert result.clean
    assert result.data == edit(edit(BASE, 2, b"THEIRS 2\n"), 8, b"OURS 8\n")


def test_overlapping_different_edits_conflict() -> None:
    result = merge3(BASE, edit(BASE, 5, b"theirs\n"), edit(BASE, 5, b"ours\n"))
    assert not result.clean
    assert result.data is None
    assert [(c.start, c.end) for c in result.conflicts] == [(5, 5)]
    assert result.describe() == "line 5"


def test_identical_edits_on_both_sides_merge() -> None:
    both = edit(BASE, 3, b"same\n")
    assert merge3(BASE, both, both).data == both
    theirs = edit(edit(BASE, 3, b"same\n"), 9, b"theirs 9\n")
    ours = edit(BASE, 3, b"same\n")
    assert merge3(BASE, theirs, ours).data == theirs


def test_one_side_unchanged_takes_the_other() -> None:
    changed = edit(BASE, 1, b"x\n")
    assert merge3(BASE, BASE, changed).data == changed
    assert merge3(BASE, changed, BASE).data == changed


def test_crlf_files_keep_their_line_endings() -> None:
    base = BASE.replace(b"\n", b"\r\n")
    theirs = edit(base, 1, b"THEIRS\r\n")
    ours = edit(BASE, 10, b"OURS\n")  # the agent wrote LF lines
    result = merge3(base, theirs, ours)
    assert result.clean and result.data is not None
    assert result.data.count(b"\r\n") == 10
    assert b"\n" not in result.data.replace(b"\r\n", b"")
    assert result.data.startswith(b"THEIRS\r\n") and result.data.endswith(b"OURS\r\n")


def test_insertion_next_to_a_changed_line_keeps_both() -> None:
    base = b"def f(x):\n    return x + 1\n"
    lint = b"def f(x):\n    return x+1  # fixed\n"
    docstring = b'def f(x):\n    """Add one."""\n    return x + 1\n'
    expected = b'def f(x):\n    """Add one."""\n    return x+1  # fixed\n'
    assert merge3(base, lint, docstring).data == expected
    assert merge3(base, docstring, lint).data == expected


def test_different_insertions_at_the_same_place_conflict() -> None:
    result = merge3(BASE, edit(BASE, 4, b"line 4\nA\n"), edit(BASE, 4, b"line 4\nB\n"))
    assert not result.clean
    assert result.conflicts[0].describe() == "after line 4"


def test_missing_final_newline_is_handled() -> None:
    base = b"a\nb"
    theirs = b"A\nb"
    ours = b"a\nb\nc\n"
    assert merge3(base, theirs, ours).data == b"A\nb\nc\n"


def test_binary_files_merge_only_trivially() -> None:
    base = b"\x00\x01\x02"
    assert merge3(base, base, b"\x00new").data == b"\x00new"
    result = merge3(base, b"\x00theirs", b"\x00ours")
    assert not result.clean and result.binary
    assert result.describe() == "binary file changed on both sides"


@given(
    theirs_edits=st.dictionaries(st.integers(0, 4), st.text("xyz", min_size=1), max_size=5),
    ours_edits=st.dictionaries(st.integers(6, 10), st.text("xyz", min_size=1), max_size=5),
)
def test_edits_far_apart_always_merge(
    theirs_edits: dict[int, str], ours_edits: dict[int, str]
) -> None:
    """Edits to lines 1-5 on one side and 7-11 on the other never conflict."""
    lines = [f"unique {i}\n" for i in range(12)]
    theirs_lines = [theirs_edits.get(i, line[:-1]) + "\n" for i, line in enumerate(lines)]
    ours_lines = [ours_edits.get(i, line[:-1]) + "\n" for i, line in enumerate(lines)]
    expected = [
        theirs_edits.get(i, ours_edits.get(i, line[:-1])) + "\n" for i, line in enumerate(lines)
    ]
    result = merge3(
        "".join(lines).encode(), "".join(theirs_lines).encode(), "".join(ours_lines).encode()
    )
    assert result.clean
    assert result.data == "".join(expected).encode()
