"""A project's ``.venv/pyvenv.cfg`` is untrusted (a cloned repository can ship one): the
``home`` it names is shown to the sandbox only as the Python installation it holds, never
as the user's home, a directory above it, the filesystem root or the project's parent, and
the file itself is read as a bounded regular file (a FIFO or ``/dev/zero`` is refused).

The sandbox tests run real code in the real sandbox at each isolation level this machine
has; each was an escape before: ``home = $HOME/x`` showed the whole of ``$HOME``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from remora.config import ToolsConfig
from remora.errors import ToolError
from remora.tools.interpreter import project_python
from remora.tools.isolation import isolation_status, project_sandbox
from tests.stores import capability_context, write_tree
from tests.test_project_python import make_venv

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
LEVELS = [
    pytest.param(
        level,
        marks=pytest.mark.skipif(
            isolation_status(level).level != level, reason=f"{level} is not available here"
        ),
    )
    for level in ("bwrap", "landlock")
]
SNOOP = """
import json, os, sys
home = sys.argv[1]
found = {}
for name, act in (
    ("home", lambda: sorted(os.listdir(home))),
    ("secret", lambda: open(os.path.join(home, "secret.txt")).read()),
    ("ssh", lambda: open(os.path.join(home, ".ssh", "id_ed25519")).read()),
    ("onlyhere", lambda: __import__("onlyhere").VALUE),
):
    try:
        found[name] = act()
    except Exception as exc:
        found[name] = type(exc).__name__
print(json.dumps(found))
"""


@pytest.fixture(autouse=True)
def _no_active_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The project's ``.venv`` is what is detected, whatever environment runs the tests."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real environment of this Python, copied into each project that needs one."""
    return make_venv(tmp_path_factory.mktemp("venv") / "env")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home directory, the user's for this test, holding secrets."""
    home = tmp_path / "home"
    write_tree(home, {"secret.txt": "TOP-SECRET", ".ssh/id_ed25519": "PRIVATE-KEY"})
    monkeypatch.setenv("HOME", str(home))
    assert Path.home() == home
    return home


def project_with_venv(root: Path, venv: Path, home_line: str | None) -> Path:
    """A project whose ``.venv`` is ``venv`` with its ``home`` set to ``home_line``."""
    write_tree(root, {"mod.py": "x = 1\n"})
    subprocess.run(["cp", "-a", str(venv), str(root / ".venv")], check=True, timeout=60)
    cfg = root / ".venv" / "pyvenv.cfg"
    lines = [
        line for line in cfg.read_text(encoding="utf-8").splitlines() if not line.startswith("home")
    ]
    if home_line is not None:
        lines.insert(0, f"home = {home_line}")
    cfg.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def snoop(root: Path, level: str, home: Path) -> dict:
    """What the project's code, run by the project's Python in the sandbox, sees of ``home``."""
    ctx = capability_context(root, isolation=level)
    with project_sandbox(ctx.store, ctx.config) as box:
        assert box.python.source == ".venv"
        result = box.run([box.python.executable, "-c", SNOOP, str(home)], timeout=60, what="snoop")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("level", LEVELS)
def test_a_home_in_the_users_home_is_refused_before_any_code_runs(
    tmp_path: Path, venv: Path, home: Path, level: str
) -> None:
    root = project_with_venv(tmp_path / "proj", venv, str(home / "x"))
    (home / "x").mkdir()
    with pytest.raises(ToolError) as caught:
        snoop(root, level, home)
    assert caught.value.code == "TOOL_808"
    assert f"home = {home / 'x'}" in caught.value.message
    assert "holds no Python installation" in caught.value.message
    assert "python -m venv" in (caught.value.hint or "")


@pytest.mark.parametrize("level", LEVELS)
def test_a_home_linked_from_the_users_home_shows_only_the_installation(
    tmp_path: Path, venv: Path, home: Path, level: str
) -> None:
    """``home`` is a link in $HOME to a real installation: the installation is shown (the
    environment works) and $HOME, which its unresolved parent was, is not."""
    (home / "x").symlink_to(Path(os.path.realpath(sys.executable)).parent)
    root = project_with_venv(tmp_path / "proj", venv, str(home / "x"))
    seen = snoop(root, level, home)
    assert seen["onlyhere"] == 42, seen
    assert seen["home"] in ("FileNotFoundError", "PermissionError"), seen
    assert seen["secret"] in ("FileNotFoundError", "PermissionError"), seen
    assert seen["ssh"] in ("FileNotFoundError", "PermissionError"), seen
    assert project_python(root, ToolsConfig()).base == os.path.realpath(sys.base_prefix)


