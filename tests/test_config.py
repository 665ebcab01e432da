"""Configuration: layering, provenance and the errors a user can cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.config import (
    RemoraConfig,
    env_overrides,
    find_config_file,
    load_config,
    parse_assignments,
)
from remora.errors import ConfigError
from remora.operations import installed_operations

DEFAULTS = installed_operations().default_configs()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_are_valid_and_deterministic() -> None:
    assert RemoraConfig().operations == {}  # the config layer names no operation
    config = load_config(None, environ={}, operations=DEFAULTS).config
    assert config.runner.temperature == 0.0
    assert config.runner.tool_choice == "required"
    assert config.runner.candidates == 1
    assert config.operations["docstring"].options == {
        "style": "auto",
        "use_model": True,
        "describe": False,
        "similar_examples": False,
        "missing_only": False,
        "include_private": False,
        "include_tests": False,
    }
    assert config.enabled_operations() == ["lint", "docstring", "test", "sample_data"]
    assert config == installed_operations().config()


def test_yaml_file_found_upward_from_target(tmp_path: Path) -> None:
    write(tmp_path / "remora.yaml", "runner:\n  max_turns: 5\n")
    nested = tmp_path / "pkg" / "sub"
    nested.mkdir(parents=True)
    loaded = load_config(nested, environ={})
    assert loaded.file == tmp_path / "remora.yaml"
    assert loaded.config.runner.max_turns == 5
    assert loaded.sources["runner.max_turns"] == str(tmp_path / "remora.yaml")
    assert loaded.sources["runner.temperature"] == "default"


def test_pyproject_tool_remora_is_used(tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.remora.operations.docstring.options]\nstyle = "numpy"\n',
    )
    loaded = load_config(tmp_path, environ={}, operations=DEFAULTS)
    assert loaded.config.operations["docstring"].options["style"] == "numpy"
    assert loaded.config.operations["lint"].enabled is True


def test_pyproject_without_remora_section_is_skipped(tmp_path: Path) -> None:
    write(tmp_path / "remora.yaml", "watch:\n  debounce_ms: 10\n")
    write(tmp_path / "inner" / "pyproject.toml", '[project]\nname = "inner"\n')
    assert find_config_file(tmp_path / "inner") == tmp_path / "remora.yaml"


def test_remora_yaml_wins_over_pyproject_in_same_directory(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.remora.runner]\nmax_turns = 3\n")
    write(tmp_path / "remora.yaml", "runner:\n  max_turns: 4\n")
    assert load_config(tmp_path, environ={}).config.runner.max_turns == 4


def test_precedence_flag_over_env_over_file_over_default(tmp_path: Path) -> None:
    write(tmp_path / "remora.yaml", "runner:\n  max_turns: 5\n  concurrency: 3\n")
    environ = {"REMORA_RUNNER__MAX_TURNS": "6", "REMORA_RUNNER__TEMPERATURE": "0.5"}
    loaded = load_config(
        tmp_path, environ=environ, overrides=parse_assignments(["runner.max_turns=7"])
    )
    runner = loaded.config.runner
    assert (runner.max_turns, runner.temperature, runner.concurrency) == (7, 0.5, 3)
    assert loaded.sources["runner.max_turns"] == "flag"
    assert loaded.sources["runner.temperature"] == "environment"
    assert loaded.sources["runner.concurrency"] == str(tmp_path / "remora.yaml")
    assert loaded.sources["runner.tool_choice"] == "default"


def test_env_values_are_parsed_like_yaml() -> None:
    parsed = env_overrides(
        {
            "REMORA_DISCOVERY__IGNORE": "[migrations/, docs/]",
            "REMORA_OPERATIONS__TEST__ENABLED": "false",
            "REMORA_CONFIG": "ignored-here",
            "HOME": "/root",
        }
    )
    assert parsed == {
        "discovery": {"ignore": ["migrations/", "docs/"]},
        "operations": {"test": {"enabled": False}},
    }


def test_operation_merge_keeps_other_operations(tmp_path: Path) -> None:
    write(tmp_path / "remora.yaml", "operations:\n  sample_data:\n    enabled: false\n")
    config = load_config(tmp_path, environ={}, operations=DEFAULTS).config
    assert config.enabled_operations() == ["lint", "docstring", "test"]
    assert config.operations["docstring"].options["style"] == "auto"


def test_remora_config_env_names_the_file(tmp_path: Path) -> None:
    custom = write(tmp_path / "elsewhere.yaml", "runner:\n  max_turns: 2\n")
    loaded = load_config(tmp_path / "nowhere", environ={"REMORA_CONFIG": str(custom)})
    assert loaded.file == custom
    assert loaded.config.runner.max_turns == 2


@pytest.mark.parametrize(
    ("content", "code", "fragment"),
    [
        ("runner: [1, 2\n", "CONFIG_002", "not valid YAML at line"),
        ("- just\n- a list\n", "CONFIG_002", "must hold a mapping"),
        ("runner:\n  max_turns: many\n", "CONFIG_003", "runner.max_turns"),
        ("runner:\n  temperature: 9\n", "CONFIG_003", "runner.temperature"),
        ("runer:\n  max_turns: 3\n", "CONFIG_005", "did you mean 'runner'"),
        ("runner:\n  max_turn: 3\n", "CONFIG_005", "did you mean 'max_turns'"),
        ("operations:\n  lint:\n    enabeld: false\n", "CONFIG_005", "did you mean 'enabled'"),
        ("operations:\n  bad-name: {}\n", "CONFIG_003", "identifier"),
    ],
)
def test_bad_files_give_coded_errors(
    tmp_path: Path, content: str, code: str, fragment: str
) -> None:
    write(tmp_path / "remora.yaml", content)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    error = caught.value
    assert error.code == code
    assert fragment in error.render()
    assert error.exit_code == 2


def test_error_names_the_layer_that_set_the_bad_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={"REMORA_RUNNER__MAX_TURNS": "0"})
    assert "from environment" in caught.value.message


@pytest.mark.parametrize(
    "content",
    [
        "runner:\n  bogus:\n",  # null
        "runner:\n  bogus: {}\n",
        "runner:\n  bogus:\n    deeper: 1\n",
        "runner: 3\n",  # a scalar where a mapping belongs
    ],
)
def test_an_unknown_or_misshapen_key_names_the_file_it_came_from(
    tmp_path: Path, content: str
) -> None:
    config = write(tmp_path / "remora.yaml", content)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    assert f"(from {config})" in caught.value.message
    assert "(from default)" not in caught.value.message


@pytest.mark.parametrize(
    ("content", "code", "fragment"),
    [
        (
            "operations:\n  docstring:\n    options:\n      style: googel\n",
            "CONFIG_003",
            "'operations.docstring.options.style'",
        ),
        (
            "operations:\n  docstring:\n    options:\n      styel: google\n",
            "CONFIG_005",
            "did you mean 'style'?",
        ),
        (
            "operations:\n  sample_data:\n    options:\n      format: xml\n",
            "CONFIG_003",
            "'operations.sample_data.options.format'",
        ),
        (
            "operations:\n  lint:\n    options:\n      use_model: sometimes\n",
            "CONFIG_003",
            "'operations.lint.options.use_model'",
        ),
    ],
)
def test_operation_options_are_checked_when_the_configuration_loads(
    tmp_path: Path, content: str, code: str, fragment: str
) -> None:
    config = write(tmp_path / "remora.yaml", content)
    registry = installed_operations()
    loaded = load_config(tmp_path, environ={}, operations=registry.default_configs())
    with pytest.raises(ConfigError) as caught:
        registry.check_options(loaded)
    assert caught.value.code == code
    assert fragment in caught.value.render() and f"(from {config})" in caught.value.message
    assert caught.value.exit_code == 2


def test_an_operation_run_by_another_agent_takes_its_options_unchecked(tmp_path: Path) -> None:
    write(
        tmp_path / "remora.yaml",
        "operations:\n  docstring:\n    agent: mine\n    options:\n      tone: dry\n",
    )
    registry = installed_operations()
    loaded = load_config(tmp_path, environ={}, operations=registry.default_configs())
    registry.check_options(loaded)  # no error
    assert loaded.config.operations["docstring"].options["tone"] == "dry"


def test_bad_toml_in_explicit_pyproject(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", "[tool.remora\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, config_file=path, environ={})
    assert caught.value.code == "CONFIG_002"


def test_missing_explicit_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, config_file=tmp_path / "absent.yaml", environ={})
    assert caught.value.code == "CONFIG_001"


def test_non_utf8_file(tmp_path: Path) -> None:
    (tmp_path / "remora.yaml").write_bytes(b"runner:\n  max_turns: \xff\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    assert caught.value.code == "CONFIG_001"


@pytest.mark.parametrize("item", ["novalue", "=3", "runner..x=1", "  =  "])
def test_bad_assignments(item: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_assignments([item])
    assert caught.value.code == "CONFIG_004"


def test_bad_env_name() -> None:
    with pytest.raises(ConfigError) as caught:
        env_overrides({"REMORA_RUNNER____X": "1"})
    assert caught.value.code == "CONFIG_004"


def test_empty_file_means_defaults(tmp_path: Path) -> None:
    write(tmp_path / "remora.yaml", "")
    assert load_config(tmp_path, environ={}).config == RemoraConfig()


def test_relative_paths_in_a_file_are_relative_to_that_file(tmp_path: Path) -> None:
    write(
        tmp_path / "remora.yaml",
        "agents:\n  dirs: [my_agents, /abs/agents]\nmodel:\n  path: models/m.gguf\n",
    )
    config = load_config(tmp_path / "sub", environ={}).config
    assert config.agents.dirs == [tmp_path.resolve() / "my_agents", Path("/abs/agents")]
    assert config.model.path == tmp_path.resolve() / "models" / "m.gguf"
