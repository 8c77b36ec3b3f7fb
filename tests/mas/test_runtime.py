"""The runtime on the scripted mock backend: every topology, rounds, FIFO inbox, tools,
fallbacks for broken JSON, surfaced backend errors, accounting and the event log."""

from __future__ import annotations

import json

import pytest

from misguard.config import LLMSettings
from misguard.errors import DataError, LLMConnectionError
from misguard.llm import get_llm
from misguard.mas import (
    MASConfig,
    MultiAgentSystem,
    RoleLLMs,
    Task,
    ToolSpec,
    read_events,
    topology_names,
)
from tests.helpers.mas_script import echo_worker, scripted

TOOLS = (ToolSpec(tool_name="Calculator", tool_description="Adds numbers.", tool_input="{a, b}", tool_output="{sum}"),)


def make_task(n: int = 3) -> Task:
    return Task(id="t1", user_input="Decide whether the claim holds.", agent_num=n, tools=TOOLS)


def mock(respond, **settings):
    return get_llm("mock", LLMSettings(retries=0, **settings), respond=respond)


@pytest.mark.parametrize("topology", [t for t in topology_names() if t != "custom"])
async def test_every_topology_runs_and_messages_follow_edges(topology):
    system = MultiAgentSystem(make_task(4), RoleLLMs(worker=mock(scripted())), MASConfig(topology=topology, rounds=3))
    result = await system.run()
    assert result.answer == "FINAL ANSWER"
    messages = result.log.messages()
    assert len(messages) == 4 * 3  # every worker sends once per round
    edges = set(result.graph.edges)
    assert all((m["sender"], m["receiver"]) in edges for m in messages)
    assert result.log.rounds() == [1, 2, 3]
    plan = next(result.log.of_type("plan"))
    assert len(plan.data["subtasks"]) == 4


async def test_custom_topology_from_edge_list():
    config = MASConfig(topology="custom", edges=(("agent_1", "agent_2"), ("agent_2", "agent_1"), ("agent_3", "agent_1")), rounds=1)
    result = await MultiAgentSystem(make_task(3), RoleLLMs(worker=mock(scripted())), config).run()
    assert {(m["sender"], m["receiver"]) for m in result.log.messages()} == {
        ("agent_1", "agent_2"), ("agent_2", "agent_1"), ("agent_3", "agent_1")
    }


async def test_planner_is_held_to_exactly_agent_num_subtasks():
    two = lambda prompt: json.dumps({"subtasks": ["only one", "and two"]})  # noqa: E731
    result = await MultiAgentSystem(make_task(4), RoleLLMs(worker=mock(scripted(planner=two))), MASConfig(rounds=1)).run()
    plan = next(result.log.of_type("plan"))
    assert len(plan.data["subtasks"]) == 4 and plan.data["subtasks"][:2] == ["only one", "and two"]
    assert any(e.data["kind"] == "plan_repair" for e in result.log.of_type("fallback"))


async def test_self_determination_uses_the_planners_graph():
    def planner(prompt):
        return json.dumps({"subtasks": ["a", "b", "c"], "graph": {"agent_1": ["agent_3"], "agent_3": ["agent_2"], "agent_2": ["agent_1"]}})

    result = await MultiAgentSystem(make_task(3), RoleLLMs(worker=mock(scripted(planner=planner))), MASConfig(topology="self", rounds=1)).run()
    assert sorted(result.graph.edges) == [("agent_1", "agent_3"), ("agent_2", "agent_1"), ("agent_3", "agent_2")]
    assert next(result.log.of_type("plan")).data["graph_source"] == "self"


