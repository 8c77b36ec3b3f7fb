"""Social-media normalisation that keeps character offsets.

Tweets carry things no fact-check headline has: t.co links, "pic.twitter.com/..." (often
glued to the last hashtag), an "RT @handle:" prefix, @handles and #CamelCaseHashtags,
emoji, and an attribution tail such as "— Ilhan Omar (@IlhanMN) January 6, 2020". Each
step below rewrites one of these; every output character remembers the input character it
came from, so evidence spans still point into what the user sent.

Who said something is often part of the claim ("Trump says ..."): handles and hashtags are
turned into words (camel case split), not dropped, and the attribution tail keeps the name.
Which steps are on by default was decided on the CheckThat-2020 dev tweets
(docs/BENCHMARKS.md, "social-media normalisation, step by step"), never on its test split.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

#: Steps in the order they run. "urls" runs after "pic" so a glued "#Tagpic.twitter.com/x"
#: keeps its hashtag.
#: "drop_attribution" (the whole tail, name included) is the alternative to "attribution"
#: that the benchmark measures; it is not a default.
STEPS: tuple[str, ...] = ("pic", "urls", "rt", "attribution", "drop_attribution", "handles", "hashtags", "emoji")
#: Steps `ClaimGuard` applies unless told otherwise (chosen on the CheckThat-2020 dev tweets).
DEFAULT_STEPS: tuple[str, ...] = ("pic", "urls", "rt", "attribution", "handles", "hashtags", "emoji")

_PIC = re.compile(r"pic\.twitter\.com/\w+", re.IGNORECASE)
_URL = re.compile(r"(?:https?://|\bwww\.|\b(?:t\.co|bit\.ly|ow\.ly|buff\.ly|goo\.gl)/)\S*", re.IGNORECASE)
_RT = re.compile(r"^\s*RT\s+@\w{1,30}\s*:\s*")
#: "— Name (@handle) Month d, yyyy" at the very end (the way embedded tweets are copied).
_ATTRIBUTION = re.compile(
    r"\s*[\u2014\u2013]\s*(?P<name>[^\u2014\u2013()\n]{1,80}?)\s*\(@(?P<handle>\w{1,30})\)"
    r"\s*(?P<date>[A-Z][a-z]{2,8}\.?\s+\d{1,2},\s+\d{4})?\s*$"
)
_HANDLE = re.compile(r"(?<![\w@])@(\w{1,30})")
_HASHTAG = re.compile(r"(?<![\w#&])#(\w{1,80})")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])")
_WORD_BREAK = re.compile(_CAMEL.pattern + "|_")
_EMOJI = re.compile(
    "[\U0001f000-\U0001faff\U00002600-\U000027bf\U0001f900-\U0001f9ff\u2300-\u23ff\u2b00-\u2bff"
    "\ufe0f\u200d\U0001f1e6-\U0001f1ff]+"
)
_SPACES = re.compile(r"\s{2,}")

Pieces = list[tuple[str, int]]  # (replacement text, where its characters came from)
_Replacer = Callable[[re.Match[str]], Pieces]


def split_camel(word: str) -> str:
    """"RealDonaldTrump" -> "Real Donald Trump", "Covid19" -> "Covid 19"."""
    return _CAMEL.sub(" ", word.replace("_", " "))


def _substitute(text: str, where: list[int], pattern: re.Pattern[str], replace: _Replacer) -> tuple[str, list[int]]:
    """Replace every match of `pattern`; `replace` gives the new text as (piece, index in
    `text` of its first character) pairs, each piece's characters mapped to consecutive
    source characters (clipped to the match)."""
    out: list[str] = []
    out_where: list[int] = []
    position = 0
    for match in pattern.finditer(text):
        out.append(text[position : match.start()])
        out_where.extend(where[position : match.start()])
        for piece, start in replace(match):
            out.append(piece)
            out_where.extend(where[min(start + i, match.end() - 1)] for i in range(len(piece)))
        position = match.end()
    out.append(text[position:])
    out_where.extend(where[position:])
    return "".join(out), out_where


def _drop(_: re.Match[str]) -> Pieces:
    return [(" ", _.start())]


def _words(match: re.Match[str]) -> Pieces:
    """A handle or hashtag as words: the marker dropped, camel case split (the inserted
    spaces point at the next character)."""
    word = match.group(1)
    start = match.start(1)
    pieces: Pieces = []
    cursor = 0
    for part in _WORD_BREAK.split(word):
        if not part:
            cursor += 1
            continue
        at = word.index(part, cursor)
        if pieces:
            pieces.append((" ", start + at))
        pieces.append((part, start + at))
        cursor = at + len(part)
    return pieces or [(" ", match.start())]


def _attribution(match: re.Match[str]) -> Pieces:
    """Keep who said it ("— Name"), drop the handle and the date."""
    dash = match.start() + len(match.group(0)) - len(match.group(0).lstrip())
    return [(" ", match.start()), ("\u2014 ", dash), (match.group("name").strip(), match.start("name"))]


_RULES: dict[str, tuple[re.Pattern[str], _Replacer]] = {
    "pic": (_PIC, _drop),
    "urls": (_URL, _drop),
    "rt": (_RT, lambda m: []),
    "attribution": (_ATTRIBUTION, _attribution),
    "drop_attribution": (_ATTRIBUTION, _drop),
    "handles": (_HANDLE, _words),
    "hashtags": (_HASHTAG, _words),
    "emoji": (_EMOJI, _drop),
}


def normalize_social(text: str, steps: Sequence[str] = DEFAULT_STEPS) -> tuple[str, list[int]]:
    """Apply `steps` (names from `STEPS`, run in `STEPS` order) to `text`.

    Returns the new text and, for each of its characters, the index of the input
    character it came from, plus a final sentinel `len(text)`.
    """
    unknown = set(steps) - set(STEPS)
    if unknown:
        from ..errors import ConfigError

        raise ConfigError(f"unknown social-media normalisation steps {sorted(unknown)}; use some of {', '.join(STEPS)}")
    length = len(text)
    where = list(range(length))
    for name in STEPS:
        if name in steps:
            pattern, replace = _RULES[name]
            text, where = _substitute(text, where, pattern, replace)
    # Removed pieces leave runs of spaces: keep the first of each run.
    text, where = _substitute(text, where, _SPACES, lambda m: [(" ", m.start())])
    lead = len(text) - len(text.lstrip())
    trail = len(text.rstrip())
    return text[lead:trail], [*where[lead:trail], length]


__all__ = ["DEFAULT_STEPS", "STEPS", "normalize_social", "split_camel"]
