"""A long page's verdicts do not move when the guard's code is made faster.

`long_text_verdicts.json` holds what `check_document` and `check` said about a ~3,000-word
page before the long-text speed work (flag, score, evidence, candidates, stages of every
chunk), with the shipped decision and its learned ranker over a store of false and true
claims. Any change to how the guard computes its features or ranks must reproduce it.
Rewrite it only for a change meant to alter verdicts: `UPDATE_GOLDEN=1 pytest ...`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from misguard.claims import ClaimGuard, ClaimStore, default_decision, read_claims
from misguard.embed import get_embedder
from misguard.types import Claim, Verdict

from .conftest import ITEMS, PLACES, SAMPLE

GOLDEN = Path(__file__).parent / "fixtures" / "long_text_verdicts.json"
VERBS = ["banned", "taxed", "subsidised", "imported", "recalled", "counted"]


def _store(path: Path) -> ClaimStore:
    # hashing/384: deterministic, and as wide as e5, so the shipped e5 decision (its language
    # shift and learned ranker) runs unchanged on it.
    store = ClaimStore.open(path, get_embedder("hashing/384"), create=True)
    store.add(read_claims(SAMPLE))
    store.add([
        Claim(id=f"d{i}", text=f"{PLACES[i % 12]} {VERBS[i % 6]} {i * 7} {ITEMS[(i * 5) % 12]} in {1990 + i % 30}",
              verdict=("false", "true", "mostly-false", "mixed")[i % 4])
        for i in range(400)
    ])
    return store


def _page() -> str:
    samples = [c.text for c in read_claims(SAMPLE)]
    sentences = []
    for i in range(330):
        if i % 6 == 5:
            sentences.append(samples[(i // 6) % len(samples)] + ".")
        else:
            sentences.append(f"In {PLACES[i % 12]} the council {VERBS[i % 6]} {i * 3} {ITEMS[i % 12]} "
                             f"after a long debate about {ITEMS[(i + 4) % 12]}.")
    return "\n\n".join(" ".join(sentences[j : j + 5]) for j in range(0, len(sentences), 5))


def _row(v: Verdict) -> dict:
    return {
        "flagged": v.flagged, "score": round(v.score, 6), "decided_by": v.decided_by, "stages": v.stages,
        "language": v.language, "topics": v.topics,
        "evidence": [(e.claim.id if e.claim else None, e.start, e.end, round(e.score, 6)) for e in v.evidence],
        "candidates": [(c.claim_id, round(c.score, 6)) for c in v.candidates],
    }


def test_long_page_verdicts_are_unchanged(tmp_path):
    store = _store(tmp_path / "db")
    try:
        guard = ClaimGuard(store, decision=default_decision("e5/multilingual-e5-small-q4"), cache_size=0)
        page = _page()
        report = guard.check_document(page)
        got = {"document": [_row(report.verdicts[c.id]) for c in report.chunks], "check": _row(guard.check(page))}
    finally:
        store.close()
    got = json.loads(json.dumps(got))  # tuples as lists, as in the file
    assert len(page.split()) > 3000 and len(got["document"]) > 30
    assert any(r["flagged"] for r in got["document"]) and not all(r["flagged"] for r in got["document"])
    if os.environ.get("UPDATE_GOLDEN"):
        rows = ",\n".join(json.dumps(r) for r in got["document"])  # one line per chunk
        GOLDEN.write_text(f'{{"check": {json.dumps(got["check"])},\n "document": [\n{rows}\n]}}\n', encoding="utf-8")
        pytest.skip("golden file written")
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert got["check"] == expected["check"]
    for i, (a, b) in enumerate(zip(got["document"], expected["document"])):
        assert a == b, f"chunk {i}"
    assert len(got["document"]) == len(expected["document"])
