"""The code's layout keeps its promises: no module reaches into another package's private
modules or names, and each bundled operation lives in one folder."""

from __future__ import annotations

import ast
from pathlib import Path

from remora.operations import bundled_operations

SRC = Path(__file__).resolve().parents[1] / "src"
OPERATIONS = SRC / "remora" / "operations"


def _module_and_package(path: Path, root: Path) -> tuple[str, str]:
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        name = ".".join(parts[:-1])
        return name, name
    name = ".".join(parts)
    return name, name.rpartition(".")[0]


def _imported(tree: ast.Module) -> list[str]:
    """Every dotted name a module imports, and each name it takes from a module."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def reaches_into(path: Path, root: Path = SRC) -> list[str]:
    """The imports of ``path`` (under ``root``) that name a private module or name of
    another package."""
    module, package = _module_and_package(path, root)
    found: list[str] = []
    for name in _imported(ast.parse(path.read_text(encoding="utf-8"))):
        parts = name.split(".")
        for index, part in enumerate(parts[1:], start=1):
            if part.startswith("_") and not part.startswith("__"):
                owner = ".".join(parts[:index])
                if package != owner and not package.startswith(owner + "."):
                    found.append(f"{module} imports {name}")
                break
    return found


def test_no_module_reaches_into_another_packages_private_parts() -> None:
    found = [problem for path in sorted(SRC.rglob("*.py")) for problem in reaches_into(path)]
    assert found == []


def test_the_check_sees_a_reach(tmp_path: Path) -> None:
    module = tmp_path / "remora" / "cli" / "probe.py"
    module.parent.mkdir(parents=True)
    module.write_text("from remora.model.llama_cpp import _bindings\n", encoding="utf-8")
    assert reaches_into(module, tmp_path) == [
        "remora.cli.probe imports remora.model.llama_cpp._bindings"
    ]
    module.write_text("import remora.tools.capabilities._call_child\n", encoding="utf-8")
    assert reaches_into(module, tmp_path) == [
        "remora.cli.probe imports remora.tools.capabilities._call_child"
    ]
    module.write_text("from remora.cli._app import app\n", encoding="utf-8")
    assert reaches_into(module, tmp_path) == []  # its own package's private module


def test_each_bundled_operation_lives_in_one_folder() -> None:
    for operation in bundled_operations():
        [agents] = operation.agent_dirs
        home = agents.parent
        assert home.parent == OPERATIONS, operation.name
        assert (agents / operation.agent_name / f"{operation.agent_name}.yaml").is_file()
        # an operation whose model steps are traced for training has its expert and corpus
        traced = ("expert.py", "corpus.py") if operation.plan_episodes else ()
        for module in ("evaluation.py", "__init__.py", *traced):
            assert (home / module).is_file(), (operation.name, module)
        for capability in operation.capabilities.values():
            assert capability.func.__module__.startswith(f"remora.operations.{home.name}.")