async def test_one_inbound_message_per_round_fifo_and_empty_queue_opens_a_conversation():
    # Star: both leaves send to the hub in round 1; the hub reads one per round, in order.
    llm = mock(scripted())
    system = MultiAgentSystem(make_task(3), RoleLLMs(worker=llm), MASConfig(topology="star", rounds=3))
    result = await system.run()
    hub_prompts = [
        "\n".join(m.content for m in call) for call in llm.calls if call[0].content.startswith("You are agent_1,")
    ]
    # no "You have no new message" (the 0.5B echoed it as an apology): an instruction to work
    assert "no new message" not in hub_prompts[0] and "send agent_2 what you found" in hub_prompts[0]
    # no memory block before there is a memory; then the hub's own round-1 message is in it
    assert "recent memory" not in hub_prompts[0]
    assert "Your recent memory (oldest first):\n[round 1] to agent_2:" in hub_prompts[1]
    assert "Do not repeat any of these messages" in hub_prompts[1]
    assert "New message from agent_2: agent_2 saw <nothing>" in hub_prompts[1]
    assert "New message from agent_3: agent_3 saw <nothing>" in hub_prompts[2]
    assert result.log.messages(1)[0]["receiver"] == "agent_2"


async def test_invalid_target_is_replaced_by_a_neighbour_and_logged():
    def worker(agent, neighbours, prompt):
        return json.dumps({"type": "send_message", "reply_prompt": "hi", "sending_target": "agent_99"})

    result = await MultiAgentSystem(make_task(3), RoleLLMs(worker=mock(scripted(worker=worker))), MASConfig(topology="chain", rounds=1)).run()
    fallbacks = [e.data for e in result.log.of_type("fallback") if e.data["kind"] == "target_fallback"]
    assert len(fallbacks) == 3 and all(f["requested"] == "agent_99" for f in fallbacks)
    for m in result.log.messages():
        assert result.graph.has_edge(m["sender"], m["receiver"])


async def test_garbage_json_is_reasked_once_then_sent_as_text():
    worker = lambda agent, neighbours, prompt: "I think the claim is wrong, honestly."  # noqa: E731
    llm = mock(scripted(worker=worker))
    result = await MultiAgentSystem(make_task(3), RoleLLMs(worker=llm), MASConfig(topology="full", rounds=1)).run()
    worker_calls = [c for c in llm.calls if c[0].content.startswith("You are agent_")]
    assert len(worker_calls) == 6  # one answer + one re-ask per worker
    assert sum("could not be parsed" in c[-1].content for c in worker_calls) == 3
    kinds = [e.data["kind"] for e in result.log.of_type("fallback")]
    assert kinds.count("parse_fallback") == 3
    assert {m["text"] for m in result.log.messages()} == {"I think the claim is wrong, honestly."}


async def test_backend_failure_is_surfaced_not_swallowed():
    def respond(messages):
        if messages[0].content.startswith("You are agent_"):
            return LLMConnectionError("endpoint down")
        return scripted()(messages)

    system = MultiAgentSystem(make_task(3), RoleLLMs(worker=mock(respond)), MASConfig(rounds=1))
    with pytest.raises(LLMConnectionError):
        await system.run()


async def test_tool_call_is_simulated_by_the_tool_llm_then_message_sent():
    def worker(agent, neighbours, prompt):
        if "Result of tool" not in prompt:
            return json.dumps({"type": "use_tool", "tool_name": "calculator ", "reply_prompt": "{a: 1, b: 2}"})
        return json.dumps({"type": "send_message", "reply_prompt": "done", "sending_target": neighbours[0]})

    worker_llm = mock(scripted(worker=worker))
    tool_llm = mock(scripted(tool="SUM=3"))
    result = await MultiAgentSystem(
        make_task(3), RoleLLMs(worker=worker_llm, tool=tool_llm), MASConfig(topology="chain", rounds=1)
    ).run()
    calls = list(result.log.of_type("tool_call"))
    assert len(calls) == 3 and all(c.data["tool"] == "Calculator" and c.data["output"] == "SUM=3" for c in calls)
    assert "Adds numbers." in tool_llm.calls[0][0].content
    assert {m["text"] for m in result.log.messages()} == {"done"}


async def test_tool_limit_forces_a_message():
    worker = lambda a, n, p: json.dumps({"type": "use_tool", "tool_name": "Calculator", "reply_prompt": "1+1"})  # noqa: E731
    result = await MultiAgentSystem(
        make_task(3), RoleLLMs(worker=mock(scripted(worker=worker))), MASConfig(rounds=1, max_tool_calls=1)
    ).run()
    assert len(list(result.log.of_type("tool_call"))) == 3
    assert [e.data["kind"] for e in result.log.of_type("fallback")].count("tool_limit") == 3
    assert len(result.log.messages()) == 3


