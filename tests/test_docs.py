"""The documentation under docs/ stays true to the code it describes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import remora.definitions as definitions_module
import remora.tools.pym as pym_module
from remora.config import RemoraConfig, ToolsConfig, flatten_keys, load_config
from remora.config_reference import (
    REGENERATE_COMMAND,
    env_var_name,
    main,
    render_configuration_reference,
)
from remora.definitions import NODE_CONTEXT_VARIABLES, ToolDefinition, check_agent
from remora.errors import ConfigError
from remora.operations import installed_operations
from remora.tools.runtime import ToolRuntime
from tests.stores import capability_context, write_tree

DOCS = Path(__file__).resolve().parents[1] / "docs"
CONFIGURATION = DOCS / "configuration.md"
WRITING_AN_AGENT = DOCS / "writing-an-agent.md"


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_configuration_reference_is_up_to_date() -> None:
    expected = render_configuration_reference()
    actual = read(CONFIGURATION) if CONFIGURATION.is_file() else ""
    assert actual == expected, (
        f"{CONFIGURATION} is out of date with remora.config; regenerate it with "
        f"`.venv/bin/{REGENERATE_COMMAND}`"
    )


def test_configuration_reference_lists_every_default_key() -> None:
    text = render_configuration_reference()
    leaves = flatten_keys(RemoraConfig().model_dump(mode="json"))
    missing = [key for key in leaves if f"`{key}`" not in text]
    assert not missing, f"keys missing from the configuration reference: {missing}"


def test_configuration_reference_describes_types_defaults_and_precedence() -> None:
    text = render_configuration_reference()
    assert "| `tools.isolation` | `auto \\| bwrap \\| landlock \\| none` | `auto` |" in text
    assert "| `runner.max_turns` | `int ≥ 1 or null` | `null` | Overrides each agent's own. |" in (
        text
    )
    assert "| `model.path` | `path or null` | `null` |" in text
    assert "| `operations.docstring.options.style` | `auto` |" in text
    assert "| `discovery.ignore` | `list of string` | `[]` |" in text
    assert env_var_name("tools.isolation") == "REMORA_TOOLS__ISOLATION"
    assert "REMORA_TOOLS__ISOLATION=" in text
    assert REGENERATE_COMMAND in text
    for layer in ("--set", "REMORA_SECTION__KEY", "remora.yaml", "[tool.remora]", "defaults"):
        assert layer in text
    assert render_configuration_reference() == text


def test_configuration_reference_command_writes_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "configuration.md"
    assert main([str(target)]) == 0
    assert read(target) == render_configuration_reference()
    assert main([]) == 0
    assert capsys.readouterr().out == render_configuration_reference()


def test_invalid_value_hint_points_at_the_configuration_reference(tmp_path: Path) -> None:
    (tmp_path / "remora.yaml").write_text("runner:\n  max_turns: many\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    assert caught.value.code == "CONFIG_003"
    assert caught.value.hint is not None
    assert "docs/configuration.md" in caught.value.hint
    assert CONFIGURATION.is_file()


def test_writing_an_agent_covers_the_contracts() -> None:
    text = read(WRITING_AN_AGENT)
    for name in installed_operations().capabilities:
        assert f"`{name}(" in text, f"capability {name} is not documented"
    for variable in NODE_CONTEXT_VARIABLES:
        assert f"`{variable}`" in text, f"system input {variable} is not documented"
    pym_codes = set(re.findall(r"PYM\d{3}", pym_module.__doc__ or ""))
    agent_codes = set(re.findall(r"AGENT_\d{3}", definitions_module.__doc__ or ""))
    assert pym_codes
    assert agent_codes
    for code in sorted(pym_codes | agent_codes):
        assert code in text, f"{code} is not documented"


_EXAMPLE_FILE = re.compile(r"\*\*`(docstring_summary/[\w/.]+)`\*\*\n\n```\w*\n(.*?)\n```\n", re.S)


def example_agent(root: Path) -> Path:
    """Write the complete example agent of writing-an-agent.md under ``root``."""
    files = {name: body + "\n" for name, body in _EXAMPLE_FILE.findall(read(WRITING_AN_AGENT))}
    assert "docstring_summary/docstring_summary.yaml" in files
    assert len(files) == 5
    write_tree(root, dict(files))
    return root / "docstring_summary"


def test_example_agent_validates_and_its_tools_work(tmp_path: Path) -> None:
    check = check_agent(
        example_agent(tmp_path / "agents"), registry=installed_operations().capabilities
    )
    assert check.ok, [problem.render() for problem in check.problems]
    agent = check.definition
    assert agent is not None
    assert agent.precheck is not None
    source = "def add(a, b):\n    return a + b\n"
    project = write_tree(tmp_path / "project", {"pkg/mod.py": source})
    system = {
        "node_text": source,
        "file_path": "pkg/mod.py",
        "node_name": "add",
        "node_type": "function",
        "qualname": "add",
        "node_id": "0123456789abcdef",
        "workspace_id": "ws",
        "operation": "docstring",
        "options": {"style": "google"},
        "run_id": "",
        "job_id": "docstring-0123456789abcdef",
    }
    assert "(google style)" in agent.render_node_context(system)
    ctx = capability_context(project, system)
    precheck = ToolDefinition(name="precheck", pym=agent.precheck, effect="read")
    with ToolRuntime(ToolsConfig()) as runtime:
        assert runtime.run_sync(precheck, {}, ctx).result == {
            "skip": False,
            "reason": "add already has a docstring",
        }
        read_back = runtime.run_sync(agent.tool("read_docstring"), {}, ctx)
        assert read_back.outcome == "success"
        assert read_back.result["missing_params"] == ["a", "b"]
        written = runtime.run_sync(agent.tool("write_docstring"), {"summary": "Add two."}, ctx)
        assert written.summary == "docstring of add inserted", written
        assert '"""Add two.' in ctx.store.read("pkg/mod.py").decode()
        skipped = runtime.run_sync(precheck, {}, ctx).result
        assert isinstance(skipped, dict) and skipped["skip"] is True
        submitted = runtime.run_sync(agent.tool("submit_result"), {"summary": "Done."}, ctx)
        assert submitted.result == {"status": "success", "summary": "Done."}


def test_docs_index_links_every_page() -> None:
    index = read(DOCS / "README.md")
    pages = sorted(path.name for path in DOCS.glob("*.md") if path.name != "README.md")
    assert {"configuration.md", "writing-an-agent.md"} <= set(pages)
    for page in pages:
        assert f"({page})" in index, f"docs/README.md does not link {page}"
