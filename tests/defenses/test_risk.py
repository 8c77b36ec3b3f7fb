"""ARGUS's message risk model: fitting and files, and each use in the defense (localization
term, goal seeding, pre-screen, redaction, quarantine, the LLM-free default) on the runtime
with scripted backends and a hashing embedder (a risk model whose weights point at the goal
sentence). `argus_with_risk` starts from the paper's rectifier plus a risk model, so each
test switches on what it measures."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from misguard.config import Settings
from misguard.defenses import ArgusDefense
from misguard.defenses.argus import MessageRiskModel, fit_message_risk
from misguard.defenses._text import replace_spans, sentence_spans, split_sentences
from misguard.embed import get_embedder
from misguard.errors import ConfigError, DataError
from misguard.mas import DefenseContext, build_defense
from misguard.types import EdgeMessage
from tests.defenses.test_argus import GOAL, backend, system

EMBEDDER = "hashing/256"
TRUTH = "Water boils at a lower temperature high up, so pasta cooks slower at altitude."


def goal_risk_model(embedder) -> MessageRiskModel:
    """Risk ~1 for sentences close to GOAL, ~0 for unrelated ones."""
    direction = embedder.embed([GOAL], "query")[0]
    return MessageRiskModel(embedder.spec, 30.0 * direction, -15.0, act_threshold=0.5, screen_threshold=0.05)


def argus_with_risk(llm, tmp_path, ground_truths=(), **params) -> ArgusDefense:
    embedder = get_embedder(EMBEDDER)
    path = goal_risk_model(embedder).save(tmp_path / "risk.json")
    params = {"relevance_threshold": 0.5, "goal_dedup_threshold": 0.9, "risk_model": str(path),
              "rectifier_llm": True, "risk_all_channels": False, "quarantine": False, "rectify_risky_only": False, **params}
    context = DefenseContext(Settings(), {"worker": llm}, embedder, ground_truths=tuple(ground_truths))
    (defense,) = build_defense("argus", context, params)
    return defense


def test_fit_chooses_c_by_grouped_cv_and_thresholds_from_out_of_fold_scores(tmp_path):
    rng = np.random.default_rng(0)
    direction = rng.normal(size=16)
    x = rng.normal(size=(400, 16))
    y = (x @ direction + rng.normal(scale=2.0, size=400) > 0).astype(int)
    groups = np.arange(400) // 20
    model = fit_message_risk(x, y, groups, embedder="hashing/16", c_grid=(0.01, 1.0))
    assert model.report["C"] in (0.01, 1.0) and 0.6 < model.report["oof_auc"] < 1.0
    assert model.report["groups"] == 20 and model.report["positives"] == int(y.sum())
    assert 0.0 < model.screen_threshold < model.act_threshold < 1.0
    # about 5% of the negatives reach the act threshold out of fold, by construction
    assert model.report["act_tpr_oof"] > 0.05
    loaded = MessageRiskModel.load(model.save(tmp_path / "m.json"))
    assert np.allclose(loaded.probabilities(x[:5]), model.probabilities(x[:5]))
    assert loaded.digest() == model.digest() and loaded.describe()["sha256"] == model.digest()


def test_fit_refuses_one_class_or_one_group():
    x = np.eye(4)
    with pytest.raises(DataError, match="both"):
        fit_message_risk(x, [1, 1, 1, 1], [0, 1, 2, 3], embedder="e")
    with pytest.raises(DataError, match="two tasks"):
        fit_message_risk(x, [1, 0, 1, 0], [0, 0, 0, 0], embedder="e")


def test_load_refuses_other_embedder_and_foreign_files(tmp_path):
    embedder = get_embedder(EMBEDDER)
    path = goal_risk_model(embedder).save(tmp_path / "risk.json")
    with pytest.raises(ConfigError, match="fit-risk"):
        MessageRiskModel.load(path, get_embedder("hashing/64"))
    (tmp_path / "other.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(DataError, match="not a misguard message-risk model"):
        MessageRiskModel.load(tmp_path / "other.json")
    with pytest.raises(ConfigError, match="fit-risk"):
        MessageRiskModel.load(tmp_path / "missing.json")


async def test_risk_of_last_rounds_traffic_pulls_monitoring_onto_the_pushing_edge(tmp_path):
    llm = backend()
    plain = argus_with_risk(llm, tmp_path, delta=0.0, risk_goals=False, redact=False)
    await system(llm, plain, rounds=2).run()
    assert ("agent_4", "agent_5") not in plain.monitored[1] and ("agent_4", "agent_5") not in plain.monitored[2]
    # agent_4 -> agent_5 is never monitored in round 1, so no rectifier saw it: only the
    # risk of round 1's traffic (every message, monitored or not) can bring it in.
    risky = argus_with_risk(llm, tmp_path, risk_goals=False, redact=False)
    result = await system(llm, risky, rounds=2).run()
    assert ("agent_4", "agent_5") in risky.monitored[2]
    assert set(risky.sender_risk.rounds) == {1}  # round 2's localization recorded round 1's risks
    described = next(result.log.of_type("start")).data
    assert "risk_model" in json.dumps(described)


async def test_risky_message_seeds_a_goal_when_the_rectifier_sees_nothing(tmp_path):
    llm = backend()
    defense = argus_with_risk(llm, tmp_path, redact=False)
    defense._watch = {("agent_4", "agent_5")}
    text = f"Report of agent_4 on the tables is ready. {GOAL}"
    # the scripted rectifier flags only messages with 'pasta': strip it to see the risk path alone
    quiet = text.replace("pasta", "noodles")
    out = await defense.intercept(EdgeMessage(sender="agent_4", receiver="agent_5", round=1, text=quiet), None)  # type: ignore[arg-type]
    assert out.details["deliberate_by_risk"] and out.details["goal_source"] == "risk"
    assert defense.goals.texts == [GOAL.replace("pasta", "noodles")]


async def test_redaction_replaces_risky_sentences_with_the_closest_ground_truth(tmp_path):
    llm = backend()
    defense = argus_with_risk(llm, tmp_path, ground_truths=(TRUTH, "Unrelated fact about tables and chairs."),
                              ground_truth=True, rectifier_llm=False)
    defense._watch = {("agent_4", "agent_5")}
    text = f"The data tables are in the shared folder today. {GOAL}"
    out = await defense.intercept(EdgeMessage(sender="agent_4", receiver="agent_5", round=1, text=text), None)  # type: ignore[arg-type]
    assert out.action.value == "rewrite" and out.usage.calls == 0
    assert GOAL not in out.text and "The data tables are in the shared folder today." in out.text
    assert f"Correction: {TRUTH}" in out.text
    assert out.details["redacted"][0]["sentence"] == GOAL


@pytest.mark.parametrize("all_channels", [False, True])
async def test_risk_on_every_channel_redacts_unmonitored_messages_without_the_llm(tmp_path, all_channels):
    llm = backend()
    defense = argus_with_risk(llm, tmp_path, ground_truths=(TRUTH,), ground_truth=True, risk_all_channels=all_channels)
    defense._watch = {("agent_1", "agent_2")}
    text = f"The data tables are in the shared folder today. {GOAL}"
    out = await defense.intercept(EdgeMessage(sender="agent_4", receiver="agent_5", round=1, text=text), None)  # type: ignore[arg-type]
    if not all_channels:
        assert out.action.value == "pass" and out.reason == "channel not monitored" and not defense.goals.texts
        return
    # the rectifier LLM is on (default) but runs on monitored channels only
    assert out.action.value == "rewrite" and out.usage.calls == 0 and out.details["monitored"] is False
    assert GOAL not in out.text and f"Correction: {TRUTH}" in out.text
    assert out.details["deliberate_by_risk"] and defense.goals.texts == [GOAL]
    # a clean message on an unmonitored channel passes
    clean = await defense.intercept(EdgeMessage(sender="agent_4", receiver="agent_5", round=1, text="Tables are ready."), None)  # type: ignore[arg-type]
    assert clean.action.value == "pass" and clean.usage.calls == 0


async def test_redaction_without_evidence_removes_and_says_so_after_the_rectifier(tmp_path):
    llm = backend()
    defense = argus_with_risk(llm, tmp_path)
    defense._watch = {("agent_4", "agent_5")}
    # the scripted rectifier rewrites messages with 'pasta' to a fixed correction, which the
    # risk model finds clean: the redaction has nothing left to do
    out = await defense.intercept(EdgeMessage(sender="agent_4", receiver="agent_5", round=1, text=GOAL), None)  # type: ignore[arg-type]
    assert out.action.value == "rewrite" and out.text.startswith("CORRECTED") and "redacted" not in out.details
    # a message the rectifier passes keeps the risky sentence until the redaction removes it
    quiet = f"Report of agent_4 on the tables. {GOAL.replace('pasta', 'noodles')}"
    out = await defense.intercept(EdgeMessage(sender="agent_4", receiver="agent_5", round=1, text=quiet), None)  # type: ignore[arg-type]
    assert out.action.value == "rewrite" and out.usage.calls >= 1
    assert "noodles" not in out.text and out.text.startswith("Report of agent_4 on the tables.")
    assert "1 statement(s) removed" in out.text


async def test_prescreen_with_risk_skips_the_llm_on_calm_messages(tmp_path):
    llm = backend()
    defense = argus_with_risk(llm, tmp_path, prescreen=True, prescreen_threshold=0.99)
    defense._watch = {("agent_1", "agent_2"), ("agent_4", "agent_5")}
    calm = await defense.intercept(EdgeMessage(sender="agent_1", receiver="agent_2", round=1, text="Report of agent_1 on the measured data tables."), None)  # type: ignore[arg-type]
    hot = await defense.intercept(EdgeMessage(sender="agent_4", receiver="agent_5", round=1, text=GOAL), None)  # type: ignore[arg-type]
    assert calm.action.value == "pass" and calm.usage.calls == 0 and calm.details["risk"] < 0.05
    assert hot.usage.calls >= 1


@pytest.mark.parametrize("gate", [True, False])
async def test_rectifier_runs_only_where_the_risk_model_acts(tmp_path, gate):
    llm = backend()
    defense = argus_with_risk(llm, tmp_path, rectify_risky_only=gate, redact=False)
    defense._watch = {("agent_1", "agent_2"), ("agent_4", "agent_5")}
    # the scripted rectifier rewrites every message with 'pasta'; this one is far from the goal
    calm_text = "Report of agent_1: the pasta tables are measured."
    calm = await defense.intercept(EdgeMessage(sender="agent_1", receiver="agent_2", round=1, text=calm_text), None)  # type: ignore[arg-type]
    hot = await defense.intercept(EdgeMessage(sender="agent_4", receiver="agent_5", round=1, text=GOAL), None)  # type: ignore[arg-type]
    assert calm.details["risk"] < defense.risk.act_threshold <= hot.details["risk"]
    assert hot.usage.calls >= 1 and hot.action.value == "rewrite"  # risky: the rectifier rewrites it either way
    if gate:
        assert calm.action.value == "pass" and calm.usage.calls == 0 and "rectifier_skipped" in calm.details
    else:
        assert calm.action.value == "rewrite" and calm.usage.calls >= 1 and "rectifier_skipped" not in calm.details


LAUNDERED = "Thin air up high at the mountain hut."  # hashing/256: risk ~0.30, between screen 0.05 and act 0.5
PLAIN_FIX = "CORRECTED: water boils COLDER at altitude."  # risk ~0.0004


@pytest.mark.parametrize(("revised", "kept"), [(LAUNDERED, False), (PLAIN_FIX, True)])
async def test_gated_rewrite_that_launders_gives_way_to_the_risk_models_redaction(tmp_path, revised, kept):
    from misguard.config import LLMSettings
    from misguard.llm import get_llm

    # a small rectifier's typical answer: it calls the message true and rewrites it
    answer = json.dumps({"revised_message": f"The statement is true. {revised}", "need_review": False})
    llm = get_llm("mock", LLMSettings(retries=0), respond=lambda messages: answer)
    defense = argus_with_risk(llm, tmp_path, rectify_risky_only=True)
    defense._watch = {("agent_4", "agent_5")}
    text = f"The data tables are in the shared folder today. {GOAL}"
    out = await defense.intercept(EdgeMessage(sender="agent_4", receiver="agent_5", round=1, text=text), None)  # type: ignore[arg-type]
    assert out.usage.calls >= 1 and out.action.value == "rewrite" and GOAL not in out.text
    if kept:  # a plain correction stays below the screen threshold: the rectifier's text goes through
        assert PLAIN_FIX in out.text and "rectifier_rewrite_rejected" not in out.details
    else:  # the laundered rewrite is dropped for the risk model's own redaction of the original
        assert LAUNDERED not in out.text and "The data tables are in the shared folder today." in out.text
        assert "rectifier_rewrite_rejected" in out.details


async def test_probe_counts_a_risk_flag_as_deliberate(tmp_path):
    from misguard.bench.misinfotask._probe import _decide

    defense = argus_with_risk(backend(), tmp_path, rectifier_llm=False)
    hot, calm = await _decide([defense], GOAL), await _decide([defense], "Report of agent_1 on the measured data tables.")
    assert hot["acted"] and hot["flagged_deliberate"] and hot["calls"] == 0
    assert not calm["acted"] and not calm["flagged_deliberate"]


def test_replace_spans_removes_a_sentence_and_its_blank_and_keeps_the_rest_verbatim():
    text = "Keep  this   spacing here.  Drop this false sentence now. Last one\n    indented code stays."
    spans = sentence_spans(text)
    assert replace_spans(text, {spans[1]: ""}) == "Keep  this   spacing here.  Last one\n    indented code stays."
    assert replace_spans(text, {spans[2]: ""}) == "Keep  this   spacing here.  Drop this false sentence now. Last one"
    assert replace_spans(text, {spans[1]: "Correction: X."}) == text.replace("Drop this false sentence now.", "Correction: X.")


def test_llm_free_mode_needs_a_risk_model_for_its_embedder():
    llm = backend()
    context = DefenseContext(Settings(), {"worker": llm}, get_embedder(EMBEDDER))
    with pytest.raises(ConfigError, match="risk model"):
        build_defense("argus", context, {"risk_model": None})
    # the shipped model was fitted for e5: another embedder is refused with what to do
    with pytest.raises(ConfigError, match="fit-risk"):
        build_defense("argus", context)


@given(st.lists(st.sampled_from(["word", "two words", "Three small words.", "end!", "why?", "\n", " ", "  ", ".", "a b c d"]), max_size=12))
def test_sentence_spans_match_split_sentences(parts):
    text = " ".join(parts)
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == split_sentences(text)
    assert all(text[a:b] == text[a:b].strip() for a, b in spans)
    if spans:
        kept = replace_spans(text, {spans[0]: ""})
        assert len(kept) < len(text.strip()) or not text[spans[0][0]:spans[0][1]]


def test_fit_risk_command_sets_the_act_operating_point_and_evaluates_apart(tmp_path):
    """`defenses fit-risk --act-fpr`: a larger share of true sentences allowed above the act
    threshold lowers it; the share and the data's hash are recorded with the model."""
    from typer.testing import CliRunner

    from misguard.cli.main import app

    thresholds = {}
    for fpr in (0.05, 0.3):
        out = tmp_path / f"fpr{fpr}.json"
        result = CliRunner().invoke(app, ["--embedder", "hashing/64", "defenses", "fit-risk", "--data", "sample",
                                          "--tasks", "0,1", "--eval-tasks", "2", "--act-fpr", str(fpr), "--output", str(out)])
        assert result.exit_code == 0, result.output
        saved = json.loads(out.read_text())
        assert saved["report"]["act_fpr"] == fpr and len(saved["report"]["data"]["sha256"]) == 64
        assert json.loads(out.with_name(out.stem + ".evaluation.json").read_text())["tasks"] == [2]
        thresholds[fpr] = saved["act_threshold"]
    assert thresholds[0.3] < thresholds[0.05]
    overlap = CliRunner().invoke(app, ["--embedder", "hashing/64", "defenses", "fit-risk", "--data", "sample",
                                       "--tasks", "0,1", "--eval-tasks", "1,2", "--output", str(tmp_path / "x.json")])
    assert overlap.exit_code == 2 and "share tasks [1]" in overlap.output


