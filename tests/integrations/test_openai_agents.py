"""The Agents SDK adapter on real SDK runs with the SDK's own `ScriptedModel`: handoffs,
agents used as tools, the session wrapper, bad input."""

from __future__ import annotations

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, SQLiteSession, set_tracing_disabled  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from misguard.config import Settings  # noqa: E402
from misguard.errors import ConfigError  # noqa: E402
from misguard.integrations import ClaimMemoryScreen, GuardedMemory, IntegrationError  # noqa: E402
from misguard.integrations import openai_agents as oa  # noqa: E402

from .conftest import FALSE_CLAIM  # noqa: E402

set_tracing_disabled(True)


def _texts(call) -> list[str]:
    return [t for t in (oa.item_text(i) for i in call.input) if t is not None]


def _handoff_app(first_words: str):
    writer_model = ScriptedModel([[assistant_message("done", item_id="w1")]])
    writer = Agent(name="writer", model=writer_model, instructions="Write.")
    researcher_model = ScriptedModel([[assistant_message(first_words, item_id="r1"),
                                       function_call("transfer_to_writer", {}, call_id="c1")]])
    researcher = Agent(name="researcher", model=researcher_model, instructions="Research.", handoffs=[writer])
    return researcher, writer_model


async def test_a_handoff_is_screened_and_the_receiver_reads_the_rewrite(probe):
    researcher, writer_model = _handoff_app("The moon is near.")
    guard = oa.protect(researcher, interceptors=[probe])
    result = await Runner.run(researcher, "go")
    assert result.final_output == "done"
    # exactly one message crossed an edge: the researcher's text, handed to the writer
    assert probe.seen == [("researcher", "writer", 1, "The moon is near.")]
    (call,) = writer_model.calls
    assert "The [corrected] is near." in _texts(call) and "The moon is near." not in _texts(call)
    # the run's own items keep what the sender wrote
    assert any("The moon is near." in (oa.item_text(i.to_input_item()) or "") for i in result.new_items
               if i.type == "message_output_item")
    log = guard.finish()
    assert [m["action"] for m in log.messages()] == ["rewrite"]
    assert set(guard.graph.edges()) == {("researcher", "writer")}


async def test_a_block_drops_the_message_from_the_receivers_input(probe):
    researcher, writer_model = _handoff_app("BAD advice here.")
    oa.protect(researcher, interceptors=[probe])
    await Runner.run(researcher, "go")
    (call,) = writer_model.calls
    assert not any("BAD" in t for t in _texts(call))
    assert _texts(call)[0] == "go"


async def test_agents_used_as_tools_both_directions(probe):
    expert_model = ScriptedModel([[assistant_message("Answer: the moon is made of rock.", item_id="e1")]])
    expert = Agent(name="expert", model=expert_model, instructions="Answer.")
    boss_model = ScriptedModel([
        [function_call("ask_expert", {"input": "What is the moon made of?"}, call_id="t1")],
        [assistant_message("Final.", item_id="b2")],
    ])
    boss = Agent(name="boss", model=boss_model, instructions="Delegate.",
                 tools=[expert.as_tool(tool_name="ask_expert", tool_description="Ask the expert.")])
    guard = oa.protect(boss, interceptors=[probe])
    assert set(guard.graph.edges()) == {("boss", "expert"), ("expert", "boss")}
    await Runner.run(boss, "Find out.")
    assert [(s, r, t) for s, r, _, t in probe.seen] == [
        ("boss", "expert", "What is the moon made of?"),
        ("expert", "boss", "Answer: the moon is made of rock."),
    ]
    # each side read the rewrite
    assert "What is the [corrected] made of?" in _texts(expert_model.calls[0])
    assert "Answer: the [corrected] is made of rock." in _texts(boss_model.calls[1])
    guard.finish()


async def test_existing_hooks_keep_running_and_protecting_twice_is_refused(probe):
    from agents import AgentHooks

    events: list[str] = []

    class Mine(AgentHooks):
        async def on_llm_start(self, context, agent, system_prompt, input_items):
            events.append(f"start:{agent.name}")

    researcher, _ = _handoff_app("plain words")
    researcher.hooks = Mine()
    oa.protect(researcher, interceptors=[probe])
    await Runner.run(researcher, "go")
    assert events == ["start:researcher"]
    with pytest.raises(IntegrationError, match="already protected"):
        oa.protect(researcher, interceptors=[probe])


async def test_guarded_session_quarantines_a_poisoned_item_for_the_next_agent(claim_store, tmp_path):
    from misguard.claims import ClaimGuard, ThresholdDecision

    memory = GuardedMemory(tmp_path / "memory.db",
                           screens=[ClaimMemoryScreen(ClaimGuard(claim_store, decision=ThresholdDecision(0.6)))])
    poisoner = Agent(name="poisoner", model=ScriptedModel([[assistant_message(f"Note: {FALSE_CLAIM}.", item_id="p1")]]))
    protection = oa.protect(poisoner, defense="claim-guard", claim_store=claim_store, settings=Settings(),
                            params={"claim-guard": {"threshold": 0.6}})
    session = oa.GuardedSession(SQLiteSession("s1", str(tmp_path / "sessions.db")), memory, protection=protection)
    await Runner.run(poisoner, "Tell me about the wall.", session=session)
    reader_model = ScriptedModel([[assistant_message("ok", item_id="q1")]])
    reader = Agent(name="reader", model=reader_model)
    await Runner.run(reader, "Continue.", session=session)
    read = _texts(reader_model.calls[0])
    assert "Tell me about the wall." in read and not any(FALSE_CLAIM in t for t in read)
    # the write is recorded with its author and kept: the app's session still holds it
    writes = [e.data for e in memory.log.events if e.type == "memory_write"]
    poisoned = [w for w in writes if w["screens"]["claim-guard"]["flagged"]]
    assert [w["agent"] for w in poisoned] == ["poisoner"]
    assert any(FALSE_CLAIM in (oa.item_text(i) or "") for i in await session.inner.get_items())
    # rollback of the quarantine: the item is read again
    (quarantine,) = [a for a in memory.audit() if a.action == "quarantine"]
    memory.rollback(quarantine.seq)
    assert any(FALSE_CLAIM in (oa.item_text(i) or "") for i in await session.get_items())


def test_bad_input_is_a_clear_error(probe, monkeypatch):
    with pytest.raises(IntegrationError, match="protect an agents.Agent"):
        oa.protect("triage", interceptors=[probe])
    twin = Agent(name="a", model=ScriptedModel([]))
    with pytest.raises(IntegrationError, match="two different agents are named 'a'"):
        oa.protect(Agent(name="a", model=ScriptedModel([]), handoffs=[twin]), interceptors=[probe])
    with pytest.raises(ConfigError, match="pass llm="):
        oa.protect(Agent(name="x", model=ScriptedModel([])), defense="argus-paper", settings=Settings(), embedder="hashing/32")
    import importlib.metadata as md

    real = md.version
    monkeypatch.setattr(md, "version", lambda name: "0.9.1" if name == "openai-agents" else real(name))
    with pytest.raises(IntegrationError, match="supports openai-agents 0.24.x"):
        oa.protect(Agent(name="y", model=ScriptedModel([])), interceptors=[probe])
