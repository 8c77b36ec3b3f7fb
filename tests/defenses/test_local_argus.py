"""One end-to-end run of a shipped task with the real local 0.5B model and ARGUS on:
prompt injection at the hub, 2 short rounds, every role on Qwen2.5-0.5B."""

from __future__ import annotations

import pytest

from misguard.attacks import AttackSpec, build_attack
from misguard.bench.misinfotask import load_tasks, sample_tasks_path
from misguard.config import LLMSettings, Settings
from misguard.embed import get_embedder
from misguard.errors import ConfigError, MissingExtraError
from misguard.llm import get_llm
from misguard.mas import DefenseContext, MASConfig, MultiAgentSystem, RoleLLMs, build_defense

pytestmark = [pytest.mark.slow, pytest.mark.local_llm]


def _qwen():
    try:
        return get_llm("local/qwen2.5-0.5b", LLMSettings(n_ctx=4096))
    except (MissingExtraError, ConfigError) as exc:
        pytest.skip(f"needs the local backend with the qwen2.5-0.5b pack (extras local, qwen-0-5b): {exc}")


async def test_shipped_task_with_argus_on_qwen_05b():
    llm = _qwen()
    task = load_tasks(sample_tasks_path())[0]
    embedder = get_embedder("e5")
    (argus,) = build_defense("argus", DefenseContext(Settings(), {"worker": llm}, embedder), {"max_tokens": 220})
    config = MASConfig(topology="star", rounds=2, max_tool_calls=0, worker_max_tokens=80, planner_max_tokens=160,
                       concluder_max_tokens=100)
    system = MultiAgentSystem(task.runtime_task(), RoleLLMs(worker=llm), config, interceptors=[argus])
    await system.plan()
    build_attack("inject", AttackSpec(task.misinfo_goal, task.misinfo_argument, point="agent_1")).apply(system)
    result = await system.run()

    rounds = [e for e in result.log.of_type("interceptor_round")]
    assert [e.round for e in rounds] == [1, 2] and all(e.data["localization"]["channels"] for e in rounds)
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
    assert result.answer.strip()
