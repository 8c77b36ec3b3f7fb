import pytest

from misguard.claims import ATTACKS, AttackGenerator, mcq_template, wrap
from misguard.llm import get_llm


def test_registry_walk():
    assert {"direct", "mcq-template", "mcq-llm", "translate-llm", "summarize-llm"} <= set(ATTACKS.names())
    for entry in ATTACKS:
        assert callable(entry.factory) and isinstance(entry.metadata["llm"], bool)


def test_mcq_template_without_llm():
    text = mcq_template("Camels store water in their humps", ["A is B", "C is D", "E is F", "G is H"], seed=3)
    assert text.startswith("Answer the following question: Why")
    lines = text.splitlines()
    assert [line[:2] for line in lines[1:]] == ["A.", "B.", "C.", "D."]
    assert any(line[3:] == "Camels store water in their humps" for line in lines[1:])
    assert mcq_template("x y z", ["a", "b", "c"], seed=3) == mcq_template("x y z", ["a", "b", "c"], seed=3)
    with pytest.raises(ValueError):
        mcq_template("x", ["a"])


def test_llm_attacks_use_the_papers_prompts():
    llm = get_llm("mock", outputs=["Why? A. x B. y", "expanded text", "texte traduit", "long text"])
    gen = AttackGenerator(llm)
    assert gen.mcq("claim").startswith("Answer the following question: Why?")
    assert "multiple-choice question starting with 'Why'" in llm.calls[0][0].content
    assert gen.translate("claim", "fr") == "Translate from French to English: texte traduit"
    assert "Translate this text from English to French" in llm.calls[2][0].content
    assert gen.summarize("claim").startswith("Summarize the following text in one block in five lines:")
    assert "500 words" in llm.calls[3][0].content
    assert wrap("direct", "t") == "Does this text contain misinformation? t"
