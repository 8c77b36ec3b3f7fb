from __future__ import annotations

from pathlib import Path

import pytest

from misguard.claims import ClaimStore, read_claims
from misguard.embed import get_embedder
from misguard.mas import Interception, SystemView
from misguard.types import EdgeMessage

SAMPLE = Path(__file__).resolve().parents[2] / "src" / "misguard" / "claims" / "data" / "sample_claims.jsonl"

#: a sample claim rated false (S01), as an agent would repeat it
FALSE_CLAIM = "The Great Wall of China can be seen with the naked eye from the Moon"


class Probe:
    """An interceptor that records every message it sees; rewrites "moon" and blocks "BAD"."""

    name = "probe"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int, str]] = []
        self.rounds: list[int] = []

    async def start_round(self, view: SystemView) -> dict:
        self.rounds.append(view.round)
        return {"edges": sorted(view.graph.edges())}

    async def intercept(self, message: EdgeMessage, view: SystemView) -> Interception:
        self.seen.append((message.sender, message.receiver, message.round, message.text))
        if "BAD" in message.text:
            return Interception.blocked("contains BAD")
        if "moon" in message.text:
            return Interception.rewritten(message.text.replace("moon", "[corrected]"), "moon")
        return Interception.passed()

    def describe(self) -> dict:
        return {"name": self.name}


@pytest.fixture
def probe() -> Probe:
    return Probe()


@pytest.fixture
def claim_store(tmp_path):
    store = ClaimStore.open(tmp_path / "claims", get_embedder("hashing/256"), create=True)
    store.add(read_claims(SAMPLE))
    yield store
    store.close()
