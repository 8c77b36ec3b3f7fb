"""The AutoGen adapter on real AutoGen runtimes: AgentChat teams with AutoGen's own
`ReplayChatCompletionClient`, core agents sending direct messages, the memory wrapper."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

pytest.importorskip("autogen_core")

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat  # noqa: E402
from autogen_agentchat.conditions import MaxMessageTermination  # noqa: E402
from autogen_core import (  # noqa: E402
    AgentId,
    MessageContext,
    RoutedAgent,
    SingleThreadedAgentRuntime,
    message_handler,
)
from autogen_core.exceptions import MessageDroppedException  # noqa: E402
from autogen_core.memory import ListMemory, MemoryContent  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402

from misguard.integrations import ClaimMemoryScreen, GuardedMemory, IntegrationError  # noqa: E402
from misguard.integrations import autogen as ag  # noqa: E402

from .conftest import FALSE_CLAIM  # noqa: E402


class Recording(ReplayChatCompletionClient):
    """The replay client, keeping the texts of every request (what the model read)."""

    def __init__(self, outputs):
        super().__init__(outputs)
        self.requests: list[list[str]] = []

    async def create(self, messages, **kwargs):
        self.requests.append([m.content for m in messages if isinstance(m.content, str)])
        return await super().create(messages, **kwargs)


async def test_graphflow_rewrite_reaches_the_next_speaker(probe):
    writer_client = Recording(["Noted."])
    researcher = AssistantAgent("researcher", model_client=Recording(["The moon is near."]))
    writer = AssistantAgent("writer", model_client=writer_client)
    builder = DiGraphBuilder()
    builder.add_node(researcher).add_node(writer).add_edge(researcher, writer)
    team = GraphFlow([researcher, writer], graph=builder.build())
    guard = ag.protect(team, interceptors=[probe])
    assert set(guard.graph.edges()) == {("researcher", "writer")}
    await team.run(task="go")
    # one response per speaker, screened on the edge to the other participant (all buffer it)
    assert probe.seen == [("researcher", "writer", 1, "The moon is near."), ("writer", "researcher", 2, "Noted.")]
    (request,) = writer_client.requests
    assert "The [corrected] is near." in request and "The moon is near." not in request
    log = guard.finish()
    assert [m["action"] for m in log.messages()] == ["rewrite", "pass"]
    assert guard.graph.edges["writer", "researcher"]["source"] == "runtime"


async def test_round_robin_block_is_the_placeholder_and_the_team_goes_on(probe):
    second = Recording(["fine"])
    team = RoundRobinGroupChat(
        [AssistantAgent("a", model_client=Recording(["BAD idea"])), AssistantAgent("b", model_client=second)],
        termination_condition=MaxMessageTermination(3))
    ag.protect(team, interceptors=[probe])
    result = await team.run(task="go")
    assert len(result.messages) == 3  # the team was not stalled by the block
    (request,) = second.requests
    assert "[message withheld by misguard: contains BAD]" in request and "BAD idea" not in request


@dataclass
class Note:
    content: str


class Relay(RoutedAgent):
    """Forwards every note it gets to `target` (if any) and keeps what it received."""

    def __init__(self, target: str | None) -> None:
        super().__init__("relay")
        self.target = target
        self.received: list[str] = []

    @message_handler
    async def on_note(self, message: Note, ctx: MessageContext) -> None:
        self.received.append(message.content)
        if self.target:
            await self.send_message(Note(f"{self.id.type} says: {message.content}"), AgentId(self.target, "default"))


@pytest.mark.parametrize("block", ["placeholder", "drop"])
async def test_direct_messages_are_screened_per_recipient_and_blocks_hold(probe, block):
    runtime = SingleThreadedAgentRuntime()
    agents: dict[str, Relay] = {}

    def factory(name, target):
        def make():
            agents[name] = Relay(target)
            return agents[name]
        return make

    await Relay.register(runtime, "a", factory("a", "b"))
    await Relay.register(runtime, "b", factory("b", "c"))
    await Relay.register(runtime, "c", factory("c", None))
    guard = ag.protect(runtime, interceptors=[probe], block=block)
    runtime.start()
    await runtime.send_message(Note("the moon"), AgentId("a", "default"))  # from the app: no edge
    await runtime.stop_when_idle()
    assert [(s, r, n) for s, r, n, _ in probe.seen] == [("a", "b", 1), ("b", "c", 2)]  # rounds are hops
    assert agents["b"].received == ["a says: the [corrected]"]
    assert agents["c"].received == ["b says: a says: the [corrected]"]
    runtime.start()
    if block == "drop":
        with pytest.raises(MessageDroppedException):
            await runtime.send_message(Note("BAD"), AgentId("a", "default"))
        await runtime.stop()  # stop_when_idle() never returns after a drop in autogen-core 0.7.5
        assert agents["b"].received == ["a says: the [corrected]"]  # b never got it
    else:
        await runtime.send_message(Note("BAD"), AgentId("a", "default"))
        await runtime.stop_when_idle()
        assert agents["b"].received[1] == "[message withheld by misguard: contains BAD]"
        # b's forward quotes the placeholder, which still says BAD: blocked again
        assert agents["c"].received[1] == "[message withheld by misguard: contains BAD]"
    assert set(guard.graph.edges()) == {("a", "b"), ("b", "c")}


async def test_guarded_memory_hides_a_poisoned_entry_and_rollback_restores_it(claim_store, tmp_path):
    from misguard.claims import ClaimGuard, ThresholdDecision

    guarded = GuardedMemory(tmp_path / "memory.db",
                            screens=[ClaimMemoryScreen(ClaimGuard(claim_store, decision=ThresholdDecision(0.6)))])
    shared = ag.GuardedAutogenMemory.wrap(ListMemory(), guarded, name="team-notes", agent="scout")
    await shared.add(MemoryContent(content="The wall is 21,196 km long.", mime_type="text/plain"))
    poisoner = ag.GuardedAutogenMemory.wrap(shared.inner, guarded, name="team-notes", agent="poisoner")
    await poisoner.add(MemoryContent(content=FALSE_CLAIM, mime_type="text/plain"))
    client = Recording(["ok"])
    reader = AssistantAgent("reader", model_client=client, memory=[shared])
    await reader.run(task="What do we know about the wall?")
    read = " ".join(client.requests[0])
    assert "21,196 km" in read and FALSE_CLAIM not in read
    assert len((await shared.inner.query("wall")).results) == 2  # nothing deleted
    poisoned = [e.data for e in guarded.log.events if e.type == "memory_write" and e.data["agent"] == "poisoner"]
    assert poisoned and poisoned[0]["screens"]["claim-guard"]["flagged"]
    (quarantine,) = [a for a in guarded.audit() if a.action == "quarantine"]
    guarded.rollback(quarantine.seq)
    assert [r.content for r in (await shared.query("wall")).results] == ["The wall is 21,196 km long.", FALSE_CLAIM]


def test_bad_input_is_a_clear_error(probe, monkeypatch):
    with pytest.raises(IntegrationError, match="SingleThreadedAgentRuntime"):
        ag.protect(object(), interceptors=[probe])
    runtime = SingleThreadedAgentRuntime()
    ag.protect(runtime, interceptors=[probe])
    with pytest.raises(IntegrationError, match="already protected"):
        ag.protect(runtime, interceptors=[probe])
    import importlib.metadata as md

    real = md.version
    monkeypatch.setattr(md, "version", lambda name: "0.4.9" if name == "autogen-core" else real(name))
    with pytest.raises(IntegrationError, match="supports autogen-core 0.7.x"):
        ag.protect(SingleThreadedAgentRuntime(), interceptors=[probe])
