"""Undo the character-level disguises an adversary puts on a text, keeping for every
character the index of the input character it came from (so evidence offsets still point
into what the user sent).

Steps (`UNMASK_STEPS`, run in this order; each a no-op on ordinary text):
- `compat`: fullwidth, mathematical, circled letters and ligatures to their plain letters
  (NFKC of those characters only: superscripts, fractions and CJK punctuation are kept);
- `confusables`: look-alike letters of another script to the text's dominant script, in
  words that mix scripts, and whole words written in look-alikes of the dominant script
  (Unicode's confusables, UTS #39; table in `data/confusables.json`);
- `diacritics`: accents dropped from Latin letters when the text reads as English once
  they are gone; in French or Spanish, the accents their spelling does not use (`ORTHOGRAPHY`:
  "ã", "ì" or "ö" in French; a grave accent or a second accented vowel in a Spanish word);
- `leet`: digits and @/$ read as letters in a word of at least `LEET_MIN_LENGTH`
  characters with no more digits than letters ("v4cc1n3s", "th3", "l4"); numbers, a number with its
  unit or ordinal, model names and upper-case codes ("5G", "1918", "3rd", "Win10", "H1N1",
  "F35") are left alone;
- `spaced`: runs of at least `SPACED_MIN_RUN` single letters joined ("v a c c i n e");
- `separators`: a `*`, `_`, `·`, `•`, `|` or `~` between two letters removed ("vac*cine"),
  and a dot between two lowercase letters unless a domain name ends there ("doc.tors");
- `case`: in a text written in random case ("BlEaCh cUrEs ThE fLu": at least
  `CASE_MIN_SHARE` of its cased words, and `CASE_MIN_WORDS` of them, switch case twice or
  more inside the word), every word that is neither lower, Title nor upper case is
  lowercased ("iPhone" or "McDonald" in an ordinary text stay as they are; links, handles
  and hashtags are never counted or changed).

Constants were chosen on half of the multilingual dev set's claims (the other half is
what `misguard bench redteam` reports on): docs/BENCHMARKS.md, "Red team".
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from functools import cache
from importlib import resources

from ._text import guess_language

UNMASK_STEPS = ("compat", "confusables", "diacritics", "leet", "spaced", "separators", "case")
DEFAULT_UNMASK = UNMASK_STEPS
#: two: short function words ("l4", "s3", "t0") carry much of a leetspoken text; the
#: first dev-split run, at three, missed 12 of 160 French and Spanish texts on them
LEET_MIN_LENGTH = 2
SPACED_MIN_RUN = 4
#: accents are dropped from an English text only when at least this share of its Latin
#: letters carry one (the dev split's English queries: at most 0.1%, names; the
#: `diacritics` transform at its default rate: 13% or more)
DIACRITICS_MIN_SHARE = 0.03
#: the same for French and Spanish texts, whose spelling is accented (the dev split: at most
#: 0.054 undisguised, 0.160 or more under the `diacritics` transform)
FOREIGN_MARKS_MIN_SHARE = 0.1
#: and at least this many Latin letters: below, a few accents make a high share
FOREIGN_MARKS_MIN_LETTERS = 40
#: share of a text's cased words (3+ letters) that switch case twice or more, from which the
#: text counts as written in random case (the dev split: at most 0.07 in undisguised queries,
#: names such as "McCartney"; the `case` transform at its default rate: 0.29 or more)
CASE_MIN_SHARE = 0.2
#: and at least this many such words (names alone, "BlackBerry" and "McCain" in one LIAR
#: statement, are not a disguise; the dev split's disguised queries: 5 or more)
CASE_MIN_WORDS = 4
LEET = {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"}
_COMPAT_TAGS = ("<font>", "<wide>", "<circle>", "<compat>", "<narrow>")
_SEPARATORS = "*_\u00b7\u2022|~"
#: scripts written in separate letters, where leetspeak and separators inside words occur
#: (a middle dot between Chinese characters separates the parts of a name)
_ALPHABETS = frozenset({"latin", "cyrillic", "greek"})
_ALPHA_LETTER = r"[A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u052f]"
#: a word that may hold leetspeak (not a handle, hashtag or price: "@jo", "#tag", "$5")
_TOKEN = re.compile(r"(?<![\w@#$])[^\W_](?:[^\W_]|[@$])*")
_LETTER_RUN = re.compile(r"[^\W\d_]+")
#: at least SPACED_MIN_RUN single letters, each followed by one space but the last
_SPACED = re.compile(r"(?<![^\W_])(?:[^\W\d_] ){%d,}[^\W\d_](?![^\W_])" % (SPACED_MIN_RUN - 1))
_MAYBE_DISGUISED = re.compile(r"[^\x00-\x7f]|\d|[@$*_|~]|\b\w \w \w|[a-z][A-Z]")


@cache
def _tables() -> tuple[dict[str, str], dict[str, str]]:
    data = json.loads(resources.files("misguard.claims").joinpath("data", "confusables.json").read_text(encoding="utf-8"))
    return data["to_latin"], data["to_cyrillic"]


def _script(ch: str) -> str | None:
    o = ord(ch)
    if ch.isascii():
        return "latin" if ch.isalpha() else None
    if 0x00C0 <= o <= 0x024F or 0x1E00 <= o <= 0x1EFF or 0x0250 <= o <= 0x02AF:
        return "latin"
    if 0x0400 <= o <= 0x052F:
        return "cyrillic"
    if 0x0370 <= o <= 0x03FF or 0x1F00 <= o <= 0x1FFF:
        return "greek"
    if 0x0530 <= o <= 0x058F:
        return "armenian"
    if 0x13A0 <= o <= 0x13FF or 0xAB70 <= o <= 0xABBF:
        return "cherokee"
    return "other" if ch.isalpha() else None


def _map_chars(text: str, where: list[int], fn) -> tuple[str, list[int]]:
    """Replace each character by fn(i, ch) (a string, possibly empty or longer)."""
    out: list[str] = []
    idx: list[int] = []
    for i, ch in enumerate(text):
        new = fn(i, ch)
        out.append(new)
        idx.extend([where[i]] * len(new))
    return "".join(out), idx


def _sub(text: str, where: list[int], pattern: re.Pattern[str], fn) -> tuple[str, list[int]]:
    """Replace each match by fn(match) -> list of (char, input index in `text`)."""
    out: list[str] = []
    idx: list[int] = []
    last = 0
    for m in pattern.finditer(text):
        pieces = fn(m)
        if pieces is None:
            continue
        out.append(text[last:m.start()])
        idx.extend(where[last:m.start()])
        for ch, i in pieces:
            out.append(ch)
            idx.append(where[i])
        last = m.end()
    out.append(text[last:])
    idx.extend(where[last:])
    return "".join(out), idx


def _compat(text: str, where: list[int]) -> tuple[str, list[int]]:
    if unicodedata.is_normalized("NFKC", text):  # no compatibility character at all (most texts)
        return text, where

    def fold(i: int, ch: str) -> str:
        if ch.isascii():
            return ch
        tag = unicodedata.decomposition(ch).split(" ")[0]
        if tag not in _COMPAT_TAGS:
            return ch
        folded = unicodedata.normalize("NFKC", ch)
        return folded if folded.isascii() and folded.isalnum() else ch

    return _map_chars(text, where, fold)


def dominant_script(text: str) -> str | None:
    """The script most of the text's unambiguous letters (those with no look-alike in
    another script) are written in; None when there are none."""
    to_latin, to_cyrillic = _tables()
    counts: dict[str, int] = {}
    for ch in text[:5000]:
        if ch in to_latin or ch in to_cyrillic:
            continue
        script = _script(ch)
        if script is not None:
            counts[script] = counts.get(script, 0) + 1
    return max(counts, key=counts.__getitem__) if counts else None


#: letters of the scripts whose look-alikes the table folds (a text without any is left alone)
_FOLDABLE = re.compile("[\u0100-\u02af\u0370-\u03ff\u0400-\u052f\u0530-\u058f\u13a0-\u13ff\u1f00-\u1fff\uab70-\uabbf]")
_ACCENTED = re.compile("[\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff\u0300-\u036f]")
_LATIN_LETTER = re.compile("[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff]")
_LEET_NEIGHBOUR = re.compile(r"[^\W\d_][0-9@$]|[0-9@$][^\W\d_]")


def _confusables(text: str, where: list[int]) -> tuple[str, list[int]]:
    if not _FOLDABLE.search(text):
        return text, where
    to_latin, to_cyrillic = _tables()
    dominant = dominant_script(text)

    def fold(m: re.Match[str]) -> list[tuple[str, int]] | None:
        word = m.group()
        scripts = {s for s in map(_script, word) if s is not None}
        if scripts <= {"latin"} or scripts == {"cyrillic"} and dominant == "cyrillic" or "other" in scripts:
            return None
        if dominant == "cyrillic" and "latin" in scripts:
            table = to_cyrillic
        elif len(scripts) > 1 or dominant == "latin" and all(ch in to_latin for ch in word if ch.isalpha()):
            # a word that mixes scripts, or a word all in look-alikes of a Latin text
            table = to_latin
        else:
            return None
        own = "cyrillic" if table is to_cyrillic else "latin"
        return [(table.get(ch, ch) if _script(ch) != own else ch, m.start() + k) for k, ch in enumerate(word)]

    return _sub(text, where, _LETTER_RUN, fold)


def _strip_marks(text: str, where: list[int]) -> tuple[str, list[int]]:
    def fold(i: int, ch: str) -> str:
        if unicodedata.category(ch) == "Mn" and i > 0 and _script(text[i - 1]) == "latin":
            return ""
        if _script(ch) == "latin" and not ch.isascii():
            base = unicodedata.normalize("NFD", ch)[0]
            return base if base.isascii() else ch
        return ch

    return _map_chars(text, where, fold)


#: The accented letters of a language's spelling; an accent outside them on a Latin letter of
#: a text in that language is a disguise. Where a language's rules say more (French `à` and `ù`
#: only in a few words, Spanish at most one accented vowel a word), `_FOREIGN_WORD` applies them.
ORTHOGRAPHY = {"fr": frozenset("àâæçéèêëîïôœùûüÿ"), "es": frozenset("áéíóúüñ")}
_FRENCH_GRAVE_A = frozenset({"à", "là", "déjà", "voilà", "delà", "holà", "çà"})
_ACUTE_VOWELS = frozenset("áéíóú")
_DIAERESIS = frozenset("ëïüÿ")
_VOWELS = "aeiouy"
#: a word with its combining marks
_MARKED_WORD = re.compile(r"[^\W\d_](?:[^\W\d_]|[\u0300-\u036f])*")


def _foreign_marks(text: str, where: list[int], lang: str) -> tuple[str, list[int]]:
    """Drop the accents that the spelling of `lang` does not use, word by word."""
    inventory = ORTHOGRAPHY[lang]

    def fold(m: re.Match[str]) -> list[tuple[str, int]] | None:
        word = m.group()
        if word.isascii():
            return None
        # one letter with its marks composed, at the index of its base letter
        letters: list[tuple[str, int]] = []
        for k, ch in enumerate(word):
            if unicodedata.category(ch) == "Mn" and letters:
                base, at = letters[-1]
                letters[-1] = (unicodedata.normalize("NFC", base + ch), at)
            else:
                letters.append((ch, m.start() + k))
        lower = unicodedata.normalize("NFC", word).lower()
        strip_all = ((lang == "es" and sum(ch in _ACUTE_VOWELS for ch in lower) > 1)
                     or (lang == "fr" and "à" in lower and lower not in _FRENCH_GRAVE_A)
                     or (lang == "fr" and "ù" in lower and lower != "où"))
        out = []
        for j, (letter, at) in enumerate(letters):
            before = unicodedata.normalize("NFD", letters[j - 1][0])[0].lower() if j else ""
            # a diaeresis follows a vowel in French (naïf, Noël) and a g in Spanish (pingüino)
            misplaced = letter.lower() in _DIAERESIS and (not before or before not in (_VOWELS if lang == "fr" else "g"))
            base = unicodedata.normalize("NFD", letter)[0].lower()
            # only vowels: the marks on consonants (ñ, ç) are a language's own letters
            if (letter.isascii() or _script(letter[0]) != "latin" or base not in _VOWELS
                    or (letter.lower() in inventory and not strip_all and not misplaced)):
                out.append((letter, at))
            else:
                out.append((unicodedata.normalize("NFD", letter)[0], at))
        flat = [(ch, at) for letter, at in out for ch in letter]
        return None if "".join(ch for ch, _ in flat) == word else flat

    return _sub(text, where, _MARKED_WORD, fold)


def _diacritics(text: str, where: list[int]) -> tuple[str, list[int]]:
    # names keep their accents ("Reykjavík"): only a text with many accented letters is disguised
    if accented_share(text) < DIACRITICS_MIN_SHARE:
        return text, where
    folded, idx = _strip_marks(text, where)
    if folded == text:
        return text, where
    lang = guess_language(folded)
    if lang == "en":
        return folded, idx
    # Outside English, only a text far more accented than the language's own spelling is
    # read as disguised (a short text's language guess is unreliable: "El pingüino y la
    # cigüeña" reads as French, and must keep its ñ).
    if (lang in ORTHOGRAPHY and accented_share(text) >= FOREIGN_MARKS_MIN_SHARE
            and len(_LATIN_LETTER.findall(text)) >= FOREIGN_MARKS_MIN_LETTERS):
        return _foreign_marks(text, where, lang)
    return text, where


def accented_share(text: str) -> float:
    """Share of a text's Latin letters that carry an accent (precomposed or combining)."""
    latin = len(_LATIN_LETTER.findall(text))
    return len(_ACCENTED.findall(text)) / latin if latin else 0.0


