from __future__ import annotations

import json
from pathlib import Path

import pytest

from misguard.claims import ClaimGuard, ClaimStore, ThresholdDecision, read_claims
from misguard.embed import get_embedder
from misguard.types import Claim

SAMPLE = Path(__file__).resolve().parents[2] / "src" / "misguard" / "claims" / "data" / "sample_claims.jsonl"


@pytest.fixture
def embedder():
    return get_embedder("hashing/256")


@pytest.fixture
def store(tmp_path, embedder):
    s = ClaimStore.open(tmp_path / "db", embedder, create=True)
    s.add(read_claims(SAMPLE))
    yield s
    s.close()


@pytest.fixture
def guard(store):
    # hashing cosines are not e5 cosines: a plain threshold for unit tests.
    return ClaimGuard(store, decision=ThresholdDecision(0.6))


def claim(cid: str, text: str, verdict: str = "false", **extra) -> Claim:
    return Claim(id=cid, text=text, verdict=verdict, **extra)


PLACES = ["Oslo", "Lima", "Perth", "Dakar", "Quito", "Hanoi", "Tunis", "Riga", "Accra", "Bern", "Doha", "Nice"]
ITEMS = ["umbrellas", "bicycles", "kites", "pianos", "hammocks", "tulips", "scooters", "drones", "parrots", "lanterns",
         "canoes", "violins"]


def write_data(root: Path) -> Path:
    """A dev set of 12 false claims (each with two false queries and one near-miss true
    query), and LIAR/Snopes files with false and true claims."""
    dev = root / "claims" / "devset-multilingual"
    dev.mkdir(parents=True)
    claims, trues, queries = [], [], []
    for i, (place, item) in enumerate(zip(PLACES, ITEMS)):
        cid, tid = f"DF{i:02d}", f"DT{i:02d}"
        text = f"The city of {place} banned {item} in every public park last year"
        claims.append({"id": cid, "text": text, "verdict": "false", "lang": "en", "topic": "Politics"})
        trues.append({"id": tid, "near": cid, "topic": "Politics", "negative_type": "near"})
        queries += [
            {"qid": f"{cid}-direct", "claim_id": cid, "label": "false", "attack": "direct", "lang": "en",
             "text": f"Does this text contain misinformation? {text}."},
            {"qid": f"{cid}-para", "claim_id": cid, "label": "false", "attack": "paraphrase", "lang": "en",
             "text": f"Last year {place} made {item} illegal in all of its public parks."},
            {"qid": f"{tid}-near", "claim_id": tid, "label": "true", "attack": "direct", "lang": "en",
             "text": f"{place} opened a new museum about {item} near the harbour."},
        ]
    for name, rows in (("claims_db", claims), ("true_claims", trues), ("queries", queries)):
        (dev / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    liar = root / "claims" / "liar"
    liar.mkdir(parents=True)
    rows = []
    for i in range(16):
        label = "false" if i % 2 == 0 else "true"
        statement = f"Senator number {i} voted {i * 3} times against the budget for {ITEMS[i % 12]} in {PLACES[i % 12]}"
        rows.append("\t".join([f"{i}.json", label, statement, "budget", "someone", "", "", "", "0", "0", "0", "0", "0", ""]))
    (liar / "train.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (liar / "valid.tsv").write_text("", encoding="utf-8")
    (liar / "test.tsv").write_text("", encoding="utf-8")
    snopes = root / "claims" / "snopes-cs598gw"
    snopes.mkdir(parents=True)
    snopes_rows = [{"url": f"https://www.snopes.com/fact-check/item-{i}/", "rating": "True" if i % 2 else "False",
                    "statement": f"A {ITEMS[i]} festival in {PLACES[i]} drew {1000 + i} visitors"} for i in range(8)]
    (snopes / "snopes_claims.jsonl").write_text("".join(json.dumps(r) + "\n" for r in snopes_rows), encoding="utf-8")
    return root
