"""run_job: a real agent definition, the real tool runtime, a scripted model."""

from __future__ import annotations

import asyncio
import json
import shutil
import textwrap
from pathlib import Path

from remora.config import ModelConfig
from remora.contracts import JobKey
from remora.discovery import discover
from remora.events import CollectingEmitter
from remora.operations import installed_operations, load_agents
from remora.orchestration import Job, run_job
from remora.runner.history import MESSAGE_OVERHEAD, estimate_tokens
from remora.testing import ScriptedModel, call
from remora.tools.runtime import ToolRuntime
from tests.stores import overlay_store, write_tree

SAMPLE = Path(__file__).parent.parent / "examples" / "sample_project"
FIXER = Path(__file__).parent / "data" / "expectation_agents"


def copy_sample(tmp_path: Path) -> Path:
    """The example project copied, so the workspace state lands outside the repository."""
    return Path(shutil.copytree(SAMPLE, tmp_path / "sample_project"))


def sample_node(qualname: str):  # type: ignore[no-untyped-def]
    result = discover([SAMPLE])
    return next(node for node in result.nodes if node.qualname == qualname)


def test_harness_episode_end_to_end(tmp_path: Path) -> None:
    config = installed_operations().config()
    agent = load_agents()["harness"]
    node = sample_node("apply_discount")
    model = ScriptedModel(
        [
            "<start_function_call>call:echo{text:<escape>apply_discount<escape>}"
            "<end_function_call>",
            call("submit_result", summary="echo returned apply_discount"),
        ]
    )
    emitter = CollectingEmitter()
    store = overlay_store(copy_sample(tmp_path))
    key = JobKey("harness", node.node_id, run_id="r1")
    job = Job(agent=agent, node=node, operation=key.operation, run_id=key.run_id or "")
    with ToolRuntime(config.tools, emitter) as runtime:
        result = asyncio.run(
            run_job(job, model=model, runtime=runtime, store=store, config=config, emitter=emitter)
        )
    assert result.status == "success", result.error
    assert result.summary.endswith("echo returned apply_discount")
    assert result.telemetry.parse_paths == {"functiongemma": 1, "native": 1}
    assert result.changed_files == []
    assert "node_outlined" not in result.details

    first, second = model.requests
    node_context = first.messages[1].content
    assert "function `apply_discount` in inventory/pricing.py" in node_context
    assert "def apply_discount(price_cents, percent):" in node_context
    assert len(second.messages) == len(first.messages) + 2
    tool_message = second.messages[-1]
    response = json.loads(tool_message.content)
    assert response["name"] == "echo"
    assert response["response"]["result"] == "apply_discount"
    assert "Working on function apply_discount" in response["response"]["summary"]
    assert {event.type for event in emitter.events} >= {"tool_call", "tool_result", "agent_done"}


def test_system_prompt_override_and_invalid_call_recovery(tmp_path: Path) -> None:
    config = installed_operations().config()
    agent = load_agents()["harness"]
    model = ScriptedModel(
        [
            call("echo", txt="wrong key"),
            call("echo", text="Item"),
            call("submit_result", summary="done", status="success"),
        ]
    )
    store = overlay_store(copy_sample(tmp_path))
    node = sample_node("Item")
    job = Job(
        agent=agent,
        node=node,
        operation="harness",
        system_prompt="Variant prompt.",
    )
    with ToolRuntime(config.tools) as runtime:
        result = asyncio.run(
            run_job(
                job,
                model=model,
                runtime=runtime,
                store=store,
                config=config,
            )
        )
    assert result.status == "success"
    assert model.requests[0].messages[0].content.startswith("Variant prompt.")
    assert result.telemetry.invalid_calls == 1
    error_result = json.loads(model.requests[1].messages[-2].content)
    assert error_result["response"]["outcome"] == "error"
    assert "txt" in error_result["response"]["error"]
    assert "echo" in model.requests[1].messages[-1].content


