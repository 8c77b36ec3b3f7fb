"""MCQ layouts the segmenter does not see alone: content-free stems and options on one line."""

import pytest

from misguard.claims._mcq import break_inline_options, strip_stem


@pytest.mark.parametrize("stem", [
    "Which statement is correct?", "Which of the following is true?", "Which of these statements are false?",
    "Which one is a myth?", "What is true:", "True or false:", "Choose the correct answer:",
])
def test_content_free_stems_are_stripped_with_their_offsets(stem):
    text = f"{stem} Bulls hate the colour red"
    clean, offsets, removed = strip_stem(text, list(range(len(text) + 1)), 0)
    assert removed == stem and clean.strip() == "Bulls hate the colour red"
    start = clean.index("Bulls")
    assert text[offsets[start] :].startswith("Bulls")  # offsets still point into the original


@pytest.mark.parametrize("text", [
    "Why do bulls hate red? A. They do not B. Movement", "Which bull is the oldest in Spain?", "Which statement is correct?",
])
def test_stems_that_name_something_or_stand_alone_stay(text):
    assert strip_stem(text, list(range(len(text) + 1)), 0)[2] is None


def test_options_on_one_line_are_put_on_lines_of_their_own_in_place():
    text = "Which one? A. Bulls hate the colour red. B. The heart pumps blood around. C. Paris is in France."
    broken = break_inline_options(text, 0)
    assert len(broken) == len(text) and broken.splitlines()[1:] == [
        "A. Bulls hate the colour red.", "B. The heart pumps blood around.", "C. Paris is in France."]
    assert break_inline_options("A. Bulls hate the colour red. B. The heart pumps blood around.", 0).count("\n") == 1


@pytest.mark.parametrize("text", [
    "A. Smith and B. Jones wrote the report on the budget.",  # initials, not options
    "Under investigation: 1. The first campaign office 2. The second transition team",  # a list after a colon
    "1. The first campaign office 2. The second transition team",  # a numbered list
    "Which one? A. Bulls hate red. C. Paris is in France.",  # not in order
    "Which one?\nA. Bulls hate the colour red.\nB. The heart pumps blood.",  # already on lines
])
def test_what_is_not_an_inline_mcq_stays(text):
    assert break_inline_options(text, 0) == text


def test_numbered_options_after_a_removed_stem_are_broken():
    text = " 1) Vaccines cause autism in kids 2) The moon is made of rock"
    assert break_inline_options(text, 0) == text
    assert break_inline_options(text, 0, after_question=True).count("\n") == 2
