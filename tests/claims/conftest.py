from __future__ import annotations

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
