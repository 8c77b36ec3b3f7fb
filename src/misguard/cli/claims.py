"""`misguard claims add|stats|export|verify|reembed|fit-decision|fit-encoder`, `misguard check`, `misguard bench claims`."""

from __future__ import annotations

import json
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..config import Settings
from ..errors import ConfigError, DataError
from ._common import CLAIM_GUARD, console, err_console, friendly_errors, print_checks, settings_from
from .bench import bench_app

claims_app = typer.Typer(help="Manage a store of fact-checked claims.", no_args_is_help=True)

#: A claim store spec (`misguard.claims.open_claim_store`): a directory, or another backend's.
DbOption = Annotated[str, typer.Option("--db", help="Claim store: a directory (SQLite), or a Qdrant collection: qdrant:DIR (embedded) or qdrant+http://HOST:6333/COLLECTION (a server or cluster; key in MISGUARD_QDRANT_API_KEY).")]


def register(app: typer.Typer) -> None:
    app.command("check", rich_help_panel=CLAIM_GUARD)(check)
    app.add_typer(claims_app, name="claims", rich_help_panel=CLAIM_GUARD)


def _store(settings: Settings, db: str, *, create: bool = False):
    from ..claims import open_claim_store
    from ..embed import get_embedder

    return open_claim_store(db, get_embedder(None, settings.embed), create=create)


def _directory(db: str, verb: str) -> Path:
    """The directory of a SQLite store: `verb` works on its files, which other backends lack."""
    from ..claims import store_backend

    if store_backend(db) != "sqlite":
        raise ConfigError(f"claims {verb} works on a store directory (SQLite); {db} is a "
                          f"{store_backend(db)} store, which its engine keeps whole")
    return Path(db).expanduser()


ADD_HELP = """Ingest claim files; each file is all or nothing, re-ingested ids are updated.

Formats (from the file name, or --format): JSONL (one object per line), CSV (a header
row), schema.org ClaimReview JSON-LD (.json), LIAR (.tsv) and the Snopes scrape (JSONL
with rating, statement and url).

Fields of a JSONL row or CSV column: **text** (also claim, claimReviewed, statement;
required), **verdict** (also rating, label; required), id (default: a hash of the text),
verdict_original (default: the verdict as written), language (also lang, inLanguage;
default en), topic, url, publisher, date. Other fields are not read: they are named in a
warning (--strict: the file is refused).

Verdicts: the publisher's rating is kept as written and mapped to false, mostly-false,
mixed, mostly-true, true, unproven or other ("Pants on Fire" -> false, "Barely True" ->
mostly-false, "Half True" -> mixed). Only false and mostly-false claims flag a text; a
rating no rule knows (e.g. "banana") is stored as other, with a warning (--strict: refused).

No file at hand? --sample adds the 32 sample claims that ship with misguard.
"""


