"""Social-media normalisation: what each step does, and that offsets still point into the input."""

import pytest

from misguard.claims import SOCIAL_STEPS, normalize_social
from misguard.claims._social import DEFAULT_STEPS, split_camel
from misguard.errors import ConfigError

TWEET = ("RT @news: Fact check: the Army is NOT drafting anyone #MilitaryDraft2020 \U0001F621 "
         "https://t.co/AbC123 pic.twitter.com/3S32De8ekP \u2014 U.S. Army CGSC (@USACGSC) January 8, 2020")


def _maps_back(original: str, text: str, where: list[int]) -> bool:
    """Every kept letter or digit is the input character it claims to come from."""
    return all(original[i] == ch for ch, i in zip(text, where) if ch.isalnum())


def test_default_steps_on_a_copied_tweet():
    text, where = normalize_social(TWEET)
    assert text == "Fact check: the Army is NOT drafting anyone Military Draft 2020 \u2014 U.S. Army CGSC"
    assert len(where) == len(text) + 1 and where[-1] == len(TWEET)
    assert _maps_back(TWEET, text, where)


@pytest.mark.parametrize(
    ("step", "gone", "kept"),
    [
        ("urls", "t.co", "pic.twitter"),
        ("pic", "pic.twitter", "t.co"),
        ("rt", "RT @news", "@USACGSC"),
        ("emoji", "\U0001F621", "#MilitaryDraft2020"),
        ("hashtags", "#MilitaryDraft2020", "@news"),
    ],
)
def test_each_step_alone(step, gone, kept):
    text, where = normalize_social(TWEET, (step,))
    assert gone not in text and kept in text
    assert _maps_back(TWEET, text, where)


def test_handles_become_words_and_attribution_keeps_the_name():
    text, _ = normalize_social("Great speech by @realDonaldTrump today", ("handles",))
    assert text == "Great speech by real Donald Trump today"
    text, _ = normalize_social(TWEET, ("attribution",))
    assert text.endswith("\u2014 U.S. Army CGSC") and "January" not in text and "@USACGSC" not in text
    text, _ = normalize_social(TWEET, ("drop_attribution",))
    assert "CGSC" not in text and text.endswith("pic.twitter.com/3S32De8ekP")


def test_a_hashtag_glued_to_a_picture_link_survives():
    text, _ = normalize_social("caught on camera.#IranUsapic.twitter.com/TvRkHvlgby")
    assert text == "caught on camera.Iran Usa"


def test_plain_text_is_unchanged_and_steps_are_checked():
    plain = "Vaccines cause autism, says a 1998 paper (retracted)."
    assert normalize_social(plain) == (plain, [*range(len(plain)), len(plain)])
    assert set(DEFAULT_STEPS) < set(SOCIAL_STEPS)
    with pytest.raises(ConfigError, match="unknown social-media"):
        normalize_social("x", ("hashtag",))


def test_split_camel():
    assert split_camel("IranUSA2020Deal") == "Iran USA 2020 Deal"
