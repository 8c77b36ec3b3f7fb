"""Character-level disguises: look-alike letters from other scripts, invisible and bidi
control characters, leetspeak, spaced letters, punctuation inside words, diacritics,
fullwidth letters. Each changes what a tokenizer sees while a reader sees the same words
(the families of garak's buffs, PyRIT's character converters and TextAttack's character
swaps)."""

from __future__ import annotations

import random
import re
import unicodedata

from ._base import Context, choose, transform

#: Latin letter -> look-alikes (Cyrillic first, then Greek), from Unicode's confusables.
HOMOGLYPHS: dict[str, dict[str, str]] = {
    "cyrillic": {
        "a": "\u0430", "c": "\u0441", "d": "\u0501", "e": "\u0435", "h": "\u04bb", "i": "\u0456", "j": "\u0458",
        "l": "\u04cf", "o": "\u043e", "p": "\u0440", "q": "\u051b", "s": "\u0455", "w": "\u051d", "x": "\u0445",
        "y": "\u0443", "A": "\u0410", "B": "\u0412", "C": "\u0421", "E": "\u0415", "H": "\u041d", "I": "\u0406",
        "J": "\u0408", "K": "\u041a", "M": "\u041c", "O": "\u041e", "P": "\u0420", "S": "\u0405", "T": "\u0422",
        "X": "\u0425", "Y": "\u04ae",
    },
    "greek": {
        "i": "\u03b9", "k": "\u03ba", "o": "\u03bf", "u": "\u03c5", "v": "\u03bd", "A": "\u0391", "B": "\u0392",
        "E": "\u0395", "H": "\u0397", "I": "\u0399", "K": "\u039a", "M": "\u039c", "N": "\u039d", "O": "\u039f",
        "P": "\u03a1", "T": "\u03a4", "X": "\u03a7", "Y": "\u03a5", "Z": "\u0396",
    },
}
ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff")
#: isolates (LRI, RLI, FSI ... PDI) and embeddings/overrides (LRE, RLE, LRO, RLO ... PDF)
BIDI_OPEN = ("\u2066", "\u2067", "\u2068", "\u202a", "\u202b", "\u202d", "\u202e")
BIDI_CLOSE = {"\u2066": "\u2069", "\u2067": "\u2069", "\u2068": "\u2069"}
LEET = {"a": "4", "e": "3", "o": "0", "i": "1", "s": "5", "t": "7", "b": "8", "g": "9"}
COMBINING = ("\u0301", "\u0300", "\u0308", "\u0302", "\u0303")
_WORD = re.compile(r"[^\W\d_]+")


def _replace_letters(text: str, rng: random.Random, rate: float, table: dict[str, list[str]]) -> str:
    positions = [i for i, ch in enumerate(text) if ch in table]
    chars = list(text)
    for j in choose(rng, positions, rate):
        i = positions[j]
        chars[i] = rng.choice(table[chars[i]])
    return "".join(chars)


@transform("homoglyph", family="character", rate=0.6, scripts="cyrillic,greek",
           description="letters replaced by look-alikes from other scripts (a share of the letters that have one)")
def homoglyph(text: str, rng: random.Random, context: Context, *, rate: float, scripts: str) -> str:
    table: dict[str, list[str]] = {}
    for script in scripts.split(","):
        for latin, other in HOMOGLYPHS[script.strip()].items():
            table.setdefault(latin, []).append(other)
    return _replace_letters(text, rng, rate, table)


@transform("zero-width", family="character", rate=0.3,
           description="invisible zero-width characters inserted between letters of a share of the words")
def zero_width(text: str, rng: random.Random, context: Context, *, rate: float) -> str:
    words = list(_WORD.finditer(text))
    out, last = [], 0
    chosen = set(choose(rng, words, rate))
    for j, m in enumerate(words):
        out.append(text[last:m.start()])
        word = m.group()
        if j in chosen and len(word) > 1:
            cut = rng.randrange(1, len(word))
            word = word[:cut] + rng.choice(ZERO_WIDTH) + word[cut:]
        out.append(word)
        last = m.end()
    out.append(text[last:])
    return "".join(out)


