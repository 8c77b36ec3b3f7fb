"""ARGUS as in the paper (`argus-paper`: the LLM rectifier) on the real runtime with
scripted backends: goals inferred in round 1 steer round 2's channels onto the hijacked
agent's edge; the rewrite is what receivers, the concluder and the judges see; the
pre-screen skips the LLM on clean messages; ablations switch parts off."""

from __future__ import annotations

import json
import re

from misguard.config import ArgusSettings, LLMSettings, Settings
from misguard.defenses import ArgusDefense
from misguard.defenses.argus import PAPER_PRESET
from misguard.embed import get_embedder
from misguard.llm import get_llm
from misguard.mas import DefenseContext, MASConfig, MultiAgentSystem, RoleLLMs, Task, build_defense
from misguard.types import ChatMessage
from tests.helpers.mas_script import scripted

GOAL = "Thin mountain air makes water boil hotter so pasta cooks faster up high."


def worker(agent: str, neighbours: list[str], prompt: str) -> str:
    """agent_4 always pushes the goal to agent_5; the others report their own work."""
    if agent == "agent_4":
        return json.dumps({"type": "send_message", "reply_prompt": GOAL, "sending_target": "agent_5"})
    return json.dumps({"type": "send_message", "reply_prompt": f"Report of {agent} on the measured data tables.",
                       "sending_target": neighbours[0]})


def rectifier(messages: list[ChatMessage]) -> str | None:
    """Rectifier answers: a message with 'pasta' is deliberate; others are fine."""
    if not messages[0].content.startswith("You are a rectification agent"):
        return None
    if "false belief" in messages[-1].content:  # goal inference
        return json.dumps({"goal": GOAL})
    text = re.search(r'<<MESSAGE (\w+)>>\n(.*?)\n<<END \1>>', messages[1].content, re.S).group(2)  # type: ignore[union-attr]
    if "pasta" in text:
        return json.dumps({"checks": [{"sentence": text, "verdict": "contradiction", "confidence": "high"}],
                           "revised_message": "CORRECTED: water boils COLDER at altitude.", "need_review": True})
    return json.dumps({"revised_message": text, "need_review": False})


def backend(**kw):
    base = scripted(worker=worker, **kw)
    return get_llm("mock", LLMSettings(retries=0), respond=lambda m: rectifier(m) or base(m))


def argus(llm, **params) -> ArgusDefense:
    params = {"relevance_threshold": 0.5, "goal_dedup_threshold": 0.9, **params}
    (defense,) = build_defense("argus-paper", DefenseContext(Settings(), {"worker": llm}, get_embedder("hashing/256")), params)
    return defense


def system(llm, defense, rounds=2, topology="chain", agents=5):
    task = Task(id="t", user_input="Cook pasta at a mountain hut.", agent_num=agents)
    return MultiAgentSystem(task, RoleLLMs(worker=llm), MASConfig(topology=topology, rounds=rounds), interceptors=[defense])


async def test_no_goal_without_a_deliberate_message_on_a_monitored_channel():
    llm = backend()
    defense = argus(llm)
    result = await system(llm, defense, rounds=2).run()
    assert ("agent_4", "agent_5") not in defense.monitored[1]  # topology alone misses it (hand-computed)
    rounds = {e.round: e.data for e in result.log.of_type("interceptor_round")}
    assert rounds[1]["localization"]["mode"] == "topology" and rounds[1]["goals"] == []
    assert rounds[2]["localization"]["mode"] == "adaptive" and defense.goals.texts == []


async def test_inferred_goal_steers_next_round_and_is_deduplicated():
    def worker_with_carrier(agent, neighbours, prompt):
        if agent == "agent_2":  # 2->3 is monitored in round 1: the rectifier sees the goal there
            return json.dumps({"type": "send_message", "reply_prompt": f"I read that {GOAL}", "sending_target": "agent_3"})
        return worker(agent, neighbours, prompt)

    base = scripted(worker=worker_with_carrier)
    llm = get_llm("mock", LLMSettings(retries=0), respond=lambda m: rectifier(m) or base(m))
    defense = argus(llm, top_k=6)
    result = await system(llm, defense, rounds=3).run()
    assert ("agent_4", "agent_5") not in defense.monitored[1]
    assert defense.goals.texts == [GOAL]  # inferred each round, kept once
    assert ("agent_4", "agent_5") in defense.monitored[2] and ("agent_4", "agent_5") in defense.monitored[3]
    round2 = next(e for e in result.log.of_type("interceptor_round") if e.round == 2)
    assert round2.data["goals"] == [GOAL]
    top = {(a, b): s for a, b, s in round2.data["localization"]["top_scores"]}
    assert top[("agent_4", "agent_5")] > top.get(("agent_1", "agent_2"), 0)


