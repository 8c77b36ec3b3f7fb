import pytest

from misguard.claims import normalize_verdict
from misguard.types import VerdictLabel as V


@pytest.mark.parametrize(
    "label, expected",
    [
        ("Pants on Fire", V.FALSE), ("pants-fire", V.FALSE), ("FALSE", V.FALSE), ("Fake", V.FALSE),
        ("miscaptioned", V.FALSE), ("misattributed", V.FALSE), ("barely-true", V.MOSTLY_FALSE),
        ("Mostly False", V.MOSTLY_FALSE), ("Mostly false.", V.MOSTLY_FALSE), ("half-true", V.MIXED),
        ("mixture", V.MIXED), ("mostly-true", V.MOSTLY_TRUE), ("True", V.TRUE), ("unproven", V.UNPROVEN),
        ("Unfounded", V.UNPROVEN), ("legend", V.OTHER), ("outdated", V.OTHER), ("no idea at all", V.OTHER),
        ("", V.OTHER), (None, V.OTHER),
    ],
)
def test_publisher_labels_normalise(label, expected):
    assert normalize_verdict(label) is expected


@pytest.mark.parametrize(
    "label, expected",
    [
        ("Faux", V.FALSE), ("C'est faux", V.FALSE), ("Trompeur", V.MOSTLY_FALSE), ("Plutôt vrai", V.MOSTLY_TRUE),
        ("Falso", V.FALSE), ("Engañoso", V.MOSTLY_FALSE), ("Verdad a medias", V.MIXED), ("Verdadero", V.TRUE),
        ("Enganoso", V.MOSTLY_FALSE), ("Fora de contexto", V.MOSTLY_FALSE), ("Falsch", V.FALSE),
        ("Größtenteils falsch", V.MOSTLY_FALSE), ("GRÖSSTENTEILS FALSCH", V.MOSTLY_FALSE), ("Onwaar", V.FALSE),
        ("गलत", V.FALSE), ("भ्रामक", V.MOSTLY_FALSE), ("زائف", V.FALSE), ("مضلل", V.MOSTLY_FALSE),
        ("错误", V.FALSE), ("误导", V.MOSTLY_FALSE), ("Infondé", V.UNPROVEN), ("Faux !", V.FALSE),
    ],
)
def test_ratings_published_in_other_languages(label, expected):
    """ClaimReview ratings are free text in the review's language; letters of every script count."""
    assert normalize_verdict(label) is expected


def test_known_verdicts_tell_an_unknown_rating_from_other():
    from misguard.claims._verdicts import known_verdict

    assert known_verdict("legend") is V.OTHER and known_verdict("Mostly false.") is V.MOSTLY_FALSE
    assert known_verdict("banana") is None and known_verdict("") is None and known_verdict(None) is None
