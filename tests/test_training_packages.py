"""The pinned training packages: the list itself, its checks, and the fetch (from local
sdist archives, as pip leaves them: no network in tests)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from remora.errors import TrainingError
from remora.operations.base import entry_test_texts
from remora.training.corpus import HELD_OUT, corpus_files
from remora.training.packages import PINNED_FILE, fetch_pinned, pinned_specs
from remora.training.traces import is_validation


def test_the_shipped_list_pins_thirty_packages_none_kept_for_evaluation() -> None:
    specs = pinned_specs()
    assert len(specs) >= 30
    assert len({spec.split("==")[0] for spec in specs}) == len(specs)
    names = {spec.split("==")[0].replace("-", "_").lower() for spec in specs}
    assert not names & HELD_OUT
    assert {"more_itertools", "boltons", "toolz"} <= HELD_OUT


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("toolz==1.0.0", "TRAIN_010"),
        ("more-itertools==10.5.0", "TRAIN_010"),
        ("click>=8", "TRAIN_015"),
        ("click", "TRAIN_015"),
        ("not a requirement!", "TRAIN_015"),
    ],
)
def test_a_bad_line_is_refused_with_its_code(tmp_path: Path, line: str, code: str) -> None:
    listed = tmp_path / "packages.txt"
    listed.write_text(f"# comment\nattrs==26.1.0\n{line}\n", encoding="utf-8")
    with pytest.raises(TrainingError) as info:
        pinned_specs(listed)
    assert info.value.code == code
    assert "packages.txt:3" in info.value.message or code == "TRAIN_010"


def _sdist(folder: Path, name: str, files: dict[str, str]) -> Path:
    root = folder / f"{name}-1.0"
    for relative, text in {"PKG-INFO": "Version: 1.0\n", **files}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    archive = folder / f"{name}-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as packed:
        packed.add(root, arcname=root.name)
    return archive


def test_fetch_unpacks_each_package_once_and_lists_its_import_packages(tmp_path: Path) -> None:
    archive = _sdist(
        tmp_path / "dl",
        "widgets",
        {"src/widgets/__init__.py": "", "src/widgets/core.py": "def f():\n    return 1\n"},
    )
    seen: list[str] = []
    corpus = fetch_pinned(
        tmp_path / "cache", [str(archive)], lambda spec, i, n: seen.append(f"{i}/{n}")
    )
    assert seen == ["1/1"] and corpus.failed == {}
    [entry] = corpus.paths
    assert entry.name == "widgets" and (entry / "core.py").is_file()
    assert [file.source for file in corpus_files(corpus.paths)] == [
        "widgets/__init__.py",
        "widgets/core.py",
    ]
    archive.unlink()  # a second fetch reuses the cache: the archive is not needed
    again = fetch_pinned(tmp_path / "cache", [str(archive)])
    assert again.paths == corpus.paths


def test_a_moved_cache_is_still_used_and_finds_the_sdists_tests(tmp_path: Path) -> None:
    archive = _sdist(
        tmp_path / "dl",
        "widgets",
        {
            "src/widgets/__init__.py": "",
            "src/widgets/core.py": "def double(x):\n    return 2 * x\n",
            "tests/test_core.py": "from widgets.core import double\n\nassert double(2) == 4\n",
        },
    )
    fetch_pinned(tmp_path / "cache", [str(archive)])
    archive.unlink()
    (tmp_path / "cache").rename(tmp_path / "moved")
    [entry] = fetch_pinned(tmp_path / "moved", [str(archive)]).paths
    assert entry.is_relative_to(tmp_path / "moved") and (entry / "core.py").is_file()
    # The sdist's tests, beside src/, are the entry's tests (for call sites).
    assert dict(entry_test_texts(entry)) == {
        "tests/test_core.py": "from widgets.core import double\n\nassert double(2) == 4\n"
    }


def test_a_package_that_cannot_be_fetched_is_reported_and_the_rest_go_on(tmp_path: Path) -> None:
    good = _sdist(tmp_path / "dl", "gadgets", {"gadgets.py": "X = 1\n"})
    broken = tmp_path / "dl" / "broken-1.0.tar.gz"
    broken.write_bytes(b"not an archive")
    corpus = fetch_pinned(tmp_path / "cache", [str(broken), str(good)])
    assert list(corpus.failed) == [str(broken)]
    assert "cannot unpack" in corpus.failed[str(broken)]
    assert [path.name for path in corpus.paths] == ["gadgets.py"]


def test_validation_takes_whole_packages() -> None:
    sources = [f"pkg{i}/{module}.py" for i in range(200) for module in ("a", "b", "c")]
    by_package: dict[str, set[bool]] = {}
    for source in sources:
        by_package.setdefault(source.split("/")[0], set()).add(is_validation(source))
    assert all(len(sides) == 1 for sides in by_package.values())
    assert {True, False} == {side for sides in by_package.values() for side in sides}


def test_the_list_file_ships_with_the_package() -> None:
    assert PINNED_FILE.is_file()
