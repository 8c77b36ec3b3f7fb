import time

import pytest

from misguard.claims import MAX_CHARS, ClaimGuard, JudgeAgent, ThresholdDecision, verdict_row
from misguard.claims._guard import NEAREST_NOT_FALSE
from misguard.errors import DataError

from .conftest import SAMPLE


def test_mcq_option_buried_in_a_question_is_matched(guard):
    text = ("Answer the following question: Why do people keep small tanks?\n"
            "A. Tanks are cheap\nB. Goldfish can only remember things for three seconds\n"
            "C. Fish like company\nD. It is the law")
    v = guard.check(text)
    assert v.flagged and v.evidence[0].claim.id == "S03"
    ev = v.evidence[0]
    assert text[ev.start : ev.end] == "Goldfish can only remember things for three seconds"
    assert "strip-instructions" in v.stages and v.language == "en"


def test_claim_buried_in_a_long_text_is_matched(guard):
    filler = " ".join(f"The weather on day {i} was mild and people went outside." for i in range(40))
    text = f"Summarize the following text in one block in five lines: {filler} Vikings wore helmets with horns into battle. {filler}"
    v = guard.check(text)
    assert v.flagged and v.evidence[0].claim.id == "S13"


def test_true_claims_never_flag(guard):
    v = guard.check("Octopuses have three hearts")
    assert not v.flagged and v.label is None


def test_a_text_that_repeats_a_true_claim_is_shown_that_claim(guard):
    """Every claim is retrieved for what the output shows: the stored true claim, not the
    nearest false one."""
    v = guard.check("Octopuses have three hearts")
    assert v.evidence[0].claim.id == "S22" and v.evidence[0].claim.verdict.value == "true"
    assert v.decided_by == NEAREST_NOT_FALSE and "nearest:true" in v.stages
    assert v.candidates[0].claim_id == "S22"
    row = verdict_row("t", v)
    assert row["nearest_claim_id"] == "S22" and row["nearest_claim_verdict"] == "true"
    assert row["nearest_claim_text"] == "Octopuses have three hearts" and row["matched_claim_id"] is None
    # a text that matches a false claim best is flagged as before, with that claim first
    flagged = guard.check("Goldfish can only remember things for three seconds")
    assert flagged.flagged and flagged.evidence[0].claim.id == "S03" and len(flagged.evidence) == 1


def test_the_nearest_true_claim_overrides_a_score_over_the_threshold(tmp_path, embedder):
    from misguard.claims import ClaimStore

    from .conftest import claim

    store = ClaimStore.open(tmp_path / "s", embedder, create=True)
    store.add([claim("F", "Vaccines cause autism in young children"),
               claim("T", "Vaccines do not cause autism in young children", verdict="true")])
    guard = ClaimGuard(store, decision=ThresholdDecision(0.6))
    v = guard.check("Vaccines do not cause autism in young children")
    # the false claim alone scores over the threshold, but the text is the true claim
    assert v.score >= 0.6 and not v.flagged and v.decided_by == NEAREST_NOT_FALSE
    assert [e.claim.id for e in v.evidence] == ["T", "F"]
    assert guard.check("Vaccines cause autism in young children").flagged
    only_true = ClaimStore.open(tmp_path / "t", embedder, create=True)
    only_true.add([claim("T", "Vaccines do not cause autism in young children", verdict="true")])
    v = ClaimGuard(only_true, decision=ThresholdDecision(0.6)).check("Vaccines do not cause autism")
    assert not v.flagged and v.score == 0.0 and v.evidence[0].claim.id == "T" and "no-candidates" in v.stages
    store.close()
    only_true.close()


def test_an_mcq_on_one_line_behind_a_content_free_stem_is_read_option_by_option(guard):
    text = ("Which statement is correct? A. Goldfish can only remember things for three seconds. "
            "B. The heart pumps blood around the body. C. Paris is the capital of France.")
    v = guard.check(text)
    assert v.flagged and v.evidence[0].claim.id == "S03"
    ev = v.evidence[0]
    assert text[ev.start : ev.end] == "Goldfish can only remember things for three seconds."
    assert "strip-instructions" in v.stages
    kinds = [s.kind for s in guard.views(text)]
    assert kinds.count("option") == 3 and "stem" not in kinds


