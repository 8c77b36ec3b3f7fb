"""Word-level disguises that keep the claim (synonyms, hedges, negation noise, one claim
split across sentences), code-switching inside a sentence, and transliteration of
non-Latin scripts into Latin letters (`anyascii`, the `redteam` extra)."""

from __future__ import annotations

import random
import re
import tomllib
from functools import cache
from importlib import resources
from typing import Any

from ...errors import MissingExtraError
from ._base import Context, choose, transform

_WORD = re.compile(r"[A-Za-z][A-Za-z']*")
_SPLIT_AT = re.compile(r"\s(?:after|because|when|while|which|since|following|and|but|so)\s", re.IGNORECASE)


@cache
def word_lists() -> dict[str, Any]:
    return tomllib.loads(resources.files(__package__).joinpath("data", "words.toml").read_text(encoding="utf-8"))


def _match_case(word: str, new: str) -> str:
    if word.isupper() and len(word) > 1:
        return new.upper()
    return new[:1].upper() + new[1:] if word[:1].isupper() else new


def _swap_words(text: str, rng: random.Random, rate: float, table: dict[str, Any]) -> str:
    words = [m for m in _WORD.finditer(text) if m.group().lower() in table]
    chosen = {words[j].start() for j in choose(rng, words, rate)}

    def swap(m: re.Match[str]) -> str:
        if m.start() not in chosen:
            return m.group()
        options = table[m.group().lower()]
        return _match_case(m.group(), rng.choice(options) if isinstance(options, list) else options)

    return _WORD.sub(swap, text)


@transform("synonym", family="word", languages=("en",), rate=0.5,
           description="a share of the claim's common words replaced by near-synonyms (English)")
def synonym(text: str, rng: random.Random, context: Context, *, rate: float) -> str:
    return _swap_words(text, rng, rate, word_lists()["synonyms"])


def _frame(text: str, template: str) -> str:
    body = text.strip()
    lowered = body[:1].lower() + body[1:] if body[:2].istitle() or body[:1].isupper() and not body[1:2].isupper() else body
    return template.format(text=lowered)


@transform("hedge", family="word", languages=("en",),
           description="the claim behind a hedge (\"Reportedly, ...\", \"Some people say that ...\")")
def hedge(text: str, rng: random.Random, context: Context) -> str:
    return _frame(text, rng.choice(word_lists()["hedges"]))


@transform("negation-noise", family="word", languages=("en",),
           description="negations around the claim that do not deny it (\"It is not false that ...\")")
def negation_noise(text: str, rng: random.Random, context: Context) -> str:
    return _frame(text, rng.choice(word_lists()["negation_frames"]))


@transform("split", family="word", languages=("en",),
           description="the first sentence split in two at a conjunction or preposition near its middle")
def split(text: str, rng: random.Random, context: Context) -> str:
    end = re.search(r"[.!?](\s|$)|\n", text)
    stop = end.start() if end else len(text)
    cuts = [m for m in _SPLIT_AT.finditer(text, 0, stop)]
    if not cuts:
        return text
    middle = stop / 2
    cut = min(cuts, key=lambda m: abs(m.start() - middle))
    first, rest = text[:cut.start()].rstrip(" ,;"), text[cut.start() + 1:]
    lead = rng.choice(word_lists()["split_leads"])
    return f"{first}. {lead} {rest}"


@transform("code-switch", family="code-switch", languages=("en",), rate=0.5, to="fr",
           description="a share of the English words that have one replaced by their French (to=fr) or Spanish (to=es) word")
def code_switch(text: str, rng: random.Random, context: Context, *, rate: float, to: str) -> str:
    return _swap_words(text, rng, rate, word_lists()["codeswitch"][to])


@transform("transliterate", family="transliteration", languages=("hi", "ar", "zh", "ru", "el"),
           description="Hindi, Arabic, Chinese (and Russian, Greek) written in Latin letters (anyascii)")
def transliterate(text: str, rng: random.Random, context: Context) -> str:
    try:
        from anyascii import anyascii
    except ImportError:
        raise MissingExtraError("anyascii", "redteam", "the transliteration transform") from None
    # Chinese characters come out as run-together syllables ("ZhongGuo"): space them, as
    # people who write pinyin without tones do.
    out = []
    for ch in text:
        latin = anyascii(ch)
        if "\u4e00" <= ch <= "\u9fff" and latin:
            latin = f" {latin.lower()} "
        out.append(latin)
    return re.sub(r" {2,}", " ", "".join(out)).strip()
