"""Training examples: one per model turn, as the backend sees it and as it should answer.

``prompt`` is the exact text the llama.cpp backend renders for the turn's request
(``LlamaCppBackend.render``), ``completion`` the exact text the model should write
next: the call as FunctionGemma writes it, then ``<start_function_response>``, where
the backend stops. ``prompt + completion`` is the conversation rendered with that call
appended. ``request`` and ``call`` keep the turn as data, so an evaluation can replay
it through a backend with the same grammar. Examples are stored as JSON lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from remora.errors import TrainingError


class TrainingExample(BaseModel):
    """One model turn of a recorded expert episode."""

    agent: str
    source: str = Field(description="The corpus file the episode ran on; splits go by it.")
    episode: str
    turn: int = Field(ge=0)
    prompt: str
    completion: str
    request: dict[str, Any] = Field(description="The turn's ModelRequest, as JSON data.")
    call: dict[str, Any] = Field(description="The expected call: {name, arguments}.")


def write_examples(path: Path, examples: Iterable[TrainingExample]) -> int:
    """Write ``examples`` as JSON lines (replacing the file atomically); how many."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    count = 0
    with partial.open("w", encoding="utf-8") as handle:
        for example in examples:
            handle.write(example.model_dump_json() + "\n")
            count += 1
    partial.replace(path)
    return count


def read_examples(path: Path) -> Iterator[TrainingExample]:
    """The examples of a JSON-lines file; TRAIN_001 names the first bad line."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise TrainingError(
            "TRAIN_001", f"cannot read training examples {path}: {exc}", "run remora train generate"
        ) from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield TrainingExample.model_validate(json.loads(line))
            except ValueError as exc:
                raise TrainingError(
                    "TRAIN_001",
                    f"{path}:{number} is not a training example: {str(exc).splitlines()[0]}",
                    "regenerate the file with remora train generate",
                ) from None


Stored = TypeVar("Stored", bound=BaseModel)


def read_model(path: Path, model: type[Stored], *, code: str, what: str, hint: str) -> Stored:
    """A JSON file a training step wrote, as ``model``; ``code`` ("cannot read ``what``",
    with ``hint``) when it is missing or not such a file."""
    try:
        return model.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TrainingError(
            code, f"cannot read {what} {path}: {str(exc).splitlines()[0]}", hint
        ) from None
