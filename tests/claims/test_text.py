from misguard.claims import clean_text, guess_language, segment, strip_instructions
from misguard.claims._text import clean_with_offsets, words


def test_strip_the_papers_instructions():
    for prefix in (
        "Translate from French to English: ",
        "Answer the following question: ",
        "Summarize the following text in one block in five lines: ",
        "Does this text contain misinformation? ",
        "translate from Chinese to English:",
    ):
        rest, offset, removed = strip_instructions(prefix + "Le ciel est vert.")
        assert rest.strip() == "Le ciel est vert.", prefix
        assert removed and offset > 0


def test_no_instruction_is_left_alone():
    text = "Translation errors happen when people rush."
    assert strip_instructions(text) == (text, 0, [])


def test_mcq_options_and_stem_become_segments():
    text = ("Answer the following question: Why is the office closed?\n"
            "A. The capital moved to Sydney after a vote\nB. It is being painted\n"
            "C. Staff work from home this winter\nD. It became a museum")
    segs = segment(text)
    kinds = [s.kind for s in segs]
    assert kinds[0] == "body" and "stem" in kinds and kinds.count("option") == 4
    option = next(s for s in segs if s.text.startswith("The capital moved"))
    assert text[option.start : option.end] == option.text


def test_long_text_is_split_into_sentences_with_offsets_and_capped():
    text = "Summarize the following text: " + " ".join(f"Sentence number {i} is here." for i in range(200))
    segs = segment(text, max_segments=16)
    assert len(segs) == 16
    for s in segs:
        assert text[s.start : s.end] == s.text


def test_cjk_and_danda_sentences():
    segs = segment("第一句话在这里。第二句话也在这里。")
    assert len(segs) == 3
    segs = segment("यह पहला वाक्य है। यह दूसरा वाक्य है।")
    assert len(segs) == 3


def test_zero_width_characters_are_removed_and_offsets_map_back():
    text = "Gold\u200bfish can\u200d only remember\u00a0\u00a0three seconds"
    clean, where = clean_with_offsets(text)
    assert clean == "Goldfish can only remember three seconds"
    assert len(where) == len(clean) + 1
    i = clean.index("remember")
    assert text[where[i] : where[i + len("remember") - 1] + 1] == "remember"


def test_arabic_vowel_marks_and_tatweel_are_optional():
    # The same words with and without harakat / kashida clean to the same text; offsets
    # still point into the original.
    marked, plain = "صوّت البرلمـــان", "صوت البرلمان"
    clean, where = clean_with_offsets(marked)
    assert clean == plain == clean_text(plain)
    assert marked[where[clean.index("البرلمان")] : where[len(clean) - 1] + 1] == "البرلمـــان"


def test_guess_language():
    assert guess_language("Translate from Hindi to English: कुछ भी") == "hi"
    assert guess_language("澳大利亚议会投票决定将悉尼定为首都") == "zh"
    assert guess_language("صوّت البرلمان الأسترالي على جعل سيدني العاصمة") == "ar"
    assert guess_language("Le parlement a voté pour la capitale des députés") == "fr"
    assert guess_language("The parliament voted for the capital") == "en"
    assert guess_language("12345 !!!") == "und"


def test_short_texts_are_not_split_into_sentences_but_keep_their_options():
    short = "Goldfish forget in seconds. Everyone knows it."
    assert [s.kind for s in segment(short, sentence_words=40)] == ["body"]
    assert [s.kind for s in segment(short, sentence_words=0)] == ["body", "sentence", "sentence"]
    mcq = "Which is true?\nA. Goldfish forget in three seconds\nB. Cats have nine lives"
    assert [s.kind for s in segment(mcq, sentence_words=40)] == ["body", "stem", "option", "option"]


def test_words_counts_each_cjk_character():
    assert words("Vikings wore horned helmets.") == 4
    assert words("维京人戴头盔") == 6 and words("Vikings 维京人") == 4
    assert words("x" * 600) == 100


def test_offsets_map_every_kept_character_back_to_the_input():
    """Clean texts take a fast identity path; both paths must keep the same contract."""
    from hypothesis import given, strategies as st

    @given(st.text(alphabet=st.sampled_from(list("ab .\n\t\u00a0\u3000\u200b\u0640\x01\ufffd漢")), max_size=16))
    def check(text):
        cleaned, where = clean_with_offsets(text)
        assert len(where) == len(cleaned) + 1 and where[-1] == len(text)
        assert "  " not in cleaned and "\t" not in cleaned and "\u200b" not in cleaned
        for ch, i in zip(cleaned, where):
            assert ch == text[i] or (ch == " " and not text[i].isalnum())

    check()
