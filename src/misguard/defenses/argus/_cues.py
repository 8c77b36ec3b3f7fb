"""Rhetorical cues of misinformation that do not depend on the topic.

A risk model fitted on sentence embeddings alone learns what one task source's
misinformation is *about* as much as how it is argued, and transfers poorly to tasks written
by another hand (docs/argus.md). These counts describe only how a sentence argues:
    absolute          universal or absolute wording ("always", "never", "only", "guarantees");
    proof             claims of settled proof ("proves", "obviously", "the truth is");
    attribution       reported speech ("according to", "claims", "says", "argues");
    informal_source   informal or invented sources (a blog, a forum post, a viral video);
    vague_authority   unnamed authorities ("experts", "studies", "many engineers");
    dismissal         dismissing the opposite view ("myth", "overblown", "just", "no need");
    hedge             hedged, conditional wording typical of careful statements ("about",
                      "typically", "may", "unless");
    negation          negations;
and six shape features: a quotation, a quotation introduced by a colon, the share of digits per
word, parentheses, semicolons, and the log of the word count.
The word lists were fixed from the usual categories of misinformation rhetoric (appeals to
authority, invented sources, absolutes, certainty) before any figure was measured, and are
versioned (`CUES_VERSION`): a risk model records the version it was fitted with.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

#: Bumped whenever a list or a feature changes (a model fitted on another version is refused).
CUES_VERSION = 1


def _words(*words: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE)


_LEXICON: dict[str, re.Pattern[str]] = {
    "absolute": _words(
        "always", "never", "all", "every", "everyone", "everything", "none", "nothing", "no one", "nobody",
        "completely", "entirely", "totally", "fully", "absolutely", "guarantee[sd]?", "certainly", "definitely",
        "impossible", "only", "solely", "zero", "eliminates?", "any", "whatsoever", "100 ?%"),
    "proof": _words(
        "proves?", "proven", "proof", "obviously", "clearly", "no doubt", "beyond doubt", "settled", "the truth is",
        "everyone knows", "undeniabl[ey]", "the real reason", "in reality"),
    "attribution": _words(
        "according to", "claims?", "claimed", "states?", "stated", "says", "said", "argues?", "argued", "writes?",
        "wrote", "reports?", "reported", "insists?", "declares?", "asserts?", "suggests?", "notes?", "explains?"),
    "informal_source": _words(
        "blogs?", "forums?", "posts?", "viral", "videos?", "podcasts?", "influencers?", "social media", "tweets?",
        "reddit", "quora", "linkedin", "youtube", "tiktok", "facebook", "websites?", "articles?", "whitepapers?",
        "newsletters?", "a friend", "someone", "insiders?", "sources?", "threads?", "comments?", "webinar", "talk",
        "interview", r"anecdot\w*", "testimonials?"),
    "vague_authority": _words(
        "experts?", "studies", "study", "research(?:ers)?", "scientists", "doctors", "engineers", "professionals",
        "many people", "most people", "specialists", "authorities", "industry", "veterans?", "seasoned"),
    "dismissal": _words(
        "myths?", "outdated", "overblown", "hype", "unnecessary", "waste", "nothing to do with", "no need",
        "don't need", "doesn't matter", "irrelevant", "just", "simply", "merely", "pointless", "overrated"),
    "hedge": _words(
        "about", "approximately", "roughly", "around", "typically", "usually", "often", "may", "might", "can",
        "generally", "in most cases", "depends?", "depending", r"e\.g\.", r"i\.e\.", "such as", "unless", "although",
        "however", "whereas", "while"),
    "negation": _words("not", "no", "isn't", "aren't", "doesn't", "don't", "cannot", "can't", "won't"),
}
_QUOTE = re.compile("[\"'\u2018\u2019\u201c\u201d]")
_COLON_QUOTE = re.compile(":\\s*[\"'\u2018\u201c]")
_DIGIT = re.compile(r"\d")

#: Feature names, in column order.
CUE_NAMES: tuple[str, ...] = (*_LEXICON, "quote", "colon_quote", "digits_per_word", "parentheses", "semicolons",
                              "log_words")


def _one(text: str) -> list[float]:
    words = max(1, len(text.split()))
    row = [float(len(rx.findall(text))) for rx in _LEXICON.values()]
    row += [float(len(_QUOTE.findall(text)) > 1), float(len(_COLON_QUOTE.findall(text))),
            len(_DIGIT.findall(text)) / words, float(text.count("(")), float(text.count(";")), float(np.log(words))]
    return row


def cue_features(texts: Sequence[str]) -> np.ndarray:
    """(len(texts), len(CUE_NAMES)) cue counts of each text (a sentence)."""
    if isinstance(texts, str):
        raise TypeError("cue_features takes a sequence of sentences, not one string")
    return np.asarray([_one(t) for t in texts], dtype=np.float64).reshape(len(texts), len(CUE_NAMES))
