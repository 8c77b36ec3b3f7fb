from __future__ import annotations

import numpy as np
import pytest

from misguard.config import EmbedSettings
from misguard.embed import EMBEDDERS, get_embedder
from misguard.errors import ConfigError, EmbeddingError


def test_hashing_embedder_is_normalised_and_deterministic():
    emb = get_embedder("hashing/64")
    a = emb.embed(["the cat sat", "the cat sat", "stock markets fell"])
    assert a.shape == (3, 64) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0)
    assert np.allclose(a[0], a[1]) and float(a[0] @ a[2]) < 0.9


def test_cache_skips_recomputation(tmp_path):
    calls = []
    emb = get_embedder("hashing/32", EmbedSettings(cache_dir=tmp_path, batch_size=2))
    original = emb._embed_batch
    emb._embed_batch = lambda texts, kind: calls.append(list(texts)) or original(texts, kind)
    emb.embed(["a", "b", "c", "a"])
    assert calls == [["a", "b"], ["c"]]
    emb.embed(["a", "c"])
    assert len(calls) == 2
    # the disk cache survives a new embedder
    fresh = get_embedder("hashing/32", EmbedSettings(cache_dir=tmp_path))
    fresh._embed_batch = lambda texts, kind: pytest.fail("should be cached")
    assert fresh.embed("a").shape == (32,)


def test_bad_input_and_specs():
    emb = get_embedder("hashing/16")
    with pytest.raises(EmbeddingError, match="only embed strings"):
        emb.embed(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="Unknown embedding backend"):
        get_embedder("nope")
    with pytest.raises(ConfigError):
        get_embedder("hashing/wide")


def test_registry_lists_every_backend():
    assert set(EMBEDDERS.names()) >= {"e5", "st", "openai", "hashing"}


@pytest.mark.slow
def test_e5_translations_are_closer_than_unrelated():
    emb = get_embedder("e5")
    claim = emb.embed("Drinking bleach cures the flu.", "query")
    french, chinese, unrelated = emb.embed(
        ["Boire de l'eau de Javel guérit la grippe.", "喝漂白剂可以治愈流感。", "The stock market closed higher on Friday."],
        "passage",
    )
    assert emb.dim == 384
    assert float(claim @ french) > float(claim @ unrelated) + 0.03
    assert float(claim @ chinese) > float(claim @ unrelated) + 0.03


@pytest.mark.slow
def test_e5_handles_empty_and_long_text():
    emb = get_embedder("e5")
    vecs = emb.embed(["", "word " * 5000])
    assert vecs.shape == (2, 384) and np.isfinite(vecs).all()
