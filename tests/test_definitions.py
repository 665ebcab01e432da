"""Agent definitions: the bundled harness, every validation rule, user directories."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from remora.definitions import (
    BUNDLED_AGENTS_DIR,
    NODE_CONTEXT_VARIABLES,
    SubagentDefinition,
    agent_files,
    check_agent,
    check_agents,
    load_agent,
)
from remora.errors import AgentDefinitionError
from remora.operations import load_agents
from remora.tools.pym import SYSTEM_INPUTS

HARNESS = BUNDLED_AGENTS_DIR / "harness"
VARIABLES = {
    "node_text": "def f():\n    return 1\n",
    "node_name": "f",
    "node_type": "function",
    "file_path": "pkg/mod.py",
}


def copy_agent(
    root: Path, name: str = "mine", edit: Callable[[dict[str, Any]], None] | None = None
) -> Path:
    """A copy of the harness named ``name`` under ``root``, its YAML passed through ``edit``."""
    folder = root / name
    shutil.copytree(HARNESS, folder)
    (folder / "harness.yaml").rename(folder / f"{name}.yaml")
    path = folder / f"{name}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["name"] = name
    if edit is not None:
        edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def problems_of(path: Path) -> list[AgentDefinitionError]:
    check = check_agent(path)
    assert not check.ok
    return check.problems


def only_problem(path: Path) -> AgentDefinitionError:
    problems = problems_of(path)
    assert len(problems) == 1, [p.render() for p in problems]
    return problems[0]


def test_bundled_harness_loads() -> None:
    agents = load_agents()
    harness = agents["harness"]
    assert isinstance(harness, SubagentDefinition)
    assert harness.directory == HARNESS.resolve()
    assert harness.applies_to == ["file", "class", "function", "method"]
    assert harness.model is None
    assert harness.effects == {"echo": "read", "submit_result": "terminal"}
    assert harness.tool("echo").pym == HARNESS.resolve() / "tools" / "echo.pym"
    assert harness.tool("echo").context_providers == [HARNESS.resolve() / "context" / "element.pym"]
    assert "<task_description>" in harness.initial_context.system_prompt


def test_tool_specs_hide_system_inputs_and_merge_overrides() -> None:
    harness = load_agent(HARNESS)
    specs = {spec.name: spec for spec in harness.tool_specs()}
    assert list(specs) == ["echo", "submit_result"]
    echo = specs["echo"].parameters
    assert echo["required"] == ["text"]
    assert echo["properties"]["text"]["maxLength"] == 200
    assert echo["properties"]["text"]["type"] == "string"
    submit = specs["submit_result"].parameters
    assert submit["required"] == ["summary"]
    assert submit["properties"]["status"]["enum"] == ["success", "failed", "skipped"]
    for spec in specs.values():
        assert not set(spec.parameters["properties"]) & set(SYSTEM_INPUTS)


def test_render_node_context() -> None:
    harness = load_agent(HARNESS / "harness.yaml")
    text = harness.render_node_context(VARIABLES)
    assert "function `f` in pkg/mod.py" in text
    assert "    return 1" in text
    assert 'Call echo with text "f".' in text


def test_render_with_a_missing_variable_is_agent_012() -> None:
    harness = load_agent(HARNESS)
    with pytest.raises(AgentDefinitionError) as caught:
        harness.render_node_context({"node_name": "f"})
    assert caught.value.code == "AGENT_012"


def test_unknown_tool_is_agent_010() -> None:
    harness = load_agent(HARNESS)
    with pytest.raises(AgentDefinitionError) as caught:
        harness.tool("nope")
    assert caught.value.code == "AGENT_010"
    assert caught.value.hint == "its tools are: echo, submit_result"


def test_description_defaults_to_the_script_docstring(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        del data["tools"][1]["description"]

    agent = load_agent(copy_agent(tmp_path, edit=edit))
    assert agent.tool("submit_result").description == (
        "End the run with a one-sentence summary; the runner turns it into the agent's result."
    )
    assert agent.tool("submit_result").spec().description == agent.tool("submit_result").description


def test_options_in_templates_validate_and_render(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["initial_context"]["node_context"] = "Style {{ options.style }} for {{ qualname }}"

    agent = load_agent(copy_agent(tmp_path, edit=edit))
    rendered = agent.render_node_context({"options": {"style": "numpy"}, "qualname": "A.f"})
    assert rendered == "Style numpy for A.f"
    assert "options" in NODE_CONTEXT_VARIABLES


def test_missing_file_is_agent_001(tmp_path: Path) -> None:
    with pytest.raises(AgentDefinitionError) as caught:
        load_agent(tmp_path / "ghost.yaml")
    assert caught.value.code == "AGENT_001"
    with pytest.raises(AgentDefinitionError) as caught:
        load_agent(tmp_path)
    assert caught.value.code == "AGENT_001"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("name: [unclosed\n", "not valid YAML at line"), ("- a\n- b\n", "must hold a mapping")],
)
def test_bad_yaml_is_agent_002(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "bad" / "bad.yaml"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    problem = only_problem(path)
    assert problem.code == "AGENT_002"
    assert fragment in problem.message
    assert str(path.resolve()) in problem.message


def test_wrong_effect_names_file_key_and_values(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["tools"][1]["effect"] = "finish"

    path = copy_agent(tmp_path, edit=edit)
    problem = only_problem(path)
    assert problem.code == "AGENT_003"
    assert problem.message.startswith(f"{path.resolve()}: tools[1] (submit_result).effect: ")
    assert "'read', 'write' or 'terminal'" in problem.message


def test_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["tools"][0]["contxt_providers"] = data["tools"][0].pop("context_providers")

    problem = only_problem(copy_agent(tmp_path, edit=edit))
    assert problem.code == "AGENT_003"
    assert "tools[0] (echo).contxt_providers: Extra inputs are not permitted" in problem.message
    assert problem.hint == "did you mean 'context_providers'?"


def test_missing_key_says_what_to_add(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        del data["max_turns"]

    problem = only_problem(copy_agent(tmp_path, edit=edit))
    assert problem.code == "AGENT_003"
    assert ": max_turns: Field required" in problem.message
    assert problem.hint == "add 'max_turns'"


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda d: d["tools"].pop(1), "exactly one terminal tool named submit_result"),
        (
            lambda d: d["tools"][0].update(effect="terminal"),
            "(terminal tools: echo, submit_result)",
        ),
        (lambda d: d["tools"][1].update(name="finish"), "(terminal tools: finish)"),
        (lambda d: d["tools"][1].update(effect="write"), "(terminal tools: none)"),
        (lambda d: d["tools"].append(dict(d["tools"][0])), "'echo' is defined twice"),
    ],
)
def test_tool_set_rules_are_agent_004(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], fragment: str
) -> None:
    problems = problems_of(copy_agent(tmp_path, edit=edit))
    assert any(p.code == "AGENT_004" and fragment in p.message for p in problems), [
        p.render() for p in problems
    ]


@pytest.mark.parametrize(
    ("template", "fragment"),
    [
        ("{% if node_name %}unclosed", "node_context line 1"),
        ("{{ node_txt }}", "'node_txt' is undefined"),
    ],
)
def test_bad_template_is_agent_005(tmp_path: Path, template: str, fragment: str) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["initial_context"]["node_context"] = template

    problem = only_problem(copy_agent(tmp_path, edit=edit))
    assert problem.code == "AGENT_005"
    assert fragment in problem.message


def test_missing_script_is_agent_006(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["tools"][0]["pym"] = "tools/missing.pym"

    problem = only_problem(copy_agent(tmp_path, edit=edit))
    assert problem.code == "AGENT_006"
    assert "tools[0] (echo).pym" in problem.message
    assert "missing.pym does not exist" in problem.message


def test_missing_adapter_is_agent_006(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["model"] = {"adapter": "adapters/mine.lora.gguf"}

    path = copy_agent(tmp_path, edit=edit)
    problem = only_problem(path)
    assert problem.code == "AGENT_006"
    assert "model.adapter" in problem.message
    adapter = path.parent / "adapters" / "mine.lora.gguf"
    adapter.parent.mkdir()
    adapter.write_bytes(b"GGUF")
    assert load_agent(path).model == adapter.resolve()


def test_failing_script_is_agent_007_with_file_and_line(tmp_path: Path) -> None:
    path = copy_agent(tmp_path)
    (path.parent / "tools" / "echo.pym").write_text(
        'from remora.pym import Input\n\ntext = Input("text")\nimport os\ntext\n', encoding="utf-8"
    )
    problem = only_problem(path)
    assert problem.code == "AGENT_007"
    script = (path.parent / "tools" / "echo.pym").resolve()
    assert f"{script}:3: PYM002" in problem.message
    assert f"{script}:4: PYM005" in problem.message


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ({"txt": {"description": "x"}}, "'txt' is not an input of the script"),
        ({"text": {"type": "integer"}}, "cannot change the type"),
    ],
)
def test_bad_override_is_agent_008(tmp_path: Path, override: dict[str, Any], fragment: str) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["tools"][0]["inputs_override"] = override

    problem = only_problem(copy_agent(tmp_path, edit=edit))
    assert problem.code == "AGENT_008"
    assert fragment in problem.message


def test_provider_with_unfillable_input_is_agent_009(tmp_path: Path) -> None:
    path = copy_agent(tmp_path)
    (path.parent / "context" / "element.pym").write_text(
        'from remora.pym import Input\nsecret: str = Input("secret")\nsecret\n', encoding="utf-8"
    )
    problem = only_problem(path)
    assert problem.code == "AGENT_009"
    assert "needs 'secret'" in problem.message


def test_provider_may_use_the_tools_inputs(tmp_path: Path) -> None:
    path = copy_agent(tmp_path)
    (path.parent / "context" / "element.pym").write_text(
        'from remora.pym import Input\ntext: str = Input("text")\ntext\n', encoding="utf-8"
    )
    assert check_agent(path).ok


def test_every_problem_is_collected_and_load_points_at_the_rest(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["initial_context"]["node_context"] = "{{ nope }}"
        data["tools"][0]["inputs_override"] = {"zzz": {}}

    path = copy_agent(tmp_path, edit=edit)
    assert [p.code for p in problems_of(path)] == ["AGENT_005", "AGENT_008"]
    with pytest.raises(AgentDefinitionError) as caught:
        load_agent(path)
    assert caught.value.code == "AGENT_005"
    assert "1 more problem(s): run 'remora validate-agents" in (caught.value.hint or "")


def test_user_directory_shadows_bundled_agent(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["max_turns"] = 9

    copy_agent(tmp_path / "agents", name="harness", edit=edit)
    copy_agent(tmp_path / "agents", name="extra")
    agents = load_agents([tmp_path / "agents"])
    assert agents["harness"].max_turns == 9
    assert agents["harness"].directory == (tmp_path / "agents" / "harness").resolve()
    assert agents["extra"].name == "extra"


def test_a_single_agent_folder_is_a_valid_directory(tmp_path: Path) -> None:
    path = copy_agent(tmp_path, name="solo")
    assert agent_files(path.parent) == [path]
    assert "solo" in load_agents([path.parent])


def test_bad_user_agent_fails_load_agents(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["max_turns"] = 0

    copy_agent(tmp_path, name="broken", edit=edit)
    with pytest.raises(AgentDefinitionError) as caught:
        load_agents([tmp_path])
    assert caught.value.code == "AGENT_003"
    with pytest.raises(AgentDefinitionError) as missing:
        load_agents([tmp_path / "nowhere"])
    assert missing.value.code == "AGENT_001"


def test_duplicate_names_in_one_directory_are_agent_011(tmp_path: Path) -> None:
    copy_agent(tmp_path, name="one")
    second = copy_agent(tmp_path, name="two")
    data = yaml.safe_load(second.read_text(encoding="utf-8"))
    data["name"] = "one"
    second.write_text(yaml.safe_dump(data), encoding="utf-8")
    checks = check_agents([("user", tmp_path)])
    assert [c.ok for c in checks] == [True, False]
    assert checks[1].problems[0].code == "AGENT_011"


def test_empty_directory_has_no_agents(tmp_path: Path) -> None:
    (checks,) = [check_agents([("user", tmp_path)])]
    assert checks[0].problems[0].code == "AGENT_001"
    assert "no agent definitions" in checks[0].problems[0].message


def test_the_definition_digest_follows_prompts_and_tools_not_the_adapter(tmp_path: Path) -> None:
    """Shipping an adapter (model.adapter and its comment) keeps the digest that generated
    data and measured gate rows are kept under; a prompt or a tool changes it."""
    path = copy_agent(tmp_path / "agents")
    folder = path.parent

    def digest() -> str:
        return load_agents([folder.parent])["mine"].definition_digest()

    first = digest()
    text = path.read_text(encoding="utf-8")
    (folder / "adapters").mkdir()
    (folder / "adapters" / "mine.gguf").write_bytes(b"weights")
    path.write_text(
        "# shipped with an adapter\n" + text + "model:\n  adapter: adapters/mine.gguf\n",
        encoding="utf-8",
    )
    assert digest() == first
    path.write_text(text.replace("<task_description>", "<task>"), encoding="utf-8")
    assert digest() != first
    path.write_text(text, encoding="utf-8")
    assert digest() == first
    tool = next((folder / "tools").glob("*.pym"))
    tool.write_text(tool.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    assert digest() != first


def test_a_screen_is_loaded_as_a_script_of_the_tool(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["tools"][0]["screen"] = "tools/screen.pym"

    path = copy_agent(tmp_path, edit=edit)
    (path.parent / "tools" / "screen.pym").write_text(
        'from remora.pym import Input\ntext: str = Input("text")\n'
        '{"outcome": "success" if text else "error", "summary": "checked"}\n',
        encoding="utf-8",
    )
    agent = load_agent(path)
    screen = agent.tool("echo").screen
    assert screen is not None
    assert screen.name == "echo.screen"
    assert screen.pym == (path.parent / "tools" / "screen.pym").resolve()
    assert agent.tool("submit_result").screen is None


def test_a_screen_with_an_input_its_tool_lacks_is_agent_017(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["tools"][0]["screen"] = "tools/screen.pym"

    path = copy_agent(tmp_path, edit=edit)
    (path.parent / "tools" / "screen.pym").write_text(
        'from remora.pym import Input\nother: str = Input("other")\nother\n', encoding="utf-8"
    )
    problem = only_problem(path)
    assert problem.code == "AGENT_017"
    assert "other" in problem.message
