"""The bundled sample_data agent end to end: scripted model, real tools, real workspace."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from remora.testing import call
from tests.stores import write_tree
from tests.support.agent_run import run_operation

EXAMPLE = Path(__file__).parent.parent / "examples" / "sample_project"

MODULE = '''"""Small helpers."""


def clamp(value, low, high):
    if low > high:
        raise ValueError("low must not exceed high")
    return max(low, min(value, high))


def risky(n):
    if n == 13:
        import os

        os._exit(1)
    return n * 2


def parse_flag(text):
    if text.startswith("--"):
        return text[2:]
    return None


def apply(func, values):
    return [func(v) for v in values]
'''


def ideal(fixtures: list[str]) -> list:  # type: ignore[type-arg]
    """The model's one decision; the host validates, writes and submits."""
    return [call("propose_fixtures", fixtures=fixtures)]


MODEL = {"model_inputs": True}
"""The model proposes fixtures only with this option (by default the host's are used)."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/helpers.py": MODULE})


def test_the_ideal_sequence_writes_yaml_fixtures_of_observed_calls(project: Path) -> None:
    script = ideal(["5, 0, 10", "1, 2, 0", "'a', 0, 10"])
    outcome = run_operation(
        project,
        "sample_data",
        "pkg/helpers.py",
        script,
        qualname="clamp",
        options={**MODEL, "format": "yaml"},
    )
    assert outcome.result.status == "success", outcome.result
    assert outcome.model_calls == 1
    assert outcome.tools.names == [
        "propose_fixtures",
        "validate_fixtures",
        "write_fixture_file",
        "submit_result",
    ]
    path = "fixtures/pkg/helpers/clamp.yaml"
    assert outcome.result.details["fixture_file"] == path
    data = yaml.safe_load(outcome.changed[path])
    assert data["function"] == "pkg.helpers.clamp"
    by_args = {json.dumps(f["args"]): f for f in data["fixtures"]}
    assert by_args["[5, 0, 10]"]["returns"] == 5
    assert by_args["[1, 2, 0]"]["raises"] == {
        "type": "ValueError",
        "message": "low must not exceed high",
    }
    assert '["a", 0, 10]' not in by_args  # comparing str and int: a TypeError, left out
    assert outcome.result.details["raising"] >= 1


def test_a_crashing_fixture_is_dropped_and_the_rest_kept(project: Path) -> None:
    outcome = run_operation(
        project,
        "sample_data",
        "pkg/helpers.py",
        ideal(["13", "4"]),
        qualname="risky",
        options=MODEL,
    )
    assert outcome.result.status == "success", outcome.result
    data = json.loads(outcome.changed["fixtures/pkg/helpers/risky.json"])
    args = [f["args"] for f in data["fixtures"]]
    assert [4] in args and [13] not in args
    assert {"args": [4], "kwargs": {}, "returns": 8} in data["fixtures"]
    assert "crashed" in outcome.tool_summaries[1]


def test_an_invalid_fixture_is_refused_with_the_reason(project: Path) -> None:
    outcome = run_operation(
        project,
        "sample_data",
        "pkg/helpers.py",
        ideal(["__import__('os')", "'--all'"]),
        qualname="parse_flag",
        options=MODEL,
    )
    assert outcome.result.status == "success", outcome.result
    assert "Rejected __import__('os'):" in outcome.tool_summaries[0]
    data = json.loads(outcome.changed["fixtures/pkg/helpers/parse_flag.json"])
    assert {"args": ["--all"], "kwargs": {}, "returns": "all"} in data["fixtures"]


def test_callables_are_written_as_python_expressions(project: Path) -> None:
    outcome = run_operation(
        project,
        "sample_data",
        "pkg/helpers.py",
        ideal(["str, (1, 2)"]),
        qualname="apply",
        options=MODEL,
    )
    assert outcome.result.status == "success", outcome.result
    data = json.loads(outcome.changed["fixtures/pkg/helpers/apply.json"])
    mine = [f for f in data["fixtures"] if f["args"][1] == {"$python": "(1, 2)"}]
    assert mine and mine[0]["args"][0] == {"$python": "str"}
    assert mine[0]["returns"] == ["1", "2"]
    assert "$python" in data["note"]


def test_by_default_the_host_writes_its_own_fixtures_without_the_model(project: Path) -> None:
    outcome = run_operation(
        project, "sample_data", "pkg/helpers.py", ideal(["'--all'"]), qualname="parse_flag"
    )
    # its host-only fixtures ('a', 'abc') all return None
    assert outcome.result.status == "partial", outcome.result
    assert outcome.model_calls == 0
    assert outcome.result.details["host_only"] is True
    text = outcome.changed["fixtures/pkg/helpers/parse_flag.json"]
    assert "--all" not in text
    assert json.loads(text)["fixtures"]


def test_the_readmes_fixture_example_passes_on_the_fixtures_written(tmp_path: Path) -> None:
    """The README shows how a test reads a fixture file; on the example project's own
    fixtures that test runs and passes."""
    project = Path(shutil.copytree(EXAMPLE, tmp_path / "sample_project"))
    outcome = run_operation(
        project, "sample_data", "inventory/pricing.py", [], qualname="apply_discount"
    )
    assert outcome.result.status == "success", outcome.result
    for path, text in outcome.changed.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(text, encoding="utf-8")
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    example = readme.split("<!-- fixture-example -->\n```python\n", 1)[1].split("```", 1)[0]
    (project / "tests" / "test_pricing_fixtures.py").write_text(example, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_pricing_fixtures.py",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    cases = json.loads(outcome.changed["fixtures/inventory/pricing/apply_discount.json"])
    assert f"{len(cases['fixtures'])} passed" in done.stdout
    assert any("raises" in case for case in cases["fixtures"])  # both branches are exercised
