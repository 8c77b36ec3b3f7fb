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


def test_known_verdicts_tell_an_unknown_rating_from_other():
    from misguard.claims._verdicts import known_verdict

    assert known_verdict("legend") is V.OTHER and known_verdict("Mostly false.") is V.MOSTLY_FALSE
    assert known_verdict("banana") is None and known_verdict("") is None and known_verdict(None) is None
