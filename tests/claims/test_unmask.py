"""Undoing character-level disguises: what is folded, what is left alone, offsets."""

from __future__ import annotations

import pytest

from misguard.attacks.transforms import Context, compose
from misguard.claims import unmask
from misguard.claims._unmask import ORTHOGRAPHY, accented_share, dominant_script
from misguard.errors import ConfigError

PLAIN = ("Bleach cures the flu, according to doctors who announced it after a study in 2020. "
         "5G towers, H1N1, Win10, COVID-19, the 3rd wave, 1918, 3 seconds, 100km, an F35, Web3, @jo and #tag at who.int.")


@pytest.mark.parametrize("spec", ["homoglyph", "homoglyph:rate=1.0", "fullwidth", "diacritics", "spacing",
                                  "punctuation:marks=*_", "case:rate=0.0"])
def test_disguises_fold_back_to_the_plain_text(spec):
    assert unmask(compose(spec).apply(PLAIN, seed=7, key="x"))[0] == PLAIN


def test_plain_text_is_left_exactly_as_it_was():
    for text in (PLAIN, "Le café est très bon à Paris, où les élèves étudient.", "Москва — столица России.",
                 "联合国有六种正式语言。", "नमस्ते दुनिया", "Vitamin B12 and the A4 paper, R2-D2 and 4x4 cars."):
        out, where = unmask(text)
        assert out == text and where == [*range(len(text)), len(text)]


def test_leetspeak_folds_words_and_keeps_numbers():
    out, _ = unmask("V4cc1n3s c0ntain m1cr0chips, s4ys th3 r3p0rt from 1918 on 5G and H1N1.")
    assert out == "Vaccines contain microchips, says the report from 1918 on 5G and H1N1."


def test_offsets_point_into_the_original():
    disguised = compose("homoglyph+spacing:rate=1.0").apply("Goldfish only remember three seconds", seed=1)
    out, where = unmask(disguised)
    assert out == "Goldfish only remember three seconds"
    assert len(where) == len(out) + 1 and where[-1] == len(disguised)
    start = out.index("remember")
    span = disguised[where[start]:where[start + 7] + 1]
    assert unmask(span)[0] == "remember" and span.count(" ") == 7


def test_adjacent_spaced_words_run_together():
    """A known limit: with no dictionary, two spaced words in a row become one word."""
    assert unmask("G o l d f i s h r e m e m b e r")[0] == "Goldfishremember"


def test_look_alikes_fold_to_the_text_s_own_script():
    assert dominant_script("Москва столица") == "cyrillic"
    mixed = "Мoсква — столица России"  # a Latin "o" inside a Russian word
    assert unmask(mixed)[0] == "Москва — столица России"
    assert unmask("\u0430\u0441\u0435 of the deck")[0] == "ace of the deck"  # a whole word of look-alikes


def test_diacritics_are_kept_in_french_and_dropped_in_english():
    assert unmask("Thê vàccïnes cöntain chips")[0] == "The vaccines contain chips"
    assert unmask("Les vaccins contiennent des puces, a déclaré le médecin")[0].endswith("médecin")


def test_unknown_steps_are_config_errors():
    with pytest.raises(ConfigError, match="unknown unmask steps"):
        unmask("x", ("nope",))


def test_transliteration_is_not_unmasked_here():
    text = compose("transliterate").apply("भारत में गाय", context=Context("hi"))
    assert unmask(text)[0] == text


def test_random_case_is_lowercased_and_ordinary_mixed_case_is_kept():
    plain = "Bleach cures the flu, according to doctors, says Paul McCartney on his iPhone at NASA."
    disguised = compose("case").apply(plain, seed=3)
    out, where = unmask(disguised)
    assert out.lower() == plain.lower() and out != disguised and len(where) == len(out) + 1
    # every word left with an inner case switch is gone; Title, lower and upper words stay as written
    assert all(w.islower() or w.isupper() or w.istitle() for w in out.replace(",", " ").replace(".", " ").split())
    assert unmask(plain)[0] == plain  # names with inner capitals do not make a text random case


def test_accents_outside_french_or_spanish_spelling_are_dropped():
    french = "Dans son discours, Nelson Mandela a déclaré à la foule que notre peur la plus profonde n'est pas d'être inadéquats."
    spanish = "En su discurso de investidura, Nelson Mandela dijo a la multitud que nuestro miedo más profundo no es ser inadecuados."
    for plain in (french, spanish):
        disguised = compose("diacritics").apply(plain, seed=0)
        out = unmask(disguised)[0]
        lang = "fr" if plain is french else "es"
        assert accented_share(out) < accented_share(disguised)
        assert all(ch.lower() in ORTHOGRAPHY[lang] for ch in out if not ch.isascii() and ch.isalpha())
        assert unmask(plain)[0] == plain
    # the languages' own accents stay, also in short texts whose language is hard to tell
    for text in ("El pingüino y la cigüeña.", "Le maïs et Noël, un naïf aïeul.", "Où est-il ? Il est déjà là, voilà."):
        assert unmask(text)[0] == text
