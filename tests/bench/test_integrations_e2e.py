"""The end-to-end framework bench on the scripted mock backend: the LangGraph and Agents SDK
apps have the task's agents and topology, carry the same messages round by round as the
native runtime, are screened by the adapter, and their event logs and run logs are what
the native reports read."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("agents")

from misguard.bench.integrations_e2e import RUNTIMES, e2e_markdown, langgraph_app, run_integration_e2e  # noqa: E402
from misguard.bench.misinfotask import Components, summarize  # noqa: E402
from misguard.config import LLMSettings, Settings  # noqa: E402
from misguard.embed import get_embedder  # noqa: E402
from misguard.llm import get_llm  # noqa: E402
from misguard.mas import MASConfig, MultiAgentSystem, RoleLLMs, load_tasks, read_events, sample_tasks_path  # noqa: E402
from misguard.types import ChatMessage  # noqa: E402
from tests.helpers.mas_script import scripted  # noqa: E402

TASKS = load_tasks(sample_tasks_path())


def mock_llm():
    return get_llm("mock", LLMSettings(retries=0), respond=scripted(concluder="FINAL ANSWER"))


def sdk_model_over(llm):
    """The Agents SDK side of the fake: an SDK `Model` answering with the mock LLM (what
    `OpenAIChatCompletionsModel` does against a server)."""
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    class Fake(Model):
        async def get_response(self, system_instructions, input, model_settings, *args, **kwargs):
            assert model_settings.extra_body["response_format"]["type"] == "json_schema"
            messages = [ChatMessage.system(system_instructions), ChatMessage.user(input[0]["content"])]
            out = await llm.generate(messages)
            text = ResponseOutputText(text=out.text, type="output_text", annotations=[])
            return ModelResponse(output=[ResponseOutputMessage(id="x", content=[text], role="assistant",
                                                               status="completed", type="message")],
                                 usage=Usage(requests=1, input_tokens=1, output_tokens=1), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    return lambda _agent: Fake()


def test_the_langgraph_app_has_the_task_topology():
    from misguard.integrations.langgraph import read_graph

    task = TASKS[0]
    system = MultiAgentSystem(task.runtime_task(), RoleLLMs(worker=mock_llm()), MASConfig(topology="chain", rounds=2))
    import asyncio

    asyncio.run(system.plan())
    agents, edges = read_graph(langgraph_app(system, mock_llm(), 2))
    assert agents == system.agent_ids
    assert sorted(edges) == sorted(system.graph.edges())


def test_frameworks_carry_the_native_messages_and_write_readable_logs(tmp_path):
    llm = mock_llm()
    comps = Components(mas_llm=llm, judge_llm=llm, embedder=get_embedder("hashing/256"))
    summary = run_integration_e2e(Settings(), TASKS, tmp_path, model="mock", task_ids=[0, 1], arms=("none",),
                                  rounds=2, components=comps, app_llm=llm, model_for=sdk_model_over(llm))
    for task_id in (0, 1):
        runs = {}
        for runtime in RUNTIMES:
            log = read_events(tmp_path / runtime / "none" / "events" / f"task{task_id}-seed0.jsonl")
            start = next(log.of_type("start"))
            runs[runtime] = log
            assert start.data["agents"] == runs["native"].of_type("start").__next__().data["agents"]
            assert sorted(map(tuple, start.data["edges"])) == sorted(
                map(tuple, next(runs["native"].of_type("start")).data["edges"]))
            assert log.final_answer() == "FINAL ANSWER"
        # the same messages, round by round (the scripted workers quote what they read)
        for runtime in ("langgraph", "openai-agents"):
            assert runs[runtime].rounds() == runs["native"].rounds() == [1, 2]
            for r in (1, 2):
                def sent(log, r=r):
                    return sorted((m["sender"], m["receiver"], m["original"]) for m in log.messages(r, delivered_only=False))
                assert sent(runs[runtime]) == sent(runs["native"]), (runtime, r)
    # each runtime x arm is a run log the native reports read
    for runtime in RUNTIMES:
        s = summarize(tmp_path / runtime / "none" / "runlog.jsonl")
        assert s["runs"] == 2 and s["metrics"]["MT (LLM judge, 0-10)"]["n"] == 2
    assert set(summary["runtimes"]) == set(RUNTIMES)
    for runtime in ("langgraph", "openai-agents"):
        same = summary["runtimes"][runtime]["same_as_native"]["none"]
        assert same["tasks"] == 2 and same["messages"] > 0 and same["same"] == same["common"] == same["messages"]
    assert json.loads((tmp_path / "summary.json").read_text())["per_task"]["0:0"]["langgraph/none"]
    # resumable: a second call runs nothing
    calls = len(llm.calls)
    run_integration_e2e(Settings(), TASKS, tmp_path, model="mock", task_ids=[0, 1], arms=("none",), rounds=2,
                        components=comps, app_llm=llm, model_for=sdk_model_over(llm))
    assert len(llm.calls) == calls


def test_a_rewrite_by_the_adapter_is_what_the_receiver_reads(tmp_path, monkeypatch):
    """A registered defense is an arm by its name; with one that rewrites every message,
    each framework app's receivers read (and quote) the rewritten text, as natively."""
    from misguard.mas import DEFENSES
    from misguard.registry import Entry
    from tests.helpers.mas_script import RewriteAll

    monkeypatch.setitem(DEFENSES._entries, "test-rewrite", Entry(
        "test-rewrite", lambda context, params: [RewriteAll()], {"description": "t", "settings_key": None}))
    llm = mock_llm()
    comps = Components(mas_llm=llm, judge_llm=llm, embedder=get_embedder("hashing/256"))
    summary = run_integration_e2e(Settings(), TASKS, tmp_path, model="mock", task_ids=[0], arms=("none", "test-rewrite"),
                                  rounds=2, components=comps, app_llm=llm, model_for=sdk_model_over(llm))
    for runtime in RUNTIMES:
        log = read_events(tmp_path / runtime / "test-rewrite" / "events" / "task0-seed0.jsonl")
        first, second = log.messages(1), log.messages(2, delivered_only=False)
        assert first and all(m["text"] == "REWRITTEN " + m["sender"] for m in first)
        assert second and all(m["action"] == "rewrite" for m in second)
        # round 2's senders quote what they read in round 1: the rewrite
        assert any("REWRITTEN agent_" in m["original"] for m in second), runtime
    assert set(summary["runtimes"]["langgraph"]["changes"]) == {"test-rewrite"}
    assert "test-rewrite" in e2e_markdown(summary)


def test_two_agents_writing_the_same_text_are_both_screened(tmp_path):
    """The Agents SDK adapter names a message's sender by its item id, not only its text:
    when every agent writes the same words, every message is still screened and logged."""
    import json as _json

    def same_words(agent, neighbours, prompt):
        return _json.dumps({"type": "send_message", "tool_name": None, "reply_prompt": "Same words.",
                            "sending_target": neighbours[0]})

    llm = get_llm("mock", LLMSettings(retries=0), respond=scripted(worker=same_words, concluder="FINAL ANSWER"))
    comps = Components(mas_llm=llm, judge_llm=llm, embedder=get_embedder("hashing/256"))
    run_integration_e2e(Settings(), TASKS, tmp_path, model="mock", task_ids=[0], arms=("none",), rounds=2,
                        components=comps, app_llm=llm, model_for=sdk_model_over(llm))
    counts = {rt: len(read_events(tmp_path / rt / "none" / "events" / "task0-seed0.jsonl").messages(delivered_only=False))
              for rt in RUNTIMES}
    assert counts["native"] > 0 and counts["openai-agents"] == counts["langgraph"] == counts["native"]
