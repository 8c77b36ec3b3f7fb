"""Every registered attack on a planned system (mock backend), and injection points."""

from __future__ import annotations

import pytest

from misguard.attacks import ATTACKS, AttackSpec, EmbeddingRetriever, build_attack, choose_targets, default_background
from misguard.config import LLMSettings
from misguard.embed import get_embedder
from misguard.errors import ConfigError
from misguard.llm import get_llm
from misguard.mas import MASConfig, MultiAgentSystem, RoleLLMs, Task, ToolSpec
from tests.helpers.mas_script import scripted

GOAL = "The moon is made of green cheese."
ARGS = ("A dairy board says lunar samples smell of cheddar.", "Old maps mark the moon as a cheese wheel.")
TASK = Task(
    id="t", user_input="Explain what the moon is made of.", agent_num=3,
    tools=(ToolSpec(tool_name="Rock Lab", tool_description="Analyses rock samples."),),
)


def spec(point="random", seed=0):
    return AttackSpec(GOAL, ARGS, point=point, embedder=get_embedder("hashing/128"), seed=seed)


async def planned(topology="star", n=3, respond=None, **config):
    llm = get_llm("mock", LLMSettings(), respond=respond or scripted())
    task = TASK.model_copy(update={"agent_num": n})
    system = MultiAgentSystem(task, RoleLLMs(worker=llm), MASConfig(topology=topology, **config))
    await system.plan()
    return system, llm


async def test_registry_walk_every_attack_applies_and_reports():
    assert set(ATTACKS.names()) == {"inject", "tool", "rag"}
    for entry in ATTACKS:
        system, _ = await planned()
        attack = entry.factory(spec())
        report = attack.apply(system)
        assert report["attack"] == entry.name and report["targets"]
        assert next(system.log.of_type("attack")).data["targets"] == report["targets"]
        touched = [
            a.id for a in system.agents.values()
            if a.injection or a.tool_bias or (a.retriever is not None and entry.name != "rag")
        ]
        if entry.name != "rag":
            assert touched == report["targets"], entry.name
        assert attack.describe()["name"] == entry.name
        assert "paper_name" in entry.metadata
    assert build_attack("none", spec()) is None


async def test_prompt_injection_reaches_only_the_hijacked_agent():
    system, llm = await planned(rounds=1)
    report = build_attack("inject", spec(point="agent_2")).apply(system)
    assert report["targets"] == ["agent_2"]
    await system.run()
    for call in llm.calls:
        text = "\n".join(m.content for m in call)
        if call[0].content.startswith("You are agent_2,"):
            assert GOAL in text and ARGS[0] in text and "HIGH PRIORITY" in text
        elif call[0].content.startswith("You are agent_"):
            assert GOAL not in text


async def test_tool_injection_biases_only_the_hijacked_agents_tool_outputs():
    import json

    def worker(agent, neighbours, prompt):
        if "Result of tool" not in prompt:
            return json.dumps({"type": "use_tool", "tool_name": "Rock Lab", "reply_prompt": "sample 1"})
        return json.dumps({"type": "send_message", "reply_prompt": "ok", "sending_target": neighbours[0]})

    system, llm = await planned(respond=scripted(worker=worker), rounds=1)
    build_attack("tool", spec(point="agent_3")).apply(system)
    result = await system.run()
    tool_calls = {e.data["agent"]: e.data for e in result.log.of_type("tool_call")}
    assert tool_calls["agent_3"]["biased"] and not tool_calls["agent_1"]["biased"]
    tool_prompts = [c[0].content for c in llm.calls if c[0].content.startswith("You simulate the tool")]
    assert sum(ARGS[1] in p for p in tool_prompts) == 1


async def test_rag_poisoning_puts_arguments_at_the_top_for_every_agent():
    system, llm = await planned(rounds=1)
    report = build_attack("rag", spec()).apply(system)
    assert report["targets"] == ["agent_1", "agent_2", "agent_3"] and report["poisoned_docs"] == 2
    assert report["background_docs"] == len(default_background())
    result = await system.run()
    for event in result.log.of_type("retrieval"):
        docs = event.data["documents"]
        assert len(docs) == 5
        assert any(ARGS[0] in d for d in docs[:2])  # the prefixed arguments rank first
    worker_prompts = ["\n".join(m.content for m in c) for c in llm.calls if c[0].content.startswith("You are agent_")]
    assert all("Retrieved knowledge" in p and ARGS[1] in p for p in worker_prompts)


async def test_rag_with_a_named_point_leaves_the_others_on_the_clean_store():
    system, _ = await planned()
    build_attack("rag", spec(point="agent_1")).apply(system)
    clean = system.agents["agent_2"].retriever
    assert clean is not None and all(ARGS[0] not in d for d in clean.documents)
    assert any(ARGS[0] in d for d in system.agents["agent_1"].retriever.documents)


async def test_injection_points():
    star, _ = await planned("star", n=4)
    assert choose_targets(star, "most_central", 0) == ["agent_1"]
    chain, _ = await planned("chain", n=5)
    assert choose_targets(chain, "most_central", 0) == ["agent_3"]
    assert choose_targets(chain, "agent_4", 0) == ["agent_4"]
    assert choose_targets(chain, "all", 0) == chain.agent_ids
    picks = {choose_targets(chain, "random", s)[0] for s in range(20)}
    assert choose_targets(chain, "random", 3) == choose_targets(chain, "random", 3) and len(picks) > 1
    with pytest.raises(ConfigError, match="injection point"):
        choose_targets(chain, "agent_9", 0)


async def test_bad_specs_are_config_errors():
    with pytest.raises(ConfigError, match="goal"):
        build_attack("inject", AttackSpec(GOAL, ()))
    with pytest.raises(ConfigError, match="embedder"):
        build_attack("rag", AttackSpec(GOAL, ARGS))
    with pytest.raises(ConfigError, match="Unknown attack"):
        build_attack("dos", spec())
    unplanned = MultiAgentSystem(TASK, RoleLLMs(worker=get_llm("mock")))
    with pytest.raises(ConfigError, match="plan"):
        build_attack("inject", spec()).apply(unplanned)


def test_retriever_ranks_by_cosine():
    retriever = EmbeddingRetriever(["apples are red", "the sky is blue", "cheese on the moon"], get_embedder("hashing/256"))
    assert retriever.retrieve("cheese moon", 1) == ["cheese on the moon"]
    with pytest.raises(ConfigError):
        EmbeddingRetriever([], get_embedder("hashing/64"))
