"""The load probe's child: load the model with one profile, evaluate a prompt, generate.

Run as ``python -m remora.model._probe_child '{json}'`` by :mod:`remora.model.load_probe`.
It prints ``stage NAME`` before each step and ``ok {json}`` (or ``error {json}``) at the
end, each line flushed, so a parent that sees it die by a signal knows the step it died in.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from pathlib import Path

_BUFFER = re.compile(r"(\S+) model buffer size")


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.text: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.text.append(record.getMessage())


def _say(word: str, rest: str) -> None:
    sys.stdout.write(f"{word} {rest}\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    request = json.loads(argv[0])
    _say("stage", "import")
    from remora.errors import RemoraError
    from remora.model.base import Message, ModelRequest
    from remora.model.llama_cpp import LlamaCppBackend
    from remora.model.load_probe import profile_named

    collect = _Collect()
    logger = logging.getLogger("remora.model.llama_cpp")
    logger.addHandler(collect)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    profile = profile_named(request["profile"])
    try:
        _say("stage", "load")
        backend = LlamaCppBackend(
            Path(request["model_path"]),
            context_size=512,
            threads=int(request["threads"]),
            lanes=1,
            sequences=1,
            batch_size=int(request["batch_size"]),
            load_profile=profile,
        )
        backend.load()
        _say("stage", "prompt")
        prompt = ModelRequest(
            messages=[Message(role="user", content="Name one prime number.")],
            max_tokens=int(request["tokens"]),
        )
        job = backend.job(prompt)
        engine = backend.engine
        run = engine.begin(job)
        _say("stage", "generate")
        while not run.done:
            engine.step([run])
        generation = run.result()
        run.release()
        system_info = backend.system_info()
        backend.close()
    except RemoraError as exc:
        _say("error", json.dumps({"error": exc.render()}))
        return 1
    log = "".join(collect.text)
    buffers = sorted(set(_BUFFER.findall(log)))
    _say(
        "ok",
        json.dumps(
            {
                "buffers": buffers,
                "tokens": generation.completion_tokens,
                "system_info": system_info,
            }
        ),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
