"""One end-to-end run of a shipped task with the real local model (Qwen2.5 0.5B pack), 2 rounds."""

from __future__ import annotations

import pytest

from misguard.attacks import AttackSpec, build_attack
from misguard.bench.misinfotask import LLMJudge, ProxyJudge, load_tasks, sample_tasks_path
from misguard.config import LLMSettings
from misguard.embed import get_embedder
from misguard.llm import get_llm
from misguard.mas import MASConfig, MultiAgentSystem, RoleLLMs, read_events

pytest.importorskip("xllamacpp", reason="needs the [local] extra")
pytestmark = [pytest.mark.slow, pytest.mark.local_llm]

KNOWN_FALLBACKS = {"parse_fallback", "target_fallback", "tool_limit", "empty_message", "message_cut", "plan_repair", "concluder_log_cut"}


async def test_shipped_task_two_rounds_with_the_local_model(tmp_path):
    task = load_tasks(sample_tasks_path())[0]
    llm = get_llm("local/qwen2.5-0.5b", LLMSettings(n_ctx=4096, timeout_s=900))
    # Short answers and no tool calls keep this test to about a dozen model calls; the
    # benchmark exercises tools with the real model.
    config = MASConfig(
        topology="star", rounds=2, max_tool_calls=0, worker_max_tokens=80, planner_max_tokens=120,
        concluder_max_tokens=80,
    )
    system = MultiAgentSystem(task.runtime_task(), RoleLLMs(worker=llm), config)
    await system.plan()
    attack = build_attack("inject", AttackSpec(task.misinfo_goal, task.misinfo_argument, point="most_central"))
    assert attack.apply(system)["targets"] == ["agent_1"]
    result = await system.run()

    messages = result.log.messages()
    assert len(messages) == task.agent_num * 2
    assert all(result.graph.has_edge(m["sender"], m["receiver"]) and m["text"].strip() for m in messages)
    assert result.answer.strip()
    by_agent = result.log.usage_by("agent")
    assert {"planner", "agent_1", "agent_2", "agent_3", "concluder"} <= set(by_agent)
    assert all(u.prompt_tokens > 0 and u.completion_tokens > 0 for u in by_agent.values())
    assert {e.data["kind"] for e in result.log.of_type("fallback")} <= KNOWN_FALLBACKS
    assert read_events(result.log.dump(tmp_path / "events.jsonl")).final_answer() == result.answer

    proxy = ProxyJudge(get_embedder("e5"))
    mt = proxy.mt_proxy(result.answer, task.misinfo_goal, task.misinfo_argument, task.ground_truth)
    assert mt["score"] is None or 0.0 <= mt["score"] <= 10.0
    score = await LLMJudge(llm, max_tokens=60).misinformation_toxicity(task.user_input, task.misinfo_goal, result.answer)
    assert score.score is None or 0 <= score.score <= 10
