"""``remora train``: expert traces, a LoRA fine-tune on the CPU, GGUF export, evaluation."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from remora.cli._app import (
    OPTIONS,
    ExecutorOption,
    RayAddressOption,
    app,
    console,
    err_console,
    executor_kind,
    load,
    open_model,
    operations,
)
from remora.cli._text import shown
from remora.errors import TrainingError

if TYPE_CHECKING:
    from remora.training.dataset import TrainingExample
    from remora.training.evaluate import Score

DATA_DIR = Path(".remora/training/data")

train_app = typer.Typer(
    help="Train LoRA adapters for the embedded model on this CPU (needs `remora[train]`).\n\n"
    "The steps, in order: **generate** records expert episodes through the real tools, "
    "**finetune** trains an adapter on them, **export** writes it as a llama.cpp GGUF, "
    "**evaluate** compares next calls with and without it on held-out examples, "
    "**gate** decides whether it ships (remora eval on held-out packages over several "
    "seeds: host only, base model, current adapter, candidate), **card** writes its model card.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)
app.add_typer(train_app, name="train")

AgentsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--agent",
        "-a",
        help="An agent with an expert policy: lint, docstring, test or sample_data as "
        "bundled (repeatable; default all).",
    ),
]
AdapterDirArgument = Annotated[Path, typer.Argument(help="The adapter directory finetune wrote.")]
CorpusOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--corpus",
        help="Python files or package directories (repeatable; default: the standard "
        "library and installed packages, never the evaluation packages).",
    ),
]
DataOption = Annotated[
    Path,
    typer.Option("--data", help="Where generate writes <agent>/train.jsonl and validation.jsonl."),
]


def _agents(names: list[str] | None) -> list[str]:
    """The agents asked for, each with an expert policy (TRAIN_012 for one without)."""
    trained = operations().traced_agents()
    chosen = names or trained
    unknown = [name for name in chosen if name not in trained]
    if unknown:
        raise TrainingError(
            "TRAIN_012",
            f"no training for agent(s) {', '.join(unknown)}",
            f"choose from: {', '.join(trained)}",
        )
    return chosen


@train_app.command("generate")
def generate_command(
    agents: AgentsOption = None,
    corpus: CorpusOption = None,
    data: DataOption = DATA_DIR,
    limit: Annotated[int | None, typer.Option("--limit", "-n", help="Episodes per agent.")] = None,
    minutes: Annotated[
        float | None, typer.Option("--minutes", help="Stop starting episodes after this long.")
    ] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            "-j",
            min=1,
            help="Episodes at a time; with --executor ray, the Ray workers (default: "
            "executor.ray_workers, else the cluster's CPUs).",
        ),
    ] = 2,
    pinned: Annotated[
        bool,
        typer.Option(
            "--pinned",
            help="Add the pinned packages (remora/training/packages.txt) to the corpus: each "
            "sdist is fetched by pip once, into sdists/ beside --data.",
        ),
    ] = False,
    executor: ExecutorOption = None,
    ray_address: RayAddressOption = None,
) -> None:
    """Record expert episodes through each agent's real tools, as training examples.

    A deterministic expert chooses every call on real code copied into scratch projects;
    only episodes the agent's own expectation accepts are kept. Re-running resumes; Ctrl-C
    lets the episodes in flight finish and writes every example so far (a second Ctrl-C
    stops at once; the journal keeps what finished). With --executor ray the episodes run
    on Ray workers, each with its own sandbox and scratch copies; the corpus (and --data's
    sdists/) must be at the same path on every machine (docs/cluster.md).

    Example: remora train generate --agent docstring --pinned --limit 400
    Example: remora train generate --agent test --pinned --executor ray --ray-address auto -j 64
    """
    from remora.training.corpus import default_corpus
    from remora.training.traces import generate_traces

    config = load(None).config
    kind = executor_kind(executor, ray_address) or config.executor.kind
    address = ray_address or config.executor.ray_address
    workers = concurrency
    if kind == "ray" and concurrency == 2 and config.executor.ray_workers:
        workers = config.executor.ray_workers
    corpus = list(corpus or default_corpus())
    if pinned:
        from remora.training.packages import fetch_pinned

        fetched = fetch_pinned(
            data.parent / "sdists",
            on_package=lambda spec, index, total: err_console.print(
                f"fetching {spec} ({index}/{total})", highlight=False
            ),
        )
        for spec, why in fetched.failed.items():
            err_console.print(f"[yellow]left out {spec}: {why}[/yellow]", highlight=False)
        corpus += fetched.paths
    table = Table(title="training examples")
    for column in (
        "agent",
        "episodes kept / run",
        "train",
        "validation",
        "decisions",
        "skipped",
        "time",
    ):
        table.add_column(column)
    interrupted: str | None = None
    for name in _agents(agents):
        report = generate_traces(
            name,
            corpus,
            data,
            limit=limit,
            seed=seed,
            progress=err_console.is_terminal,
            concurrency=workers,
            max_seconds=minutes * 60 if minutes else None,
            config=config,
            operations=operations(),
            executor="ray" if kind == "ray" else "local",
            ray_address=address,
        )
        table.add_row(
            name,
            f"{report.episodes_kept} / {report.episodes_run}",
            f"{report.train_examples} ({report.train_packages} packages)",
            f"{report.validation_examples} ({report.validation_packages} packages)",
            ", ".join(f"{name} {count}" for name, count in report.decisions.items()),
            str(sum(report.skipped.values())),
            f"{report.seconds:.0f} s",
        )
        if report.interrupted:
            interrupted = name
            break
    console.print(table)
    err_console.print(f"examples written under {shown(str(data))}")
    if interrupted is not None:
        err_console.print(
            f"interrupted during {interrupted}: the episodes in flight finished and every "
            "example so far is written; run the same command again to resume"
        )
        raise typer.Exit(130)


def _examples(
    data: Path, agents: list[str], split: str, decisions: Sequence[str] = ()
) -> list[TrainingExample]:
    """The ``split`` examples of ``agents`` under ``data``; only the turns whose expected
    call names one of ``decisions`` when any are given."""
    from remora.training.dataset import read_examples

    found: list[TrainingExample] = []
    for name in agents:
        path = data / name / f"{split}.jsonl"
        if path.is_file():
            found.extend(
                example
                for example in read_examples(path)
                if not decisions or example.call.get("name") in decisions
            )
    return found


@train_app.command("index")
def index_command(
    corpus: CorpusOption = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write each index as OUT/<operation>.json.gz instead of where the operation "
            "ships it.",
        ),
    ] = None,
    pinned: Annotated[
        bool,
        typer.Option(
            "--pinned",
            help="Add the pinned packages (remora/training/packages.txt): each sdist is "
            "fetched by pip once, into --sdists.",
        ),
    ] = False,
    sdists: Annotated[
        Path, typer.Option("--sdists", help="Where --pinned keeps the fetched sdists.")
    ] = DATA_DIR.parent / "sdists",
) -> None:
    """Build the corpus indexes operations ship as data (the docstring operation's summaries
    of documented functions, which its prompts show as examples of similar code).

    The corpus is the same as generate's and never holds an evaluation package.

    Example: remora train index --pinned
    """
    from remora.training.corpus import corpus_files, default_corpus

    corpus = list(corpus or default_corpus())
    if pinned:
        from remora.training.packages import fetch_pinned

        fetched = fetch_pinned(
            sdists,
            on_package=lambda spec, index, total: err_console.print(
                f"fetching {spec} ({index}/{total})", highlight=False
            ),
        )
        for spec, why in fetched.failed.items():
            err_console.print(f"[yellow]left out {spec}: {why}[/yellow]", highlight=False)
        corpus += fetched.paths
    files = corpus_files(corpus)
    built = [operation for operation in operations() if operation.build_index is not None]
    if not built:
        err_console.print("no operation ships a corpus index")
        return
    for operation in built:
        assert operation.build_index is not None
        path = out / f"{operation.name}.json.gz" if out is not None else None
        said = operation.build_index(files, path)
        console.print(f"{operation.name}: {said}", highlight=False)


@train_app.command("finetune")
def finetune_command(
    out: Annotated[Path, typer.Argument(help="Adapter directory (resumes what is there).")],
    agents: AgentsOption = None,
    data: DataOption = DATA_DIR,
    steps: Annotated[int | None, typer.Option(help="Optimizer steps (default: one epoch).")] = None,
    epochs: Annotated[float, typer.Option(help="Passes over the examples.")] = 1.0,
    rank: Annotated[int, typer.Option(help="LoRA rank.")] = 16,
    mlp: Annotated[bool, typer.Option(help="Adapt the MLP projections too.")] = False,
    pack: Annotated[
        bool, typer.Option(help="Train each episode's turns as one sequence (same losses).")
    ] = True,
    learning_rate: Annotated[float, typer.Option("--lr")] = 2e-4,
    threads: Annotated[
        int | None, typer.Option(help="Torch threads (default: half the usable CPUs).")
    ] = None,
    stop_after: Annotated[
        int | None,
        typer.Option(
            help="Stop after this step with a checkpoint and the adapter as it stands "
            "(exportable); resume later."
        ),
    ] = None,
    minutes: Annotated[
        float | None,
        typer.Option(
            "--minutes",
            help="Stop once this run has trained this long, with a checkpoint and the adapter "
            "as it stands (its card says it stopped for time); resume later.",
        ),
    ] = None,
    decisions: Annotated[
        list[str] | None,
        typer.Option(
            "--decision",
            help="Train only the turns that call this tool (a decision point, e.g. "
            "write_docstring); repeat for several. Default: every turn.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    device: Annotated[
        Literal["auto", "cpu", "cuda"],
        typer.Option(help="Where to train: auto takes a CUDA GPU where torch sees one."),
    ] = "auto",
    base: Annotated[
        Path | None,
        typer.Option(help="The GGUF to train against (default: the embedded model)."),
    ] = None,
    prepare_only: Annotated[
        bool,
        typer.Option(
            "--prepare-only",
            help="Tokenize the examples into OUT and stop; finetune into OUT later, here or "
            "on a machine with torch but without llama.cpp (a GPU server).",
        ),
    ] = False,
) -> None:
    """Fine-tune a LoRA adapter on the examples of the chosen agents (one shared adapter
    when several are given), against the GGUF the runtime uses.

    Checkpoints as it goes; run the same command again to resume after a stop or Ctrl-C.
    Trains on a CUDA GPU where torch sees one, on the CPU otherwise.

    Example: remora train finetune adapters/shared --steps 1500
    """
    from remora.training.finetune import FinetuneSettings, finetune, prepare

    chosen = _agents(agents)
    settings = FinetuneSettings(
        rank=rank,
        alpha=2 * rank,
        mlp=mlp,
        pack=pack,
        learning_rate=learning_rate,
        epochs=epochs,
        steps=steps,
        threads=threads,
        stop_after=stop_after,
        minutes=minutes,
        seed=seed,
        device=device,
        base=base,
    )
    train = _examples(data, chosen, "train", decisions or ())
    validation = _examples(data, chosen, "validation", decisions or ())
    if decisions and not train:
        raise TrainingError(
            "TRAIN_016",
            f"no training example calls {', '.join(decisions)}",
            "name a tool the agent's turns call (generate reports them under decisions)",
        )
    if prepare_only:
        tokenized = prepare(train, validation, settings, out)
        console.print(
            f"tokenized {len(tokenized.train)} training and {len(tokenized.validation)} "
            f"validation sequences into {shown(str(out))} ({tokenized.skipped} examples "
            "too long); run the same command without --prepare-only to train"
        )
        return
    report = finetune(train, validation, settings, out)
    state = "complete" if report.complete else f"stopped at step {report.step}"
    if report.stopped_for_time:
        state += " (its minutes were spent; run it again to resume)"
    console.print(
        f"adapter {shown(str(report.adapter_dir))}: {state}, {report.step}/{report.steps} steps, "
        f"{report.examples} examples in {report.sequences} sequences, "
        f"{report.seconds / 60:.1f} min, train loss {report.train_loss}, "
        f"validation loss {report.validation_loss}"
    )


@train_app.command("export")
def export_command(
    adapter: AdapterDirArgument,
    out: Annotated[Path, typer.Argument(help="The llama.cpp LoRA GGUF to write.")],
    base: Annotated[
        Path | None, typer.Option(help="The base GGUF (default: the embedded model).")
    ] = None,
) -> None:
    """Write the adapter as a llama.cpp LoRA GGUF and check that llama.cpp loads it.

    Example: remora train export adapters/shared lint.gguf
    """
    from remora.model.defaults import resolve_model_path
    from remora.training.export import export_adapter, verify_adapter

    base_path = base or resolve_model_path(load(None).config.model)
    report = export_adapter(adapter, base_path, out)
    verify_adapter(out, base_path)
    console.print(
        f"wrote {shown(str(out))}: {report.tensors} tensors, rank {report.rank}, "
        f"alpha {report.alpha:g}, {report.bytes / 1e6:.1f} MB; llama.cpp loads it"
    )


@train_app.command("evaluate")
def evaluate_command(
    adapters: Annotated[
        list[Path] | None,
        typer.Option(
            "--adapter",
            help="An exported adapter GGUF to compare with the base (repeatable; each is "
            "labelled by its file name).",
        ),
    ] = None,
    base: Annotated[
        bool, typer.Option(help="Score the base model too (--no-base: only the adapters).")
    ] = True,
    agents: AgentsOption = None,
    data: DataOption = DATA_DIR,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", help="Held-out examples per agent.")
    ] = None,
    episodes: Annotated[
        int,
        typer.Option(
            "--episodes",
            "-e",
            min=0,
            help="Also run this many held-out episodes per agent through the real loop.",
        ),
    ] = 0,
    corpus: CorpusOption = None,
    output: Annotated[
        Path | None, typer.Option("--json", help="Also write the scores here.")
    ] = None,
) -> None:
    """Base model vs adapter, side by side, on what training never saw.

    **Next calls:** each held-out turn is replayed through the configured backend with the
    same tools and grammar as at run time; a call matches when its name and every argument
    equal the expert's. **Episodes** (`--episodes N`): N held-out episodes the expert
    completed are run again whole, the model choosing every call, through the real loop
    and tools; a success submits with every call as the agent's expectation wants.

    Several runs can score one card: `--no-base --adapter new.gguf --json new.json`,
    then `remora train card ... --scores base.json --scores new.json`.

    Example: remora train evaluate --adapter adapters/shared.gguf --limit 100 --episodes 20
    """
    from remora.training.corpus import default_corpus
    from remora.training.evaluate import Scores, score_episodes, score_next_calls, write_scores
    from remora.training.traces import held_out_episodes, open_session, training_options

    config = load(None).config
    chosen = _agents(agents)
    definitions = operations().load_agents(config.agents.dirs)
    scores = Scores()
    model = open_model(config.model)

    labels: list[tuple[str, Path | None]] = [("base", None)] if base else []
    labels += [(path.stem, path) for path in adapters or []]
    if not labels:
        raise TrainingError(
            "TRAIN_004", "--no-base leaves nothing to score", "pass --adapter NAME.gguf"
        )
    held_out = {name: _examples(data, [name], "validation")[:limit] for name in chosen}
    planned = {
        name: held_out_episodes(
            definitions[name],
            corpus or default_corpus(),
            data / name,
            limit=episodes,
            operations=operations(),
        )
        for name in chosen
        if episodes
    }
    turns = sum(len(examples) for examples in held_out.values())
    total = (turns + sum(len(p) for p in planned.values())) * len(labels)

    async def run(progress: Progress) -> None:
        task = progress.add_task("held-out turns and episodes", total=total)
        try:
            for name, examples in held_out.items():
                if not examples:
                    continue
                scores.next_call[name] = [
                    await score_next_calls(
                        examples,
                        model,
                        label=label,
                        adapter=path,
                        on_example=lambda: progress.advance(task),
                    )
                    for label, path in labels
                ]
            for name, chosen_episodes in planned.items():
                if not chosen_episodes:
                    continue
                options = training_options(name, operations())
                with open_session(definitions[name], config, "evaluate", None, options) as session:
                    scores.episodes[name] = [
                        await score_episodes(
                            session,
                            chosen_episodes,
                            model,
                            label=label,
                            adapter=path,
                            on_episode=lambda: progress.advance(task),
                        )
                        for label, path in labels
                    ]
        finally:
            await model.aclose()

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        disable=not err_console.is_terminal,
    ) as progress:
        asyncio.run(run(progress))
    if not scores.next_call and not scores.episodes:
        raise TrainingError(
            "TRAIN_006", f"no validation examples under {data}", "run remora train generate first"
        )
    for title, unit, rows in (
        ("next-call exact match on held-out turns", "turns", scores.next_call),
        ("episode success on held-out episodes (failures)", "episodes", scores.episodes),
    ):
        if rows:
            console.print(_score_table(title, unit, rows))
    if output is not None:
        write_scores(output, scores)


@train_app.command("gate")
def gate_command(
    adapter: Annotated[Path, typer.Argument(help="The candidate adapter GGUF (from export).")],
    out: Annotated[
        Path, typer.Option("--out", help="Where each evaluation and gate.json are kept.")
    ],
    agent: Annotated[str, typer.Option("--agent", help="The agent the adapter is for.")],
    packages: Annotated[
        list[str] | None,
        typer.Option(
            "--package",
            help="A held-out package (pip requirement or path; repeatable). Default: "
            "toolz, inflection and humanize, pinned. Never one trained on.",
        ),
    ] = None,
    seeds: Annotated[
        list[int] | None, typer.Option("--seed", help="Repeatable. Default: 1, 2 and 3.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Functions per evaluation.")] = 12,
    candidate_settings: Annotated[
        list[str] | None,
        typer.Option(
            "--candidate-set",
            metavar="KEY=VALUE",
            help="A setting for the candidate's row alone (repeatable), e.g. "
            "operations.docstring.options.similar_examples=true for an adapter trained "
            "with those examples in its prompt.",
        ),
    ] = None,
) -> None:
    """Decide whether an adapter ships: remora eval on held-out packages over several
    seeds, the host alone, the base model, the agent's current adapter and the candidate
    side by side, one job at a time (so a rerun gives the same figures).

    The candidate ships when its mean beats the base model's, and the current adapter's
    where there is one, by more than the spread across seeds (exit 0); otherwise TRAIN_018
    (exit 1): ship the agent without it, and pass
    gate.json to remora train card so its card says why. Running it again reuses the
    evaluations that finished.

    Example: remora train gate docstring.gguf --agent docstring --out gate-docstring/
    """
    from remora.cli.eval import eval_progress
    from remora.evaluation import RemoraSession
    from remora.training.gate import (
        GATE_PACKAGES,
        GATE_SEEDS,
        gate_markdown,
        gate_operation,
        run_gate,
    )

    installed = operations()
    operation = gate_operation(agent, list(installed))

    def session(extra: Sequence[str]) -> RemoraSession:
        return RemoraSession(
            installed.library,
            installed.default_configs(),
            config_file=OPTIONS.config_file,
            assignments=[*OPTIONS.assignments, *extra],
        )

    with eval_progress() as progress:
        report = run_gate(
            agent,
            adapter,
            operation=operation,
            session=session,
            out=out,
            packages=packages or GATE_PACKAGES,
            seeds=seeds or GATE_SEEDS,
            limit=limit,
            progress=progress,
            candidate_settings=candidate_settings or (),
            on_run=lambda package, seed: err_console.print(
                f"gate: evaluating {package}, seed {seed}", highlight=False
            ),
        )
    text = gate_markdown(report)
    (out / "gate.md").write_text(text, encoding="utf-8")
    console.print(text, markup=False, highlight=False)
    if not report.ships:
        raise TrainingError(
            "TRAIN_018",
            f"the adapter does not ship: {report.reason}",
            f"keep {agent} as it is; remora train card ... --gate {out}/gate.json says why",
        )


@train_app.command("card")
def card_command(
    adapter: AdapterDirArgument,
    gguf: Annotated[Path, typer.Argument(help="The GGUF export wrote from it.")],
    scores: Annotated[
        list[Path] | None,
        typer.Option(
            help="Scores from remora train evaluate --json (repeatable: each file's models "
            "are shown after the previous file's)."
        ),
    ] = None,
    agents: AgentsOption = None,
    gate: Annotated[
        Path | None,
        typer.Option(help="The gate.json remora train gate wrote: its table and verdict."),
    ] = None,
) -> None:
    """Write the adapter's model card next to its GGUF (NAME.gguf -> NAME.md): data,
    size, steps, time and, with --scores, next-call exact match base vs adapter; with
    --gate, the held-out table (host only, base model, adapter) and whether it ships.

    Example: remora train card adapters/shared shared.gguf --scores scores.json
    """
    from remora.training.card import model_card, read_report
    from remora.training.evaluate import merge_scores, read_scores
    from remora.training.gate import read_gate

    report = read_report(adapter)
    if agents:
        report.agents = _agents(agents)
    try:
        size = gguf.stat().st_size
    except OSError as exc:
        raise TrainingError(
            "TRAIN_004", f"cannot read {gguf}: {exc.strerror or exc}", "export the adapter first"
        ) from None
    card = gguf.with_suffix(".md")
    merged = merge_scores([read_scores(path) for path in scores or []])
    text = model_card(gguf.stem, report, size, merged, read_gate(gate) if gate else None)
    card.write_text(text, encoding="utf-8")
    console.print(f"wrote {shown(str(card))}")


def _score_table(title: str, unit: str, rows: Mapping[str, Sequence[Score]]) -> Table:
    table = Table(title=title)
    table.add_column("agent")
    table.add_column(unit)
    for score in next(iter(rows.values())):
        table.add_column(score.label)
    for agent, row in rows.items():
        cells = ("\n".join([score.summary(), *score.details()]) for score in row)
        table.add_row(agent, str(row[0].size), *cells)
    return table
