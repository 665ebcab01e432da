"""The pinned training list pins, and nothing else (issue 47).

A line of ``packages.txt`` is exactly ``name==version`` with a concrete version: a wildcard
(``foo==1.*``), an environment marker, extras, a URL or a second specifier is refused with
TRAIN_015 naming the line, and so is a name too long to be a package (it made a cache
folder name too long: ``OSError`` from ``remora train generate --pinned``). The CLI tests
run the real ``remora`` with its list replaced by a ``sitecustomize`` on ``PYTHONPATH``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.errors import TrainingError
from remora.training.packages import fetch_pinned, pinned_specs
from tests.support.cli_process import run_remora

LONG_NAME = "a" * 300 + "==1.0"

REFUSED = [
    ("foo==1.*", "is a wildcard"),
    ("foo==1.0.*", "is a wildcard"),
    ('foo==1.0; python_version > "3.8"', "has an environment marker"),
    ("foo==1.0 ; sys_platform == 'linux'", "has an environment marker"),
    ("foo[bar]==1.0", "asks for extras"),
    ("foo @ https://example.com/foo-1.0.tar.gz", "is a URL"),
    ("foo==1.0,>=0.5", "is not pinned to one version"),
    ("foo==1.0,==1.0", "is not pinned to one version"),
    ("foo===1.0", "is not pinned to one version"),
    ("foo>=1.0", "is not pinned to one version"),
    (LONG_NAME, "names a package of 300 characters"),
    ("foo==" + "1." * 100 + "0", "has a version of 201 characters"),
]


def _listed(folder: Path, line: str) -> Path:
    listed = folder / "packages.txt"
    folder.mkdir(parents=True, exist_ok=True)
    listed.write_text(f"# comment\nattrs==26.1.0\n{line}\n", encoding="utf-8")
    return listed


@pytest.mark.parametrize(("line", "why"), REFUSED)
def test_anything_but_one_concrete_version_is_refused(tmp_path: Path, line: str, why: str) -> None:
    with pytest.raises(TrainingError) as info:
        pinned_specs(_listed(tmp_path, line))
    assert info.value.code == "TRAIN_015"
    assert info.value.message.startswith("packages.txt:3: ")
    assert why in info.value.message and info.value.hint


def test_a_pin_is_kept_as_name_equals_version(tmp_path: Path) -> None:
    assert pinned_specs(_listed(tmp_path, "Jinja2 == 3.1.6  # spaces")) == [
        "attrs==26.1.0",
        "Jinja2==3.1.6",
    ]


def test_a_name_too_long_for_a_folder_is_left_out_not_raised(tmp_path: Path) -> None:
    spec = "b" * 300 + ".tar.gz"  # a spec given directly, never checked as a pin
    corpus = fetch_pinned(tmp_path / "cache", [spec])
    assert corpus.paths == [] and list(corpus.failed) == [spec]


def _generate_with_list(tmp_path: Path, line: str) -> tuple[int, str]:
    """``remora train generate --pinned`` run for real, its list holding ``line``."""
    listed = _listed(tmp_path / "list", line)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "from pathlib import Path\n\n"
        "from remora.training import packages\n\n"
        f"packages.PINNED_FILE = Path({str(listed)!r})\n"
        "packages.pinned_specs.__defaults__ = (packages.PINNED_FILE,)\n",
        encoding="utf-8",
    )
    project = tmp_path / "repo"
    project.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(hook))
        ran = run_remora(
            "train",
            "generate",
            "--pinned",
            "--agent",
            "docstring",
            "--limit",
            "1",
            "--data",
            str(tmp_path / "data"),
            cwd=project,
            timeout=180,
        )
    return ran.returncode, ran.stdout + ran.stderr


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (LONG_NAME, "names a package of 300 characters"),
        ("foo==1.*", "is a wildcard"),
        ('foo==1.0; python_version > "3.8"', "has an environment marker"),
    ],
)
def test_generate_pinned_refuses_the_line_with_its_code(
    tmp_path: Path, line: str, why: str
) -> None:
    code, output = _generate_with_list(tmp_path, line)
    assert code != 0
    assert "Traceback" not in output and "OSError" not in output
    assert "TRAIN_015: packages.txt:3: " in output and why in output
    assert not (tmp_path / "sdists").exists()  # nothing was fetched
