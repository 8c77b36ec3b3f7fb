"""Fact-check reviews as publishers put them online, read into claims with their provenance.

Three shapes are read: schema.org `ClaimReview` JSON-LD anywhere in a JSON document (a
`DataFeed` of `DataFeedItem`s, a list, an `@graph`, or nested in an article), the same
embedded in a fact-check page's `<script type="application/ld+json">` blocks, and the
claims of Google's Fact Check Tools `claims:search` answers.

A pulled claim's id is derived from the review's URL and the claim's text (case and spacing
folded), so pulling the same review again finds the same claim, and a changed rating,
date or publisher updates it.
"""

from __future__ import annotations

import email.utils
import hashlib
import html
import json
import re
from dataclasses import dataclass
from datetime import date, datetime
from html.parser import HTMLParser
from typing import Any

from ..types import Claim, VerdictLabel
from ._text import clean_text, guess_language
from ._verdicts import normalize_verdict

#: Nesting deeper than this in a JSON-LD document is not searched (no legitimate feed nests
#: ClaimReviews so deep; the bound keeps a hostile document from exhausting the stack).
MAX_DEPTH = 64
_LANGUAGE_NAMES = {
    "english": "en", "french": "fr", "spanish": "es", "german": "de", "portuguese": "pt", "italian": "it",
    "dutch": "nl", "arabic": "ar", "hindi": "hi", "chinese": "zh", "russian": "ru", "turkish": "tr",
    "polish": "pl", "japanese": "ja", "korean": "ko", "indonesian": "id", "ukrainian": "uk",
}
_LANGUAGE_TAG = re.compile(r"^([a-zA-Z]{2})(?:[-_][a-zA-Z0-9]{1,8})*$")
_BANDS = (VerdictLabel.FALSE, VerdictLabel.MOSTLY_FALSE, VerdictLabel.MIXED, VerdictLabel.MOSTLY_TRUE, VerdictLabel.TRUE)


class ReviewProblem(ValueError):
    """One review cannot be read (the message says what is missing)."""


@dataclass(frozen=True)
class Review:
    """One claim as one publisher rated it."""

    claim: str
    rating: str
    """The publisher's rating text, as published ("Faux", "Pants on Fire!")."""
    url: str | None = None
    """The review (fact-check article) URL."""
    publisher: str | None = None
    date: str | None = None
    """The review's date, ISO 8601 (YYYY-MM-DD)."""
    language: str | None = None
    """ISO 639-1 code as published; None when the review does not say."""
    scale: VerdictLabel | None = None
    """The verdict a numeric rating (ratingValue on worst..best) gives, when there is one."""

    @property
    def id(self) -> str:
        return review_id(self.url or self.publisher or "", self.claim)

    def verdict(self) -> VerdictLabel:
        """The rating text normalised; a numeric rating decides when the text is unknown."""
        label = normalize_verdict(self.rating)
        if label is VerdictLabel.OTHER and self.scale is not None:
            return self.scale
        return label

    def to_claim(self) -> Claim:
        language = self.language or guess_language(self.claim)
        return Claim(
            id=self.id, text=self.claim, verdict=self.verdict(), verdict_original=self.rating,
            language=language, url=self.url, publisher=self.publisher, date=self.date,
        )


def review_id(review_url: str, claim: str) -> str:
    """`cr:` + a hash of the review URL and the claim text (case and spacing folded)."""
    key = review_url.strip() + "\n" + " ".join(claim.casefold().split())
    return "cr:" + hashlib.blake2b(key.encode(), digest_size=10).hexdigest()


# -- schema.org ClaimReview -----------------------------------------------------------------


def find_claimreviews(doc: Any) -> list[dict[str, Any]]:
    """Every object typed `ClaimReview` in a JSON(-LD) document, in document order."""
    found: list[dict[str, Any]] = []
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            continue
        if isinstance(node, list):
            stack.extend((item, depth + 1) for item in reversed(node))
        elif isinstance(node, dict):
            if _is_claimreview(node):
                found.append(node)
                continue
            stack.extend((value, depth + 1) for value in reversed(list(node.values())))
    return found


def _is_claimreview(node: dict[str, Any]) -> bool:
    kind = node.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return any(isinstance(k, str) and k.rsplit("/", 1)[-1].rsplit(":", 1)[-1] == "ClaimReview" for k in kinds)


def review_from_claimreview(item: dict[str, Any], *, page_url: str | None = None) -> Review:
    """A `Review` from one ClaimReview object; `page_url` stands in for a missing `url`.

    Raises:
        ReviewProblem: no claim text, or no rating that can be read.
    """
    reviewed = _first_dict(item.get("itemReviewed")) or {}
    claim = _text(item.get("claimReviewed")) or _text(reviewed.get("text")) or _text(reviewed.get("name"))
    if not claim:
        raise ReviewProblem("no claimReviewed text")
    rating = _first_dict(item.get("reviewRating"))
    if rating is None:
        raise ReviewProblem("no reviewRating")
    text = _text(rating.get("alternateName")) or _text(rating.get("name"))
    scale = _scale(rating)
    if not text and scale is None:
        raise ReviewProblem("reviewRating has no alternateName, name or numeric ratingValue")
    if not text:  # keep what was published: the number on its scale
        text = f"{rating['ratingValue']} (scale {rating.get('worstRating', 1)}-{rating.get('bestRating', 5)})"
    return Review(
        claim=claim,
        rating=text,
        url=_text(item.get("url")) or page_url,
        publisher=_name(item.get("author")) or _name(item.get("publisher")),
        date=iso_date(item.get("datePublished")),
        language=language_code(item.get("inLanguage")),
        scale=scale,
    )


