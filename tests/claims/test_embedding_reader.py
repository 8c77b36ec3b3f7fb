"""The embedding reader: a second embedder's cosine as the decision's `reader_en`, chosen
by spec, recorded in the decision it was fitted with, and rebuilt from it."""

import dataclasses

import numpy as np
import pytest

from misguard.claims import ClaimGuard, EmbeddingReader, LogisticDecision, load_reader
from misguard.claims._detect import FEATURES, FEATURES_ANY_READER, FEATURES_EN_READER, default_decision, fit_logistic
from misguard.embed import get_embedder
from misguard.errors import ConfigError


def _decision_with(reader_identity: dict, names: tuple[str, ...] = FEATURES_EN_READER) -> LogisticDecision:
    """A tiny decision over every feature but one reader's, fitted on random rows."""
    rng = np.random.default_rng(0)
    x = rng.random((40, len(FEATURES)))
    y = np.arange(40) % 2 == 0
    return fit_logistic(x, y, embedder="hashing/256", trained_on="unit test", names=names, reader=reader_identity)


def test_the_cosine_is_the_other_embedders_own():
    embedder = get_embedder("hashing/64")
    reader = EmbeddingReader(embedder)
    pairs = [("vaccines cause autism", "vaccines cause autism in children"), ("vaccines cause autism", "the moon is cheese")]
    values = reader.read_many(pairs)
    expected = [float(embedder.embed(t, "query") @ embedder.embed(c, "passage")) for t, c in pairs]
    assert values == pytest.approx(expected) and values[0] > values[1]
    assert reader.read_many([]) == []
    assert reader.identity() == {"kind": "embedding", "embedder": "hashing/64"}


def test_a_spec_that_is_not_an_embedder_says_what_to_pass(tmp_path):
    assert isinstance(load_reader("hashing/64"), EmbeddingReader)
    with pytest.raises(ConfigError, match="st/minilm"):
        load_reader(str(tmp_path / "no-such-reader"))
    (tmp_path / "reader.json").write_text("{}", encoding="utf-8")  # a trained cross-encoder's directory
    with pytest.raises(ConfigError, match="not an embedder spec"):
        load_reader(str(tmp_path))


def test_the_decision_records_its_reader_and_the_guard_rebuilds_it(store, tmp_path):
    decision = _decision_with({"kind": "embedding", "embedder": "hashing/64"})
    again = LogisticDecision.from_json(decision.to_json())
    assert again.reader == {"kind": "embedding", "embedder": "hashing/64"}
    guard = ClaimGuard(store, decision=again)  # no reader passed: the one the decision names
    assert isinstance(guard.reader, EmbeddingReader) and guard.describe()["reader"]["embedder"] == "hashing/64"
    verdict = guard.check("Vaccines cause autism")
    assert 0.0 <= verdict.score <= 1.0
    with pytest.raises(ConfigError, match="fitted with the reader"):
        ClaimGuard(store, decision=again, reader=load_reader("hashing/32"))


def test_the_reader_changes_the_score_it_is_fitted_to_read(store):
    decision = _decision_with({"kind": "embedding", "embedder": "hashing/64"})
    # only reader_en weighs: the verdict's score must follow the reader's cosine
    n = len(FEATURES_EN_READER)
    only_reader = dataclasses.replace(decision, coef=[0.0] * (n - 1) + [5.0], intercept=0.0, mean=[0.0] * n, scale=[1.0] * n)
    guard = ClaimGuard(store, decision=only_reader)
    text = "My doctor told me that vaccines cause autism in young children."
    context = guard.analyse([text])[0].context
    # reader_en reads English texts only (the bundled readers are English models)
    assert context is not None and context.reader is not None and context.language == "en"
    cosine = guard.reader.read_many([(context.text, context.claim_text)])[0]
    assert context.reader == pytest.approx(cosine)
    assert guard.check(text).score == pytest.approx(1.0 / (1.0 + np.exp(-5.0 * cosine)), abs=1e-6)


