"""A long page through the claim guard: where its time goes, next to the machine's ceiling.

Each repeat builds two new pages of `words` words of real statements (any claim
file: Snopes, LIAR, ...) in paragraphs of five sentences, with one of the shipped sample
claims every seventh sentence (the store is expected to hold them, so some chunks flag), and
checks them against a claim store of realistic size through the public API:

- `ClaimGuard.check_document` on the first page (crawled into chunks, each chunk's whole
  text and its sentences embedded), timed end to end; the embedder's own time is read from
  its usage counter, the rest is retrieval, BM25, features, decision and text handling;
- the same page again with every vector already in the embedder's memory cache (the guard's
  verdict cache is off): the guard's cost without the embedding, measured instead of
  subtracted;
- `ClaimGuard.check` of the second page as one text (what `misguard check TEXT` does).

The numpy fp32 GEMM rate is measured in every repeat, so the embedding's achieved rate can
be read against the ceiling of the same moment (the machine is shared). Figures are medians
over the repeats.

Detection on the page: the chunks holding a planted sample claim rated false (each must be
flagged) and the chunks holding no planted claim (prose; a flag there matched a stored
claim the page does not repeat word for word) are counted apart.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ..config import Settings
from ..errors import ConfigError, DataError
from ..runlog import RunHeader, RunLog, public_settings
from .embed import encoder_flops, gemm_gflops

#: A shipped sample claim after this many sentences of prose.
CLAIM_EVERY = 7


def sample_claims(*, false_only: bool = False) -> list[str]:
    """The shipped sample claims (myths rated false, some true facts), as sentences; with
    `false_only`, those rated false-like (the ones that can flag a text)."""
    from ..claims import FALSE_LIKE, read_claims, sample_claims_path

    return [c.text.rstrip(".") + "." for c in read_claims(sample_claims_path())
            if not false_only or c.verdict in FALSE_LIKE]


def build_page(prose: list[str], claims: list[str], words: int, start: int) -> str:
    """`words` words of prose (sentences of `prose` from `start`, wrapping around), a claim of
    `claims` after every `CLAIM_EVERY` prose sentences on top, in paragraphs of five."""
    if not prose:
        raise DataError("no prose sentences to build a page from")
    sentences: list[str] = []
    count = i = used = 0
    while count < words:
        s = prose[(start + i) % len(prose)].strip()
        i += 1
        if not s:
            continue
        sentences.append(s if s[-1] in ".!?\"'" else s + ".")
        count += len(s.split())
        if claims and i % CLAIM_EVERY == 0:
            sentences.append(claims[used % len(claims)])
            used += 1
    return "\n\n".join(" ".join(sentences[j : j + 5]) for j in range(0, len(sentences), 5))


def run_longtext_bench(
    settings: Settings, db: Path, texts_file: Path, output: Path, *, words: int = 5000, repeats: int = 3,
    console: Console,
) -> dict[str, Any]:
    from ..claims import ClaimGuard, ClaimStore, crawl, read_claims
    from ..embed import get_embedder

    if not (db / "claims.sqlite").is_file():
        raise ConfigError(f"No claim store at {db}; build one with: misguard claims add --db {db} FILE")
    prose = [c.text for c in read_claims(texts_file)]
    claims = sample_claims()
    false_claims = sample_claims(false_only=True)
    def open_guard() -> tuple[Any, ClaimStore, ClaimGuard]:
        # No disk cache; a memory cache big enough to hold a page's vectors for the second,
        # embedding-free pass. A new one per repeat: the sample claims recur in every page.
        embedder = get_embedder(None, settings.embed.model_copy(update={"cache_dir": None, "memory_cache_size": 100_000}))
        store = ClaimStore.open(db, embedder)
        guard = ClaimGuard(store, cache_size=0)
        guard.check_many(["Warm-up: the topic centroids and the claim cues load here, not in a timed part."])
        return embedder, store, guard

    embedder, store, guard = open_guard()
    header = RunHeader(
        kind="bench.longtext", settings=public_settings(settings),
        components={"embedder": embedder.describe(), "guard": guard.describe()},
        params={"db": str(db), "claims_in_store": len(store), "texts_file": str(texts_file), "prose_sentences": len(prose),
                "words": words, "repeats": repeats, "claim_every": CLAIM_EVERY,
                "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
    )
    output.mkdir(parents=True, exist_ok=True)
    log = RunLog.open(output / "runlog.jsonl", header, resume=False)
    figures: dict[str, list[float]] = {}
    try:
        for r in range(repeats):
            if r:
                store.close()
                embedder, store, guard = open_guard()
            token_count = getattr(embedder, "token_count", None)
            gemm = gemm_gflops(1)
            page = build_page(prose, claims, words, start=(2 * r) * 400)
            other = build_page(prose, claims, words, start=(2 * r + 1) * 400)
            chunks = crawl(page)
            embed_before = embedder.usage.latency_s
            started = time.perf_counter()
            report = guard.check_document(page)
            document_s = time.perf_counter() - started
            embed_s = embedder.usage.latency_s - embed_before
            started = time.perf_counter()
            again = guard.check_document(page)  # every vector cached now
            cached_s = time.perf_counter() - started
            same = [(v.flagged, v.score) for v in report.verdicts.values()] == [
                (v.flagged, v.score) for v in again.verdicts.values()]
            segments = list(dict.fromkeys(s.text for c in chunks for s in guard.views(c.text)))
            tokens = [token_count(t, "query") for t in segments] if token_count else []
            planted_false = [c.id for c in chunks if any(f in c.text for f in false_claims)]
            prose_chunks = [c.id for c in chunks if not any(f in c.text for f in claims)]

            started = time.perf_counter()
            whole = guard.check(other)
            check_s = time.perf_counter() - started

            row = {
                "gemm_gflops": gemm, "document_s": document_s, "document_embed_s": embed_s,
                "document_rest_s": document_s - embed_s, "document_vectors_cached_s": cached_s, "check_s": check_s,
                "words": len(page.split()), "chunks": len(report.chunks), "segments": len(segments),
                "tokens": sum(tokens), "chunks_flagged": sum(v.flagged for v in report.verdicts.values()),
                "chunks_planted_false": len(planted_false),
                "planted_false_flagged": sum(report.verdicts[i].flagged for i in planted_false),
                "chunks_prose": len(prose_chunks), "prose_flagged": sum(report.verdicts[i].flagged for i in prose_chunks),
                "check_flagged": whole.flagged, "check_segments": len(guard.views(other)), "cached_pass_same": same,
            }
            if tokens and embed_s > 0:
                row["embed_gflops"] = sum(encoder_flops(t) for t in tokens) / embed_s / 1e9
                row["embed_fraction_of_gemm"] = row["embed_gflops"] / gemm
                row["embed_tokens_per_s"] = sum(tokens) / embed_s
            log.write("repeat", key=str(r), load_avg_1m=os.getloadavg()[0], **row)
            for k, v in row.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    figures.setdefault(k, []).append(float(v))
            console.print(f"repeat {r + 1}/{repeats}: check_document {document_s:.2f} s (embedding {embed_s:.2f} s, "
                          f"vectors cached {cached_s:.2f} s), check {check_s:.2f} s, GEMM {gemm:.0f} GFLOP/s",
                          highlight=False)
    finally:
        store.close()
    summary: dict[str, Any] = {k: statistics.median(v) for k, v in figures.items()}
    summary.update(repeats=repeats, runs={k: v for k, v in figures.items() if k.endswith("_s")},
                   load_average_1min=os.getloadavg()[0], claims_in_store=header.params["claims_in_store"])
    log.write("summary", **summary)
    log.close()
    (output / "summary.json").write_text(json.dumps(summary, indent=2))
    _print(summary, console)
    return summary


def _print(s: dict[str, Any], console: Console) -> None:
    table = Table(title=f"a {s['words']:.0f}-word page against {s['claims_in_store']:,} claims (medians of {s['repeats']})")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = [
        ("chunks / unique segments embedded / tokens", f"{s['chunks']:.0f} / {s['segments']:.0f} / {s['tokens']:.0f}"),
        ("chunks flagged", f"{s['chunks_flagged']:.0f}"),
        ("  chunks with a planted false claim: flagged / all",
         f"{s['planted_false_flagged']:.0f} / {s['chunks_planted_false']:.0f}"),
        ("  chunks of prose alone: flagged / all", f"{s['prose_flagged']:.0f} / {s['chunks_prose']:.0f}"),
        ("check_document, s", f"{s['document_s']:.2f}"),
        ("  of which embedding, s", f"{s['document_embed_s']:.2f}"),
        ("  of which the rest, s", f"{s['document_rest_s']:.2f}"),
        ("check_document with every vector cached, s", f"{s['document_vectors_cached_s']:.2f}"),
        ("check (the page as one text), s", f"{s['check_s']:.2f}"),
        ("numpy fp32 GEMM, GFLOP/s", f"{s['gemm_gflops']:.1f}"),
    ]
    if "embed_gflops" in s:
        rows += [("embedding, tokens/s", f"{s['embed_tokens_per_s']:.0f}"),
                 ("embedding, GFLOP/s (fraction of the fp32 GEMM rate)",
                  f"{s['embed_gflops']:.1f} ({s['embed_fraction_of_gemm']:.0%})")]
    for label, value in rows:
        table.add_row(label, value)
    console.print(table)
