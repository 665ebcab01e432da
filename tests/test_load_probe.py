"""The llama.cpp load probe: crashes in a child pick the next profile, verdicts are cached
per machine, build and model, and ``doctor`` and the backend use them.

The verdict logic runs against real child processes that die by the signal a test names
(a stand-in for a llama.cpp build that faults on this CPU); the model-marked tests run the
real probe child on the embedded model.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from remora.cli import app
from remora.config import ModelConfig
from remora.errors import ModelError
from remora.model.defaults import resolve_model_path
from remora.model.llama_cpp import LlamaCppBackend
from remora.model.load_probe import (
    PLAIN_BUFFERS,
    WITH_EXTRA_BUFFERS,
    ChildRequest,
    ProbeAttempt,
    ProbeVerdict,
    build_fingerprint,
    choose_profile,
    machine_fingerprint,
    probe,
    probe_dir,
    probe_key,
    run_attempt,
)


def child(behaviour: dict[str, str], calls: list[str] | None = None):  # type: ignore[no-untyped-def]
    """A probe command whose child, per profile name, dies by a signal after announcing a
    stage (``"SIGILL@load"``), hangs (``"hang"``), reports an error (``"error"``) or succeeds
    (``"ok"``)."""

    def command(request: ChildRequest) -> Sequence[str]:
        if calls is not None:
            calls.append(request.profile.name)
        action = behaviour[request.profile.name]
        lines = ["import os, signal, sys, time", "def say(s): print(s, flush=True)"]
        lines.append("say('stage import')")
        if "@" in action:
            name, stage = action.split("@")
            lines += [f"say('stage {stage}')", f"os.kill(os.getpid(), signal.{name})"]
        elif action == "hang":
            lines += ["say('stage load')", "time.sleep(60)"]
        elif action == "error":
            lines += [
                "say('stage load')",
                "say('error ' + '{\"error\": \"MODEL_002: llama.cpp could not load x\"}')",
                "sys.exit(1)",
            ]
        else:
            lines += [
                "say('stage load')",
                "say('stage prompt')",
                "say('stage generate')",
                'say(\'ok \' + \'{"buffers": ["CPU_REPACK"], "system_info": "AVX2 = 1"}\')',
            ]
        return [sys.executable, "-c", "\n".join(lines)]

    return command


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 64)
    return path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"XDG_CACHE_HOME": str(tmp_path / "cache")}


def test_a_child_killed_by_sigill_is_seen_with_the_stage_it_died_in(model: Path) -> None:
    request = ChildRequest(model, WITH_EXTRA_BUFFERS, threads=1, batch_size=512)
    attempt = run_attempt(request, child({"extra_buffers": "SIGILL@prompt"}))
    assert (attempt.outcome, attempt.signal, attempt.stage) == ("signal", "SIGILL", "prompt")


def test_a_sigill_with_extra_buffers_falls_back_to_plain_buffers_and_is_cached(
    model: Path, env: dict[str, str]
) -> None:
    calls: list[str] = []
    command = child({"extra_buffers": "SIGILL@load", "plain_buffers": "ok"}, calls)
    profile, verdict = choose_profile(
        model, "auto", threads=1, batch_size=512, environ=env, command=command
    )
    assert profile == PLAIN_BUFFERS
    assert verdict is not None and not verdict.cached
    assert [(a.profile, a.outcome, a.signal) for a in verdict.attempts] == [
        ("extra_buffers", "signal", "SIGILL"),
        ("plain_buffers", "ok", None),
    ]
    assert "extra_buffers died by SIGILL while loading the weights" in verdict.describe()
    assert "plain_buffers (weights in CPU_REPACK)" in verdict.describe()

    again, cached = choose_profile(
        model, "auto", threads=1, batch_size=512, environ=env, command=command
    )
    assert again == PLAIN_BUFFERS
    assert cached is not None and cached.cached
    assert calls == ["extra_buffers", "plain_buffers"], "the cached verdict ran no child"


def test_a_segfault_also_moves_on(model: Path, env: dict[str, str]) -> None:
    command = child({"extra_buffers": "SIGSEGV@generate", "plain_buffers": "ok"})
    profile, verdict = choose_profile(
        model, "auto", threads=1, batch_size=512, environ=env, command=command
    )
    assert profile == PLAIN_BUFFERS
    assert verdict is not None and verdict.attempts[0].signal == "SIGSEGV"


def test_a_clean_child_keeps_llama_cpps_defaults_after_one_run(
    model: Path, env: dict[str, str]
) -> None:
    calls: list[str] = []
    command = child({"extra_buffers": "ok", "plain_buffers": "SIGILL@load"}, calls)
    profile, verdict = choose_profile(
        model, "auto", threads=1, batch_size=512, environ=env, command=command
    )
    assert profile == WITH_EXTRA_BUFFERS
    assert calls == ["extra_buffers"]
    assert verdict is not None and verdict.attempts[0].buffers == ["CPU_REPACK"]


def test_every_profile_crashing_is_a_coded_error_naming_the_rebuild(
    model: Path, env: dict[str, str]
) -> None:
    command = child({"extra_buffers": "SIGILL@prompt", "plain_buffers": "SIGILL@prompt"})
    with pytest.raises(ModelError) as info:
        choose_profile(model, "auto", threads=1, batch_size=512, environ=env, command=command)
    error = info.value
    assert error.code == "MODEL_024"
    assert "crashes on this CPU (SIGILL while evaluating the prompt" in error.message
    assert error.hint is not None and "-DGGML_NATIVE=OFF" in error.hint
    assert "pip install --force-reinstall" in error.hint
    # The verdict is cached: the next command fails at once, without crashing children.
    with pytest.raises(ModelError):
        choose_profile(model, "auto", threads=1, batch_size=512, environ=env, command=child({}))


def test_a_failure_that_is_no_crash_stops_the_probe_and_is_not_cached(
    model: Path, env: dict[str, str]
) -> None:
    calls: list[str] = []
    command = child({"extra_buffers": "error", "plain_buffers": "ok"}, calls)
    profile, verdict = choose_profile(
        model, "auto", threads=1, batch_size=512, environ=env, command=command
    )
    assert profile == WITH_EXTRA_BUFFERS, "the real load reports what is wrong with the file"
    assert verdict is not None and verdict.attempts[0].detail.startswith("MODEL_002")
    assert calls == ["extra_buffers"]
    assert not list(probe_dir(env).glob("*.json"))


def test_a_timeout_after_a_crash_takes_the_profile_that_did_not_crash_uncached(
    model: Path, env: dict[str, str]
) -> None:
    command = child({"extra_buffers": "SIGILL@load", "plain_buffers": "hang"})
    profile, verdict = choose_profile(
        model, "auto", threads=1, batch_size=512, environ=env, command=command, timeout=2
    )
    assert profile == PLAIN_BUFFERS
    assert verdict is not None and verdict.attempts[1].outcome == "timeout"
    assert not list(probe_dir(env).glob("*.json"))


def test_the_setting_on_or_off_skips_the_probe(model: Path, env: dict[str, str]) -> None:
    never = child({})
    assert choose_profile(model, "off", threads=1, batch_size=512, command=never) == (
        PLAIN_BUFFERS,
        None,
    )
    assert choose_profile(model, "on", threads=1, batch_size=512, command=never) == (
        WITH_EXTRA_BUFFERS,
        None,
    )


def test_the_cache_key_changes_with_the_build_the_model_the_machine_and_settings(
    model: Path,
) -> None:
    build = {"version": "0.3.36", "libraries": [["lib/libggml-cpu.so", 100, 1]]}
    machine = {"machine": "x86_64", "cpu": "Xeon", "flags": "abc", "kernel": "6.1"}
    key = probe_key(model, threads=1, batch_size=512, build=build, machine=machine)
    assert key == probe_key(model, threads=1, batch_size=512, build=build, machine=machine)
    rebuilt = {**build, "libraries": [["lib/libggml-cpu.so", 100, 2]]}
    assert key != probe_key(model, threads=1, batch_size=512, build=rebuilt, machine=machine)
    upgraded = {**build, "version": "0.3.37"}
    assert key != probe_key(model, threads=1, batch_size=512, build=upgraded, machine=machine)
    other_cpu = {**machine, "flags": "abd"}
    assert key != probe_key(model, threads=1, batch_size=512, build=build, machine=other_cpu)
    assert key != probe_key(model, threads=2, batch_size=512, build=build, machine=machine)
    model.write_bytes(b"GGUF" + b"\1" * 65)
    assert key != probe_key(model, threads=1, batch_size=512, build=build, machine=machine)


def test_the_real_fingerprints_name_the_installed_build_and_this_cpu() -> None:
    build = build_fingerprint()
    libraries = [str(entry[0]) for entry in build["libraries"]]  # type: ignore[attr-defined]
    assert any("llama" in name for name in libraries), libraries
    assert any("ggml" in name for name in libraries), libraries
    machine = machine_fingerprint()
    assert machine["machine"] and machine["flags"]


def test_a_corrupt_cache_file_is_probed_again(model: Path, env: dict[str, str]) -> None:
    calls: list[str] = []
    command = child({"extra_buffers": "ok"}, calls)
    probe(model, threads=1, batch_size=512, environ=env, command=command)
    (cached,) = probe_dir(env).glob("*.json")
    cached.write_text("{not json")
    probe(model, threads=1, batch_size=512, environ=env, command=command)
    assert calls == ["extra_buffers", "extra_buffers"]


def _embedded() -> Path:
    return resolve_model_path(ModelConfig())


def leave_verdict(env: dict[str, str], profile: str | None, attempts: list[ProbeAttempt]) -> Path:
    """Cache a verdict for the embedded model at doctor's settings, as an earlier probe on
    another machine would have; the model's path."""
    from remora.model.llama_cpp import thread_choice

    path = _embedded()
    key = probe_key(path, threads=thread_choice(None)[0], batch_size=ModelConfig().batch_size)
    verdict = ProbeVerdict(
        key=key,
        profile=profile,
        attempts=attempts,
        probed_at="2026-11-27T10:00:00+00:00",
        llama_cpp_version="0.3.36",
    )
    target = probe_dir(env) / f"{key}.json"
    target.parent.mkdir(parents=True)
    target.write_text(verdict.model_dump_json())
    return path