@claims_app.command("add", help=ADD_HELP)
@friendly_errors
def add(
    ctx: typer.Context,
    db: DbOption,
    files: Annotated[Optional[list[str]], typer.Argument(help="Claim files: JSONL, CSV, ClaimReview JSON-LD, LIAR TSV, Snopes JSONL; or dataset files by name (snopes, liar/test.tsv: `misguard data list`).", show_default=False)] = None,
    format: Annotated[Optional[str], typer.Option("--format", help="jsonl, csv, claimreview, liar or snopes (default: from the file).")] = None,
    sample: Annotated[bool, typer.Option("--sample", help="Add the 32 sample claims that ship with misguard (myths rated false, some true facts).")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse a file with fields that are not read or ratings no rule knows (default: add it and warn).")] = False,
) -> None:
    from ..claims import OfflineTopicClassifier, read_claim_file, sample_claims_path
    from ..data import resolve

    settings = settings_from(ctx)
    named = [resolve(f, settings) for f in files or []]
    paths = [*named, *([sample_claims_path()] if sample else [])]
    if not paths:
        raise DataError("give claim FILES to add, or --sample for the sample claims that ship with misguard")
    parsed = [read_claim_file(path, format if path in named else None, strict=strict) for path in paths]
    for result in parsed:  # everything is parsed (and refused with --strict) before anything is written
        for line in result.warnings():
            err_console.print(f"[yellow]warning:[/] {escape(line)}", highlight=False)
    with _store(settings, db, create=True) as store:
        topics = OfflineTopicClassifier(store.embedder)
        for result in parsed:
            report = store.add(result.claims, source=str(result.path),
                               assign_topics=lambda v: topics.predict_one(v, "passage"))
            rate = report.embedded / report.seconds if report.seconds else 0.0
            console.print(
                f"{result.path}: {report.added} added, {report.updated} updated, {report.unchanged} unchanged "
                f"({report.embedded} embedded, {report.seconds:.1f} s, {rate:.0f} claims/s)", highlight=False,
            )
        console.print(f"{db}: {len(store)} claims")


@claims_app.command("stats")
@friendly_errors
def stats(ctx: typer.Context, db: DbOption, json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Counts by verdict, language, topic, publisher and review age."""
    from ..claims import review_age_counts

    with _store(settings_from(ctx), db) as store:
        info = store.stats()
        info["review_age"] = review_age_counts(store)
    if json_out:
        console.print_json(json.dumps(info))
        return
    console.print(f"[bold]{info['path']}[/]: {info['claims']} claims, embedder {info['embedder']}, "
                  f"index {info['index_bytes'] / 1e6:.1f} MB")
    for key in ("verdict", "language", "topic", "publisher", "review_age"):
        table = Table(title=key)
        table.add_column(key)
        table.add_column("claims", justify="right")
        for name, count in info[key].items():  # type: ignore[union-attr]
            table.add_row(str(name), str(count))
        console.print(table)


@claims_app.command("export")
@friendly_errors
def export(
    ctx: typer.Context,
    db: DbOption,
    output: Annotated[Path, typer.Option(help="File to write (.json = ClaimReview JSON-LD, .jsonl = rows).")],
) -> None:
    """Write every claim as schema.org ClaimReview JSON-LD or as JSONL rows."""
    from ..claims import to_claimreview

    with _store(settings_from(ctx), db) as store:
        claims = list(store.iter_claims())
    if output.suffix == ".jsonl":
        output.write_text("".join(c.model_dump_json() + "\n" for c in claims), encoding="utf-8")
    else:
        output.write_text(json.dumps(to_claimreview(claims), ensure_ascii=False, indent=1), encoding="utf-8")
    console.print(f"wrote {len(claims)} claims to {output}")


@claims_app.command("verify")
@friendly_errors
def verify(
    ctx: typer.Context,
    db: DbOption,
    repair: Annotated[bool, typer.Option("--repair", help="Rebuild a missing, stale or corrupt vector index from the records (re-embeds every claim) and delete leftover files.")] = False,
    sample: Annotated[int, typer.Option(min=0, help="Claims re-embedded to check that the stored vectors are theirs (0 = none).")] = 16,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check a claim store: SQLite integrity, records against the vector index (counts,
    slots, generation, checksums, vector norms, a re-embedded sample) and the lexical index.
    Exits 1 when a problem remains."""
    from ..claims import verify_store
    from ..embed import get_embedder

    report = verify_store(_directory(db, "verify"), get_embedder(None, settings_from(ctx).embed), repair=repair,
                          sample=sample)
    print_checks(report, json_out)
    if not json_out:
        if report.repaired:
            console.print(f"repaired: {', '.join(report.repaired)} (index rebuilt from the records)", highlight=False)
        state = "ok" if report.ok else f"{len(report.problems)} problem(s); run again with --repair" if not repair else f"{len(report.problems)} problem(s) remain"
        console.print(f"{db}: generation {report.generation}, {report.claims} claims: {state}", highlight=False)
    if not report.ok:
        raise typer.Exit(1)


@claims_app.command("reembed")
@friendly_errors
def reembed(ctx: typer.Context, db: DbOption) -> None:
    """Re-embed every claim of a store with the configured embedder (--embedder, embed.model)
    and record it as the store's encoder, atomically: until the new index commits, the store
    stays as it was. Needed after changing the encoder (e.g. e5 -> e5-lora/ADAPTER)."""
    from ..claims import reembed_store
    from ..embed import get_embedder

    settings = settings_from(ctx)
    embedder = get_embedder(None, settings.embed)
    started = time.perf_counter()
    old, count = reembed_store(_directory(db, "reembed"), embedder)
    console.print(f"{db}: {count} claims re-embedded with {embedder.spec} (was {old}) in "
                  f"{time.perf_counter() - started:.1f} s", highlight=False)


@claims_app.command("fit-decision")
@friendly_errors
def fit_decision_command(
    ctx: typer.Context,
    data: Annotated[str, typer.Option("--data", help="Directory holding the sources (any of claims/devset-multilingual, claims/checkthat2020, claims/liar with claims/snopes-cs598gw; layout in docs/claims.md), or a data directory by name (`misguard data list`).")],
    output: Annotated[Path, typer.Option("--output", help="Decision file to write (JSON), for check/serve --decision.")],
    reader: Annotated[Optional[str], typer.Option(help="An embedding reader whose cosine the decision reads: an embedder spec (st/minilm, st//path/to/model); needs the st extra.")] = None,
    reader_languages: Annotated[str, typer.Option(help="Texts whose reader value the decision reads: 'en' (English readers such as st/minilm) or 'all' (a multilingual encoder).")] = "en",
    distractors: Annotated[int, typer.Option(help="LIAR/Snopes false claims stored next to the dev claims (-1 = all).")] = 500,
    paper: Annotated[int, typer.Option(help="LIAR/Snopes false and true claims attacked the paper's way (direct, MCQ, long text) as training rows (0 = none).")] = 100,
    checkthat_train: Annotated[int, typer.Option(help="CheckThat-2020 train tweets used (0 = all).")] = 0,
    refit_shift: Annotated[bool, typer.Option("--refit-shift", help="Fit the language shift on the dev set instead of taking the shipped decision's (the shipped decision was fitted with its own).")] = False,
    work_dir: Annotated[Optional[Path], typer.Option(help="Directory for the stores the decision is fitted against, kept and reused by the next run (default: a temporary directory).")] = None,
) -> None:
    """Fit the flag decision (with the re-ranker and language shift) across the sources in
    --data and write it to --output; prints its out-of-fold figures (grouped by claim).
    The defaults are the shipped decision's recipe."""
    import tempfile

    from ..claims import (
        build_checkthat_store, build_training_store, default_decision, fit_decision, load_reader, load_training_data,
        save_decision,
    )
    from ..data import resolve_root
    from ..embed import get_embedder

    settings = settings_from(ctx)
    sources = load_training_data(resolve_root(data, settings), distractors=distractors, checkthat_train=checkthat_train)
    embedder = get_embedder(None, settings.embed)
    shift = None
    if not refit_shift:
        try:
            shift = default_decision(embedder.spec).shift
        except ConfigError:
            shift = None  # no shipped decision for this embedder: fitted on the dev set
    console.print("language shift: " + ("the shipped decision's" if shift is not None else "fitted on the dev set"))
    pair_reader = load_reader(reader, settings.embed, reader_languages) if reader is not None else None
    with tempfile.TemporaryDirectory(prefix="misguard-fit-") if work_dir is None else nullcontext(str(work_dir)) as tmp:
        work = Path(tmp)
        store = build_training_store(work / "store", embedder, sources, console.print).store
        ct_store = (build_checkthat_store(work / "store-checkthat", embedder, sources.checkthat, console.print).store
                    if sources.checkthat is not None else None)
        try:
            result = fit_decision(sources, store, ct_store, paper=paper, seed=settings.seed, shift=shift,
                                  reader=pair_reader, progress=console.print)
        finally:
            store.close()
            if ct_store is not None:
                ct_store.close()
    save_decision(result.decision, output)
    table = Table(title="out of fold (10 folds grouped by claim, C by inner CV)")
    for col in ("source", "false claims flagged", "others left alone", "texts false / true"):
        table.add_column(col)
    for source, acc in result.out_of_fold().items():
        table.add_row(source, _pct(acc["false"]), _pct(acc["factual"]), f"{acc['n_false']} / {acc['n_true']}")
    console.print(table)
    console.print(f"wrote {output} ({result.decision.trained_on}); use it with: misguard check --decision {output}")


FIT_ENCODER_HELP = """Fine-tune e5 for fact-check matching and write a LoRA adapter file (extra `train`).

Pairs: CheckThat-2020 train tweets with their verified claims, and the paper's disguises
(direct question, MCQ option, claim buried in a long text) of LIAR/Snopes false claims;
never the multilingual dev set nor CheckThat-2020 dev/test. Hard negatives are mined with
the base e5 from a store-like pool (CheckThat claims, LIAR/Snopes false and rated-true
claims). Seeded; resumes from --work-dir. Use the adapter with
`misguard --embedder e5-lora/ADAPTER ...` (claim stores embedded with another encoder
refuse it: `misguard claims reembed`), and fit its decision with `claims fit-decision`.
"""


@claims_app.command("fit-encoder", help=FIT_ENCODER_HELP)
@friendly_errors
def fit_encoder_command(
    ctx: typer.Context,
    data: Annotated[str, typer.Option("--data", help="Directory holding claims/checkthat2020 and/or claims/liar with claims/snopes-cs598gw (layout in docs/claims.md), or a data directory by name.")],
    output: Annotated[Path, typer.Option("--output", help="Adapter file to write (.npz).")],
    work_dir: Annotated[Path, typer.Option(help="Directory for the mined negatives and the checkpoint; a rerun resumes from it.")] = Path("runs/fit-encoder"),
    steps: Annotated[int, typer.Option(min=1, help="Optimizer steps (a larger number continues a finished run from --work-dir).")] = 100,
    batch_size: Annotated[int, typer.Option(min=2, help="Pairs per step (each one's claim is the others' in-batch negative).")] = 16,
    hard_negatives: Annotated[int, typer.Option(min=0, help="Mined hard negatives per pair and step.")] = 1,
    lora_layers: Annotated[int, typer.Option(min=1, max=12, help="LoRA on the projections of the top this-many layers.")] = 4,
    rank: Annotated[int, typer.Option(min=1, help="LoRA rank.")] = 8,
    learning_rate: Annotated[float, typer.Option(min=0.0, help="AdamW learning rate.")] = 2e-4,
    paper: Annotated[int, typer.Option(min=0, help="LIAR/Snopes false claims disguised as training queries (3 each).")] = 300,
    seed: Annotated[Optional[int], typer.Option(help="Seed (default: settings.seed).")] = None,
) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from ..claims import EncoderRecipe, fit_encoder, load_training_data
    from ..data import resolve_root
    from ..embed import get_embedder

    settings = settings_from(ctx)
    recipe = EncoderRecipe(steps=steps, batch_size=batch_size, hard_negatives=hard_negatives, lora_layers=lora_layers,
                           rank=rank, alpha=2.0 * rank, learning_rate=learning_rate, paper=paper,
                           seed=settings.seed if seed is None else seed)
    sources = load_training_data(resolve_root(data, settings), distractors=-1)
    base = get_embedder("e5", settings.embed)
    with Progress(TextColumn("fit-encoder"), BarColumn(), MofNCompleteColumn(), TextColumn("loss {task.fields[loss]}"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=err_console, transient=False) as bar:
        task = bar.add_task("train", total=recipe.steps, loss="-")

        def on_step(step: int, total: int, loss: float) -> None:
            bar.update(task, completed=step, loss=f"{loss:.3f}")

        result = fit_encoder(sources, output, work_dir, base, recipe, progress=bar.console.print, on_step=on_step)
    pairs = ", ".join(f"{k} {v}" for k, v in result.pairs.items())
    console.print(f"pairs: {pairs}; negative pool: {result.pool} claims; steps: {result.steps}")
    console.print(f"wrote {output} (sha256 {result.sha256[:12]}, {output.stat().st_size / 1e6:.1f} MB); use it with: "
                  f"misguard --embedder e5-lora/{output} check ... (its decision: misguard --embedder e5-lora/{output} "
                  "claims fit-decision)")


def _pct(x: object) -> str:
    return "-" if x is None else f"{100 * float(x):.1f}%"  # type: ignore[arg-type]


def _guard(settings: Settings, db: str, decision: Path | None, threshold: float | None, judge: bool,
           judge_prompt: int, candidates: int = 5, ranking: str | None = None, reader: str | None = None):
    from ..claims import ClaimGuard, LLMJudge, ThresholdDecision, load_decision, load_reader
    from ..llm import get_llm

    store = _store(settings, db)
    chosen = None
    if decision is not None and threshold is not None:
        raise ConfigError("Pass either --decision or --threshold, not both")
    if decision is not None:
        chosen = load_decision(decision)
    elif threshold is not None:
        chosen = ThresholdDecision(threshold)
    llm_judge = LLMJudge(get_llm(None, settings.llm), prompt=judge_prompt) if judge else None
    try:
        pair_reader = load_reader(reader, settings.embed) if reader is not None else None
        return ClaimGuard(store, decision=chosen, judge=llm_judge, k_output=candidates, ranking=ranking,
                          reader=pair_reader)
    except ConfigError:
        store.close()
        raise


@friendly_errors
def check(
    ctx: typer.Context,
    db: DbOption,
    text: Annotated[Optional[str], typer.Argument(help="Text to check (or use --input).")] = None,
    input: Annotated[Optional[Path], typer.Option("--input", help="A JSONL file of rows with 'text' (and 'id'); '-' reads them from standard input.")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", help="With --input: the file for the JSONL verdicts, one row per input, written whole (default: standard output, row by row; the summary goes to standard error).")] = None,
    decision: Annotated[Optional[Path], typer.Option(help="A fitted decision model (JSON) instead of the shipped one.")] = None,
    threshold: Annotated[Optional[float], typer.Option(help="Use a plain cosine threshold instead (baseline).")] = None,
    judge: Annotated[bool, typer.Option("--judge", help="Let the LLM judge (paper prompt) make the final call.")] = False,
    judge_prompt: Annotated[int, typer.Option(help="The judge prompt: the paper's 1 or 2, or 3 (the query delimited as data, JSON answer; hardened against prompt injection).")] = 2,
    batch_size: Annotated[int, typer.Option(help="Texts per batch with --input.")] = 64,
    candidates: Annotated[int, typer.Option("--candidates", min=0, max=100, help="Top-k candidate claims listed per text (ids and ranking scores).")] = 5,
    ranking: Annotated[Optional[str], typer.Option(help="Candidate ranking: dense, lexical, rrf or learned (default: learned when the decision ships a ranker, else dense).")] = None,
    reader: Annotated[Optional[str], typer.Option(help="A pair reader, an embedder spec: st/minilm (the shipped decision fitted with it is used unless --decision; needs the st extra), or the reader a --decision was fitted with.")] = None,
) -> None:
    """Check text against the claim store: flagged or not, the matched claim, the evidence
    and the top candidate claims. One TEXT is printed for reading; --input FILE (or '-')
    writes one JSON line per input row."""
    from ..claims import verdict_row

    settings = settings_from(ctx)
    if (text is None) == (input is None):
        raise DataError("give either a TEXT argument or --input FILE ('-': standard input)")
    guard = _guard(settings, db, decision, threshold, judge, judge_prompt, candidates, ranking, reader)
    try:
        if text is not None:
            _print_verdict(text, guard.check(text))
            return
        assert input is not None
        rows = _read_inputs(input)
        started = time.perf_counter()
        flagged = 0
        tmp = output.with_name(output.name + ".tmp") if output is not None else None
        with tmp.open("w", encoding="utf-8") if tmp is not None else nullcontext(sys.stdout) as fh:
            for start in range(0, len(rows), batch_size):
                batch = rows[start : start + batch_size]
                for (row_id, _), verdict in zip(batch, guard.check_many([t for _, t in batch])):
                    flagged += verdict.flagged
                    fh.write(json.dumps(verdict_row(row_id, verdict), ensure_ascii=False) + "\n")
                fh.flush()
        if tmp is not None and output is not None:
            tmp.replace(output)
        seconds = time.perf_counter() - started
        # Standard output carries only the rows when they go there.
        (console if output is not None else err_console).print(
            f"{len(rows)} text{'' if len(rows) == 1 else 's'} checked in {seconds:.1f} s ({len(rows) / max(seconds, 1e-9):.1f}/s); "
            f"{flagged} flagged; wrote {output or 'standard output'}", highlight=False)
    finally:
        guard.store.close()


def _read_inputs(path: Path) -> list[tuple[str, str]]:
    stdin = str(path) == "-"
    source = "standard input" if stdin else str(path)
    if not stdin and not path.is_file():
        raise DataError("no such file", source=source)
    rows = []
    with nullcontext(sys.stdin.buffer) if stdin else path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise DataError("not UTF-8 text", source=source, line=number) from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"not JSON: {exc.msg}", source=source, line=number) from None
            if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                raise DataError("each row needs a string 'text' (and an 'id')", source=source, line=number)
            rows.append((str(row.get("id", number)), row["text"]))
    return rows


def _print_verdict(text: str, verdict) -> None:
    ev = verdict.evidence[0] if verdict.evidence else None
    if verdict.flagged and ev and ev.claim:
        claim = ev.claim
        console.print(f"[bold red]FLAGGED[/] (score {verdict.score:.2f}): repeats a claim rated [bold]{_rating(claim)}[/]",
                      highlight=False)
        console.print(f"  claim {claim.id}: {claim.text}", highlight=False)
        if claim.url:
            console.print(f"  source: {claim.url}", highlight=False)
        console.print(f"  evidence [{ev.start}:{ev.end}] (cosine {ev.score:.3f}): {ev.text[:300]}", highlight=False)
    else:
        console.print(f"[bold green]not flagged[/] (score {verdict.score:.2f})", highlight=False)
        if ev and ev.claim:
            console.print(f"  nearest known claim {ev.claim.id}, rated {_rating(ev.claim)} (cosine {ev.score:.3f}): "
                          f"{ev.claim.text}", highlight=False)
        if len(verdict.evidence) > 1 and verdict.evidence[1].claim:  # the text matches a claim not rated false best
            other = verdict.evidence[1]
            console.print(f"  nearest claim rated false: {other.claim.id} (cosine {other.score:.3f}; the score is "
                          f"for this one): {other.claim.text}", highlight=False)
    console.print(f"  language {verdict.language}; topics {', '.join(verdict.topics) or '-'}; "
                  f"stages {' > '.join(verdict.stages)}; {verdict.latency_s * 1000:.0f} ms", highlight=False)


def _rating(claim) -> str:
    """The rating as published, and what misguard reads it as when that differs."""
    original = claim.verdict_original or claim.verdict.value
    return original if original.lower() == claim.verdict.value else f"{original} ({claim.verdict.value})"


@bench_app.command("claims")
@friendly_errors
def bench_claims(
    ctx: typer.Context,
    output: Annotated[Path, typer.Option(help="Directory for the run log, tables and summary.")] = Path("runs/bench-claims"),
    data: Annotated[Optional[str], typer.Option(help="The directory holding claims/devset-multilingual (and optionally checkthat2020, liar, snopes-cs598gw; layout in docs/claims.md), or a dataset name whose data root to read (default: settings.data_dir).")] = None,
    distractors: Annotated[int, typer.Option(help="LIAR + Snopes false claims added to the store (0 = none, -1 = all).")] = -1,
    store_dir: Annotated[Optional[Path], typer.Option(help="Claim store to build/reuse (default OUTPUT/store).")] = None,
    judge: Annotated[bool, typer.Option("--judge", help="Also run the paper's LLM judge with the configured --llm.")] = False,
    judge_limit: Annotated[int, typer.Option(help="Queries given to the LLM judge (0 = all).")] = 0,
    speed: Annotated[bool, typer.Option("--speed/--no-speed", help="Run the speed measurements.")] = True,
    resume: Annotated[bool, typer.Option("--resume/--fresh", help="Reuse finished parts of an earlier run log.")] = True,
    paper: Annotated[int, typer.Option(help="Also the paper's Table 1 on LIAR/Snopes: this many stored false and held-out true claims, attacked offline (0 = skip).")] = 0,
    paper_translate: Annotated[bool, typer.Option("--paper-translate", help="Add the paper's LLM translation attacks to --paper (needs a capable --llm).")] = False,
    checkthat_limit: Annotated[int, typer.Option(help="Tests: CheckThat-2020 tweets per split and only their claims plus 1,000 others (0 = all).")] = 0,
    checkthat_train: Annotated[int, typer.Option(help="CheckThat-2020 train tweets used to fit the ranker and the decision (0 = all 800).")] = 0,
    checkthat_only: Annotated[bool, typer.Option("--checkthat-only", help="Only the CheckThat-2020 parts: ranker, rankings, normalisation steps, and the shipped decision with the new ranker on the dev/test tweets.")] = False,
    only: Annotated[Optional[str], typer.Option(help="Only one part: 'speed' (shipped decision; in-process and through the CLI) or 'decision' (the ranker, the cross-source decision and the CheckThat dev/test tweets through it; no ablations or speed).")] = None,
    reader: Annotated[Optional[str], typer.Option(help="A pair reader whose score the decision reads: an embedder spec (st/minilm: its cosine). Needs the st extra.")] = None,
    reader_languages: Annotated[str, typer.Option(help="Texts whose reader value the decision reads: 'en' (the default; English readers such as st/minilm) or 'all' (a multilingual embedder, e.g. st//path/to/model; the decision reads the feature reader_any, and `check --decision FILE` rebuilds the reader it names).")] = "en",
) -> None:
    """CheckThat-2020 retrieval (MAP@5, P@1, MRR), one decision fitted across the dev set,
    paper-style LIAR/Snopes attacks and CheckThat train, reported per source and cell; the
    LLM judge, and speed."""
    from ..bench.claims import run_claims_bench
    from ..data import resolve_root

    if only not in (None, "speed", "decision"):
        raise ConfigError(f"--only takes 'speed' or 'decision', not {only!r}")
    settings = settings_from(ctx)
    run_claims_bench(
        settings, output, data_dir=resolve_root(data, settings) if data else None, distractors=distractors, store_dir=store_dir, judge=judge,
        judge_limit=judge_limit, speed=speed, resume=resume, console=console,
        paper=paper, paper_translate=paper_translate, checkthat_limit=checkthat_limit,
        checkthat_train=checkthat_train, checkthat_only=checkthat_only, only=only, reader=reader,
        reader_languages=reader_languages,
    )