def test_zero_width_and_mixed_scripts_keep_offsets_in_the_original(guard):
    text = "Vi\u200bkings wore hel\u200dmets with horns into battle — 维京人 ⚔️ викинги"
    v = guard.check(text)
    assert v.flagged
    ev = v.evidence[0]
    assert text[ev.start : ev.end] == ev.text and ev.text.startswith("Vi\u200bkings")


def test_empty_text_has_a_defined_result(guard):
    for text in ("", "   \n\t", "\u200b\u200b"):
        v = guard.check(text)
        assert not v.flagged and v.score == 0.0 and "empty" in v.stages


def test_non_text_is_a_clear_error(guard):
    with pytest.raises(DataError, match="bytes"):
        guard.check(b"\x00\xff binary")  # type: ignore[arg-type]


def test_ten_megabytes_are_cut_and_bounded(guard):
    text = "Humans use only ten percent of their brains. " + "x" * (10 * 1024 * 1024)
    started = time.perf_counter()
    v = guard.check(text)
    assert time.perf_counter() - started < 30
    assert f"truncated:{MAX_CHARS}" in v.stages and v.flagged


def test_binary_looking_text_is_handled(guard):
    v = guard.check(bytes(range(256)).decode("latin-1") * 10)
    assert isinstance(v.flagged, bool)


def test_repeats_are_served_from_the_cache(guard):
    first = guard.check("Bulls become furious when they see the colour red")
    calls = guard.embedder.usage.calls
    again = guard.check("Bulls become furious when they see the colour red")
    assert again.stages[-1] == "cache" and guard.embedder.usage.calls == calls and guard.cache_hits == 1
    assert again.flagged == first.flagged and again.score == first.score


def test_batch_equals_single(guard, store):
    texts = ["Lightning never strikes the same place twice", "The sea is salty", "Bats are blind and find their way only by smell"]
    batch = guard.check_many(texts)
    single = [ClaimGuard(store, decision=ThresholdDecision(0.6)).check(t) for t in texts]
    assert [(b.flagged, round(b.score, 5)) for b in batch] == [(s.flagged, round(s.score, 5)) for s in single]


def test_verdict_row_has_the_cli_contract(guard):
    row = verdict_row("r1", guard.check("Cracking your knuckles causes arthritis"))
    assert row["id"] == "r1" and row["flagged"] is True and isinstance(row["score"], float)
    assert row["matched_claim_id"] == "S28" and row["matched_claim_verdict"] == "false"
    row = verdict_row("r2", guard.check("A completely unrelated sentence about gardening tools"))
    assert row["flagged"] is False and row["matched_claim_id"] is None


def test_the_topic_agent_labels_every_checked_text(guard):
    v = guard.check("Swallowed chewing gum stays in your stomach for seven years")
    assert "topic" in v.stages and v.topics and "route" not in v.stages


def test_document_check_and_judge_agent(guard):
    page = ("<html><body><p>The library opens at nine.</p>"
            "<p>Mobile phone masts spread viral infections through radio waves.</p>"
            "<p>The football club won on Sunday.</p></body></html>")
    report = guard.check_document(page, html=True, doc_id="p")
    assert len(report.chunks) == 3 and report.flagged
    assert [n.chunk_id for n in report.notifications] == ["p#1"] and report.discrepancies == []
    # The judge notices a lost notification and an unexamined chunk.
    report.notifications.clear()
    del report.verdicts["p#2"]
    problems = JudgeAgent().audit(report)
    assert any("not notified" in p for p in problems) and any("never examined" in p for p in problems)


