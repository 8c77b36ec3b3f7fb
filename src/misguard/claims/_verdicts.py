"""Publisher verdict labels -> the fixed `VerdictLabel` set (the original is kept beside)."""

from __future__ import annotations

import re

from ..types import VerdictLabel

_MAP: dict[str, VerdictLabel] = {}


def _add(label: VerdictLabel, *names: str) -> None:
    for name in names:
        _MAP[_key(name)] = label


def _key(text: str) -> str:
    # Letters of every script count (ratings come in many languages); case is folded.
    return re.sub(r"[\W_]+", " ", text.casefold()).strip()


_add(
    VerdictLabel.FALSE,
    "false", "pants on fire", "pants-fire", "pants on fire!", "fake", "fake news", "hoax",
    "incorrect", "wrong", "fabricated", "fiction", "scam", "misattributed", "miscaptioned",
    "satire", "labeled satire", "four pinocchios", "not true", "debunked", "faux", "falso",
    "falsch", "inexact", "bogus", "untrue", "altered", "altered photo", "altered video",
)
_add(
    VerdictLabel.MOSTLY_FALSE,
    "mostly false", "barely true", "barely-true", "mostly-false", "three pinocchios",
    "largely false", "misleading", "exaggerated", "mostly fake", "distorts the facts",
    "missing context", "lacks context", "out of context", "partly false",
)
_add(
    VerdictLabel.MIXED,
    "mixed", "mixture", "half true", "half-true", "half truth", "partly true", "partially true",
    "two pinocchios", "mixed bag", "needs context", "true but", "spins the facts",
)
_add(
    VerdictLabel.MOSTLY_TRUE,
    "mostly true", "mostly-true", "largely true", "one pinocchio", "mostly accurate",
    "correct attribution", "correct-attribution",
)
_add(
    VerdictLabel.TRUE,
    "true", "correct", "accurate", "verified", "geppetto checkmark", "real", "confirmed",
    "verdadero", "vrai", "wahr",
)
_add(
    VerdictLabel.UNPROVEN,
    "unproven", "unfounded", "unverified", "unsupported", "no evidence", "research in progress",
    "undetermined", "unsubstantiated", "cannot be verified",
)
_add(VerdictLabel.OTHER, "legend", "outdated", "other", "opinion", "flip flop", "full flop", "no flip")

# The same ratings as fact-checkers publish them in other languages (ClaimReview
# `alternateName` is free text in the review's language).
_add(
    VerdictLabel.FALSE,
    "c'est faux", "fausse", "intox", "infox", "arnaque", "montage", "photo truquée",  # fr
    "falsa", "bulo", "estafa", "engaño",  # es
    "boato", "golpe", "fake news", "montagem",  # pt
    "frei erfunden", "fälschung", "manipuliert",  # de
    "bufala", "notizia falsa",  # it
    "onwaar", "niet waar", "nep",  # nl
    "fałsz", "nieprawda", "yanlış", "ложь", "фейк", "неправда",  # pl, tr, ru
    "गलत", "फर्जी", "झूठ", "झूठा", "असत्य",  # hi
    "زائف", "خطأ", "كاذب", "مزيف", "مفبرك",  # ar
    "错误", "假", "谣言", "不实",  # zh
)
_add(
    VerdictLabel.MOSTLY_FALSE,
    "trompeur", "trompeuse", "plutôt faux", "manque de contexte", "sorti de son contexte", "exagéré",
    "partiellement faux",  # fr
    "engañoso", "engañosa", "mayormente falso", "falta contexto", "sacado de contexto", "exagerado",
    "parcialmente falso",  # es, pt
    "enganoso", "enganosa", "distorcido", "fora de contexto",  # pt
    "irreführend", "größtenteils falsch", "fehlender kontext", "teilweise falsch",  # de
    "fuorviante", "in gran parte falso",  # it
    "misleidend", "grotendeels onwaar",  # nl
    "भ्रामक", "مضلل", "误导", "误导性",  # hi, ar, zh
)
_add(
    VerdictLabel.MIXED,
    "en partie vrai", "à moitié vrai", "partiellement vrai",  # fr
    "verdad a medias", "parcialmente cierto", "parcialmente verdadero",  # es
    "meia verdade", "parcialmente verdadeiro",  # pt
    "teilweise richtig", "teilweise wahr", "halb wahr",  # de
    "vero a metà", "gedeeltelijk waar", "आंशिक रूप से सच", "صحيح جزئيا", "部分正确",  # it, nl, hi, ar, zh
)
_add(
    VerdictLabel.MOSTLY_TRUE,
    "plutôt vrai", "mayormente verdadero", "mayormente cierto", "majoritariamente verdadeiro",
    "größtenteils richtig", "größtenteils wahr", "in gran parte vero", "grotendeels waar",
)
_add(
    VerdictLabel.TRUE,
    "c'est vrai", "cierto", "verdadera", "verdadeiro", "verdadeira", "correto", "richtig", "vero", "waar",
    "prawda", "doğru", "правда", "सच", "सही", "सत्य", "صحيح", "正确", "属实",
)
_add(
    VerdictLabel.UNPROVEN,
    "infondé", "non prouvé", "invérifiable", "sin pruebas", "sin evidencia", "no verificable",
    "não comprovado", "sem provas", "unbelegt", "nicht belegt", "non provato", "onbewezen",
    "अपुष्ट", "غير مؤكد", "未经证实", "未证实",
)


def normalize_verdict(label: str | None) -> VerdictLabel:
    """Map a publisher's free-text rating to a `VerdictLabel` (unknown text -> OTHER).

    Exact names first, then a conservative word match ("Mostly False." -> mostly-false).
    """
    known = known_verdict(label)
    return VerdictLabel.OTHER if known is None else known


def known_verdict(label: str | None) -> VerdictLabel | None:
    """`normalize_verdict` for a rating it knows; None for one it does not (which
    `normalize_verdict` maps to OTHER: such a claim can never flag a text)."""
    if label is None:
        return None
    key = _key(label)
    if not key:
        return None
    if key in _MAP:
        return _MAP[key]
    if key.startswith(("mostly false", "mostly untrue")):
        return VerdictLabel.MOSTLY_FALSE
    if key.startswith("mostly true"):
        return VerdictLabel.MOSTLY_TRUE
    if key.startswith(("half true", "mixed", "mixture", "partly")):
        return VerdictLabel.MIXED
    if key.startswith(("false", "fake", "pants on fire", "incorrect", "not true", "faux", "falso", "falsch", "onwaar")):
        return VerdictLabel.FALSE
    if key.startswith(("true", "correct", "accurate")):
        return VerdictLabel.TRUE
    if key.startswith(("unproven", "unfounded", "unverified", "no evidence")):
        return VerdictLabel.UNPROVEN
    return None


#: Verdicts that make a matched claim misinformation to flag.
FALSE_LIKE = frozenset({VerdictLabel.FALSE, VerdictLabel.MOSTLY_FALSE})
