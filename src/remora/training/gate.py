"""Ship an adapter only where it earns its place: the held-out gate (``remora train gate``).

For each held-out package and seed, ``remora eval`` of the agent's operation measures, on
the same seeded selection, the host alone, the base model without any adapter and the
candidate adapter at the same decision points: the rows :data:`HOST_ONLY_ROW`,
:data:`BASE_MODEL_ROW` and :data:`ADAPTER_ROW`, the candidate put in place of the agent's
own adapter with ``model.adapters.<agent>``. Each row is read by the operation's
``gate_metric`` (higher is better).

The verdict: per seed, a row's figure is its mean over the packages; the adapter passes
when the mean of its per-seed figures beats the base model's by more than the spread
across seeds (the larger range of the two rows' per-seed figures), and, when the agent
already ships an adapter, beats that one (:data:`CURRENT_ROW`) by more than their spread
too. A run that fails, or an evaluation without the rows, fails the gate. Every
evaluation decodes one job at a time (:data:`UNBATCHED`), so the same code at the same
seed gives the same figures.

Each package and seed is two evaluations, kept in folders named by package, seed and
limit: the candidate's row (the folder names the adapter's content, so only the same
candidate reuses it), and the rows that do not depend on it, host only, base model and
the current adapter (the folder names the agent's definition and the settings, so every
candidate of that definition reuses them: they are the slow rows, since the base model is
refused three times a job). Running the gate again reuses every evaluation that finished. The reused
rows follow the agent's definition, not the rest of Remora's code: after changing the
host's code, delete the ``*-base-*`` folders to measure them again.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from remora import __version__
from remora.definitions import SubagentDefinition
from remora.errors import RemoraError, TrainingError
from remora.evaluation import EvalOptions, EvalReport, ProgressSink, RemoraSession, run_eval
from remora.evaluation.report import ADAPTER_ROW, BASE_MODEL_ROW, HOST_ONLY_ROW
from remora.operations.base import Operation
from remora.training.dataset import read_model

GATE_PACKAGES = ("toolz==1.0.0", "inflection==0.5.1", "humanize==4.17.0")
"""Held-out packages: toolz (the development evaluation) and two chosen for the gate; none
is ever trained on (:data:`~remora.training.corpus.HELD_OUT`)."""
GATE_SEEDS = (1, 2, 3)
GATE_LIMIT = 12
GATE_FILE = "gate.json"
ROWS = (HOST_ONLY_ROW, BASE_MODEL_ROW, ADAPTER_ROW)
FIXED_ROWS = (HOST_ONLY_ROW, BASE_MODEL_ROW)
"""The rows that do not depend on the candidate, measured once per definition."""
CURRENT_ROW = "current adapter"
"""The adapter the agent ships today (its ``remora`` row without the candidate): a
candidate replaces it only when it beats it by more than the spread."""
UNBATCHED = ("runner.concurrency=1",)
"""Every gate evaluation runs one job at a time: the backend then decodes each prompt
alone, so a greedy answer does not depend on which other job shared its batch (batched,
the same code at the same seed moved a package's figure by up to 0.06)."""


class GateRun(BaseModel):
    """One evaluation: a package, a seed, each row's metric (None where it has none)."""

    package: str
    seed: int
    rows: dict[str, float | None] = Field(default_factory=dict)
    error: str | None = None


class GateVerdict(BaseModel):
    """Whether the adapter ships, and the figures that decided it."""

    per_seed: dict[str, list[float]] = Field(
        default_factory=dict, description="Per row, its mean over the packages, seed by seed."
    )
    gain: float | None = Field(description="The adapter's mean minus the base model's.")
    spread: float | None = Field(description="The larger range across seeds of the two rows.")
    gain_over_current: float | None = Field(
        default=None, description="The adapter's mean minus the current adapter's, if any."
    )
    spread_over_current: float | None = Field(
        default=None, description="The larger range across seeds of those two rows."
    )
    ships: bool
    reason: str


class GateReport(GateVerdict):
    """What the gate measured and decided; ``gate.json`` holds it."""

    agent: str
    operation: str
    metric: str
    adapter: str
    limit: int
    packages: list[str]
    seeds: list[int]
    runs: list[GateRun]

    def row_values(self, row: str, package: str) -> list[float]:
        """The row's figures on ``package``, seed by seed (those it has)."""
        return [
            value
            for run in self.runs
            if run.package == package
            if (value := run.rows.get(row)) is not None
        ]


def gate_operation(agent: str, operations: Sequence[Operation]) -> Operation:
    """The operation ``agent`` runs for, if it can be gated (TRAIN_017 otherwise)."""
    found = next((op for op in operations if op.agent_name == agent), None)
    if found is None or found.evaluate is None or found.gate_metric is None:
        gated = [op.agent_name for op in operations if op.evaluate and op.gate_metric]
        raise TrainingError(
            "TRAIN_017",
            f"agent '{agent}' has no evaluation with a gate metric",
            f"gate one of: {', '.join(gated) or 'none installed'}",
        )
    return found


def run_gate(
    agent: str,
    adapter: Path,
    *,
    operation: Operation,
    session: Callable[[Sequence[str]], RemoraSession],
    out: Path,
    packages: Sequence[str] = GATE_PACKAGES,
    seeds: Sequence[int] = GATE_SEEDS,
    limit: int = GATE_LIMIT,
    progress: ProgressSink | None = None,
    on_run: Callable[[str, int], None] | None = None,
    candidate_settings: Sequence[str] = (),
) -> GateReport:
    """Evaluate ``adapter`` for ``agent`` on every package and seed into ``out`` and decide.

    ``session`` builds the evaluation session from extra ``key=value`` settings (the
    candidate adapter's). ``on_run`` is told each package and seed before it runs.
    ``candidate_settings`` (``key=value``) apply to the candidate's row alone: what it was
    trained to see, such as an option that adds to its prompt, which the adapter it would
    replace is measured without.
    """
    adapter = adapter.expanduser().resolve()
    if not adapter.is_file():
        raise TrainingError(
            "TRAIN_005", f"no adapter GGUF at {adapter}", "export one with remora train export"
        )
    assert operation.evaluate is not None and operation.gate_metric is not None
    metric = operation.gate_metric
    without = session(list(UNBATCHED))
    chosen = session([*UNBATCHED, *candidate_settings, f"model.adapters.{agent}={adapter}"])
    digest = hashlib.sha256(adapter.read_bytes())
    digest.update(json.dumps(list(candidate_settings)).encode())
    candidate = digest.hexdigest()[:12]
    shipped = without.agents.load().get(agent)
    fixed = _fixed_digest(shipped, without)
    fixed_rows = (*FIXED_ROWS, ADAPTER_ROW) if shipped is not None and shipped.model else FIXED_ROWS
    runs: list[GateRun] = []
    for seed in seeds:  # every package of a seed first: a gate cut short still spans them
        for package in packages:
            if on_run is not None:
                on_run(package, seed)
            name = f"{_slug(package)}-seed{seed}-limit{limit}"
            rows: dict[str, float | None] = {}
            error = None
            for folder, rows_session, wanted, named in (
                (out / f"{name}-base-{fixed}", without, fixed_rows, {ADAPTER_ROW: CURRENT_ROW}),
                (out / f"{name}-{candidate}", chosen, (ADAPTER_ROW,), {}),
            ):
                options = EvalOptions(
                    spec=package,
                    operations=[operation.name],
                    limit=limit,
                    seed=seed,
                    out=folder,
                    rows=list(wanted),
                    baselines=rows_session is without,  # once, beside the fixed rows
                )
                measured = _evaluated(options, operation, rows_session, progress)
                if isinstance(measured, str):
                    error = measured
                    break
                found, error = _rows(measured, metric, wanted)
                rows |= {named.get(row, row): value for row, value in found.items()}
                if error is not None:
                    break
            runs.append(GateRun(package=package, seed=seed, rows=rows, error=error))
    gated = decide(runs, seeds, metric)
    result = GateReport(
        agent=agent,
        operation=operation.name,
        metric=metric,
        adapter=str(adapter),
        limit=limit,
        packages=list(packages),
        seeds=list(seeds),
        runs=runs,
        **gated.model_dump(),
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / GATE_FILE).write_text(result.model_dump_json(indent=1), encoding="utf-8")
    return result


def decide(runs: Sequence[GateRun], seeds: Sequence[int], metric: str) -> GateVerdict:
    """The verdict: per-seed means, gain, spread, whether it ships and why.

    Where the runs measured the agent's current adapter too, the candidate must also beat
    it by more than the larger range across seeds of the two."""
    current = any(CURRENT_ROW in run.rows for run in runs)
    needed = (*ROWS, CURRENT_ROW) if current else ROWS
    broken = [run for run in runs if run.error or any(run.rows.get(row) is None for row in needed)]
    if broken or not runs:
        first = broken[0] if broken else None
        why = (
            f"{first.package} seed {first.seed}: {first.error or 'a row has no ' + metric}"
            if first
            else "nothing was run"
        )
        return GateVerdict(gain=None, spread=None, ships=False, reason=f"no verdict ({why})")
    per_seed = {
        row: [
            _average([run.rows[row] or 0.0 for run in runs if run.seed == seed]) for seed in seeds
        ]
        for row in needed
    }
    adapter, base = per_seed[ADAPTER_ROW], per_seed[BASE_MODEL_ROW]
    gain = _average(adapter) - _average(base)
    spread = _spread(adapter, base)
    ships = gain > spread
    reason = (
        f"the adapter's {metric} is {_average(adapter):.3f} against the base model's "
        f"{_average(base):.3f} (host only {_average(per_seed[HOST_ONLY_ROW]):.3f}): a gain of "
        f"{gain:+.3f}, {'more' if ships else 'not more'} than the spread across seeds "
        f"({spread:.3f})"
    )
    over: float | None = None
    over_spread: float | None = None
    if current:
        shipped = per_seed[CURRENT_ROW]
        over = _average(adapter) - _average(shipped)
        over_spread = _spread(adapter, shipped)
        beats = over > over_spread
        ships = ships and beats
        reason += (
            f"; against the current adapter's {_average(shipped):.3f}, {over:+.3f}, "
            f"{'more' if beats else 'not more'} than the spread ({over_spread:.3f})"
        )
    return GateVerdict(
        per_seed=per_seed,
        gain=gain,
        spread=spread,
        gain_over_current=over,
        spread_over_current=over_spread,
        ships=ships,
        reason=reason,
    )


def _spread(*rows: Sequence[float]) -> float:
    """The larger range across seeds of ``rows``."""
    return max(max(row) - min(row) for row in rows)


def gate_markdown(report: GateReport) -> str:
    """The gate's table: each row's mean (and range over seeds) per package, then overall."""
    shown = [HOST_ONLY_ROW, BASE_MODEL_ROW]
    if CURRENT_ROW in report.per_seed or any(CURRENT_ROW in run.rows for run in report.runs):
        shown.append(CURRENT_ROW)
    shown.append(ADAPTER_ROW)
    lines = [
        f"Held-out gate: `remora eval --ops {report.operation} --limit {report.limit}` over "
        f"seeds {', '.join(map(str, report.seeds))}; {report.metric}, mean over the seeds "
        "(range across them).",
        "",
        "| package | " + " | ".join(shown) + " |",
        "|---|" + "---:|" * len(shown),
    ]
    for package in report.packages:
        cells = [_cell(report.row_values(row, package)) for row in shown]
        lines.append(f"| {package} | " + " | ".join(cells) + " |")
    overall = [_cell(report.per_seed.get(row, [])) for row in shown]
    lines.append("| **all, per seed** | " + " | ".join(overall) + " |")
    verdict = "ships" if report.ships else "does not ship"
    lines += ["", f"Verdict: the adapter **{verdict}**: {report.reason}."]
    errors = [run for run in report.runs if run.error]
    lines += [f"- {run.package} seed {run.seed} failed: {run.error}" for run in errors]
    return "\n".join(lines) + "\n"


def read_gate(path: Path) -> GateReport:
    """A gate's report (TRAIN_004 when it cannot be read)."""
    return read_model(
        path,
        GateReport,
        code="TRAIN_004",
        what="the gate report",
        hint="run remora train gate first",
    )


def _average(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _cell(values: Sequence[float]) -> str:
    """Mean and range of a row's figures across seeds; ``-`` for none."""
    if not values:
        return "-"
    return f"{_average(values):.3f} ({max(values) - min(values):.3f})"


def _evaluated(
    options: EvalOptions,
    operation: Operation,
    session: RemoraSession,
    progress: ProgressSink | None,
) -> EvalReport | str:
    """The evaluation finished earlier in ``options.out``, or run now; an error's text."""
    assert options.out is not None and operation.evaluate is not None
    report = _finished(options.out)
    if report is not None:
        return report
    shutil.rmtree(options.out, ignore_errors=True)
    try:
        return run_eval(
            options,
            evaluators={operation.name: operation.evaluate},
            session=session,
            progress=progress,
        )
    except RemoraError as exc:  # a package that cannot be evaluated fails the gate
        return exc.render()


def _rows(
    report: EvalReport, metric: str, wanted: Sequence[str]
) -> tuple[dict[str, float | None], str | None]:
    """The ``wanted`` rows' metric in ``report`` (None where it has none), and an error."""
    operation = report.reports[0] if report.reports else None
    if operation is None or operation.error:
        return {}, operation.error if operation is not None else "the evaluation reported nothing"
    rows: dict[str, float | None] = {}
    for score in operation.scores:
        if score.tool in wanted:
            value = score.values.get(metric)
            rows[score.tool] = float(value) if isinstance(value, int | float) else None
    missing = [row for row in wanted if row not in rows]
    return rows, f"the evaluation has no row {', '.join(missing)}" if missing else None


def _fixed_digest(found: SubagentDefinition | None, session: RemoraSession) -> str:
    """What the rows without the candidate depend on: the agent's definition (``found``),
    the settings (the user's config file and the assignments) and Remora's version."""
    definition = found.definition_digest() if found is not None else ""
    config = session.config_file
    text = config.read_text(encoding="utf-8") if config is not None and config.is_file() else ""
    parts = [__version__, definition, text, *session.assignments]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:12]


def _finished(folder: Path) -> EvalReport | None:
    """The report of a run that finished in ``folder`` earlier, if any."""
    path = folder / "report.json"
    if not path.is_file():
        return None
    try:
        return EvalReport.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError:
        return None


def _slug(package: str) -> str:
    return "".join(char if char.isalnum() or char in ".-" else "-" for char in package)