@pytest.mark.parametrize(
    ("named", "why"),
    [
        ("/", "the whole filesystem"),
        ("{home}", "the user's home"),
        ("{home}/bin", "the user's home"),  # its prefix would be $HOME
        ("{tmp}", "above the user's home"),
        ("{root}", "the project itself"),
        ("{root}/bin", "the project itself"),
        ("{tmp}/elsewhere", "holds no Python installation"),
        ("relative/bin", "not an absolute path"),
    ],
)
def test_a_home_that_would_show_too_much_is_refused(
    tmp_path: Path, venv: Path, home: Path, named: str, why: str
) -> None:
    root = tmp_path / "proj"
    named = named.format(home=home, tmp=tmp_path, root=root)
    project_with_venv(root, venv, named)
    for fake in (home, root):  # each looks like an installation: refused for its place
        write_tree(fake, {f"bin/python{HOST}": "", f"lib/python{HOST}/os.py": ""})
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(ToolError) as caught:
        project_python(root, ToolsConfig())
    assert caught.value.code == "TOOL_808"
    assert why in caught.value.message, caught.value.render()
    assert caught.value.render().startswith(f"TOOL_808: {root / '.venv' / 'pyvenv.cfg'} names")


def test_an_interpreter_leading_outside_its_installation_is_refused(
    tmp_path: Path, venv: Path, home: Path
) -> None:
    """``bin/python`` is a link to a secret: the sandbox would show that file as the
    interpreter."""
    root = project_with_venv(tmp_path / "proj", venv, None)
    original = (venv / "pyvenv.cfg").read_text(encoding="utf-8")
    for with_home in (False, True):
        if with_home:
            (root / ".venv" / "pyvenv.cfg").write_text(original, encoding="utf-8")
        python = root / ".venv" / "bin" / "python"
        python.unlink()
        python.symlink_to(home / ".ssh" / "id_ed25519")
        with pytest.raises(ToolError) as caught:
            project_python(root, ToolsConfig())
        assert caught.value.code == "TOOL_808"
        secret = Path(os.path.realpath(home / ".ssh" / "id_ed25519"))
        assert f"leads to {secret}, outside" in caught.value.message


def test_the_normal_environment_binds_its_installation(tmp_path: Path, venv: Path) -> None:
    root = project_with_venv(tmp_path / "proj", venv, None)
    found = project_python(root, ToolsConfig())
    assert found.base is None  # no home: nothing beyond the environment and the interpreter
    original = (venv / "pyvenv.cfg").read_text(encoding="utf-8")
    (root / ".venv" / "pyvenv.cfg").write_text(original, encoding="utf-8")
    found = project_python(root, ToolsConfig())
    assert (found.source, found.version) == (".venv", HOST)
    assert found.base == os.path.realpath(sys.base_prefix)
    assert set(found.read_paths()) == {
        os.path.realpath(sys.executable),
        os.path.realpath(root / ".venv"),
        os.path.realpath(sys.base_prefix),
    }


DETECT = """
import sys
from pathlib import Path
from remora.config import ToolsConfig
from remora.errors import ToolError
from remora.tools.interpreter import project_python
try:
    found = project_python(Path(sys.argv[1]), ToolsConfig(python=sys.argv[2] or None))
except ToolError as exc:
    print(exc.render())
else:
    print("chosen", found.executable)
"""


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge"])
@pytest.mark.parametrize("how", ["detected", "tools.python"])
def test_a_pyvenv_cfg_that_is_no_file_is_a_clear_error_not_a_hang(
    tmp_path: Path, venv: Path, kind: str, how: str
) -> None:
    root = project_with_venv(tmp_path / "proj", venv, None)
    cfg = root / ".venv" / "pyvenv.cfg"
    cfg.unlink()
    if kind == "fifo":
        os.mkfifo(cfg)
    elif kind == "dev-zero":
        cfg.symlink_to("/dev/zero")
    else:
        with cfg.open("wb") as handle:
            handle.truncate(1024**3)  # sparse: a gigabyte that takes no disk
    try:
        done = subprocess.run(
            [sys.executable, "-c", DETECT, str(root), ".venv" if how == "tools.python" else ""],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=_limit_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading a {kind} pyvenv.cfg hung")
    said = done.stdout.strip()
    assert done.returncode == 0 and said.startswith("TOOL_807: "), done.stdout + done.stderr
    assert f"{cfg} cannot be read as a pyvenv.cfg" in said
    expected = {
        "fifo": "a FIFO (named pipe)",
        "dev-zero": "a character device",
        "huge": "larger than",
    }[kind]
    assert expected in said and "python -m venv" in said
