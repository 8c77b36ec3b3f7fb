import pytest

from misguard.errors import LLMOutputError
from misguard.llm import extract_json


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Sure! Here it is:\n```json\n{"a": [1, 2]}\n```\nHope this helps.', {"a": [1, 2]}),
        ('The answer is {"revised_message": "x {y}", "need_review": true} as requested', {"revised_message": "x {y}", "need_review": True}),
        ("{'a': True, 'b': None}", {"a": True, "b": None}),
        ('{"a": 1, "b": [2, 3,],}', {"a": 1, "b": [2, 3]}),
        ("[1, 2, 3]", [1, 2, 3]),
        ('noise { not json } then {"ok": 1}', {"ok": 1}),
    ],
)
def test_extracts(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "no braces at all", "{unclosed", '"just a string"', "42"])
def test_unparsable_raises_clear_error(text):
    with pytest.raises(LLMOutputError, match="Expected"):
        extract_json(text)


def test_a_string_field_cut_off_at_the_token_limit_is_salvaged():
    from misguard.llm import salvage_text

    cut = '{\n  "type": "send_message",\n  "reply_prompt": "Water boils at \\"about\\" 90 C up there, so the fla'
    assert salvage_text(cut, "reply_prompt") == 'Water boils at "about" 90 C up there, so the fla'
    assert salvage_text(cut) == cut  # no field named: the raw text
    assert salvage_text('{"note": "short", "answer": "the longest string wins"}') == "the longest string wins"
    assert salvage_text("no JSON at all") == "no JSON at all"