def _scale(rating: dict[str, Any]) -> VerdictLabel | None:
    """A numeric rating on worst..best mapped onto five bands (None when not numeric)."""
    try:
        value = float(rating["ratingValue"])
        best = float(rating.get("bestRating", 5))
        worst = float(rating.get("worstRating", 1))
    except (KeyError, TypeError, ValueError):
        return None
    if best <= worst or not worst <= value <= best:
        return None
    position = (value - worst) / (best - worst)
    return _BANDS[min(4, max(0, int(position * 5 - 1e-9)))]


# -- Google Fact Check Tools ----------------------------------------------------------------


def reviews_from_google(answer: Any) -> tuple[list[Review], list[str]]:
    """The reviews of one `claims:search` answer page, and a problem line per unreadable one."""
    if not isinstance(answer, dict):
        raise ReviewProblem("the answer is not a JSON object")
    reviews, problems = [], []
    for number, entry in enumerate(answer.get("claims") or [], start=1):
        claim = _text(entry.get("text")) if isinstance(entry, dict) else None
        for review in (entry.get("claimReview") or []) if isinstance(entry, dict) else []:
            if not isinstance(review, dict):
                continue
            rating = _text(review.get("textualRating"))
            if not claim or not rating:
                problems.append(f"claim #{number}: no {'text' if not claim else 'textualRating'}")
                continue
            publisher = review.get("publisher") if isinstance(review.get("publisher"), dict) else {}
            reviews.append(Review(
                claim=claim, rating=rating, url=_text(review.get("url")),
                publisher=_text(publisher.get("name")) or _text(publisher.get("site")),
                date=iso_date(review.get("reviewDate")), language=language_code(review.get("languageCode")),
            ))
    return reviews, problems


# -- fact-check pages -----------------------------------------------------------------------


class _JsonLdBlocks(HTMLParser):
    """The text of every `<script type="application/ld+json">` of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self._parts: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            kind = (dict(attrs).get("type") or "").split(";")[0].strip().lower()
            self._parts = [] if kind == "application/ld+json" else None

    def handle_data(self, data: str) -> None:
        if self._parts is not None:
            self._parts.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._parts is not None:
            self.blocks.append("".join(self._parts))
            self._parts = None


_WRAPPERS = re.compile(r"^\s*(?:<!--|/\*\s*<!\[CDATA\[\s*\*/)|(?:-->|/\*\s*\]\]>\s*\*/)\s*$")


def jsonld_documents(page: str) -> tuple[list[Any], int]:
    """The parsed JSON-LD blocks of an HTML page, and how many blocks were not valid JSON."""
    parser = _JsonLdBlocks()
    parser.feed(page)
    parser.close()
    documents, broken = [], 0
    for block in parser.blocks:
        text = _WRAPPERS.sub("", block).strip()
        if not text:
            continue
        try:
            # strict=False: raw newlines inside strings are common in hand-written markup.
            documents.append(json.loads(text, strict=False))
        except (ValueError, RecursionError):
            broken += 1
    return documents, broken


# -- small readers ---------------------------------------------------------------------------


def _text(value: Any) -> str | None:
    """A non-empty cleaned string, or None (entities that sites double-escape are decoded)."""
    if isinstance(value, list):
        value = next((v for v in value if isinstance(v, str) and v.strip()), None)
    if not isinstance(value, str):
        return None
    cleaned = " ".join(clean_text(html.unescape(value)).split())
    return cleaned or None


def _first_dict(value: Any) -> dict[str, Any] | None:
    if isinstance(value, list):
        value = next((v for v in value if isinstance(v, dict)), None)
    return value if isinstance(value, dict) else None


def _name(value: Any) -> str | None:
    """An author or publisher: an object's `name` (or `alternateName`, `url`), or a string."""
    if isinstance(value, list):
        names = [n for n in (_name(v) for v in value) if n]
        return names[0] if names else None
    if isinstance(value, dict):
        return _text(value.get("name")) or _text(value.get("alternateName")) or _text(value.get("url"))
    return _text(value)


def language_code(value: Any) -> str | None:
    """ISO 639-1 from a BCP-47 tag ("pt-BR"), a language name ("French"), or a schema.org
    Language object; None when it says nothing usable."""
    if isinstance(value, dict):
        return language_code(value.get("alternateName")) or language_code(value.get("name"))
    if isinstance(value, list):
        return next((c for c in map(language_code, value) if c), None)
    if not isinstance(value, str):
        return None
    text = value.strip()
    match = _LANGUAGE_TAG.match(text)
    if match:
        return match.group(1).lower()
    return _LANGUAGE_NAMES.get(text.casefold())


def iso_date(value: Any) -> str | None:
    """YYYY-MM-DD from an ISO 8601 date or date-time, or an RFC 2822 date; else None."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        pass
    match = re.match(r"^(\d{4})-(\d{2})-(\d{2})", text)
    if match:
        try:
            return date(*map(int, match.groups())).isoformat()
        except ValueError:
            return None
    try:
        return email.utils.parsedate_to_datetime(text).date().isoformat()
    except (TypeError, ValueError, IndexError):
        return None
