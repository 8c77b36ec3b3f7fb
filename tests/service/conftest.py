from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs the service extra: pip install 'misguard[service]'")

from misguard.claims import ClaimGuard, ClaimStore, ThresholdDecision, read_claims  # noqa: E402
from misguard.config import EmbedSettings  # noqa: E402
from misguard.service import ServiceSettings, create_app  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "src" / "misguard" / "claims" / "data" / "sample_claims.jsonl"
CHECK_KEY = "check-key-123"
ADMIN_KEY = "admin-key-456"
#: hashing cosines are not e5 cosines: the unit tests use a plain threshold over them.
HASHING = EmbedSettings(model="hashing/256")


def threshold_guard(store: ClaimStore) -> ClaimGuard:
    return ClaimGuard(store, decision=ThresholdDecision(0.6))


@pytest.fixture
def db(tmp_path) -> Path:
    from misguard.embed import get_embedder

    path = tmp_path / "db"
    with ClaimStore.open(path, get_embedder(None, HASHING), create=True) as store:
        store.add(read_claims(SAMPLE))
    return path


def make_settings(db: Path, **overrides) -> ServiceSettings:
    values = dict(db=db, embed=HASHING, api_keys=[CHECK_KEY], admin_keys=[ADMIN_KEY], reload_check_s=0.0)
    values.update(overrides)
    return ServiceSettings(**values)


def make_app(db: Path, **overrides):
    return create_app(make_settings(db, **overrides), make_guard=threshold_guard)


@pytest.fixture
def client(db):
    from fastapi.testclient import TestClient

    with TestClient(make_app(db)) as c:
        yield c


def auth(key: str = CHECK_KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
