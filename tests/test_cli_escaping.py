"""Names and text from the project or the model are printed inert: Rich markup in a file name
is shown, not applied; ESC, BEL, CR and other controls are shown as escapes, never sent to
the terminal raw; the name stays recognisable. Through the real command, on a pipe and with
colours forced (as on a terminal)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from remora.cli import review as review_module
from remora.cli._text import shown, visible
from remora.orchestration import JobRecord, ReviewService, RunStore
from remora.runner.result import AgentResult
from remora.workspace import WorkspaceManager
from tests.support.cli_process import run_remora

REPO = Path(__file__).resolve().parents[1]
SCRIPTED = REPO / "tests" / "support" / "scripted_cli.py"
MARKER = [
    "--set",
    f"agents.dirs=[{REPO / 'tests' / 'data' / 'agents'}]",
    "--set",
    "operations.marker.agent=marker",
]

# file name on disk -> how the CLI shows it
FILES = {
    "[bold red]x[/].py": "[bold red]x[/].py",  # a folder '[bold red]x[' holding '].py'
    "[link=https:evil]/g.py": "[link=https:evil]/g.py",
    "esc\x1b[31mred.py": "esc\\x1b[31mred.py",
    "bell\x07cr\rtab\t.py": "bell\\x07cr\\rtab\\t.py",
    ":thumbs_up:.py": ":thumbs_up:.py",
}
HOSTILE_SUMMARY = "[bold red]boom[/] \x1b[31mred\x1b[0m \x1b]8;;https://evil\x1b\\link\x07"
BOLD_RED = "\x1b[1;31m"
HYPERLINK = "\x1b]8;"
SGR = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    for index, name in enumerate(FILES):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def func{index}():\n    return {index}\n", encoding="utf-8")
    return root


@pytest.fixture
def coloured(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child believes it writes to a colour terminal, as a user's shell would."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)


def assert_inert_plain(output: str) -> None:
    """On a pipe Rich adds no styling, so any ESC, BEL or CR came from a name."""
    for control in ("\x1b", "\x07", "\r"):
        assert control not in output, repr(output)


def assert_inert_coloured(output: str) -> None:
    """With colours, ESC is ours; the name's own sequences and markup must not act."""
    assert "\x1b[31mred" not in output
    assert BOLD_RED not in output
    assert HYPERLINK not in output
    assert "\x07" not in output


def test_visible_and_shown_rules() -> None:
    assert visible("a\x1b[31mb\x07c\rd\te\nf\x00g\x7fh\x9bi") == (
        "a\\x1b[31mb\\x07c\\rd\\te\\nf\\x00g\\x7fh\\x9bi"
    )
    assert visible("line one\n\tline two\r\n", multiline=True) == "line one\n\tline two\\r\n"
    assert visible("evil\u202etxt.py\u2066") == "evil\\u202etxt.py\\u2066"
    assert visible(b"bad\xff.py".decode("utf-8", "surrogateescape")) == "bad\\xff.py"
    assert visible("café 名前 ✓") == "café 名前 ✓"
    assert shown("[bold red]x[/]") == "\\[bold red]x\\[/]"


@pytest.mark.parametrize("name", [*FILES, HOSTILE_SUMMARY, "ends with a backslash\\"])
def test_shown_renders_literally_inside_the_cli_markup(name: str) -> None:
    markup = f"[dim]{shown(name)}[/dim] after"
    text = Text.from_markup(markup, emoji=False)
    assert text.plain == visible(name) + " after"
    assert [(span.start, span.end, str(span.style)) for span in text.spans] == [
        (0, len(visible(name)), "dim")
    ]
    buffer = io.StringIO()
    Console(file=buffer, width=500, emoji=False).print(markup, highlight=False)
    assert buffer.getvalue() == visible(name) + " after\n"


def test_discover_shows_names_literally(project: Path, coloured: None) -> None:
    done = run_remora("discover", ".", cwd=project, timeout=120)
    assert done.returncode == 0, done.stderr
    assert_inert_coloured(done.stdout + done.stderr)
    for name in FILES.values():
        assert name in done.stdout


def test_discover_on_a_pipe(project: Path) -> None:
    (project / b"bad\xff.py".decode("utf-8", "surrogateescape")).write_text("x = 1\n")
    done = run_remora("discover", ".", cwd=project, timeout=120)
    assert done.returncode == 0, done.stderr
    assert_inert_plain(done.stdout + done.stderr)
    for name in FILES.values():
        assert name in done.stdout
    assert "DISC_107" in done.stdout