#: numbers with a unit or an ordinal ("5g" is caught by the code rule), model names ("Win10")
_NUMBER_WORD = re.compile(r"\d+(?:st|nd|rd|th|s|am|pm|g|k|m|bn|mn|km|kg|mg|ml|mm|cm|ft|lbs?|hz|mph|gb|mb|tb|x|d)"
                          r"|[A-Za-z]+\d{2,}|(?-i:[A-Z][a-z]*\d+)", re.IGNORECASE)


def _leet(text: str, where: list[int]) -> tuple[str, list[int]]:
    if not _LEET_NEIGHBOUR.search(text):
        return text, where

    def fold(m: re.Match[str]) -> list[tuple[str, int]] | None:
        token = m.group()
        if any(_script(ch) not in _ALPHABETS for ch in token if ch.isalpha()):
            return None  # digits beside CJK or Indic letters are numbers ("5000美元")
        letters = sum(ch.isalpha() for ch in token)
        if len(token) < LEET_MIN_LENGTH or letters == 0 or letters == len(token) or len(token) - letters > letters:
            return None
        if any(ch not in LEET for ch in token if not ch.isalpha()) or _NUMBER_WORD.fullmatch(token):
            return None
        if not any(ch.islower() for ch in token) and len(token) <= 4:  # a code: H1N1, F35, MP3
            return None
        upper = sum(ch.isupper() for ch in token) > letters / 2
        return [((LEET[ch].upper() if upper else LEET[ch]) if ch in LEET else ch, m.start() + k) for k, ch in enumerate(token)]

    return _sub(text, where, _TOKEN, fold)