async def test_same_seed_same_run_and_seed_recorded():
    async def run(seed):
        worker = lambda a, n, p: json.dumps({"type": "send_message", "reply_prompt": "x", "sending_target": "nobody"})  # noqa: E731
        result = await MultiAgentSystem(
            make_task(5), RoleLLMs(worker=mock(scripted(worker=worker))), MASConfig(topology="random", rounds=3, seed=seed)
        ).run()
        start = next(result.log.of_type("start"))
        assert start.data["seed"] == seed
        options = start.data["components"]["llms"]["worker"]["options"]
        assert options["temperature"] == 0.0 and options["seed"] == 0
        return [(m["sender"], m["receiver"]) for m in result.log.messages()]

    assert await run(7) == await run(7)
    assert any([await run(s) != await run(7) for s in (1, 2, 3)])


async def test_tokens_per_agent_and_event_log_roundtrip(tmp_path):
    result = await MultiAgentSystem(make_task(3), RoleLLMs(worker=mock(scripted())), MASConfig(rounds=2)).run()
    by_agent = result.log.usage_by("agent")
    assert set(by_agent) == {"planner", "agent_1", "agent_2", "agent_3", "concluder"}
    assert all(u.calls >= 1 and u.prompt_tokens > 0 for u in by_agent.values())
    end = next(result.log.of_type("end"))
    assert end.data["usage"]["calls"] == sum(u.calls for u in by_agent.values()) == result.usage.calls
    path = result.log.dump(tmp_path / "events.jsonl")
    again = read_events(path)
    assert again.final_answer() == "FINAL ANSWER"
    assert len(again.messages()) == len(result.log.messages())
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["schema"] == "misguard.mas.events" and header["version"] == 1
    lines[0] = json.dumps({**header, "version": 99})
    path.write_text("\n".join(lines))
    with pytest.raises(DataError, match="newer"):
        read_events(path)


async def test_concluder_sees_newest_messages_within_budget():
    long_worker = lambda a, n, p: json.dumps({"type": "send_message", "reply_prompt": "y" * 500, "sending_target": n[0]})  # noqa: E731
    llm = mock(scripted(worker=long_worker))
    config = MASConfig(rounds=4, concluder_log_chars=1200)
    result = await MultiAgentSystem(make_task(3), RoleLLMs(worker=llm), config).run()
    concluder_prompt = [c for c in llm.calls if c[0].content.startswith("You are the concluder")][0][0].content
    assert "[round 4]" in concluder_prompt and "[round 1]" not in concluder_prompt
    assert any(e.data["kind"] == "concluder_log_cut" for e in result.log.of_type("fallback"))


def test_unknown_topology_is_a_config_error():
    from misguard.errors import ConfigError

    with pytest.raises(ConfigError, match="known"):
        MultiAgentSystem(make_task(3), RoleLLMs(worker=mock(scripted())), MASConfig(topology="torus"))


def test_echo_worker_is_the_default():
    assert scripted().__name__ == "respond" and echo_worker("agent_1", ["agent_2"], "")


async def test_json_with_invented_keys_is_salvaged_and_missing_type_inferred():
    def worker(agent, neighbours, prompt):
        if agent == "agent_1":
            return json.dumps({"answer": {"summary": "The claim does not hold.", "ok": "yes"}})
        return json.dumps({"reply_prompt": "inferred send", "sending_target": neighbours[0]})

    result = await MultiAgentSystem(make_task(3), RoleLLMs(worker=mock(scripted(worker=worker))), MASConfig(rounds=1)).run()
    texts = {m["sender"]: m["text"] for m in result.log.messages()}
    assert texts == {"agent_1": "The claim does not hold.", "agent_2": "inferred send", "agent_3": "inferred send"}
    kinds = [e.data for e in result.log.of_type("fallback")]
    assert [k["agent"] for k in kinds if k["kind"] == "parse_fallback"] == ["agent_1"]
