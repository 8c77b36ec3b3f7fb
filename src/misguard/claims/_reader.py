"""Pair readers: a second opinion on whether a text repeats its matched claim, read by the
decision as the feature `reader_en` (a reader of English texts) or `reader_any` (a reader of
every language) (higher: more likely).

Two kinds, both loaded by `load_reader(spec)`:
- `EmbeddingReader` (a spec such as `st/minilm`): the cosine of the text and the claim under
  another embedder, untrained. The bundled English all-MiniLM-L6-v2 separates CheckThat-2020
  tweets from tweets whose claim is not stored better than e5's own cosine (ROC AUC 0.908
  vs 0.794, docs/BENCHMARKS.md, issue 12, session 17).
- `PairReader` (a directory): the cross-encoder below.

The cross-encoder reads a text and a candidate claim together and scores whether the text
repeats the claim.

Why: the decision's features (cosines, word overlaps, names, numbers) do not separate a
tweet that repeats a fact-check from a tweet whose fact-check is not stored: both sit at
the same cosine (docs/BENCHMARKS.md, issue 12, session 5). No NLI model or cross-encoder
ships in a registry package here, so one is fine-tuned from the bundled all-MiniLM-L6-v2
(English) on texts paired with their right claim and with the other candidates the guard
ranked for them (hard negatives), by `misguard bench claims --reader DIR`.

Cross-fitting keeps its score honest as a decision feature: the training texts are split in
two halves by claim, one model is trained per half, and a text a model was trained on is
always scored by the other one. The decision is then fitted on the same kind of score for
every row, seen in training or not; a text neither model saw is scored by the model a hash
of the text picks.

Needs torch and transformers (the `st` extra).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from ..config import EmbedSettings
from ..embed import EMBEDDERS, Embedder, get_embedder
from ..errors import ConfigError, MissingExtraError

READER_FILE = "reader.json"
#: The language whose texts the decision reads an English reader's value for (`reader_en`):
#: the bundled readers are English models; the guard does not read other texts with them.
READ_LANGUAGE = "en"
#: The languages a reader reads: English (the default), or every language (a multilingual
#: embedder given with `--reader-languages all`; its value is the feature `reader_any`).
READER_LANGUAGES = ("en", "all")
#: Two halves: each text is scored by a model that never saw it or its claim.
HALVES = 2
#: Token budget for one (text, claim) pair; tweets and fact-check headlines fit.
MAX_LENGTH = 160
#: Pairs per forward pass when scoring, and pairs remembered.
SCORE_BATCH = 32
CACHE_SIZE = 100_000
#: The bundled base model (sentence-transformers' all-MiniLM-L6-v2, English).
BASE_MODEL = "minilm"


@dataclass(frozen=True)
class ReaderExample:
    """One (text, claim) pair to learn from; `group` is the claim's group (never split)."""

    text: str
    claim: str
    label: bool
    group: str


@dataclass(frozen=True)
class ReaderTraining:
    """How the models are trained (recorded in `reader.json`)."""

    #: Four epochs over half the tweets make as many optimizer steps as two over all of
    #: them. With two, each half's model fitted even its own training pairs poorly and the
    #: decision gave its score no weight (docs/BENCHMARKS.md, issue 12, session 16).
    epochs: int = 4
    batch_size: int = 16
    learning_rate: float = 3e-5
    warmup: float = 0.1
    seed: int = 0
    max_length: int = MAX_LENGTH


def digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def _torch():
    try:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
    except ImportError:
        raise MissingExtraError("torch and transformers", "st", "the pair reader") from None
    return torch, AutoTokenizer, AutoModelForSequenceClassification


def _base_path(base: str) -> str:
    from ..embed._backends import BUNDLED_ST_MODELS

    if base in BUNDLED_ST_MODELS:
        from importlib import resources

        package, folder = BUNDLED_ST_MODELS[base]
        try:
            return str(resources.files(package).joinpath(folder))
        except ModuleNotFoundError:
            raise MissingExtraError(package.replace("_", "-"), "st", f"the {base} model") from None
    if not Path(base).is_dir():
        raise ConfigError(f"No model directory at {base} (the pair reader's base: 'minilm' or a path)")
    return base


def split_halves(examples: Sequence[ReaderExample]) -> list[int]:
    """The half of each example: its group's sorted position, dealt round-robin."""
    groups = sorted({e.group for e in examples})
    half = {g: i % HALVES for i, g in enumerate(groups)}
    return [half[e.group] for e in examples]