def _spaced(text: str, where: list[int]) -> tuple[str, list[int]]:
    return _sub(text, where, _SPACED, lambda m: [(ch, m.start() + k) for k, ch in enumerate(m.group()) if ch != " "])


#: a separator between letters; a dot between lowercase letters unless a domain ends there
_SEPARATED = re.compile(r"(?<=%s)[%s](?=%s)|(?<=[a-z])\.(?!(?:com|org|net|int|gov|edu|info|io|co|uk|js|py|fr|de|es|in|ly|me|tv|us)\b)(?=[a-z])"
                        % (_ALPHA_LETTER, re.escape(_SEPARATORS), _ALPHA_LETTER))


def _separators(text: str, where: list[int]) -> tuple[str, list[int]]:
    return _sub(text, where, _SEPARATED, lambda m: [])


_CASED_WORD = re.compile(r"[^\W\d_]{3,}")
_WORD = re.compile(r"[^\W\d_]{2,}")


def _case_switches(word: str) -> int:
    return sum(1 for a, b in zip(word, word[1:]) if a.isupper() != b.isupper())


def _is_cased(word: str) -> bool:
    return all(ch.lower() != ch.upper() for ch in word)


#: links, handles and hashtags: their case is the author's ("#StayHome", "@BernieSanders",
#: "pic.twitter.com/oXsSR39kQp"), never read as random case and never changed
_SOCIAL_TOKEN = re.compile(r"https?://\S+|\b\S+\.(?:com|org|net|ly|co)/\S*|[@#]\w+")


