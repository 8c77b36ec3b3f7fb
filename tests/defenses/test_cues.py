"""The topic-free rhetorical cues and the risk model that reads them beside the embedding:
counts, fitting (the cues carry a signal the vectors do not), files of both format versions,
and the defense's redaction on a cue model with the hashing embedder."""

from __future__ import annotations

import json

import numpy as np
import pytest

from misguard.config import Settings
from misguard.defenses.argus import MessageRiskModel, fit_message_risk
from misguard.defenses.argus._cues import CUE_NAMES, CUES_VERSION, cue_features
from misguard.embed import get_embedder
from misguard.errors import ConfigError, DataError
from misguard.mas import DefenseContext, build_defense
from misguard.types import EdgeMessage

SOURCED = "A viral blog post claims: 'Experts always agree that nothing else matters.'"
HEDGED = "The boiling point is typically about 100 degrees (at sea level); it may vary with pressure."


def column(name: str) -> int:
    return CUE_NAMES.index(name)


def test_cue_counts_of_a_sourced_absolute_claim_and_a_hedged_statement():
    sourced, hedged = cue_features([SOURCED, HEDGED])
    assert sourced[column("informal_source")] == 3  # viral, blog, post
    assert sourced[column("attribution")] == 1 and sourced[column("vague_authority")] == 1
    assert sourced[column("absolute")] == 2  # always, nothing
    assert sourced[column("colon_quote")] == 1 and sourced[column("quote")] == 1
    assert sourced[column("hedge")] == 0 and sourced[column("digits_per_word")] == 0
    assert hedged[column("hedge")] == 3  # typically, about, may
    assert hedged[column("parentheses")] == 1 and hedged[column("semicolons")] == 1
    assert hedged[column("digits_per_word")] > 0 and hedged[column("informal_source")] == 0
    assert np.isclose(hedged[column("log_words")], np.log(len(HEDGED.split())))


def test_cue_features_shape_and_refuses_a_bare_string():
    assert cue_features([]).shape == (0, len(CUE_NAMES))
    with pytest.raises(TypeError, match="sequence of sentences"):
        cue_features("one sentence")


def synthetic(n: int = 240, dim: int = 16, seed: int = 0):
    """Label carried only by the wording (sourced vs hedged); vectors are noise."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    texts = [f"{SOURCED} Item {i}." if label else f"{HEDGED} Item {i}." for i, label in enumerate(y)]
    x = rng.normal(size=(n, dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, y, np.arange(n) // 12, texts


def test_cues_carry_a_signal_the_vectors_do_not(tmp_path):
    x, y, groups, texts = synthetic()
    plain = fit_message_risk(x, y, groups, embedder="hashing/16")
    with_cues = fit_message_risk(x, y, groups, embedder="hashing/16", texts=texts, cues=True)
    assert plain.report["oof_auc"] < 0.7 < 0.99 < with_cues.report["oof_auc"]
    assert with_cues.features == ("embedding", "cues") and with_cues.report["features"] == ["embedding", "cues"]
    assert with_cues.dim == 16 and with_cues.mean is not None and with_cues.mean.shape == (16 + len(CUE_NAMES),)
    assert with_cues.report["C"] in (0.001, 0.01, 0.1, 1.0)  # the grid for standardised columns
    risks = with_cues.probabilities(x[:2], texts[:2])
    assert risks[1] > with_cues.act_threshold > risks[0]  # row 1 is sourced, row 0 hedged
    loaded = MessageRiskModel.load(with_cues.save(tmp_path / "cues.json"))
    assert loaded.features == with_cues.features and loaded.digest() == with_cues.digest() != plain.digest()
    assert np.allclose(loaded.probabilities(x[:6], texts[:6]), with_cues.probabilities(x[:6], texts[:6]))
    with pytest.raises(ConfigError, match="pass the sentences"):
        loaded.probabilities(x[:2])
    with pytest.raises(DataError, match="text of every row"):
        fit_message_risk(x, y, groups, embedder="hashing/16", cues=True)


def test_version_1_files_load_and_other_cue_versions_are_refused(tmp_path):
    rng = np.random.default_rng(1)
    weights = rng.normal(size=8)
    v1 = {"format": "misguard.message-risk", "version": 1, "embedder": "hashing/8", "dim": 8,
          "weights": weights.tolist(), "bias": -0.5, "act_threshold": 0.7, "screen_threshold": 0.2, "report": {}}
    (tmp_path / "v1.json").write_text(json.dumps(v1))
    model = MessageRiskModel.load(tmp_path / "v1.json")
    x = rng.normal(size=(3, 8))
    assert model.features == ("embedding",) and model.mean is None
    assert np.allclose(model.probabilities(x), 1 / (1 + np.exp(-(x @ weights - 0.5))))
    x2, y, groups, texts = synthetic(dim=8)
    path = fit_message_risk(x2, y, groups, embedder="hashing/8", texts=texts, cues=True).save(tmp_path / "v2.json")
    raw = json.loads(path.read_text())
    assert raw["version"] == 2 and raw["cues_version"] == CUES_VERSION
    raw["cues_version"] = CUES_VERSION + 1
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match="refit"):
        MessageRiskModel.load(path)


async def test_the_defense_redacts_by_a_cue_model_with_the_hashing_embedder(tmp_path):
    embedder = get_embedder("hashing/64")
    x, y, groups, texts = synthetic(dim=64)
    # the hashing embedder's real vectors, so the defense scores what the model was fitted on
    x = embedder.embed(texts, "query")
    path = fit_message_risk(x, y, groups, embedder=embedder.spec, texts=texts, cues=True).save(tmp_path / "risk.json")
    context = DefenseContext(Settings(), {}, embedder)
    (defense,) = build_defense("argus", context, {"risk_model": str(path), "quarantine": False})
    text = f"{HEDGED} Item 7. A forum thread says: 'Everyone knows it is always the same.'"
    out = await defense.intercept(EdgeMessage(sender="agent_1", receiver="agent_2", round=1, text=text), None)  # type: ignore[arg-type]
    assert out.action.value == "rewrite" and out.details["deliberate_by_risk"]
    assert "forum thread" not in out.text and HEDGED in out.text
    calm = await defense.intercept(EdgeMessage(sender="agent_1", receiver="agent_2", round=1, text=f"{HEDGED} Item 9."), None)  # type: ignore[arg-type]
    assert calm.action.value == "pass"
