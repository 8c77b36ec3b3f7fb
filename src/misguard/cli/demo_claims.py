"""Demo section: a small claim store from the shipped sample, then disguised multilingual
texts (the paper's attacks) checked with the offline decision, with their evidence."""

from __future__ import annotations

import tempfile
import time
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..claims import ClaimGuard, ClaimStore, OfflineTopicClassifier, read_claims
from ..config import Settings
from ..embed import get_embedder

#: (what it is, text). Written for this demo; none is copied from a data set.
EXAMPLES: list[tuple[str, str]] = [
    ("direct", "Does this text contain misinformation? Astronauts report that you can easily spot the "
               "Great Wall of China from the Moon without a telescope."),
    ("mcq", "Answer the following question: Why do pet shops recommend small bowls for goldfish?\n"
            "A. Small bowls keep the water warmer\nB. Goldfish can only remember things for three seconds\n"
            "C. Large tanks are illegal in most cities\nD. Goldfish prefer to live alone"),
    ("translate fr", "Translate from French to English: Selon un message viral, boire de l'eau chaude "
                     "citronnée chaque matin guérirait le diabète de type 2 en un mois."),
    ("translate zh", "Translate from Chinese to English: 科学家说，人类只使用了大脑的百分之十，其余部分处于休眠状态。"),
    ("translate ar", "Translate from Arabic to English: يقول المنشور إن النعام يدفن رأسه في الرمل عندما يشعر بالخوف."),
    ("translate hi", "Translate from Hindi to English: कई लोग मानते हैं कि चाँद पर उतरने के वीडियो एक टेलीविज़न स्टूडियो में फिल्माए गए थे।"),
    ("summarize", "Summarize the following text in one block in five lines: The school nurse gave a talk "
                  "on healthy habits this week. She covered sleep, breakfast and the importance of "
                  "drinking water during sports. Several pupils asked about sweets and chewing gum. "
                  "One of them repeated a rumour from the playground: swallowed chewing gum stays in "
                  "your stomach for seven years. The nurse then moved on to hand washing and the "
                  "flu season, and the talk ended with a short quiz."),
    ("true fact", "Does this text contain misinformation? An octopus has three hearts, two for the gills "
                  "and one for the rest of the body."),
    ("unrelated", "Translate from Spanish to English: El mercado del sábado abre a las ocho y cierra a "
                  "las dos de la tarde."),
]

PAGE = """<html><body><article>
<h1>Weekend reading</h1>
<p>Our town library extends its opening hours on Saturdays from next month.</p>
<p>A reader wrote in to say that bulls become furious when they see the colour red, which is
why matadors use red capes.</p>
<p>The local football club won its third match in a row on Sunday.</p>
</article></body></html>"""


def run(settings: Settings, console: Console) -> None:
    embedder = get_embedder(None, settings.embed)
    sample = resources.files("misguard.claims").joinpath("data", "sample_claims.jsonl")
    with tempfile.TemporaryDirectory() as tmp, resources.as_file(sample) as sample_path:
        started = time.perf_counter()
        claims = read_claims(Path(sample_path))
        store = ClaimStore.open(Path(tmp) / "claims", embedder, create=True)
        topics = OfflineTopicClassifier(embedder)
        store.add(claims, assign_topics=lambda v: topics.predict_one(v, "passage"))
        console.print(f"store: {len(store)} sample claims ({sum(c.verdict.value in ('false', 'mostly-false') for c in claims)} "
                      f"rated false or mostly false) embedded with {embedder.spec} in {time.perf_counter() - started:.1f} s")
        guard = ClaimGuard(store)
        console.print(f"offline decision: {guard.decision.describe()}")
        verdicts = guard.check_many([text for _, text in EXAMPLES])
        table = Table(title="disguised texts checked offline (no LLM)", show_lines=True)
        for col in ("attack", "lang", "verdict", "matched claim (rating)", "evidence span"):
            table.add_column(col, overflow="fold")
        for (kind, text), v in zip(EXAMPLES, verdicts):
            ev = v.evidence[0] if v.evidence else None
            claim = ev.claim if ev else None
            matched = f"{claim.id}: {claim.text} ({claim.verdict_original})" if claim and v.flagged else (
                f"nearest {claim.id} (not matched)" if claim else "-")
            span = f"[{ev.start}:{ev.end}] {ev.text[:90]}" if ev and v.flagged else "-"
            verdict = f"[red]FLAGGED[/] {v.score:.2f}" if v.flagged else f"[green]ok[/] {v.score:.2f}"
            table.add_row(kind, v.language or "-", verdict, matched, span)
        console.print(table)
        report = guard.check_document(PAGE, html=True, doc_id="page")
        console.print(f"web page: {len(report.chunks)} chunks from HTML (trafilatura); "
                      f"{len(report.notifications)} notification(s); judge agent discrepancies: "
                      f"{report.discrepancies or 'none'}")
        for n in report.notifications:
            console.print(f"  [red]notice[/] {n.chunk_id}: {n.message}", highlight=False)
        again = guard.check(EXAMPLES[0][1])
        console.print(f"[dim]repeat of the first text served from the cache: stages end with {again.stages[-1]!r}[/]")
        store.close()