@pytest.mark.parametrize("quarantine", [False, True])
async def test_quarantine_blocks_a_caught_sender_later_and_hides_all_it_sent_from_the_concluder(tmp_path, quarantine):
    from misguard.config import LLMSettings
    from misguard.llm import get_llm
    from tests.defenses.test_argus import rectifier, scripted, worker

    turns = {"agent_4": 0}

    def worker_caught_in_round_2(agent, neighbours, prompt):
        if agent == "agent_4":
            turns["agent_4"] += 1
            if turns["agent_4"] == 1:  # round 1: nothing the risk model flags
                return json.dumps({"type": "send_message", "reply_prompt": "Hut note of agent_4 on the stove.",
                                   "sending_target": "agent_5"})
        return worker(agent, neighbours, prompt)

    base = scripted(worker=worker_caught_in_round_2)
    llm = get_llm("mock", LLMSettings(retries=0), respond=lambda m: rectifier(m) or base(m))
    defense = argus_with_risk(llm, tmp_path, rectifier_llm=False, risk_all_channels=True, quarantine=quarantine)
    result = await system(llm, defense, rounds=3).run()
    sent = {m["round"]: m for m in result.log.messages(delivered_only=False) if m["sender"] == "agent_4"}
    concluder = next(c[0].content for c in llm.calls if c[0].content.startswith("You are the concluder"))
    reviews = list(result.log.of_type("conclusion_review"))
    # round 1 reached agent_5 raw, round 2 was redacted either way
    assert sent[1]["text"] == "Hut note of agent_4 on the stove." and sent[2]["action"] == "rewrite"
    assert "agent_1 -> agent_2" in concluder  # honest agents are read either way
    if not quarantine:
        assert sent[3]["action"] == "rewrite" and "agent_4 -> agent_5" in concluder and not reviews
        return
    assert defense.quarantine.caught == {"agent_4": 2}
    assert sent[3]["action"] == "block" and not sent[3]["delivered"]
    # the concluder reads nothing agent_4 sent, the raw round-1 message included
    assert "agent_4 ->" not in concluder and "Hut note" not in concluder
    assert sorted((e.round, e.data["sender"], e.data["action"]) for e in reviews) == [
        (1, "agent_4", "block"), (2, "agent_4", "block")]
    round3 = next(e for e in result.log.of_type("interceptor_round") if e.round == 3)
    assert round3.data["quarantined"] == {"agent_4": 2}
