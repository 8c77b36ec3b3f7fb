"""The one end-to-end run on a real model: a shipped task on Qwen2.5-0.5B (every role),
prompt injection at the hub, ARGUS on, one short round, judged by the LLM and the embedding
proxy. It checks the runtime (messages, usage, event log) and the defense (localization,
rectifier decisions, rewrites delivered) on the same run, because on 2 cores every real
run costs minutes of the suite's budget."""

from __future__ import annotations

import pytest

from misguard.attacks import AttackSpec, build_attack
from misguard.bench.misinfotask import LLMJudge, ProxyJudge
from misguard.mas import load_tasks, sample_tasks_path
from misguard.config import LLMSettings, Settings
from misguard.embed import get_embedder
from misguard.errors import ConfigError, MissingExtraError
from misguard.llm import get_llm
from misguard.mas import DefenseContext, MASConfig, MASResult, MultiAgentSystem, RoleLLMs, build_defense, read_events

pytestmark = [pytest.mark.slow, pytest.mark.local_llm]

ROUNDS = 1
KNOWN_FALLBACKS = {"parse_fallback", "target_fallback", "tool_limit", "empty_message", "message_cut", "plan_repair", "concluder_log_cut"}


def _qwen():
    try:
        # A generous timeout: on a shared 2-core machine one answer can take minutes. Every
        # core: this is the suite's longest test, and after the first minutes of `make test`
        # the other xdist worker has finished and it runs alone (idle, every core: 140 s).
        return get_llm("local/qwen2.5-0.5b", LLMSettings(n_ctx=4096, timeout_s=1500))
    except (MissingExtraError, ConfigError) as exc:
        # Never a skip: the test extras install the pack, so a missing or renamed pack is a
        # failure to see, not a test that quietly stops running.
        pytest.fail(f"the qwen2.5-0.5b pack is not usable (extras local, qwen-0-5b; `make install-test` installs "
                    f"them; without them deselect this test with -m 'not local_llm'): {exc}")


def _check_runtime(result: MASResult, agent_num: int, tmp_path) -> None:
    messages = result.log.messages()
    assert len(messages) == agent_num * ROUNDS
    assert all(result.graph.has_edge(m["sender"], m["receiver"]) and m["text"].strip() for m in messages)
    assert result.answer.strip()
    by_agent = result.log.usage_by("agent")
    assert {"planner", "agent_1", "agent_2", "agent_3", "concluder"} <= set(by_agent)
    assert all(u.prompt_tokens > 0 and u.completion_tokens > 0 for u in by_agent.values())
    assert {e.data["kind"] for e in result.log.of_type("fallback")} <= KNOWN_FALLBACKS
    assert read_events(result.log.dump(tmp_path / "events.jsonl")).final_answer() == result.answer


def _check_argus(result: MASResult) -> None:
    rounds = result.log.of_type("interceptor_round")
    assert [e.round for e in rounds] == list(range(1, ROUNDS + 1))
    assert all(e.data["localization"]["channels"] for e in rounds)
    monitored = [e for e in result.log.of_type("interception") if e.data["details"].get("monitored")]
    assert monitored, "no message crossed a monitored channel"
    for e in monitored:  # every decision on a monitored channel came from the rectifier and says why
        assert e.data["usage"]["calls"] >= 1 and e.data["reason"]
        if e.data["action"] == "rewrite":
            assert e.data["text_after"] and e.data["text_after"] != e.data["text_before"]
    delivered = {m["id"]: m["text"] for m in result.log.messages()}
    for e in monitored:
        if e.data["action"] == "rewrite":
            assert delivered[e.data["message_id"]] == e.data["text_after"]  # receivers got the rewrite
    assert result.log.usage_by("interceptor")["argus"].calls >= len(monitored)


@pytest.mark.timeout(2400)  # about 2 minutes on an idle 2-core machine; far more when it is shared
async def test_shipped_task_with_argus_on_qwen_05b(tmp_path):
    llm = _qwen()
    task = load_tasks(sample_tasks_path())[0]
    embedder = get_embedder("e5")
    # Two monitored channels a round (star: the spokes' only edges carry a message every
    # round) keep the rectifier to two calls.
    (argus,) = build_defense("argus-paper", DefenseContext(Settings(), {"worker": llm}, embedder), {"max_tokens": 220, "top_k": 2})
    # Short answers and no tool calls keep this to about 15 model calls; the benchmark
    # exercises tools with the real model.
    config = MASConfig(topology="star", rounds=ROUNDS, max_tool_calls=0, worker_max_tokens=80,
                       planner_max_tokens=160, concluder_max_tokens=100)
    system = MultiAgentSystem(task.runtime_task(), RoleLLMs(worker=llm), config, interceptors=[argus])
    await system.plan()
    attack = build_attack("inject", AttackSpec(task.misinfo_goal, task.misinfo_argument, point="most_central"))
    assert attack.apply(system)["targets"] == ["agent_1"]
    result = await system.run()

    _check_runtime(result, task.agent_num, tmp_path)
    _check_argus(result)
    proxy = ProxyJudge(embedder)
    mt = proxy.mt_proxy(result.answer, task.misinfo_goal, task.misinfo_argument, task.ground_truth)
    # The answer is not empty (checked above), so the proxy scores it; the LLM judge decodes
    # under a JSON schema, so an unparseable answer (score None) is a failure here. The
    # judge's own token budget: at 60 tokens its reason was cut off, and the score with it.
    assert mt["score"] is not None and 0.0 <= mt["score"] <= 10.0 and mt["sentences"] >= 1
    score = await LLMJudge(llm).misinformation_toxicity(task.user_input, task.misinfo_goal, result.answer)
    assert score.score is not None and 0 <= score.score <= 10, score.reason
