"""The layer order of DESIGN's map, enforced: an upward import fails the test suite, and
no operation's package imports another's."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import remora

REPO = Path(__file__).resolve().parents[1]
OUTSIDE_THE_LAYERS = {"testing", "pym", "config_reference", "__main__"}
"""Test doubles, the names .pym scripts import, a docs generator and the entry point."""


def contracts() -> list[dict[str, object]]:
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return data["tool"]["importlinter"]["contracts"]  # type: ignore[no-any-return]


def contract(kind: str = "layers") -> dict[str, object]:
    (found,) = [item for item in contracts() if item["type"] == kind]
    return found


def test_the_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(contracts())} kept, 0 broken" in done.stdout


def test_every_operation_package_is_in_the_independence_contract() -> None:
    operations = Path(remora.__file__).parent / "operations"
    packages = {
        f"remora.operations.{path.parent.name}" for path in operations.glob("*/__init__.py")
    }
    assert set(contract("independence")["modules"]) == packages  # type: ignore[arg-type]


def test_every_module_has_a_layer() -> None:
    listed = {
        name.strip().removeprefix("remora.")
        for layer in contract()["layers"]  # type: ignore[attr-defined]
        for name in layer.replace(":", "|").split("|")
    }
    package = Path(remora.__file__).parent
    modules = {
        path.stem if path.is_file() else path.name
        for path in package.iterdir()
        if (path.suffix == ".py" or (path / "__init__.py").is_file()) and path.name != "__init__.py"
    }
    assert modules - listed - OUTSIDE_THE_LAYERS == set()


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The same kind of contract on a tiny package with one upward import is reported broken."""
    package = tmp_path / "layered"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "high.py").write_text("")
    (package / "low" / "__init__.py").write_text("import layered.high\n")
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "layered"\n\n'
        '[[tool.importlinter.contracts]]\nname = "layers"\ntype = "layers"\n'
        'layers = ["layered.high", "layered.low"]\n'
    )
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint_imports), "--config", str(config), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "layered.low is not allowed to import layered.high" in done.stdout
