"""The sources a decision is fitted on: the paper-style query builder (no data needed), and
the readers of the shared data directory."""

import pytest

from misguard.claims import clean_text, load_devset, load_distractors, load_training_data, paper_queries, segment, strip_instructions
from misguard.claims._sources import LONG_TEXT_WORDS, claim_key
from misguard.errors import DataError
from misguard.types import Claim


def _claims(prefix: str, verdict: str, n: int) -> list[Claim]:
    return [Claim(id=f"{prefix}{i}", text=f"{prefix} statement number {i} about budget item {i * 7}", verdict=verdict)
            for i in range(n)]


def test_each_claim_gets_three_offline_attacks_and_is_findable_in_each():
    false, true = _claims("F", "false", 10), _claims("T", "true", 40)
    queries = paper_queries(false, true, 5, seed=3)
    assert len(queries) == 5 * 2 * 3
    assert {q.attack for q in queries} == {"direct", "mcq", "summarize"}
    assert sum(q.label == "false" for q in queries) == 15
    for q in queries:
        body = strip_instructions(clean_text(q.text))[0]
        # The claim survives each wrapping as a whole segment (sentence or MCQ option).
        assert any(s.text.rstrip(".") == q.claim_text for s in segment(body)), q.key
        if q.attack == "summarize":
            assert len(body.split()) >= LONG_TEXT_WORDS
    negatives = {q.claim_id for q in queries if q.label == "true"}
    # Filler never contains a negative's own text (or any false claim).
    for q in queries:
        if q.attack == "summarize":
            others = {t.text for t in true if t.id in negatives and t.id != q.claim_id}
            assert not any(o in q.text for o in others)
            assert not any(f.text in q.text for f in false if f.id != q.claim_id)


def test_queries_are_reproducible_and_seeded():
    false, true = _claims("F", "false", 10), _claims("T", "true", 40)
    assert paper_queries(false, true, 4, seed=1) == paper_queries(false, true, 4, seed=1)
    assert paper_queries(false, true, 4, seed=1) != paper_queries(false, true, 4, seed=2)


def test_too_little_filler_is_a_clear_error():
    with pytest.raises(ValueError, match="filler"):
        paper_queries(_claims("F", "false", 2), _claims("T", "true", 2), 2, seed=0)


def test_claim_copies_differ_only_in_case_quotes_and_punctuation():
    assert claim_key('Olive Garden restaurants are ""funding Trump\'s re-election.""') == claim_key(
        "olive garden restaurants are 'funding Trump's re-election.'")
    assert claim_key("The moon is made of cheese.") != claim_key("The moon is not made of cheese.")


def test_a_directory_without_any_source_names_the_layout(tmp_path):
    with pytest.raises(DataError, match="devset-multilingual.*docs/claims.md"):
        load_training_data(tmp_path)
    with pytest.raises(DataError, match="no such data directory"):
        load_training_data(tmp_path / "missing")


@pytest.mark.shared_data
def test_devset_and_distractors_load(shared_data):
    dev = load_devset(shared_data)
    assert len(dev.claims) == 40 and len(dev.queries) == 480
    assert sum(q.label == "false" for q in dev.queries) == 320
    # Every true query is grouped with its near false claim (so CV folds keep them together).
    assert all(q.group.startswith("DF") for q in dev.queries)
    distractors = load_distractors(shared_data, -1)
    assert len(distractors) > 10_000 and all(c.verdict.value in ("false", "mostly-false") for c in distractors)
    assert len({c.id for c in distractors}) >= len(distractors) - 5


@pytest.mark.shared_data
def test_training_data_holds_every_source_found(shared_data):
    data = load_training_data(shared_data, distractors=50, checkthat_limit=5, checkthat_train=3)
    assert data.devset is not None and len(data.distractors) == 50 and data.true_claims
    assert data.checkthat is not None and len(data.checkthat.queries["train"]) == 3
    assert all(c.verdict.value in ("true", "mostly-true") for c in data.true_claims)
    assert data.describe()["checkthat_tweets"] == {"train": 3, "dev": 5, "test": 5}
