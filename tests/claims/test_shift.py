import numpy as np
import pytest

from misguard.claims import ClaimGuard, LanguageShift, LogisticDecision, ThresholdDecision, fit_logistic
from misguard.errors import ConfigError


def _unit(rng, n, dim=8):
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_shift_moves_each_language_onto_the_target():
    rng = np.random.default_rng(0)
    offset = np.zeros(8, dtype=np.float32)
    offset[0] = 3.0  # a strong "French" component in every French vector
    fr = _unit(rng, 50) + offset
    en = _unit(rng, 50)
    claims = _unit(rng, 200)
    shift = LanguageShift.fit([("fr", fr), ("en", en)], claims)
    moved = shift.apply(fr, "fr")
    assert np.allclose(np.linalg.norm(moved, axis=1), 1.0, atol=1e-5)
    # The language component is gone: French vectors no longer share the first axis.
    assert abs(moved[:, 0].mean()) < 0.2 < fr[:, 0].mean() / np.linalg.norm(fr, axis=1).mean()
    # A language without a centroid uses the mean of the fitted ones.
    assert np.allclose(shift.apply(en[:3], "de"), shift.apply(en[:3], "*"))


def test_shift_round_trips_through_the_decision_json():
    rng = np.random.default_rng(1)
    shift = LanguageShift.fit([("ar", _unit(rng, 5)), ("zh", _unit(rng, 5))], _unit(rng, 20))
    x = rng.standard_normal((40, 35))
    y = np.arange(40) % 2 == 0
    model = fit_logistic(x, y, embedder="hashing/8", trained_on="test", shift=shift)
    again = LogisticDecision.from_json(model.to_json())
    assert again.shift is not None and set(again.shift.centroids) == {"ar", "zh", "*"}
    assert np.allclose(again.shift.target, shift.target, atol=1e-6)
    probe = _unit(rng, 3)
    assert np.allclose(again.shift.apply(probe, "ar"), shift.apply(probe, "ar"), atol=1e-5)
    assert again.describe()["language_shift"] == ["ar", "zh"]


def test_malformed_or_mismatched_shifts_are_clear_errors(store):
    with pytest.raises(ConfigError, match="centroids"):
        LanguageShift.from_dict({"target": [0.0, 1.0]})
    with pytest.raises(ConfigError, match="different shapes"):
        LanguageShift({"en": np.zeros(4, np.float32)}, np.zeros(3, np.float32))
    shift = LanguageShift({"en": np.zeros(4, np.float32)}, np.zeros(4, np.float32))
    with pytest.raises(ConfigError, match="256"):
        ClaimGuard(store, decision=ThresholdDecision(0.6), shift=shift)


def test_guard_applies_the_decisions_shift(store, embedder):
    rng = np.random.default_rng(2)
    shift = LanguageShift.fit([("fr", _unit(rng, 10, 256))], store.vectors)
    guard = ClaimGuard(store, decision=ThresholdDecision(0.0, shift=shift))
    verdict = guard.check("Translate from French to English: les poissons rouges oublient tout")
    assert "shift:fr" in verdict.stages
    assert guard.describe()["language_shift"] is True
    plain = ClaimGuard(store, decision=ThresholdDecision(0.0)).check("les poissons rouges oublient tout")
    assert not any(s.startswith("shift:") for s in plain.stages)