class PairReader:
    """Scores (text, claim) pairs with the cross-fitted models of a reader directory."""

    #: fine-tuned from an English model on English tweets
    languages = READ_LANGUAGE

    def __init__(self, path: Path, meta: dict, models: list, tokenizer) -> None:
        self.path = path
        self.meta = meta
        self._models = models
        self._tokenizer = tokenizer
        # Text digest -> its half: the model of that half never saw it.
        self._half_of = {key: k for k, keys in enumerate(meta["held_out"]) for key in keys}
        self._torch = _torch()[0]
        self._cache: dict[tuple[str, str], float] = {}

    @classmethod
    def load(cls, path: str | Path) -> PairReader:
        path = Path(path)
        meta_file = path / READER_FILE
        if not meta_file.is_file():
            raise ConfigError(f"{path} holds no pair reader ({READER_FILE}); train one with misguard bench claims --reader {path}")
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        torch, tokenizer_cls, model_cls = _torch()
        tokenizer = tokenizer_cls.from_pretrained(str(path / "half-0"))
        models = []
        for k in range(meta["halves"]):
            model = model_cls.from_pretrained(str(path / f"half-{k}"))
            model.eval()
            models.append(model)
        return cls(path, meta, models, tokenizer)

    def model_for(self, text: str) -> int:
        """The model that did not see `text` (for unseen texts: the one its hash picks)."""
        key = digest(text)
        return self._half_of.get(key, int(key, 16) % len(self._models))

    def score(self, text: str, claim: str) -> float:
        """Logit that `text` repeats `claim` (higher: more likely)."""
        return self.score_many([(text, claim)])[0]

    def score_many(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Logits of (text, claim) pairs: each scored by its text's model, in batches;
        pairs scored before come from a bounded cache (the benchmark reads the same
        pairs under every fold)."""
        found = {pair: self._cache[pair] for pair in pairs if pair in self._cache}
        todo: dict[int, list[tuple[str, str]]] = {}
        for pair in dict.fromkeys(pairs):
            if pair not in found:
                todo.setdefault(self.model_for(pair[0]), []).append(pair)
        for k, items in todo.items():
            for i in range(0, len(items), SCORE_BATCH):
                batch = items[i : i + SCORE_BATCH]
                enc = self._tokenizer([t for t, _ in batch], [c for _, c in batch], truncation=True,
                                      max_length=self.meta["max_length"], padding=True, return_tensors="pt")
                with self._torch.no_grad():
                    found.update(zip(batch, map(float, self._models[k](**enc).logits[:, 0].tolist())))
        if len(self._cache) + len(found) > CACHE_SIZE:
            self._cache.clear()
        self._cache.update(found)
        return [found[pair] for pair in pairs]

    def read_many(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The decision's feature for each pair: the probability that the text repeats the claim."""
        return [probability(logit) for logit in self.score_many(pairs)]

    def identity(self) -> dict[str, object]:
        """What a decision fitted with this reader records of it (no paths)."""
        return {"kind": "cross-encoder", "base": self.meta.get("base"), "trained_on": self.meta.get("trained_on")}

    def describe(self) -> dict[str, object]:
        return {"kind": "cross-encoder", "path": str(self.path),
                **{k: v for k, v in self.meta.items() if k != "held_out"}}


class EmbeddingReader:
    """The cosine of a text and its matched claim under a second embedder (no training).

    Texts are embedded as queries and claims as passages, like the store's own embedder;
    both go through the embedder's caches, so a claim matched again costs nothing.
    `languages`: "en" (the default; the bundled all-MiniLM is English) or "all" for a
    multilingual embedder, whose value the decision reads for every text."""

    kind = "embedding"

    def __init__(self, embedder: Embedder, languages: str = READ_LANGUAGE) -> None:
        if languages not in READER_LANGUAGES:
            raise ConfigError(f"reader languages {languages!r}: use one of {', '.join(READER_LANGUAGES)}")
        self.embedder = embedder
        self.languages = languages

    def read_many(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        texts = self.embedder.embed([t for t, _ in pairs], "query")
        claims = self.embedder.embed([c for _, c in pairs], "passage")
        return [float(v) for v in np.einsum("ij,ij->i", texts, claims)]

    def identity(self) -> dict[str, object]:
        # English readers keep the identity decisions recorded before `languages` existed
        extra = {} if self.languages == READ_LANGUAGE else {"languages": self.languages}
        return {"kind": self.kind, "embedder": self.embedder.spec, **extra}

    def describe(self) -> dict[str, object]:
        return {**self.identity(), "embedder_build": self.embedder.describe()}


class Reader(Protocol):
    """What the guard needs of a reader (`PairReader`, `EmbeddingReader`, or your own)."""

    #: "en": the guard reads it for English texts only (feature `reader_en`); "all": for
    #: every text (feature `reader_any`)
    languages: str

    def read_many(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The decision's `reader_en` value for each (text, claim) pair."""
        ...

    def identity(self) -> dict[str, object]:
        """What a decision fitted with this reader records of it (no paths)."""
        ...

    def describe(self) -> dict[str, object]:
        """How it was built, for run logs."""
        ...


def load_reader(spec: str | Path, settings: EmbedSettings | None = None, languages: str = READ_LANGUAGE) -> Reader:
    """A reader from `spec`: a directory holding a trained pair reader (`reader.json`), or
    an embedder spec (`st/minilm`) for an `EmbeddingReader` that reads `languages`."""
    text = str(spec)
    if Path(text).is_dir():
        require_english(languages)
        return PairReader.load(text)
    if is_embedder_spec(text):
        return EmbeddingReader(get_embedder(text, settings), languages)
    raise ConfigError(f"--reader {text}: neither a pair reader directory nor an embedder spec "
                      "(use e.g. st/minilm, or a directory `misguard bench claims --reader DIR` trained)")


def require_english(languages: str) -> None:
    """A trained pair reader (cross-encoder) reads English only: refuse any other scope."""
    if languages != PairReader.languages:
        raise ConfigError("a trained pair reader (cross-encoder) reads English only; drop --reader-languages")


def reads(reader: Reader, language: str) -> bool:
    """Whether the decision reads `reader`'s value for a text in `language`."""
    return reader.languages == "all" or language == READ_LANGUAGE


def reader_of(identity: dict, settings: EmbedSettings | None = None) -> Reader:
    """The embedding reader a decision recorded (`identity()`), rebuilt."""
    return load_reader(str(identity["embedder"]), settings, str(identity.get("languages", READ_LANGUAGE)))


def is_ready(spec: str) -> bool:
    """`load_reader(spec)` needs no training first: an embedder spec, or a directory holding
    a trained reader."""
    return is_embedder_spec(spec) or (Path(spec) / READER_FILE).is_file()


def is_embedder_spec(spec: str) -> bool:
    """`spec` names an embedder (`backend/model`) and not an existing path."""
    backend, sep, model = spec.partition("/")
    return bool(sep and model) and backend in EMBEDDERS and not Path(spec).exists()


def probability(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))


def train_reader(
    examples: Sequence[ReaderExample], output: Path, *, base: str = BASE_MODEL, training: ReaderTraining = ReaderTraining(),
    trained_on: str = "", progress: Callable[[str], None] = lambda _: None,
) -> PairReader:
    """Train one model per half of `examples` (split by group) and write them with
    `reader.json` to `output` (written last: a directory without it is not a reader)."""
    torch, tokenizer_cls, model_cls = _torch()
    if not any(e.label for e in examples) or all(e.label for e in examples):
        raise ConfigError("the pair reader needs both texts that repeat their claim and texts that do not")
    path = _base_path(base)
    output.mkdir(parents=True, exist_ok=True)
    halves = split_halves(examples)
    tokenizer = tokenizer_cls.from_pretrained(path)
    started = time.perf_counter()
    for k in range(HALVES):
        # The model of half k learns from the other halves' texts and scores half k's.
        train = [e for e, h in zip(examples, halves) if h != k]
        random.seed(training.seed + k)
        torch.manual_seed(training.seed + k)
        model = model_cls.from_pretrained(path, num_labels=1)
        _fit(torch, model, tokenizer, train, training, lambda msg, k=k: progress(f"half {k}: {msg}"))
        model.eval()
        model.save_pretrained(str(output / f"half-{k}"))
        tokenizer.save_pretrained(str(output / f"half-{k}"))
    meta = {
        "base": base, "halves": HALVES, "max_length": training.max_length, "trained_on": trained_on,
        "training": training.__dict__, "examples": len(examples), "positives": sum(e.label for e in examples),
        "seconds": round(time.perf_counter() - started, 1),
        # model k was trained on every half but k, so it scores half k's texts
        "held_out": [sorted({digest(e.text) for e, h in zip(examples, halves) if h == k}) for k in range(HALVES)],
    }
    (output / READER_FILE).write_text(json.dumps(meta), encoding="utf-8")
    return PairReader.load(output)


def _fit(torch, model, tokenizer, train: list[ReaderExample], training: ReaderTraining, progress) -> None:
    train = list(train)
    batches = math.ceil(len(train) / training.batch_size)
    steps = training.epochs * batches
    optimizer = torch.optim.AdamW(model.parameters(), lr=training.learning_rate, weight_decay=0.01)
    warm = max(1, int(training.warmup * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, s / warm) * max(0.0, (steps - s) / steps))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.train()
    step = 0
    for epoch in range(training.epochs):
        random.shuffle(train)
        for i in range(0, len(train), training.batch_size):
            batch = train[i : i + training.batch_size]
            enc = tokenizer([e.text for e in batch], [e.claim for e in batch], truncation=True,
                            max_length=training.max_length, padding=True, return_tensors="pt")
            target = torch.tensor([1.0 if e.label else 0.0 for e in batch])
            loss = loss_fn(model(**enc).logits.squeeze(-1), target)
            loss.backward()
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step += 1
            if step % 100 == 0 or step == steps:
                progress(f"epoch {epoch + 1}, step {step}/{steps}, loss {loss.item():.3f}")


__all__ = ["EmbeddingReader", "PairReader", "Reader", "is_embedder_spec", "is_ready", "load_reader", "ReaderExample", "ReaderTraining", "probability", "split_halves", "train_reader"]