def test_a_file_node_too_large_for_the_context_is_outlined(tmp_path: Path) -> None:
    source = Path(textwrap.__file__).read_text(encoding="utf-8")
    project = write_tree(tmp_path / "proj", {"textwrap.py": source})
    config = installed_operations().config(model=ModelConfig(context_size=2048))
    agent = load_agents()["harness"]
    node = next(
        node for node in discover([project], root=project).nodes if node.node_type == "file"
    )
    assert node.text.rstrip("\n") == source.rstrip("\n")
    model = ScriptedModel(
        [call("echo", text="textwrap.py"), call("submit_result", summary="echo returned it")]
    )
    job = Job(agent=agent, node=node, operation="harness", run_id="r1")
    with ToolRuntime(config.tools) as runtime:
        result = asyncio.run(
            run_job(job, model=model, runtime=runtime, store=overlay_store(project), config=config)
        )
    assert result.status == "success", result.error
    outlined = result.details["node_outlined"]
    assert outlined["total_lines"] == len(source.splitlines())
    assert outlined["node_tokens"] > outlined["budget_tokens"]

    first = model.requests[0]
    node_context = first.messages[1].content
    assert node_context.startswith("Code element: file `textwrap.py` in textwrap.py")
    # The harness agent has no read_lines tool, so it is not told to call one.
    assert "too large to show whole" in node_context and "read_lines" not in node_context
    for definition in ("class TextWrapper:", "def shorten(text, width, **kwargs):", "def dedent"):
        assert definition in node_context
    assert "def indent(text, prefix, predicate=None):" in node_context
    assert "return ''.join(prefixed_lines())" not in node_context
    assert len(node_context) < len(source) / 2
    # The whole first request fits the prompt budget (as the runner estimates tokens).
    catalog = json.dumps([spec.model_dump() for spec in first.tools], ensure_ascii=False)
    prompt = estimate_tokens(catalog) + sum(
        MESSAGE_OVERHEAD + estimate_tokens(message.content) for message in first.messages
    )
    assert prompt <= config.model.context_size - config.model.max_tokens


def test_a_template_without_the_node_text_fits_nothing(tmp_path: Path) -> None:
    source = Path(textwrap.__file__).read_text(encoding="utf-8")
    project = write_tree(tmp_path / "proj", {"textwrap.py": source})
    config = installed_operations().config(model=ModelConfig(context_size=2048))
    agent = load_agents([FIXER])["fixer"]  # its node context names the file only
    [node] = [n for n in discover([project], root=project).nodes if n.node_type == "file"]
    model = ScriptedModel([call("submit_result", summary="nothing")])
    job = Job(agent=agent, node=node, operation="fixer", run_id="r1")
    with ToolRuntime(config.tools) as runtime:
        result = asyncio.run(
            run_job(job, model=model, runtime=runtime, store=overlay_store(project), config=config)
        )
    assert "node_outlined" not in result.details
    assert model.requests[0].messages[1].content.strip() == ("Python file textwrap.py.")


def test_a_retry_samples_and_shows_the_model_what_the_person_found_wrong(
    tmp_path: Path,
) -> None:
    config = installed_operations().config()
    agent = load_agents()["harness"]
    node = sample_node("apply_discount")
    store = overlay_store(copy_sample(tmp_path))
    key = JobKey("harness", node.node_id, run_id="r1")
    script = [call("echo", text="apply_discount"), call("submit_result", summary="s")]
    requests = {}
    for retry, note in ((False, ""), (True, "say it in cents"), (True, "")):
        model = ScriptedModel(list(script))
        job = Job(
            agent=agent,
            node=node,
            operation=key.operation,
            run_id=key.run_id or "",
            retry=retry,
            retry_note=note,
        )
        with ToolRuntime(config.tools) as runtime:
            asyncio.run(run_job(job, model=model, runtime=runtime, store=store, config=config))
        requests[(retry, note)] = model.requests[0]
    plain = requests[(False, "")]
    assert plain.temperature == 0.0 and "A person rejected" not in plain.messages[1].content
    noted = requests[(True, "say it in cents")]
    assert noted.temperature == 0.7
    assert noted.messages[1].content.endswith(
        "A person rejected the previous attempt: say it in cents"
    )
    bare = requests[(True, "")].messages[1].content
    assert bare.endswith("A person rejected the previous attempt; do it differently.")