def _outside_social(text: str) -> list[re.Match[str]]:
    spans = [m.span() for m in _SOCIAL_TOKEN.finditer(text)]
    return [m for m in _CASED_WORD.finditer(text) if not any(a <= m.start() < b for a, b in spans)]


def random_case_share(text: str) -> tuple[float, int]:
    """Share and number of the cased words of 3+ letters (links, handles and hashtags aside)
    that switch case twice or more inside the word."""
    words = [m.group() for m in _outside_social(text) if _is_cased(m.group())]
    switching = sum(_case_switches(w) >= 2 for w in words)
    return (switching / len(words) if words else 0.0), switching


def _case(text: str, where: list[int]) -> tuple[str, list[int]]:
    share, switching = random_case_share(text)
    if share < CASE_MIN_SHARE or switching < CASE_MIN_WORDS:
        return text, where
    spans = [m.span() for m in _SOCIAL_TOKEN.finditer(text)]

    def fold(m: re.Match[str]) -> list[tuple[str, int]] | None:
        word = m.group()
        if any(a <= m.start() < b for a, b in spans):
            return None
        if not _is_cased(word) or word.islower() or word.isupper() or (word[0].isupper() and word[1:].islower()):
            return None
        # str.lower can lengthen a character (İ): every piece keeps its source index
        return [(low, m.start() + k) for k, ch in enumerate(word) for low in ch.lower()]

    return _sub(text, where, _WORD, fold)


