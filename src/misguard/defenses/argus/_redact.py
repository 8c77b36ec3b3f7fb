"""Redaction: the sentences the risk model is confident about are removed from a message.

Each is replaced by the closest ground truth not used yet when the defense has them (the
"with ground truth" experiment), else a note tells the receiver how many were removed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...embed import Embedder
from ...prompts import PromptSet
from .._text import replace_spans, sentence_spans
from ._risk import MessageRiskModel

Scored = tuple[np.ndarray, np.ndarray]
"""(sentence vectors, sentence risks) of one text's sentences."""


class Redactor:
    def __init__(self, risk: MessageRiskModel, embedder: Embedder, prompts: PromptSet,
                 ground_truths: Sequence[str] = ()) -> None:
        self.risk = risk
        self.embedder = embedder
        self.prompts = prompts
        self.truths = list(ground_truths)
        self._truth_vectors: np.ndarray | None = None

    def score(self, sentences: list[str]) -> Scored:
        """Vectors and risks of `sentences`."""
        vectors = self.embedder.embed(sentences, "query")
        return vectors, self.risk.probabilities(vectors, sentences)

    def redact(self, text: str, scored: Scored | None = None) -> tuple[str, list[dict[str, Any]]]:
        """`text` without its sentences at or above the act threshold, and what was done.

        `scored`: the sentences' vectors and risks when the caller has them already (they
        must be those of `sentence_spans(text)`)."""
        spans = sentence_spans(text)
        if not spans:
            return text, []
        sentences = [text[a:b] for a, b in spans]
        vectors, risks = scored if scored is not None else self.score(sentences)
        drop = [i for i in range(len(spans)) if risks[i] >= self.risk.act_threshold]
        if not drop:
            return text, []
        truth_vectors = self.truth_vectors()
        used: set[int] = set()
        replacements: dict[tuple[int, int], str] = {}
        done = []
        for i in drop:
            replacement = ""
            if truth_vectors is not None and len(used) < len(self.truths):
                sims = truth_vectors @ vectors[i]
                sims[list(used)] = -np.inf
                j = int(sims.argmax())
                used.add(j)
                replacement = f"Correction: {self.truths[j]}"
            replacements[spans[i]] = replacement
            done.append({"sentence": sentences[i][:400], "risk": round(float(risks[i]), 4),
                         "replaced_by": replacement[:400]})
        new = replace_spans(text, replacements)
        removed = sum(1 for d in done if not d["replaced_by"])
        if removed:
            note = self.prompts.render("redaction_note", count=removed).strip()
            new = f"{new}\n{note}" if new else note
        return new, done

    def residual_risk(self, text: str, scored: Scored | None = None) -> float:
        """Risk of the riskiest sentence of `text` that redaction keeps (below the act
        threshold); 0 when it keeps none."""
        spans = sentence_spans(text)
        if not spans:
            return 0.0
        risks = (scored if scored is not None else self.score([text[a:b] for a, b in spans]))[1]
        kept = risks[risks < self.risk.act_threshold]
        return float(kept.max(initial=0.0))

    def truth_vectors(self) -> np.ndarray | None:
        """The ground truths' vectors, embedded once per run (they do not change)."""
        if not self.truths:
            return None
        if self._truth_vectors is None:
            self._truth_vectors = self.embedder.embed(self.truths, "query")
        return self._truth_vectors
