"""Which llama.cpp load settings are safe on this machine, found out in a child process.

A llama.cpp build may use instructions the CPU advertises but cannot run: a hypervisor
that lists AMX and faults on ``tilezero`` kills the whole process with SIGILL at the first
matrix product, with no word. So before the first in-process load on a machine (and after
any change of the llama.cpp build, the model file or the kernel) a child process loads the
model with the settings Remora will use, evaluates one prompt and generates a few greedy
tokens. If the child dies by a signal, the next profile is tried: llama.cpp's extra buffer
types (AMX tiles, weight repacking) are where such faults live, and loading without them is
llama.cpp's own fallback. The first profile that works is kept, and the verdict is cached in
the user cache per machine, build, model and settings (``remora doctor`` shows it), so the
probe costs one model load once.

Code: MODEL_024 every profile crashed the probe child (the build does not run on this CPU).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata, util
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from remora.errors import ModelError
from remora.model.defaults import cache_root

_log = logging.getLogger(__name__)

ExtraBuffers = Literal["auto", "on", "off"]
ProbeOutcome = Literal["ok", "signal", "error", "timeout"]

PROBE_TIMEOUT = 120.0
"""Seconds one probe child may take (a load and a few tokens take about a second idle)."""
PROBE_TOKENS = 4

_STAGE_WORDS = {
    "import": "importing llama_cpp",
    "load": "loading the weights",
    "prompt": "evaluating the prompt",
    "generate": "generating",
}
STAGES = tuple(_STAGE_WORDS)
"""What the child announces before each step, so a crash names the step it died in."""


def _while(stage: str | None) -> str:
    return f" while {_STAGE_WORDS.get(stage, stage)}" if stage else ""


REBUILD_HINT = (
    "reinstall llama-cpp-python without native CPU extensions: "
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF '
    '-DGGML_AMX_BF16=OFF -DGGML_AVX512=OFF -DLLAVA_BUILD=OFF" '
    "pip install --force-reinstall --no-cache-dir --no-deps llama-cpp-python=={version}"
)


@dataclass(frozen=True)
class LoadProfile:
    """One way of loading the weights, from fastest to safest."""

    name: str
    extra_buffers: bool
    description: str


WITH_EXTRA_BUFFERS = LoadProfile(
    "extra_buffers",
    True,
    "llama.cpp's defaults: weights in its extra CPU buffer types (repacked for the CPU's "
    "vector units, AMX tiles where built and advertised)",
)
PLAIN_BUFFERS = LoadProfile(
    "plain_buffers",
    False,
    "weights in plain CPU buffers (use_extra_bufts off: no repacking, no AMX)",
)
PROFILES: tuple[LoadProfile, ...] = (WITH_EXTRA_BUFFERS, PLAIN_BUFFERS)


def profile_named(name: str) -> LoadProfile:
    for profile in PROFILES:
        if profile.name == name:
            return profile
    raise KeyError(name)


class ProbeAttempt(BaseModel):
    """One child run with one profile."""

    profile: str
    outcome: ProbeOutcome
    seconds: float
    stage: str | None = None
    """The last step the child announced (where a crash happened)."""
    signal: str | None = None
    detail: str = ""
    buffers: list[str] = []
    """The buffer types llama.cpp put the weights in (from its load log)."""
    system_info: str = ""


class ProbeVerdict(BaseModel):
    """What the probe found for one machine, build, model and settings."""

    key: str
    profile: str | None
    """The first profile that worked; None when every one crashed."""
    attempts: list[ProbeAttempt]
    probed_at: str
    llama_cpp_version: str
    cached: bool = False

    def describe(self) -> str:
        """One line for ``doctor`` and logs: what was chosen and why."""
        if self.profile is None:
            tried = "; ".join(f"{a.profile} {_attempt_text(a)}" for a in self.attempts)
            return f"no load profile finished: {tried}"
        chosen = self.attempts[-1]
        where = f" (weights in {', '.join(chosen.buffers)})" if chosen.buffers else ""
        failed = [a for a in self.attempts if a.outcome != "ok"]
        because = (
            "; ".join(f"{a.profile} {_attempt_text(a)}" for a in failed) + ", so " if failed else ""
        )
        when = "cached verdict" if self.cached else "probed now"
        return (
            f"{because}{self.profile}{where} loads and generates in a child process "
            f"({chosen.seconds:.1f} s; {when}, {self.probed_at[:10]}, "
            f"llama-cpp-python {self.llama_cpp_version})"
        )


def _attempt_text(attempt: ProbeAttempt) -> str:
    stage = _while(attempt.stage)
    if attempt.outcome == "signal":
        return f"died by {attempt.signal}{stage}"
    if attempt.outcome == "timeout":
        return f"timed out{stage}"
    return f"failed{stage}: {attempt.detail}"


# The cache key ------------------------------------------------------------------------


def _llama_cpp_dir() -> Path | None:
    spec = util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def llama_cpp_version() -> str:
    try:
        return metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return "not installed"


@functools.cache
def build_fingerprint() -> dict[str, object]:
    """The installed llama.cpp build: the package version and its shared libraries. Read
    once per process: the libraries this process loads are the ones installed when it
    started, so a reinstall is seen by the next process."""
    libraries: list[list[object]] = []
    package = _llama_cpp_dir()
    if package is not None:
        for path in sorted(package.rglob("*")):
            if path.is_file() and (".so" in path.name or path.suffix in {".dylib", ".dll"}):
                stat = path.stat()
                libraries.append([str(path.relative_to(package)), stat.st_size, stat.st_mtime_ns])
    return {"version": llama_cpp_version(), "libraries": libraries}


@functools.cache
def machine_fingerprint(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, object]:
    """The CPU model and flags, the architecture and the kernel (AMX needs its permission);
    read once per process."""
    model = flags = ""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            name, _, value = line.partition(":")
            name = name.strip()
            if name in {"model name", "cpu model", "Processor"} and not model:
                model = value.strip()
            elif name in {"flags", "Features", "isa"} and not flags:
                flags = value.strip()
    except OSError:
        pass
    return {
        "machine": platform.machine(),
        "system": platform.system(),
        "kernel": platform.release(),
        "cpu": model or platform.processor(),
        "flags": hashlib.sha256(flags.encode()).hexdigest()[:16],
    }


def probe_key(
    model_path: Path,
    *,
    threads: int,
    batch_size: int,
    build: Mapping[str, object] | None = None,
    machine: Mapping[str, object] | None = None,
) -> str:
    """The key a verdict is cached under: changes with the machine, the build, the model
    file (path, size, modification time) and the settings the probe ran with."""
    stat = model_path.stat()
    material = {
        "machine": dict(machine if machine is not None else machine_fingerprint()),
        "build": dict(build if build is not None else build_fingerprint()),
        "model": [str(model_path.resolve()), stat.st_size, stat.st_mtime_ns],
        "settings": {"threads": threads, "batch_size": batch_size},
    }
    blob = json.dumps(material, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


def probe_dir(environ: Mapping[str, str] | None = None) -> Path:
    return cache_root(environ) / "llama-probe"


# Running the child ---------------------------------------------------------------------


@dataclass(frozen=True)
class ChildRequest:
    model_path: Path
    profile: LoadProfile
    threads: int
    batch_size: int

    def argv(self) -> list[str]:
        payload = {
            "model_path": str(self.model_path),
            "profile": self.profile.name,
            "threads": self.threads,
            "batch_size": self.batch_size,
            "tokens": PROBE_TOKENS,
        }
        return [sys.executable, "-m", "remora.model._probe_child", json.dumps(payload)]


ChildCommand = Callable[[ChildRequest], Sequence[str]]


def _default_command(request: ChildRequest) -> Sequence[str]:
    return request.argv()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def run_attempt(
    request: ChildRequest, command: ChildCommand = _default_command, timeout: float = PROBE_TIMEOUT
) -> ProbeAttempt:
    """Run one probe child and read what became of it.

    The child prints ``stage NAME`` before each step and ``ok {json}`` or
    ``error {json}`` at the end, flushing each line, so the last stage seen tells where a
    crash happened.
    """
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        try:
            process = subprocess.run(
                list(command(request)),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
            returncode: int | None = process.returncode
        except subprocess.TimeoutExpired:
            returncode = None
        except OSError as exc:
            return ProbeAttempt(
                profile=request.profile.name,
                outcome="error",
                seconds=time.monotonic() - started,
                detail=f"could not start the probe child: {exc}",
            )
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    seconds = time.monotonic() - started
    stage: str | None = None
    report: dict[str, object] = {}
    result: str | None = None
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word == "stage" and rest in STAGES:
            stage = rest
        elif word in {"ok", "error"}:
            try:
                loaded = json.loads(rest)
            except json.JSONDecodeError:
                continue
            if isinstance(loaded, dict):
                result, report = word, loaded
    attempt = ProbeAttempt(
        profile=request.profile.name, outcome="error", seconds=round(seconds, 3), stage=stage
    )
    if returncode is None:
        return attempt.model_copy(
            update={"outcome": "timeout", "detail": f"no answer within {timeout:.0f} s"}
        )
    if returncode < 0:
        return attempt.model_copy(update={"outcome": "signal", "signal": _signal_name(-returncode)})
    if returncode == 0 and result == "ok":
        buffers = report.get("buffers")
        return attempt.model_copy(
            update={
                "outcome": "ok",
                "buffers": [str(b) for b in buffers] if isinstance(buffers, list) else [],
                "system_info": str(report.get("system_info", "")),
            }
        )
    if result == "error":
        detail = str(report.get("error", "")) or _tail(text)
    else:
        detail = f"exit status {returncode}: {_tail(text)}"
    return attempt.model_copy(update={"detail": detail})


def _tail(text: str, limit: int = 400) -> str:
    lines = [line for line in text.strip().splitlines() if not line.startswith("stage ")]
    joined = " | ".join(lines[-4:])
    return joined[-limit:] or "no output"


# The verdict ---------------------------------------------------------------------------


def _read_cached(path: Path) -> ProbeVerdict | None:
    try:
        verdict = ProbeVerdict.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None
    return verdict.model_copy(update={"cached": True})


def _write_cached(path: Path, verdict: ProbeVerdict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".probe-")
        with os.fdopen(fd, "w") as handle:
            handle.write(verdict.model_dump_json(indent=2, exclude={"cached"}))
        os.replace(temp, path)
    except OSError:
        pass


def _verdict_path(key: str, environ: Mapping[str, str] | None) -> Path:
    return probe_dir(environ) / f"{key}.json"


def _cached_under(key: str, environ: Mapping[str, str] | None) -> ProbeVerdict | None:
    cached = _read_cached(_verdict_path(key, environ))
    return cached if cached is not None and cached.key == key else None


def cached_verdict(
    model_path: Path,
    *,
    threads: int,
    batch_size: int,
    environ: Mapping[str, str] | None = None,
) -> ProbeVerdict | None:
    """The verdict an earlier probe left for these settings, if any."""
    return _cached_under(probe_key(model_path, threads=threads, batch_size=batch_size), environ)


def probe(
    model_path: Path,
    *,
    threads: int,
    batch_size: int,
    environ: Mapping[str, str] | None = None,
    command: ChildCommand = _default_command,
    timeout: float = PROBE_TIMEOUT,
    refresh: bool = False,
) -> ProbeVerdict:
    """The cached verdict for these settings, or a new one from child runs.

    Profiles are tried in order until one loads and generates. A crash (death by a
    signal) moves on to the next profile; any other failure ends the probe, because it is
    not the CPU's doing (a corrupt file, a missing package) and the real load will report
    it. Verdicts with a timeout are not cached (a busy machine is not a broken build).
    """
    key = probe_key(model_path, threads=threads, batch_size=batch_size)
    cached = None if refresh else _cached_under(key, environ)
    if cached is not None:
        return cached
    attempts: list[ProbeAttempt] = []
    chosen: str | None = None
    for profile in PROFILES:
        attempt = run_attempt(
            ChildRequest(model_path, profile, threads, batch_size), command, timeout
        )
        attempts.append(attempt)
        if attempt.outcome == "ok":
            chosen = profile.name
            break
        if attempt.outcome != "signal":
            break
    verdict = ProbeVerdict(
        key=key,
        profile=chosen,
        attempts=attempts,
        probed_at=datetime.now(UTC).isoformat(timespec="seconds"),
        llama_cpp_version=llama_cpp_version(),
    )
    if all(a.outcome in {"ok", "signal"} for a in attempts):
        _write_cached(_verdict_path(key, environ), verdict)
    return verdict


def choose_profile(
    model_path: Path,
    setting: ExtraBuffers,
    *,
    threads: int,
    batch_size: int,
    environ: Mapping[str, str] | None = None,
    command: ChildCommand = _default_command,
    timeout: float = PROBE_TIMEOUT,
) -> tuple[LoadProfile, ProbeVerdict | None]:
    """The profile to load with, and the verdict behind it (None when the setting named one).

    ``on``/``off`` take the user's word without a probe. ``auto`` probes: a crash of every
    profile raises MODEL_024 with the reinstall command that avoids it; a probe that could
    not finish for another reason (a timeout, a corrupt file) takes the first profile that
    did not crash, and the real load reports whatever is wrong with the file.
    """
    if setting == "on":
        return WITH_EXTRA_BUFFERS, None
    if setting == "off":
        return PLAIN_BUFFERS, None
    verdict = probe(
        model_path,
        threads=threads,
        batch_size=batch_size,
        environ=environ,
        command=command,
        timeout=timeout,
    )
    if verdict.profile is not None:
        return profile_named(verdict.profile), verdict
    crashed = {a.profile for a in verdict.attempts if a.outcome == "signal"}
    untried = [profile for profile in PROFILES if profile.name not in crashed]
    if untried:
        _log.warning("llama.cpp load probe did not finish: %s", verdict.describe())
        return untried[0], verdict
    last = verdict.attempts[-1]
    names = ", ".join(a.profile for a in verdict.attempts)
    raise ModelError(
        "MODEL_024",
        f"the llama.cpp build crashes on this CPU ({last.signal}{_while(last.stage)}, "
        f"with every load profile: {names})",
        REBUILD_HINT.format(version=verdict.llama_cpp_version),
    )