_STEPS = {"compat": _compat, "confusables": _confusables, "diacritics": _diacritics, "leet": _leet,
          "spaced": _spaced, "separators": _separators, "case": _case}


def unmask(text: str, steps: Sequence[str] = DEFAULT_UNMASK) -> tuple[str, list[int]]:
    """Apply `steps` (names from `UNMASK_STEPS`, run in that order) to `text`.

    Returns the new text and, for each of its characters, the index of the input character
    it came from, plus a final sentinel `len(text)`.
    """
    unknown = set(steps) - set(UNMASK_STEPS)
    if unknown:
        from ..errors import ConfigError

        raise ConfigError(f"unknown unmask steps {sorted(unknown)}; use some of {', '.join(UNMASK_STEPS)}")
    length = len(text)
    where = list(range(length))
    if not _MAYBE_DISGUISED.search(text):
        return text, [*where, length]
    for name in UNMASK_STEPS:
        if name in steps:
            text, where = _STEPS[name](text, where)
    return text, [*where, length]


__all__ = ["CASE_MIN_SHARE", "CASE_MIN_WORDS", "DEFAULT_UNMASK", "LEET_MIN_LENGTH", "SPACED_MIN_RUN", "UNMASK_STEPS", "dominant_script", "random_case_share", "unmask"]
