"""Demo section: the claim guard as a web service. Starts `misguard serve` on loopback over
a small store of the shipped sample claims, checks a multilingual page through
`POST /v1/check/page` (what a site or the browser extension would send), prints the
marked blocks, and stops the server."""

from __future__ import annotations

import tempfile
import time
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..claims import ClaimStore, OfflineTopicClassifier, read_claims
from ..config import Settings
from ..embed import get_embedder
from ..service import ServiceProcess, rss_mb

#: Written for this demo; the false paragraphs paraphrase or translate sample claims.
PAGE = """<html><body><article>
<h1>Readers' corner</h1>
<p>The council confirmed that the library will open on Sunday mornings from March onwards.</p>
<p>Un lecteur affirme que les poissons rouges n'ont qu'une mémoire de trois secondes, d'où les petits bocaux.</p>
<p>Los vikingos llevaban cascos con cuernos cuando iban a la batalla, según cuenta el folleto del museo.</p>
<p>Our cycling club raised money for the children's hospital with a ride along the coast on Saturday.</p>
<div class="comment">A commenter insists that swallowed chewing gum stays in your stomach for seven years.</div>
</article></body></html>"""


def run(settings: Settings, console: Console) -> None:
    embedder = get_embedder(None, settings.embed)
    sample = resources.files("misguard.claims").joinpath("data", "sample_claims.jsonl")
    with tempfile.TemporaryDirectory() as tmp, resources.as_file(sample) as sample_path:
        db = Path(tmp) / "claims"
        with ClaimStore.open(db, embedder, create=True) as store:
            topics = OfflineTopicClassifier(embedder)
            store.add(read_claims(Path(sample_path)), assign_topics=lambda v: topics.predict_one(v, "passage"))
        started = time.perf_counter()
        with ServiceProcess(db, Path(tmp) / "server.log", embedder=embedder.spec, extra_args=["--log-level", "warning"]) as server:
            console.print(f"misguard serve up on {server.url} in {time.perf_counter() - started:.1f} s "
                          f"(pid {server.pid}, RSS {rss_mb(server.pid):.0f} MB); key passed in MISGUARD_API_KEYS")
            started = time.perf_counter()
            report = server.post("/v1/check/page", {"html": PAGE})
            console.print(f"POST /v1/check/page: {len(report['blocks'])} blocks, {report['flagged']} flagged, "
                          f"{time.perf_counter() - started:.2f} s; judge agent discrepancies: {report['discrepancies'] or 'none'}")
            table = Table(title="the page's blocks as the service marked them", show_lines=True)
            for col in ("offsets", "block", "verdict", "matched fact-check"):
                table.add_column(col, overflow="fold")
            for block in report["blocks"]:
                r = block["result"]
                verdict = f"[red]FLAGGED[/] {r['score']:.2f}" if r["flagged"] else f"[green]ok[/] {r['score']:.2f}"
                claim = f"{r['matched_claim_id']}: {r['matched_claim_text']} ({r['matched_claim_verdict_original']})" if r["flagged"] else "-"
                table.add_row(f"{block['start']}-{block['end']}", block["text"], verdict, claim)
            console.print(table)
            again = server.check_texts([report["blocks"][1]["text"]])[0]
            console.print(f"[dim]the same block sent again to /v1/check: cached={again['cached']}[/]")
        console.print("[dim]server stopped[/]")