@transform("bidi", family="character", rate=0.3,
           description="bidi controls (isolates, embeddings, overrides) around the text and a share of its words")
def bidi(text: str, rng: random.Random, context: Context, *, rate: float) -> str:
    def wrap(piece: str) -> str:
        opener = rng.choice(BIDI_OPEN)
        return opener + piece + BIDI_CLOSE.get(opener, "\u202c")

    words = list(_WORD.finditer(text))
    chosen = set(choose(rng, words, rate, at_least_one=False))
    out, last = [], 0
    for j, m in enumerate(words):
        out.append(text[last:m.start()])
        out.append(wrap(m.group()) if j in chosen else m.group())
        last = m.end()
    out.append(text[last:])
    return wrap("".join(out))


@transform("leet", family="character", rate=0.5, letters="aeo",
           description="leetspeak: a share of the letters a, e, o (by default) written as digits (4, 3, 0)")
def leet(text: str, rng: random.Random, context: Context, *, rate: float, letters: str) -> str:
    table = {ch: [LEET[ch]] for ch in letters if ch in LEET}
    table.update({ch.upper(): [LEET[ch]] for ch in letters if ch in LEET})
    return _replace_letters(text, rng, rate, table)


@transform("spacing", family="character", rate=0.5, min_letters=6, sep=" ",
           description="s p a c e d letters in a share of the long words")
def spacing(text: str, rng: random.Random, context: Context, *, rate: float, min_letters: int, sep: str) -> str:
    words = [m for m in _WORD.finditer(text) if len(m.group()) >= min_letters]
    chosen = {words[j].start() for j in choose(rng, words, rate)}
    return _WORD.sub(lambda m: sep.join(m.group()) if m.start() in chosen else m.group(), text)


@transform("punctuation", family="character", rate=0.5, min_letters=5, marks="*._-",
           description="a punctuation mark inside a share of the words (vac*cine, vac.cine)")
def punctuation(text: str, rng: random.Random, context: Context, *, rate: float, min_letters: int, marks: str) -> str:
    words = [m for m in _WORD.finditer(text) if len(m.group()) >= min_letters]
    chosen = {words[j].start() for j in choose(rng, words, rate)}

    def cut(m: re.Match[str]) -> str:
        word = m.group()
        if m.start() not in chosen:
            return word
        i = rng.randrange(2, len(word) - 1)
        return word[:i] + rng.choice(marks) + word[i:]

    return _WORD.sub(cut, text)


@transform("diacritics", family="character", rate=0.4,
           description="combining accents on a share of the Latin vowels (vàccïne)")
def diacritics(text: str, rng: random.Random, context: Context, *, rate: float) -> str:
    table = {v: [v + mark for mark in COMBINING] for v in "aeiouAEIOU"}
    return unicodedata.normalize("NFC", _replace_letters(text, rng, rate, table))


@transform("fullwidth", family="character", rate=0.5,
           description="a share of the ASCII letters and digits as their fullwidth forms")
def fullwidth(text: str, rng: random.Random, context: Context, *, rate: float) -> str:
    table = {chr(c): [chr(c + 0xFEE0)] for c in range(0x21, 0x7F) if chr(c).isalnum()}
    return _replace_letters(text, rng, rate, table)


@transform("case", family="character", rate=0.5,
           description="a share of the letters in the other case (rAnDoM cAsE)")
def case(text: str, rng: random.Random, context: Context, *, rate: float) -> str:
    positions = [i for i, ch in enumerate(text) if ch.isalpha() and ch.swapcase() != ch]
    chars = list(text)
    for j in choose(rng, positions, rate):
        chars[positions[j]] = chars[positions[j]].swapcase()
    return "".join(chars)
