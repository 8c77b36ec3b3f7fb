"""Fitting the decision as a library job: on a small data directory written here (a dev set,
LIAR and Snopes files), with the hashing embedder; and once on the shared data (CheckThat
included) with small limits."""

from __future__ import annotations

import numpy as np
import pytest

from misguard.claims import (
    ClaimGuard,
    LogisticDecision,
    build_checkthat_store,
    build_training_store,
    fit_cosine_threshold,
    fit_decision,
    load_decision,
    load_reader,
    load_training_data,
    save_decision,
)
from misguard.embed import get_embedder
from misguard.errors import DataError

from .conftest import write_data

@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    root = write_data(tmp_path_factory.mktemp("data"))
    data = load_training_data(root)
    embedder = get_embedder("hashing/256")
    built = build_training_store(tmp_path_factory.mktemp("work") / "store", embedder, data)
    result = fit_decision(data, built.store, paper=4, seed=0)
    yield data, built, result
    built.store.close()


def test_the_decision_is_fitted_across_the_sources_found(fitted):
    data, built, result = fitted
    assert data.checkthat is None and len(built.store) == len(data.distractors) + 12 and built.embedded == len(built.store)
    sources = {r.source for r in result.rows}
    assert sources == {"devset", "paper"} and result.ranker is None  # no CheckThat: no re-ranker, dense ranking
    # 36 dev queries and 4 + 4 paper claims x 3 attacks, each also in tweet form
    assert result.decision.trained_on == f"{len(result.rows)} rows: devset 72, paper 48, checkthat 0"
    assert len(result.flags) == len(result.rows) and len(result.c_per_fold) == 10
    oof = result.out_of_fold()
    assert set(oof) == {"devset", "paper"} and oof["devset"]["n_false"] == 48 and oof["devset"]["n_true"] == 24
    assert all(0.0 <= v["false"] <= 1.0 for v in oof.values())
    # the language shift was fitted on the dev queries (no shift given) and ships in the decision
    assert result.decision.shift is result.shift and result.shift.dim == 256


def test_the_saved_decision_loads_and_checks(fitted, tmp_path):
    _, built, result = fitted
    path = save_decision(result.decision, tmp_path / "sub" / "decision.json")
    assert not list(path.parent.glob("*.tmp"))
    loaded = load_decision(path)
    assert isinstance(loaded, LogisticDecision) and loaded.coef == pytest.approx(result.decision.coef)
    verdict = ClaimGuard(built.store, decision=loaded).check("The city of Oslo banned umbrellas in every public park last year")
    assert verdict.candidates and 0.0 <= verdict.score <= 1.0 and "shift:en" in verdict.stages


def test_a_given_shift_is_kept_and_a_reader_recorded(fitted):
    data, built, result = fitted
    again = fit_decision(data, built.store, paper=4, seed=0, shift=result.shift, reader=load_reader("hashing/64"))
    assert again.decision.shift is result.shift
    assert again.decision.names[-1] == "reader_en" and again.decision.reader == {"kind": "embedding", "embedder": "hashing/64"}


def test_without_a_dev_set_the_shift_must_be_given(tmp_path):
    root = write_data(tmp_path / "data")
    import shutil

    shutil.rmtree(root / "claims" / "devset-multilingual")
    data = load_training_data(root)
    with build_training_store(tmp_path / "store", get_embedder("hashing/256"), data).store as store:
        with pytest.raises(DataError, match="needs the dev set"):
            fit_decision(data, store, paper=4)


def test_the_cosine_threshold_maximises_balanced_accuracy():
    scores = np.array([0.9, 0.8, 0.85, 0.5, 0.6, 0.55])
    labels = np.array([True, True, True, False, False, False])
    assert fit_cosine_threshold(scores, labels) == 0.8


@pytest.mark.shared_data
def test_fit_on_the_shared_data_with_checkthat(shared_data, tmp_path):
    data = load_training_data(shared_data, distractors=20, checkthat_limit=10)
    embedder = get_embedder("hashing/256")
    store = build_training_store(tmp_path / "store", embedder, data).store
    ct_store = build_checkthat_store(tmp_path / "store-checkthat", embedder, data.checkthat).store
    try:
        result = fit_decision(data, store, ct_store, paper=4)
        assert result.ranker is not None and result.decision.ranker is result.ranker.ranker
        assert set(result.ranker.dev_metrics) == {0.01, 0.1, 1.0, 10.0}
        assert set(result.decision.shift.centroids) >= {"en", "fr", "es", "ar", "hi", "zh"}
        assert {r.source for r in result.rows} == {"devset", "paper", "checkthat"}
        # each train tweet as it is, and (mostly) without its right claim
        tweets = [r for r in result.rows if r.source == "checkthat"]
        assert sum(r.label for r in tweets) == 10 and 0 < sum(not r.label for r in tweets) <= 10
    finally:
        store.close()
        ct_store.close()


def test_too_few_true_claims_for_the_paper_attacks_is_a_data_error(fitted):
    data, built, _ = fitted
    import dataclasses

    few = dataclasses.replace(data, true_claims=data.true_claims[:2])
    with pytest.raises(DataError, match="paper=0"):
        fit_decision(few, built.store, paper=4)
