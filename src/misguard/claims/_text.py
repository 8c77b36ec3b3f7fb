"""Text handling for the claim guard: cleaning, task-instruction stripping, segmentation
with character offsets, a script-based language guess, and lexical cues.

Everything here is deterministic, dependency-free and linear in the input length, so bad
input (huge, binary, mixed scripts, zero-width characters) costs bounded time.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

#: Zero-width and bidi control characters that attackers use to split words invisibly, and
#: Arabic short-vowel marks and tatweel: optional in Arabic writing (most text, and so most
#: of e5's training data, has none), so adding them changes a text's tokens without
#: changing what it says. Stripping them raised the Arabic dev queries' pairwise AUC
#: against their own claim from 0.930 to 0.945. Also the bidi isolates and the Arabic
#: letter mark (bidi controls like the embeddings above), fillers that render as nothing
#: (Mongolian vowel separator, Hangul fillers, Khmer inherent vowels, combining grapheme
#: joiner), variation selectors and tag characters: `misguard bench redteam` found the
#: isolates left around a text cut its detection from 85% to 21%.
_INVISIBLE = dict.fromkeys(
    [
        *map(ord, "\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff\u202a\u202b\u202c\u202d\u202e\u00ad"),
        *range(0x064B, 0x0653), 0x0670, 0x0640,
        *range(0x2066, 0x206A), 0x061C, 0x180E, 0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x17B4, 0x17B5,
        *range(0xFE00, 0xFE10), *range(0xE0000, 0xE0080),
    ],
    None,
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")
_SPACES = re.compile(r"[ \t\u00a0\u3000]+")
#: anything `clean_with_offsets` would drop or replace (most texts hold none of it)
_NOT_CLEAN = re.compile(
    "[" + "".join(re.escape(chr(c)) for c in _INVISIBLE) + r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd\t\u00a0\u3000]| {2}"
)

#: Task instructions that wrap a claim (the paper's attacks and close variants). Matched at
#: the start of the text, repeatedly, case-insensitively.
_INSTRUCTIONS = [
    r"does\s+this\s+(?:text|claim|post|statement)\s+contain\s+(?:any\s+)?misinformation\s*\??",
    r"is\s+(?:this|the\s+following)\s+(?:text|claim|statement)\s+(?:true|false|accurate)\s*\??",
    r"translate\s+(?:this\s+text\s+)?(?:from\s+[\w\- ]{2,30}?\s+)?(?:in)?to\s+[\w\-]{2,20}\s*[:.]",
    r"translate\s+(?:the\s+following(?:\s+text)?)\s*[:.]",
    r"answer\s+the\s+following\s+(?:multiple[- ]choice\s+)?question\s*[:.]",
    r"summari[sz]e\s+(?:the\s+following|this)\s+(?:text|article|passage)?[^:\n]{0,60}:",
    r"discuss\s+this\s+headline[^:\n]{0,60}[:.]",
    r"convert\s+this\s+text\s+to[^:\n]{0,80}[:.]",
]
_INSTRUCTION_RE = re.compile(r"^\s*(?:" + "|".join(_INSTRUCTIONS) + r")\s*", re.IGNORECASE)

#: Sentence ends in the scripts we see: Latin/Cyrillic, CJK, Devanagari danda, Arabic.
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f\u0964\u061f;\uff1b])\s*|\n+")
_MCQ_OPTION = re.compile(r"^\s*(?:[A-Ha-h]|[1-8])[.)\]:]\s+", re.MULTILINE)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
#: Every Unicode decimal digit in the Basic Multilingual Plane -> its ASCII digit.
_ASCII_DIGITS = {cp: ord("0") + unicodedata.digit(chr(cp)) for cp in range(0x10000)
                 if chr(cp).isdecimal() and cp > 0x7F}

_SCRIPTS = [
    ("ar", re.compile(r"[\u0600-\u06ff]")),
    ("hi", re.compile(r"[\u0900-\u097f]")),
    ("zh", re.compile(r"[\u4e00-\u9fff]")),
    ("ja", re.compile(r"[\u3040-\u30ff]")),
    ("ko", re.compile(r"[\uac00-\ud7af]")),
    ("ru", re.compile(r"[\u0400-\u04ff]")),
    ("el", re.compile(r"[\u0370-\u03ff]")),
    ("he", re.compile(r"[\u0590-\u05ff]")),
]
_LATIN_HINTS = {
    "fr": {"le", "la", "les", "des", "est", "une", "du", "que", "pour", "dans", "qui", "sur", "pas", "au", "aux", "ont", "été"},
    "es": {"el", "los", "las", "del", "es", "una", "que", "por", "para", "con", "se", "su", "ha", "han", "fue", "en"},
    "de": {"der", "die", "das", "und", "ist", "nicht", "mit", "ein", "eine", "den", "von", "zu", "auf", "für"},
    "pt": {"o", "os", "as", "do", "da", "não", "uma", "com", "para", "em", "que", "foi", "são"},
    "en": {"the", "is", "are", "was", "of", "and", "to", "in", "that", "it", "for", "on", "with", "has", "have", "by"},
}
_NAMED_LANGUAGES = {
    "french": "fr", "spanish": "es", "arabic": "ar", "hindi": "hi", "chinese": "zh",
    "german": "de", "portuguese": "pt", "russian": "ru", "japanese": "ja", "korean": "ko",
}
_TRANSLATE_FROM = re.compile(r"translate\s+(?:this\s+text\s+)?from\s+([a-z]+)", re.IGNORECASE)

_STOPWORDS = frozenset(
    """a an the of to in on at for by with from and or but not no is are was were be been being
    it its this that these those as has have had do does did will would can could should may might
    must shall than then there their they them he she his her we our you your i me my so if into
    about after before over under up down out just also very more most some any all each such only
    why what which who whom how when where while because said says say new""".split()
)


@dataclass(frozen=True)
class Segment:
    """A piece of the checked text with its character offsets in the ORIGINAL text."""

    text: str
    start: int
    end: int
    kind: str  # "full", "body", "sentence", "option", "stem"


def clean_text(text: str) -> str:
    """NFC-normalise, drop invisible/control characters and collapse runs of spaces.

    Keeps the length roughly aligned with the input; offsets are computed on the cleaned
    text, which is what `check` reports and returns.
    """
    text = unicodedata.normalize("NFC", text).translate(_INVISIBLE)
    text = _CONTROL.sub(" ", text)
    return _SPACES.sub(" ", text)


def clean_with_offsets(text: str) -> tuple[str, list[int]]:
    """`clean_text`, plus for each kept character its index in `text` (and a final
    sentinel `len(text)`), so evidence spans can point into what the user sent."""
    if not _NOT_CLEAN.search(text):  # nothing to drop or replace: the identity map
        return text, list(range(len(text) + 1))
    out: list[str] = []
    where: list[int] = []
    previous_space = False
    for i, ch in enumerate(text):
        if ord(ch) in _INVISIBLE:
            continue
        if _CONTROL.match(ch) or ch in " \t\u00a0\u3000":
            if previous_space:
                continue
            ch, previous_space = " ", True
        else:
            previous_space = False
        out.append(ch)
        where.append(i)
    where.append(len(text))
    return "".join(out), where


def strip_instructions(text: str) -> tuple[str, int, list[str]]:
    """Remove leading task instructions; returns (rest, offset of rest, instructions removed)."""
    removed: list[str] = []
    offset = 0
    while True:
        match = _INSTRUCTION_RE.match(text, offset)
        if not match or match.end() == offset:
            break
        removed.append(text[offset : match.end()].strip())
        offset = match.end()
    return text[offset:], offset, removed


def segment(text: str, *, max_segments: int = 64, sentence_words: int = 0) -> list[Segment]:
    """Split a cleaned text into the pieces worth comparing with stored claims.

    Always the whole text (minus instructions); then MCQ options and the question stem;
    then sentences, only when the body holds at least `sentence_words` words (`words`:
    a short text's sentences say little its whole does not, and embedding them costs as
    much again). Capped at `max_segments` (the whole text always comes first).
    """
    body, offset, _ = strip_instructions(text)
    segments: list[Segment] = []
    lead = len(body) - len(body.lstrip())
    body_start = offset + lead
    body = body.strip()
    if not body:
        return [Segment(text.strip(), 0, len(text), "full")] if text.strip() else []
    segments.append(Segment(body, body_start, body_start + len(body), "body"))
    seen = {body}

    def add(piece: str, start: int, kind: str) -> None:
        stripped = piece.strip()
        if len(_WORD.findall(stripped)) < 3 and not _has_cjk(stripped):
            return
        if stripped in seen:
            return
        lead = len(piece) - len(piece.lstrip())
        seen.add(stripped)
        segments.append(Segment(stripped, start + lead, start + lead + len(stripped), kind))

    options = list(_MCQ_OPTION.finditer(body))
    if len(options) >= 2:
        stem_end = options[0].start()
        add(body[:stem_end], body_start, "stem")
        for i, match in enumerate(options):
            end = options[i + 1].start() if i + 1 < len(options) else len(body)
            add(body[match.end() : end], body_start + match.end(), "option")
    if words(body) < sentence_words:
        return segments[:max_segments]
    position = 0
    for match in _SENTENCE_END.finditer(body):
        if match.start() > position:
            add(body[position : match.start()], body_start + position, "sentence")
        position = match.end()
        if len(segments) >= max_segments:
            break
    if position < len(body) and len(segments) < max_segments:
        add(body[position:], body_start + position, "sentence")
    # Only one sentence: it duplicates the body, nothing more to add.
    return segments[:max_segments]


def words(text: str) -> int:
    """A script-independent length in words: each CJK character counts as one (those
    scripts do not separate words; e5 spends about a token on each), and a text counts
    at least a sixth of its characters (so one endless "word" is long too)."""
    runs = _CJK_RUN.findall(text)
    return max(len(_WORD.findall(text)) - len(runs) + sum(map(len, runs)), len(text) // 6)


_CJK_RUN = re.compile(r"[\u4e00-\u9fff\u3040-\u30ff]+")


def _has_cjk(text: str) -> bool:
    return _CJK_RUN.search(text) is not None


def guess_language(text: str) -> str:
    """ISO 639-1 guess from the script, or from function words for Latin script.

    A stated source language in a translation request ("Translate from French ...")
    wins. Returns "und" when nothing is known.
    """
    stated = _TRANSLATE_FROM.search(text[:200])
    if stated and stated.group(1).lower() in _NAMED_LANGUAGES:
        return _NAMED_LANGUAGES[stated.group(1).lower()]
    sample = text[:2000]
    if not sample.isascii():  # ASCII holds none of these scripts' letters (most texts checked)
        counts = {lang: len(rx.findall(sample)) for lang, rx in _SCRIPTS}
        letters = sum(ch.isalpha() for ch in sample) or 1
        lang, best = max(counts.items(), key=lambda kv: kv[1])
        if best / letters > 0.2:
            return lang
    words = [w.lower() for w in _WORD.findall(sample)]
    if not words:
        return "und"
    scores = {lang: sum(w in hints for w in words) for lang, hints in _LATIN_HINTS.items()}
    lang, best = max(scores.items(), key=lambda kv: kv[1])
    return lang if best else "und"


def content_words(text: str) -> set[str]:
    """Lower-cased words that carry content (no stop words, no 1-2 letter tokens)."""
    return {w for w in map(str.lower, set(_WORD.findall(text))) if len(w) > 2} - _STOPWORDS


def numbers(text: str) -> set[str]:
    """Numbers without thousands separators ("1,000" -> "1000"), in ASCII digits whatever
    the script ("١٩٩٤" and "१९९४" -> "1994"), so they compare across languages."""
    return {n.replace(",", "").translate(_ASCII_DIGITS) for n in _NUMBER.findall(text)}


def capitalised(text: str) -> set[str]:
    """Capitalised words not at a sentence start: a cheap named-entity proxy."""
    return set(map(str.lower, _CAPITALISED.findall(text)))


_CAPITALISED = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]{2,}|[A-Z]{2,})\b")