def test_doctor_shows_the_cached_fallback_and_why(tmp_path: Path) -> None:
    """A verdict left by an earlier probe on an AMX-faulting machine, as doctor reports it."""
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    path = leave_verdict(
        env,
        "plain_buffers",
        [
            ProbeAttempt(
                profile="extra_buffers",
                outcome="signal",
                signal="SIGILL",
                stage="prompt",
                seconds=0.8,
            ),
            ProbeAttempt(profile="plain_buffers", outcome="ok", seconds=1.1, buffers=["CPU"]),
        ],
    )
    result = CliRunner().invoke(
        app, ["--set", f"model.path={path}", "doctor", str(tmp_path), "-f", "json"], env=env
    )
    assert result.exit_code == 0, result.output
    load = json.loads(result.output)["model"]["load"]
    assert load["profile"] == "plain_buffers"
    assert load["cached"] is True
    assert "extra_buffers died by SIGILL while evaluating the prompt" in load["reason"]

    table = CliRunner().invoke(
        app,
        ["--set", f"model.path={path}", "doctor", str(tmp_path)],
        env=env,
        terminal_width=200,
    )
    assert "model load" in table.output and "plain_buffers" in table.output


def test_doctor_exits_1_when_every_profile_crashed(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    crash = {"outcome": "signal", "signal": "SIGILL", "stage": "load", "seconds": 0.5}
    path = leave_verdict(
        env,
        None,
        [
            ProbeAttempt(profile="extra_buffers", **crash),  # type: ignore[arg-type]
            ProbeAttempt(profile="plain_buffers", **crash),  # type: ignore[arg-type]
        ],
    )
    result = CliRunner().invoke(
        app, ["--set", f"model.path={path}", "doctor", str(tmp_path), "-f", "json"], env=env
    )
    assert result.exit_code == 1
    load = json.loads(result.output)["model"]["load"]
    assert load["profile"] is None and load["reason"].startswith("MODEL_024")


@pytest.mark.model
def test_the_real_probe_loads_and_generates_with_each_profile(
    tmp_path: Path, embedded_llama: LlamaCppBackend
) -> None:
    """The real child on the embedded model. Plain buffers must run on every machine; the
    repacked weights may crash on some CPUs (CI's has raised SIGILL at the first prompt), which
    is what the probe is for: then the session's backend must not have loaded with them."""
    path = _embedded()
    plain = run_attempt(ChildRequest(path, PLAIN_BUFFERS, threads=1, batch_size=512))
    assert plain.outcome == "ok", plain
    assert plain.stage == "generate"
    assert plain.buffers, "llama.cpp's load log names the weights' buffers"
    assert not any("REPACK" in b or "AMX" in b for b in plain.buffers)
    extra = run_attempt(ChildRequest(path, WITH_EXTRA_BUFFERS, threads=1, batch_size=512))
    assert extra.outcome in ("ok", "signal"), extra
    assert embedded_llama.load_profile is not None
    if extra.outcome == "ok":
        assert extra.stage == "generate" and extra.buffers
    else:
        assert extra.signal is not None
        assert embedded_llama.load_profile.name != WITH_EXTRA_BUFFERS.name
    verdict = embedded_llama.load_verdict
    if verdict is not None:
        assert verdict.profile == embedded_llama.load_profile.name
        assert probe(path, threads=embedded_llama.threads, batch_size=512).cached


def test_no_probe_child_is_left_running_after_a_timeout(model: Path) -> None:
    marker = model.parent / "pid"
    code = (
        "import os, time\n"
        f"open({str(marker)!r}, 'w').write(str(os.getpid()))\n"
        "print('stage load', flush=True)\ntime.sleep(60)"
    )
    attempt = run_attempt(
        ChildRequest(model, WITH_EXTRA_BUFFERS, 1, 512),
        lambda _request: [sys.executable, "-c", code],
        timeout=2,
    )
    assert attempt.outcome == "timeout" and attempt.stage == "load"
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
