"""Run the real ``remora`` entry point in-process and capture what a user would see."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest

from remora.cli import main


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> CliResult:
    argv = sys.argv
    sys.argv = ["remora", *args]
    code = 0
    try:
        main()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        sys.argv = argv
    captured = capsys.readouterr()
    return CliResult(code, captured.out, captured.err)