def test_the_score_does_not_depend_on_the_size_of_the_store(tmp_path, embedder, store):
    # The decision is calibrated on an 11k-claim store and used on stores of any size, so
    # its features must not move when unrelated claims are added (margins and hubness do).
    import dataclasses

    from misguard.claims import ClaimStore, default_decision, read_claims

    from .conftest import claim

    big = ClaimStore.open(tmp_path / "big", embedder, create=True)
    big.add(read_claims(SAMPLE))
    big.add([claim(f"X{i}", f"unrelated statement {i} on zebra quota {i * 13} in Oslo") for i in range(300)])
    # The shipped e5 decision without its (384-dim, e5) shift, on hashing vectors.
    model = dataclasses.replace(default_decision("e5/multilingual-e5-small-q4"), shift=None)
    text = "Answer the following question: Why do people say this?\nA. Goldfish can only remember things for three seconds\nB. Cats purr"
    small_v = ClaimGuard(store, decision=model).check(text)
    big_v = ClaimGuard(big, decision=model).check(text)
    assert small_v.evidence[0].claim.id == big_v.evidence[0].claim.id == "S03"
    assert small_v.score == pytest.approx(big_v.score)
    big.close()


def test_verdicts_list_top_candidates_and_the_cli_row_carries_them(store):
    guard = ClaimGuard(store, decision=ThresholdDecision(0.6), k_output=3, ranking="rrf")
    verdict = guard.check("Cracking your knuckles causes arthritis")
    assert len(verdict.candidates) == 3 and verdict.candidates[0].claim_id == "S28"
    scores = [c.score for c in verdict.candidates]
    assert scores == sorted(scores, reverse=True)
    row = verdict_row("r", verdict)
    assert [c["claim_id"] for c in row["candidates"]] == [c.claim_id for c in verdict.candidates]
    assert "lexical" in verdict.stages and "rank:rrf" in verdict.stages


def test_lexical_retrieval_finds_what_the_dense_index_misses(tmp_path, embedder):
    # With one dense candidate per segment only a BM25 hit can bring a second claim in.
    from misguard.claims import ClaimStore

    from .conftest import claim

    s = ClaimStore.open(tmp_path / "lex", embedder, create=True)
    s.add([claim("A", "Pope Francis endorsed Donald Trump for president"),
           claim("B", "Quixotic Zephyrland banned Wednesdays in 2019")])
    text = "Zephyrland banned Wednesdays"
    dense_only = ClaimGuard(s, decision=ThresholdDecision(0.6), k=1, k_lexical=0).analyse([text])[0]
    hybrid = ClaimGuard(s, decision=ThresholdDecision(0.6), k=1).analyse([text])[0]
    assert len(dense_only.candidates) == 1 and {c.id for c in hybrid.candidates} >= {"B"}
    s.close()


def test_social_normalisation_keeps_evidence_offsets_in_the_original(guard):
    text = "RT @someone: Cracking your knuckles causes #Arthritis https://t.co/x \u2014 Jo Bloggs (@jo) May 1, 2020"
    verdict = guard.check(text)
    ev = verdict.evidence[0]
    assert "social" in verdict.stages and ev.claim.id == "S28"
    assert text[ev.start : ev.end] == ev.text and ev.text.startswith("Cracking")
    # The decision is told the text was social-media text (its "social" features).
    tweet, plain = guard.analyse([text, "Cracking your knuckles causes arthritis"])
    assert tweet.context.social and not plain.context.social


def test_bad_ranking_or_steps_are_config_errors(store):
    from misguard.errors import ConfigError

    with pytest.raises(ConfigError, match="needs a decision with a fitted ranker"):
        ClaimGuard(store, decision=ThresholdDecision(0.6), ranking="learned")
    with pytest.raises(ConfigError, match="unknown social-media"):
        ClaimGuard(store, decision=ThresholdDecision(0.6), social=("links",))


def test_concurrent_checks_from_worker_threads_agree_with_serial_ones(guard):
    """The service checks on worker threads; concurrent calls must give the serial answers."""
    from concurrent.futures import ThreadPoolExecutor

    texts = ["Goldfish can only remember things for three seconds", "Octopuses have three hearts",
             "Vikings wore helmets with horns into battle", "The market opens at eight"] * 6
    expected = [(v.flagged, round(v.score, 6)) for v in ClaimGuard(guard.store, decision=guard.decision).check_many(texts)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(lambda t: guard.check(t), texts))
    assert [(v.flagged, round(v.score, 6)) for v in got] == expected
    assert guard.cache_hits > 0  # repeated texts answered from the cache
