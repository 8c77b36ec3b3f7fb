"""Topic agent: the paper's ten categories; one per stored claim, several per query.

Two classifiers with one interface:

- `OfflineTopicClassifier`: nearest centroid over embeddings of short topic descriptions
  written for this project (no LLM). It reuses the vectors the guard computes anyway, so
  classifying costs one (n, 10) matrix product.
- `LLMTopicClassifier`: the paper's two prompts (Figures 14 and 15) on any LLM backend.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..embed import Embedder
from ..llm import LLM
from ..prompts import load_prompts
from ..types import ChatMessage

#: The paper's ten categories, in its order.
TOPICS: tuple[str, ...] = (
    "Politics & International Affairs",
    "Health & Nutrition",
    "Science, Technology & Environment",
    "Economy, Finance & Business",
    "Crime, Law & Public Safety",
    "Society, Culture & Human Rights",
    "Entertainment, Media & Sports",
    "Education & History",
    "Animals & Wildlife",
    "Conspiracy Theories (General)",
)

#: Short descriptions of each topic (our own wording); their embeddings are the centroids.
_DESCRIPTIONS: dict[str, tuple[str, ...]] = {
    TOPICS[0]: (
        "elections, voting, parliament, presidents and prime ministers",
        "government policy, laws passed by congress, political parties and campaigns",
        "foreign relations, treaties, the United Nations, wars and diplomacy",
        "a politician said something in a speech",
    ),
    TOPICS[1]: (
        "diseases, vaccines, medicines, doctors and hospitals",
        "food, diet, vitamins, nutrition and weight loss",
        "a home remedy cures an illness; health risks of a product",
        "pandemics, viruses, cancer and public health advice",
    ),
    TOPICS[2]: (
        "scientific discoveries, physics, space, planets and astronomy",
        "computers, smartphones, the internet, artificial intelligence and apps",
        "climate change, weather, pollution, energy and the environment",
        "engineering, inventions and experiments",
    ),
    TOPICS[3]: (
        "money, banks, taxes, inflation and interest rates",
        "companies, businesses, stock markets and the economy",
        "jobs, wages, trade, prices and product recalls",
        "cryptocurrency, investments and government budgets",
    ),
    TOPICS[4]: (
        "crime, police, arrests, courts and prisons",
        "laws, fines, legal rules and what is illegal",
        "public safety warnings, scams, terrorism and violence",
        "guns, drugs, traffic rules and emergencies",
    ),
    TOPICS[5]: (
        "religion, traditions, customs and culture",
        "human rights, discrimination, immigration and gender",
        "social issues, communities, families and language",
        "protests, equality and civil liberties",
    ),
    TOPICS[6]: (
        "celebrities, actors, musicians, movies and television",
        "sports, athletes, football, the Olympics and the World Cup",
        "newspapers, social media posts, famous quotes and viral videos",
        "a famous person died; a celebrity said something",
    ),
    TOPICS[7]: (
        "schools, universities, students, teachers and exams",
        "history, historical events, ancient civilizations and famous historical figures",
        "what happened in the past; the origin of a saying or a tradition",
        "museums, inventors of the past and old wars",
    ),
    TOPICS[8]: (
        "animals, pets, dogs, cats and birds",
        "wildlife, insects, fish, sharks and nature",
        "animal behaviour and endangered species",
        "zoos, farms and animal facts",
    ),
    TOPICS[9]: (
        "secret plots, cover-ups and hidden agendas",
        "the government is hiding the truth; staged events and hoaxes",
        "aliens, mind control, secret societies and the new world order",
        "microchips, surveillance conspiracies and faked moon landings",
    ),
}


class OfflineTopicClassifier:
    """Nearest centroid over embeddings of topic descriptions (no LLM, no training data).

    `predict_one` gives the single best topic (for stored claims); `predict_many` every
    topic within `margin` of the best, at most `max_topics` (for queries).
    """

    name = "offline-centroid"

    def __init__(
        self, embedder: Embedder, *, margin: float = 0.02, max_topics: int = 3, cache_dir: Path | None = None
    ) -> None:
        self.embedder = embedder
        self.margin = margin
        self.max_topics = max_topics
        self.cache_dir = cache_dir
        self._centroids: dict[str, np.ndarray] = {}

    def centroids(self, kind: str) -> np.ndarray:
        """(10, dim) unit centroids, embedded once per kind ("query" or "passage")."""
        if kind not in self._centroids and self.cache_dir is not None:
            cached = self._cache_file(kind)
            if cached.is_file():
                try:
                    data = np.load(cached)
                    if data.shape == (len(TOPICS), self.embedder.dim):
                        self._centroids[kind] = data
                except (OSError, ValueError):
                    pass  # unreadable cache: recompute below
        if kind not in self._centroids:
            rows = []
            for topic in TOPICS:
                vecs = self.embedder.embed(list(_DESCRIPTIONS[topic]), kind)  # type: ignore[arg-type]
                mean = vecs.mean(axis=0)
                rows.append(mean / (np.linalg.norm(mean) or 1.0))
            self._centroids[kind] = np.stack(rows).astype(np.float32)
            if self.cache_dir is not None:
                self._save(kind)
        return self._centroids[kind]

    def _cache_file(self, kind: str) -> Path:
        digest = hashlib.blake2b(repr((self.embedder.spec, _DESCRIPTIONS)).encode(), digest_size=6).hexdigest()
        return Path(self.cache_dir or ".") / f"topic-centroids-{kind}-{digest}.npy"

    def _save(self, kind: str) -> None:
        """Keep the centroids beside the store so a new process does not re-embed them."""
        path = self._cache_file(kind)
        tmp = path.with_name(path.name + ".tmp")
        try:
            with tmp.open("wb") as fh:
                np.save(fh, self._centroids[kind])
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)  # a read-only store still works, just slower to start

    def scores(self, vectors: np.ndarray, kind: str = "query") -> np.ndarray:
        return np.atleast_2d(vectors) @ self.centroids(kind).T

    def predict_one(self, vectors: np.ndarray, kind: str = "passage") -> list[str]:
        return [TOPICS[int(i)] for i in self.scores(vectors, kind).argmax(axis=1)]

    def predict_many(self, vectors: np.ndarray, kind: str = "query") -> list[list[str]]:
        out = []
        for row in self.scores(vectors, kind):
            order = np.argsort(-row)[: self.max_topics]
            out.append([TOPICS[int(i)] for i in order if row[i] >= row[order[0]] - self.margin])
        return out

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "margin": self.margin, "max_topics": self.max_topics}


class LLMTopicClassifier:
    """The paper's topic prompts on any LLM backend (temperature from the LLM settings)."""

    name = "llm"

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.prompts = load_prompts("misguard.claims", "safer_web")

    def classify_claim(self, text: str) -> str | None:
        """Exactly one topic for a stored headline (paper Figure 15); None if unparseable."""
        out = self.llm.generate_sync(
            [ChatMessage.system(self.prompts.render("headline_topic")), ChatMessage.user(text)], max_tokens=24
        )
        found = parse_topics(out.text)
        return found[0] if found else None

    def classify_query(self, text: str) -> list[str]:
        """All applicable topics for a query (paper Figure 14); [] if none parse."""
        out = self.llm.generate_sync(
            [ChatMessage.system(self.prompts.render("query_topics")), ChatMessage.user(text)], max_tokens=64
        )
        return parse_topics(out.text)

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "llm": self.llm.describe(), "prompts": self.prompts.ref}


def _norm(text: str) -> str:
    return re.sub(r"[^a-z]+", " ", text.lower()).strip()


_NORMED = [(_norm(t), t) for t in TOPICS]


def parse_topics(text: str) -> list[str]:
    """Topic names mentioned in a model answer, in order of appearance, no duplicates."""
    answer = _norm(text)
    hits = sorted((answer.find(normed), topic) for normed, topic in _NORMED if normed in answer)
    return [topic for _, topic in hits]


def topic_accuracy(predicted: Sequence[Sequence[str]], expected: Sequence[str]) -> float:
    """Share of queries whose predicted topics include the expected one (the paper's Table 2)."""
    if not expected:
        return 0.0
    return sum(e in p for p, e in zip(predicted, expected)) / len(expected)