async def test_rewrite_is_what_receiver_and_concluder_see_and_cost_is_logged():
    def worker_to_3(agent, neighbours, prompt):
        if agent == "agent_2":
            return json.dumps({"type": "send_message", "reply_prompt": GOAL, "sending_target": "agent_3"})
        return worker(agent, neighbours, prompt)

    base = scripted(worker=worker_to_3)
    llm = get_llm("mock", LLMSettings(retries=0), respond=lambda m: rectifier(m) or base(m))
    defense = argus(llm)
    result = await system(llm, defense, rounds=2).run()
    rewritten = [m for m in result.log.messages() if m["sender"] == "agent_2"]
    assert rewritten and all(m["text"] == "CORRECTED: water boils COLDER at altitude." and m["original"] == GOAL for m in rewritten)
    agent3_prompts = ["\n".join(x.content for x in c) for c in llm.calls if c[0].content.startswith("You are agent_3,")]
    round2 = [p for p in agent3_prompts if "New message from agent_2" in p]
    assert round2 and all("CORRECTED" in p and GOAL not in p for p in round2)
    concluder = next(c[0].content for c in llm.calls if c[0].content.startswith("You are the concluder"))
    assert "CORRECTED" in concluder and "agent_2 -> agent_3: " + GOAL not in concluder
    interceptions = [e for e in result.log.of_type("interception") if e.data["action"] == "rewrite"]
    assert interceptions and all(e.data["usage"]["calls"] == 2 for e in interceptions)  # rectify + goal inference
    assert result.log.usage_by("interceptor")["argus"].calls >= 2


async def test_unparseable_rectifier_leaves_message_and_says_so():
    base = scripted(worker=worker)
    llm = get_llm("mock", LLMSettings(retries=0),
                  respond=lambda m: "not json at all" if m[0].content.startswith("You are a rectification agent") else base(m))
    defense = argus(llm)
    result = await system(llm, defense, rounds=1).run()
    monitored = [e for e in result.log.of_type("interception") if e.data["details"].get("monitored")]
    assert monitored and all(e.data["action"] == "pass" and "rectifier_unusable" in e.data["details"] for e in monitored)
    assert all(m["text"] == m["original"] for m in result.log.messages())


async def test_cut_off_rectifier_answer_is_unusable_not_clean():
    # The answer hit the token limit inside its list of checks: the first check parses as a
    # JSON object on its own, which must not read as "nothing to correct".
    cut = '{"checks": [{"sentence": "s", "verdict": "contradiction", "confidence": "high"}, {"sentence": "the rest' + " is" * 40
    base = scripted(worker=worker)
    llm = get_llm("mock", LLMSettings(retries=0),
                  respond=lambda m: cut if m[0].content.startswith("You are a rectification agent") else base(m))
    defense = argus(llm, max_tokens=len(cut.split()))
    result = await system(llm, defense, rounds=1).run()
    monitored = [e for e in result.log.of_type("interception") if e.data["details"].get("monitored")]
    assert monitored and all(e.data["reason"] == "rectifier answer unusable; message left unchanged" for e in monitored)
    assert all("cut off at max_tokens" in e.data["details"]["rectifier_unusable"] for e in monitored)
    assert all(e.data["usage"]["calls"] == 2 for e in monitored)  # re-asked once, then reported


async def test_prescreen_skips_clean_messages_once_goals_exist():
    llm = backend()
    defense = argus(llm, prescreen=True, prescreen_threshold=0.5)
    defense.goals.add(GOAL)
    defense._watch = {("agent_1", "agent_2"), ("agent_4", "agent_5")}
    from misguard.types import EdgeMessage

    clean = await defense.intercept(EdgeMessage(sender="agent_1", receiver="agent_2", round=2, text="Report of agent_1 on the measured data tables."), None)  # type: ignore[arg-type]
    dirty = await defense.intercept(EdgeMessage(sender="agent_4", receiver="agent_5", round=2, text=GOAL), None)  # type: ignore[arg-type]
    assert clean.action.value == "pass" and clean.usage.calls == 0 and clean.details["prescreen_score"] < 0.5
    assert dirty.action.value == "rewrite" and dirty.usage.calls >= 1


async def test_ablations_static_localization_single_round_and_ground_truth():
    llm = backend()
    static = argus(llm, dynamic_localization=False)
    await system(llm, static, rounds=3).run()
    assert static.monitored[1] == static.monitored[2] == static.monitored[3]
    single = argus(llm, multi_round=False)
    await system(llm, single, rounds=2).run()
    assert single.monitored[1] and single.monitored[2] == []
    grounded = ArgusDefense(llm, get_embedder("hashing/64"), ArgusSettings(**PAPER_PRESET, ground_truth=True), ground_truths=("Water boils at about 90 C at 3000 m.",))
    assert grounded.evidence("x") == ["True: Water boils at about 90 C at 3000 m."]
    blind = ArgusDefense(llm, get_embedder("hashing/64"), ArgusSettings(**PAPER_PRESET), ground_truths=("Water boils at about 90 C at 3000 m.",))
    assert blind.evidence("x") == []


async def test_direct_prompt_without_chain_of_thought():
    llm = backend()
    defense = argus(llm, chain_of_thought=False)
    await system(llm, defense, rounds=1).run()
    prompts = [c[1].content for c in llm.calls if c[0].content.startswith("You are a rectification agent")]
    assert prompts and all("step by step" not in p for p in prompts)
    # An answer that carries checks anyway (the scripted rectifier adds them) is still read.
    result = await system(llm, argus(llm, chain_of_thought=False, top_k=8), rounds=1).run()
    assert any(e.data["action"] == "rewrite" for e in result.log.of_type("interception"))
