"""The red-team transformations: registry contract, seeding, composition, each family."""

from __future__ import annotations

import html
import unicodedata

import pytest

from misguard.attacks.transforms import (
    FAMILIES, HOMOGLYPHS, INJECTION_LANGUAGES, STYLES, TRANSFORMS, Context, all_transforms, compose, injection_text,
)
from misguard.errors import ConfigError

TEXT = "Bleach cures the flu, according to doctors who announced it after a study in 2020."


@pytest.mark.parametrize("name", TRANSFORMS.names())
def test_every_registered_transform_has_metadata_and_changes_text(name):
    t = compose(name).steps[0].spec
    assert t.family in FAMILIES and t.description and t.output in ("text", "html")
    if t.llm:
        with pytest.raises(ConfigError, match="needs an LLM"):
            compose(name).apply(TEXT)
        return
    language = t.languages[0] if t.languages else "en"
    text = "भारत में गाय का मूत्र कोविड का इलाज करता है" if language == "hi" else TEXT
    out = compose(name).apply(text, seed=3, key="k", context=Context(language))
    assert out != text


def test_same_seed_and_key_give_the_same_disguise_and_others_differ():
    p = compose("homoglyph+leet")
    assert p.apply(TEXT, seed=1, key="a") == p.apply(TEXT, seed=1, key="a")
    assert len({p.apply(TEXT, seed=s, key="a") for s in range(5)}) > 1


def test_spec_parameters_are_parsed_recorded_and_checked():
    p = compose("homoglyph:rate=1.0,scripts=cyrillic+spacing:min_letters=5")
    assert p.describe()["steps"][0]["params"] == {"rate": 1.0, "scripts": "cyrillic"}
    assert p.describe()["steps"][1]["params"]["min_letters"] == 5
    out = compose("homoglyph:rate=1.0,scripts=cyrillic").apply("ace")
    assert out == "".join(HOMOGLYPHS["cyrillic"][c] for c in "ace")
    with pytest.raises(ConfigError, match="no parameter"):
        compose("leet:nope=1")
    with pytest.raises(ConfigError, match="Unknown text transform"):
        compose("no-such-transform")


def test_character_transforms_keep_what_a_reader_sees():
    bidi = compose("bidi").apply(TEXT, seed=0)
    assert "".join(ch for ch in bidi if unicodedata.category(ch) != "Cf") == TEXT
    zw = compose("zero-width").apply(TEXT, seed=0)
    assert "".join(ch for ch in zw if unicodedata.category(ch) != "Cf") == TEXT
    spaced = compose("spacing:rate=1.0").apply("according to doctors")
    assert spaced == "a c c o r d i n g to d o c t o r s"
    assert compose("leet:rate=1.0").apply("one tea") == "0n3 t34"


def test_languages_limit_where_a_transform_applies():
    assert compose("transliterate").applies_to("hi") and not compose("transliterate").applies_to("en")
    assert compose("code-switch").applies_to("en") and not compose("code-switch").applies_to("fr")
    assert compose("homoglyph").applies_to("zh")


def test_markup_pages_hide_the_text_where_a_page_checker_must_look():
    alt = compose("markup-alt").apply(TEXT, seed=0)
    assert f'alt="{html.escape(TEXT, quote=True)}"' in alt and alt.startswith("<!DOCTYPE html>")
    assert "display:none" in compose("markup-hidden").apply(TEXT)
    assert "aria-label" in compose("markup-aria").apply(TEXT)
    with pytest.raises(ConfigError, match="last step"):
        compose("markup-alt+leet").apply(TEXT)


@pytest.mark.parametrize("language", INJECTION_LANGUAGES)
def test_injections_exist_in_six_languages(language):
    for style in STYLES:
        note = injection_text(style, language)
        assert note and (language == "en" or note != injection_text(style, "en"))
    out = compose("inject:style=ignore").apply("texte", context=Context(language))
    assert out.startswith("texte\n") and out.endswith(injection_text("ignore", language))


def test_list_covers_every_family_in_the_brief():
    families = {t.family for t in all_transforms()}
    assert families == set(FAMILIES)