def test_no_shipped_decision_for_an_unknown_reader_names_both():
    with pytest.raises(ConfigError, match="with reader 'hashing/64'"):
        default_decision("hashing/256", "hashing/64")


def test_only_english_texts_are_read(store):
    """reader_en is 0 for any other language, so the guard does not pay for reading them."""

    class Recording(EmbeddingReader):
        def read_many(self, pairs):
            self.seen.extend(t for t, _ in pairs)
            return super().read_many(pairs)

    reader = Recording(get_embedder("hashing/64"))
    reader.seen = []
    guard = ClaimGuard(store, decision=_decision_with(reader.identity()), reader=reader)
    english = "My doctor told me that vaccines cause autism in young children."
    french = "Mon médecin m'a dit que les vaccins provoquent l'autisme chez les jeunes enfants."
    english_context, french_context = (a.context for a in guard.analyse([english, french]))
    assert english_context.language == "en" and french_context.language == "fr"
    assert reader.seen == [english] and french_context.reader is None
    guard.select(guard.analyse([french])[0], 0)  # the one-pair path skips it too
    assert reader.seen == [english]


def test_a_reader_of_every_language_is_read_for_every_text_and_recorded_as_such(store):
    """`languages="all"`: the decision reads `reader_any`, the guard reads the reader for a
    French text too (an English reader leaves it unread), and the decision's record of the
    reader rebuilds it with its languages."""
    multilingual = {"kind": "embedding", "embedder": "hashing/64", "languages": "all"}
    decision = LogisticDecision.from_json(_decision_with(multilingual, FEATURES_ANY_READER).to_json())
    assert decision.names == FEATURES_ANY_READER and decision.reader == multilingual
    guard = ClaimGuard(store, decision=decision)  # rebuilt from the decision's record
    assert guard.reader.languages == "all" and guard.reader.identity() == multilingual
    french = "Les vaccins provoquent l'autisme chez les jeunes enfants, dit mon médecin."
    context = guard.analyse([french])[0].context
    assert context is not None and context.language == "fr" and context.reader is not None
    english_only = ClaimGuard(store, decision=_decision_with({"kind": "embedding", "embedder": "hashing/64"}))
    assert english_only.reader.identity() == {"kind": "embedding", "embedder": "hashing/64"}  # as recorded before
    assert english_only.analyse([french])[0].context.reader is None
    with pytest.raises(ConfigError, match="fitted with the reader"):
        ClaimGuard(store, decision=decision, reader=load_reader("hashing/64"))  # an English reader
    with pytest.raises(ConfigError, match="reader languages"):
        EmbeddingReader(get_embedder("hashing/64"), "fr")
    # a decision that recorded no reader (files written before readers were recorded) still refuses a reader of the other scope
    unrecorded = dataclasses.replace(decision, reader=None)
    with pytest.raises(ConfigError, match="reads a reader of every language"):
        ClaimGuard(store, decision=unrecorded, reader=load_reader("hashing/64"))
    assert ClaimGuard(store, decision=unrecorded, reader=load_reader("hashing/64", languages="all")).reader.languages == "all"


def test_a_decision_whose_reader_the_guard_cannot_build_says_what_to_do(store):
    """A decision file fitted with a trained cross-encoder reader (no longer supported)."""
    decision = _decision_with({"kind": "cross-encoder", "base": "minilm", "trained_on": "tweets"})
    with pytest.raises(ConfigError, match="cross-encoder.*fit-decision"):
        ClaimGuard(store, decision=decision)


def test_a_reader_for_a_decision_fitted_without_one_is_refused(store):
    """Its cosine would cost an embedding per text and change nothing."""
    without = _decision_with(None, FEATURES_EN_READER[:-1])
    with pytest.raises(ConfigError, match="without a pair reader.*fit-decision --reader"):
        ClaimGuard(store, decision=without, reader=load_reader("hashing/64"))
