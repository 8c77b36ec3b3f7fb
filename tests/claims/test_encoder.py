"""Fine-tuning the encoder (`fit_encoder`, a few steps on a handful of pairs) and moving a
claim store to another encoder (`reembed_store`)."""

from __future__ import annotations

import importlib.util
from dataclasses import replace

import numpy as np
import pytest

from misguard.claims import ClaimStore, EncoderRecipe, encoder_pairs, fit_encoder, read_claims, reembed_store
from misguard.claims._sources import CheckThat, TrainingData, TweetQuery
from misguard.embed import get_embedder
from misguard.embed._e5adapter import load_adapter
from misguard.errors import ConfigError

from .conftest import SAMPLE, claim

needs_train = pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("torch", "peft")),
                                 reason="the train extra is not installed: pip install 'misguard[train]'")

CLAIMS = [
    claim("ct-1", "Drinking bleach cures the flu"),
    claim("ct-2", "The moon landing was filmed in a studio"),
    claim("ct-3", "Vaccines cause autism"),
    claim("ct-4", "5G towers spread the virus"),
    claim("ct-5", "The Great Wall of China is visible from space"),
    claim("ct-6", "Eating carrots improves night vision"),
]
TWEETS = [
    ("a", "omg they say a cup of bleach gets rid of the flu!!", "ct-1"),
    ("b", "moon landing = hollywood set, wake up", "ct-2"),
    ("c", "my cousin got autistic after his shots #vaccines", "ct-3"),
    ("d", "5G is how the virus spreads, look it up", "ct-4"),
    ("e", "you can totally see the great wall from orbit", "ct-5"),
    ("f", "carrots = night vision, grandma was right", "ct-6"),
]


def tiny_data(tmp_path) -> TrainingData:
    train = [TweetQuery(f"train-{q}", text, frozenset({gold}), "train") for q, text, gold in TWEETS]
    # dev/test tweets are present but must never be read
    test = [TweetQuery("test-x", "NEVER TRAIN ON THIS", frozenset({"ct-1"}), "test")]
    return TrainingData(tmp_path, checkthat=CheckThat(CLAIMS, {"train": train, "dev": [], "test": test}))


RECIPE = EncoderRecipe(steps=2, batch_size=4, hard_negatives=1, mine_depth=3, lora_layers=1, rank=2, alpha=4.0,
                       max_tokens=24, paper=0, checkpoint_every=1, seed=3)


def test_pairs_come_from_checkthat_train_only(tmp_path):
    pairs = encoder_pairs(tiny_data(tmp_path), RECIPE)
    assert [p.group for p in pairs] == [g for _, _, g in TWEETS]
    assert all("NEVER" not in p.query for p in pairs)
    with pytest.raises(ConfigError, match="no training pairs"):
        encoder_pairs(TrainingData(tmp_path), RECIPE)


@needs_train
def test_fit_encoder_writes_an_adapter_deterministically_and_resumes(tmp_path):
    data = tiny_data(tmp_path)
    mining = get_embedder("hashing/64")
    first = fit_encoder(data, tmp_path / "a.npz", tmp_path / "work-a", mining, RECIPE)
    adapter = load_adapter(first.adapter)
    assert first.steps == 2 and len(first.losses) == 2 and adapter.rank == 2
    assert set(adapter.factors) == {f"l11.{p}.w" for p in ("q", "k", "v", "ao", "fi", "fo")}
    assert adapter.meta["trained_on"] == {"checkthat-train": 6} and adapter.meta["seed"] == 3
    # B starts at zero in LoRA: two steps moved it
    assert any(np.abs(b).max() > 0 for _, b in adapter.factors.values())

    # same seed, fresh work dir: the same adapter
    again = fit_encoder(data, tmp_path / "b.npz", tmp_path / "work-b", mining, RECIPE)
    for name, (a, b) in adapter.factors.items():
        np.testing.assert_array_equal(load_adapter(again.adapter).factors[name][0], a)
        np.testing.assert_array_equal(load_adapter(again.adapter).factors[name][1], b)

    # a finished checkpoint resumes without training again; a longer run continues from it
    resumed = fit_encoder(data, tmp_path / "c.npz", tmp_path / "work-a", mining, RECIPE)
    assert resumed.losses == first.losses
    longer = fit_encoder(data, tmp_path / "d.npz", tmp_path / "work-b", mining, replace(RECIPE, steps=3))
    assert longer.steps == 3 and longer.losses[:2] == first.losses
    with pytest.raises(ConfigError, match="new --work-dir"):
        fit_encoder(data, tmp_path / "e.npz", tmp_path / "work-b", mining, RECIPE)
    # another recipe starts over
    other = fit_encoder(data, tmp_path / "f.npz", tmp_path / "work-b", mining, replace(RECIPE, learning_rate=1e-3))
    assert other.steps == 2 and other.losses[0] == first.losses[0] and other.losses[1] != first.losses[1]


def test_a_store_refuses_another_encoder_and_reembed_moves_it(tmp_path):
    path = tmp_path / "db"
    with ClaimStore.open(path, get_embedder("hashing/256"), create=True) as store:
        store.add(read_claims(SAMPLE))
        count = len(store)
    with pytest.raises(ConfigError, match=r"misguard --embedder hashing/64 claims reembed --db"):
        ClaimStore.open(path, get_embedder("hashing/64"))
    old, moved = reembed_store(path, get_embedder("hashing/64"))
    assert (old, moved) == ("hashing/256", count)
    with ClaimStore.open(path, get_embedder("hashing/64")) as store:
        assert len(store) == count and store.vectors.shape == (count, 64)
        assert store.stats()["embedder"] == "hashing/64"
        assert store.verify().ok
        hit = store.search(get_embedder("hashing/64").embed(["Swallowed chewing gum stays in your stomach for seven years"]), 1)
        slot = int(hit[1][0, 0])
        assert store.texts_of_slots([slot])[slot].startswith("Swallowed chewing gum")
    with pytest.raises(ConfigError, match="claims reembed"):
        ClaimStore.open(path, get_embedder("hashing/256"))