def test_a_decision_prompt_declares_one_tool_and_caps_the_node(tmp_path: Path) -> None:
    """The docstring agent's summary turn: only write_docstring is declared, and a long
    function is outlined within the agent's node_max_tokens."""
    body = "\n".join(f"    total = total + {index}" for index in range(200))
    source = f"def long_sum(values):\n    total = 0\n{body}\n    return total\n"
    project = write_tree(tmp_path / "proj", {"longsum.py": source})
    config = installed_operations().config()
    agent = load_agents()["docstring"]
    cap = agent.initial_context.node_max_tokens
    assert agent.initial_context.declared_tools == "allowed" and cap is not None
    [node] = [n for n in discover([project], root=project).nodes if n.name == "long_sum"]
    summary = "Add up a running total and return it."
    model = ScriptedModel([call("write_docstring", summary=summary)])
    options = config.operations["docstring"].options
    job = Job(
        agent=agent,
        node=node,
        operation="docstring",
        run_id="r1",
        options=options if isinstance(options, dict) else options.model_dump(),
    )
    with ToolRuntime(config.tools) as runtime:
        result = asyncio.run(
            run_job(job, model=model, runtime=runtime, store=overlay_store(project), config=config)
        )
    # The host submits once the summary is written: one model turn in all.
    assert result.status == "partial", result.error
    [request] = model.requests
    assert [tool.name for tool in request.tools] == ["write_docstring"]
    outlined = result.details["node_outlined"]
    assert outlined["budget_tokens"] == cap < outlined["node_tokens"]
    node_context = request.messages[1].content
    assert "def long_sum(values):" in node_context
    assert "total = total + 199" not in node_context


def test_a_job_travels_by_pickle_and_json_and_runs_the_same(tmp_path: Path) -> None:
    """The one job value carries nothing bound to the planning process: a pickled copy
    (what another process or a Ray worker receives) and a JSON copy run to the same result,
    with the agent's capabilities and options intact."""
    import pickle

    agents = load_agents()
    node = sample_node("apply_discount")
    job = Job(
        agent=agents["docstring"],
        node=node,
        operation="docstring",
        options={"style": "google", "use_model": False},
        attempt=2,
    ).in_run("r1", file_sha256="ab" * 32)
    copied = pickle.loads(pickle.dumps(job))
    assert copied.key == job.key and copied.file_sha256 == job.file_sha256
    assert dict(copied.agent.capabilities) == dict(job.agent.capabilities)
    assert copied.options == job.options
    revived = Job.from_json(job.to_json(), agents)
    assert revived == job
    config = installed_operations().config()
    results = []
    for each in (job, copied, revived):
        store = overlay_store(copy_sample(tmp_path / str(len(results))))
        with ToolRuntime(config.tools) as runtime:
            context = each.context(store, config, each.key.workspace_id)
            current = asyncio.run(runtime.run(each.agent.tool("read_signature"), {}, context))
        results.append((current.outcome, current.result, context.system["options"]))
    assert results[0][0] == "success"
    assert results[0][2] == {"style": "google", "use_model": False}
    assert results[0] == results[1] == results[2]


def test_a_job_from_json_needs_its_agent_here() -> None:
    agents = load_agents()
    job = Job(agent=agents["docstring"], node=sample_node("apply_discount"), operation="docstring")
    try:
        Job.from_json(job.to_json(), {"lint": agents["lint"]})
    except Exception as exc:
        assert "RUN_025" in str(exc)
    else:
        raise AssertionError("a job whose agent is not loaded here was accepted")
