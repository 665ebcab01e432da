"""Model cards: what an adapter was trained on, how long, and how it scored.

A card is Markdown written next to the adapter GGUF (``shared.gguf`` -> ``shared.md``)
from the run's ``training.json`` and, when given, the scores ``remora train evaluate
--json`` wrote. It states figures only; anything judged by hand (such as a ``remora
eval`` run) is added under its own heading after the generated part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from remora.training.dataset import read_model
from remora.training.evaluate import Score, Scores
from remora.training.finetune import REPORT_FILE, FinetuneReport
from remora.training.gate import GateReport, gate_markdown


def read_report(adapter_dir: Path) -> FinetuneReport:
    """The finished run's report; TRAIN_004 when there is none."""
    return read_model(
        adapter_dir / REPORT_FILE,
        FinetuneReport,
        code="TRAIN_004",
        what="the training report",
        hint="finish the run with remora train finetune first",
    )


def model_card(
    name: str,
    report: FinetuneReport,
    adapter_bytes: int,
    scores: Scores | None = None,
    gate: GateReport | None = None,
) -> str:
    """The card's Markdown; with ``gate``, the held-out gate's table and verdict."""
    settings = report.settings
    modules = ", ".join(settings.target_modules)
    lines = [
        f"# {name}",
        "",
        f"A LoRA adapter for the embedded {report.base_gguf or 'base model'}, trained by "
        f"`remora train finetune` for the {', '.join(report.agents) or 'unrecorded'} agent(s).",
        "",
        "## Training",
        "",
        f"- Data: {report.examples} model turns of recorded expert episodes "
        f"({report.sequences} sequences), {report.completion_tokens} completion tokens; "
        f"{report.skipped} turns over {settings.max_tokens} tokens left out. "
        f"Validation: {report.validation_examples} turns from source files never trained on.",
        f"- LoRA: rank {settings.rank}, alpha {settings.alpha}, on {modules}; "
        f"{adapter_bytes / 1e6:.1f} MB as a llama.cpp GGUF.",
        f"- Run: {report.step} steps ({report.epochs:g} epochs"
        f"{'' if report.complete else f'; stopped early, of {report.steps} planned'}"
        f"{', when its minutes were spent' if report.stopped_for_time else ''}), "
        f"learning rate {settings.learning_rate:g}, seed {report.seed}, "
        f"{report.dtype} base weights"
        f"{', on a CUDA GPU' if report.device == 'cuda' else f', {report.threads} thread(s)'}.",
        f"- Time: {_duration(report.seconds)} of training "
        f"{'on the GPU' if report.device == 'cuda' else 'on this CPU'}, wall clock "
        f"({report.seconds_per_step or 0:.3g} s per step).",
        f"- Loss: train {_figure(report.train_loss)} (last tenth of the steps), "
        f"validation {_figure(report.validation_loss)}.",
    ]
    for field, title, intro, unit in _SECTIONS:
        rows: Mapping[str, Sequence[Score]] = getattr(scores, field) if scores else {}
        if not rows:
            continue
        labels = [score.label for score in next(iter(rows.values()))]
        lines += [
            "",
            f"## {title}",
            "",
            intro,
            "",
            f"| agent | {unit} | " + " | ".join(labels) + " |",
            "|---|---|" + "---|" * len(labels),
        ]
        for agent, row in rows.items():
            cells = " | ".join(score.summary() for score in row)
            lines.append(f"| {agent} | {row[0].size} | {cells} |")
    if gate is not None:
        lines += ["", "## Held-out gate", "", gate_markdown(gate).rstrip()]
    return "\n".join(lines) + "\n"


_SECTIONS = (
    (
        "next_call",
        "Next-call exact match on held-out turns",
        "Each turn replayed through the embedded backend, greedy, with the run-time tools "
        "and grammar; exact means the expert's tool name and every argument.",
        "turns",
    ),
    (
        "episodes",
        "Episode success on held-out episodes",
        "Whole episodes through the real loop and tools, greedy, on nodes from source files "
        "never trained on; a success submits with every call as the agent's expectation "
        "wants (as `remora harness` counts it).",
        "episodes",
    ),
)


def _duration(seconds: float) -> str:
    """Minutes, or seconds for a run under two minutes (a GPU's)."""
    return f"{seconds / 60:.0f} minutes" if seconds >= 120 else f"{seconds:.0f} seconds"


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