def test_an_error_naming_a_hostile_path_is_inert(project: Path, coloured: None) -> None:
    done = run_remora("discover", "missing\x1b[31m[bold red]x[/]", cwd=project, timeout=120)
    assert done.returncode != 0
    assert "missing\\x1b[31m[bold red]x[/]" in done.stderr
    assert_inert_coloured(done.stdout + done.stderr)
    assert "Traceback" not in done.stderr


def scripted(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``remora ARGS`` with the scripted model (tests/support/scripted_cli.py)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("REMORA_")}
    return subprocess.run(
        [sys.executable, str(SCRIPTED), *args],
        cwd=cwd,
        env=env | {"COLUMNS": "250"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_analyze_results_and_job_lines_are_inert(project: Path) -> None:
    done = scripted(*MARKER, "analyze", ".", "--ops", "marker", cwd=project)
    assert done.returncode == 0, done.stderr
    assert_inert_plain(done.stdout + done.stderr)
    for name in FILES.values():
        assert name in done.stdout  # the results table
        assert name in done.stderr  # one line per finished job


def hostile_run(root: Path) -> str:
    """A recorded run whose one job changed the ESC-named file and whose summary (model
    output) carries markup, colour, a hyperlink and a bell; returns its workspace id."""
    manager = WorkspaceManager(root)
    store = RunStore(manager)
    run = store.start(["."], ["docstring"])
    name = "esc\x1b[31mred.py"
    with manager.create("docstring", "node1", run.run_id, file_path=name) as workspace:
        workspace.write(name, b'def func2():\n    """\x1b[31m[bold red]Doc[/]."""\n    return 2\n')
        result = AgentResult(
            status="success",
            operation="docstring",
            node_id="node1",
            workspace_id=workspace.workspace_id,
            changed_files=workspace.changed_paths(),
            summary=HOSTILE_SUMMARY,
        )
        workspace_id = workspace.workspace_id
    job = JobRecord.from_result(result).model_copy(
        update={"qualname": "func2", "file_path": name, "start_line": 1}
    )
    store.record_job(run.run_id, job)
    store.finish(run.run_id)
    return workspace_id


def test_diff_on_a_terminal_is_inert(project: Path, coloured: None) -> None:
    workspace_id = hostile_run(project)
    done = run_remora("diff", workspace_id, cwd=project, timeout=120)
    assert done.returncode == 0, done.stderr
    assert_inert_coloured(done.stdout)
    plain = SGR.sub("", done.stdout)
    assert "+++ b/esc\\x1b[31mred.py" in plain
    assert '"""\\x1b[31m[bold red]Doc[/]."""' in plain


def test_diff_on_a_pipe_stays_byte_exact_for_git_apply(project: Path) -> None:
    workspace_id = hostile_run(project)
    done = run_remora("diff", workspace_id, cwd=project, timeout=120)
    assert done.returncode == 0, done.stderr
    assert '"""\x1b[31m[bold red]Doc[/]."""' in done.stdout


def test_interactive_review_header_shows_the_summary_literally(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace_id = hostile_run(project)
    buffer = io.StringIO()
    terminal = Console(
        file=buffer, force_terminal=True, color_system="standard", width=200, emoji=False
    )
    monkeypatch.setattr(review_module, "console", terminal)
    service = ReviewService(WorkspaceManager(project))
    manifest = service.reconcile(None)
    [job] = manifest.pending_reviews()
    assert job.workspace_id == workspace_id
    assert review_module._show_job(service, job, 1, 1)
    output = buffer.getvalue()
    assert_inert_coloured(output)
    plain = SGR.sub("", output)  # our own styling (the name's raw ESC was ruled out above)
    assert visible(HOSTILE_SUMMARY) in plain
    assert "esc\\x1b[31mred.py" in plain


def test_validate_agents_shows_a_hostile_folder_literally(tmp_path: Path, coloured: None) -> None:
    folder = tmp_path / "agents\x1b[31m[bold red]x[/]"
    agent = folder / "bad"
    agent.mkdir(parents=True)
    (agent / "bad.yaml").write_text("name: [unclosed\n", encoding="utf-8")
    done = run_remora("validate-agents", str(folder), cwd=tmp_path, timeout=120)
    assert done.returncode == 1
    assert "AGENT_002" in done.stdout
    assert "agents\\x1b[31m[bold red]x[/]" in done.stdout
    assert_inert_coloured(done.stdout + done.stderr)
