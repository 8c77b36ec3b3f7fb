"""The LangGraph adapter on real LangGraph graphs (plain-function nodes, LangChain's fake
chat model for `create_agent`): what crosses edges, what receivers read, blocks, the graph,
the guarded store, bad input."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.graph.message import add_messages  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402
from langgraph.types import Command  # noqa: E402

from misguard.config import Settings  # noqa: E402
from misguard.errors import ConfigError, MissingExtraError  # noqa: E402
from misguard.integrations import ClaimMemoryScreen, GuardedMemory, IntegrationError  # noqa: E402
from misguard.integrations import langgraph as lg  # noqa: E402
from misguard.mas import read_events  # noqa: E402

from .conftest import FALSE_CLAIM  # noqa: E402


class State(TypedDict):
    messages: Annotated[list, add_messages]
    note: str


def _pipeline(reads: dict):
    """researcher -> writer -> editor; each node records what it read."""

    def researcher(state: State):
        return {"messages": [AIMessage("The wall is visible from the moon.")], "note": "BAD note"}

    def writer(state: State):
        reads["writer"] = ([m.content for m in state["messages"]], state["note"])
        return {"messages": [AIMessage("Draft done.")]}

    def editor(state: State):
        reads["editor"] = ([m.content for m in state["messages"]], state["note"])
        return {"messages": [AIMessage("Edited.")]}

    builder = StateGraph(State)
    for fn in (researcher, writer, editor):
        builder.add_node(fn.__name__, fn)
    builder.add_edge(START, "researcher")
    builder.add_edge("researcher", "writer")
    builder.add_edge("writer", "editor")
    builder.add_edge("editor", END)
    return builder


def test_defense_sees_exactly_the_crossing_messages_and_receivers_read_the_decision(probe):
    reads: dict = {}
    app = _pipeline(reads).compile()
    guard = lg.protect(app, interceptors=[probe])
    out = app.invoke({"messages": [HumanMessage("go")], "note": ""})
    # the user's input crosses no agent edge; each writer->reader pair is screened once
    assert probe.seen == [
        ("researcher", "writer", 1, "The wall is visible from the moon."),
        ("researcher", "writer", 1, "BAD note"),
        ("researcher", "editor", 2, "The wall is visible from the moon."),
        ("writer", "editor", 2, "Draft done."),
        ("researcher", "editor", 2, "BAD note"),
    ]
    # a rewrite is what the receiver reads; a block becomes the placeholder and holds
    assert reads["writer"] == (["go", "The wall is visible from the [corrected]."], "[message withheld by misguard: contains BAD]")
    assert reads["editor"][0][1] == "The wall is visible from the [corrected]."
    assert reads["editor"][1].startswith("[message withheld")
    # the shared state keeps what the sender wrote
    assert out["messages"][1].content == "The wall is visible from the moon." and out["note"] == "BAD note"
    log = guard.finish()
    messages = log.messages(delivered_only=False)
    assert [(m["sender"], m["receiver"], m["action"]) for m in messages] == [
        ("researcher", "writer", "rewrite"), ("researcher", "writer", "block"), ("researcher", "editor", "rewrite"),
        ("writer", "editor", "pass"), ("researcher", "editor", "block")]
    assert log.rounds() == [1, 2] and probe.rounds == [1, 2]


def test_graph_is_read_from_the_builder_and_grows_at_run_time(probe):
    def router(state: State) -> Command[Literal["b", "c"]]:
        return Command(update={"messages": [AIMessage("to c")]}, goto="c")

    def b(state: State):
        return {"messages": [AIMessage("b")]}

    def c(state: State):
        return {"messages": [AIMessage("c")]}

    def d(state: State):
        return {}

    builder = StateGraph(State)
    builder.add_node("router", router)
    builder.add_node("b", b)
    builder.add_node("c", c)
    builder.add_node("d", d)
    builder.add_edge(START, "router")
    builder.add_conditional_edges("c", lambda s: "d", {"d": "d", "end": END})
    builder.add_edge("b", END)
    builder.add_edge("d", END)
    guard = lg.protect(builder, interceptors=[probe])  # before compile: the builder's nodes
    assert set(guard.graph.edges()) == {("router", "b"), ("router", "c"), ("c", "d")}
    app = builder.compile()
    app.invoke({"messages": [HumanMessage("hi")], "note": ""})
    # d read router's message too (shared state): an edge the graph did not declare
    assert guard.graph.has_edge("router", "d") and guard.graph.edges["router", "d"]["source"] == "runtime"
    log = guard.finish()
    assert [e.data["sender"] for e in log.of_type("edge_discovered")] == ["router"]
    assert ["router", "b", "c", "d"] == list(next(log.of_type("start")).data["agents"])


async def test_async_runs_and_compiled_graphs_share_the_path(probe):
    reads: dict = {}
    app = _pipeline(reads).compile()
    guard = lg.protect(app, interceptors=[probe])
    await app.ainvoke({"messages": [HumanMessage("go")], "note": ""})
    assert reads["writer"][0][1] == "The wall is visible from the [corrected]."
    assert len(probe.seen) == 5
    # a second run is a new round sequence in the same log; decisions are per message
    await app.ainvoke({"messages": [HumanMessage("again")], "note": ""})
    assert len(probe.seen) == 10 and guard.round == 4
    guard.finish()


def test_claim_guard_defense_by_name_corrects_a_known_false_claim(claim_store, tmp_path):
    reads: dict = {}

    def a(state: State):
        return {"messages": [AIMessage(f"Fun fact: {FALSE_CLAIM}.")]}

    def b(state: State):
        reads["b"] = state["messages"][-1].content
        return {}

    builder = StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    app = builder.compile()
    guard = lg.protect(app, defense="claim-guard", claim_store=claim_store, settings=Settings(),
                       params={"claim-guard": {"threshold": 0.6, "mode": "correct"}}, log_path=tmp_path / "ev.jsonl")
    app.invoke({"messages": [HumanMessage("go")], "note": ""})
    assert FALSE_CLAIM not in reads["b"].replace("\"" + FALSE_CLAIM + "\"", "")
    assert reads["b"].startswith("[Fact-check: the claim") and "rated False" in reads["b"]
    guard.finish()
    # the same log format as the native runtime: read back, messages and interceptions
    log = read_events(tmp_path / "ev.jsonl")
    (message,) = log.messages()
    assert message["action"] == "rewrite" and message["original"].startswith("Fun fact")
    (interception,) = log.of_type("interception")
    assert interception.data["interceptor"] == "claim-guard" and interception.data["details"]["claim_id"] == "S01"


def test_argus_through_the_adapter_rewrites_on_monitored_channels():
    """ARGUS by name, with a scripted rectifier: its first-round localization reads the
    declared graph and its rewrite reaches the receiver."""
    import json

    from misguard.llm import get_llm

    rectifier = get_llm("mock", respond=lambda msgs: json.dumps(
        {"checks": [], "revised_message": "The wall is NOT visible from the moon.", "need_review": False}))
    reads: dict = {}
    app = _pipeline(reads).compile()
    guard = lg.protect(app, defense="argus-paper", llm=rectifier, embedder="hashing/64", settings=Settings(),
                       params={"argus-paper": {"prescreen": False}})
    app.invoke({"messages": [HumanMessage("go")], "note": ""})
    assert reads["writer"][0][1] == "The wall is NOT visible from the moon."
    log = guard.finish()
    loc = next(log.of_type("interceptor_round")).data["localization"]
    assert ["researcher", "writer"] in loc["channels"]
    # the MisInfoTask report's localization quality reads a framework run's log as a native one
    from misguard.bench.misinfotask._sweep import localization_by_round

    rows = localization_by_round(log, {"targets": ["researcher"]})
    assert rows[0]["round"] == 1 and rows[0]["interceptor"] == "argus" and rows[0]["hits"] == 1


def test_guarded_store_quarantines_a_poisoned_write_and_rollback_restores_it(claim_store, tmp_path):
    from misguard.claims import ClaimGuard, ThresholdDecision

    memory = GuardedMemory(tmp_path / "memory.db", screens=[ClaimMemoryScreen(ClaimGuard(claim_store, decision=ThresholdDecision(0.6)))])
    store = lg.GuardedStore.wrap(InMemoryStore(), memory)
    seen: dict = {}

    def scout(state: State, *, store):
        store.put(("facts",), "wall", {"text": "The wall is 21,196 km long."})
        return {}

    def poisoner(state: State, *, store):
        seen["poisoner_read"] = store.get(("facts",), "wall").value
        store.put(("facts",), "wall", {"text": FALSE_CLAIM})
        return {}

    def reader(state: State, *, store):
        item = store.get(("facts",), "wall")
        seen["reader"] = item.value if item else None
        seen["search"] = [i.value for i in store.search(("facts",))]
        return {}

    builder = StateGraph(State)
    for fn in (scout, poisoner, reader):
        builder.add_node(fn.__name__, fn)
    builder.add_edge(START, "scout")
    builder.add_edge("scout", "poisoner")
    builder.add_edge("poisoner", "reader")
    app = builder.compile(store=store)
    app.invoke({"messages": [], "note": ""})
    # the poisoned write is quarantined at write time: the reader gets the scout's value
    assert seen["reader"] == {"text": "The wall is 21,196 km long."}
    assert seen["search"] == [{"text": "The wall is 21,196 km long."}]
    poisoned = memory.record_id("facts", "wall")
    record = memory.store.get(poisoned)
    assert record.provenance.agent == "poisoner" and memory.store.status(poisoned) == "quarantined"
    # provenance: the poisoner's write is linked to the record it read in that step
    (edge,) = [e for e in memory.store.edges() if e.dst == poisoned]
    assert edge.agent == "poisoner" and memory.store.get(edge.src).provenance.agent == "scout"
    # nothing deleted: the framework store holds the poisoned value; rollback restores it
    (quarantine,) = [a for a in memory.audit() if a.action == "quarantine"]
    memory.rollback(quarantine.seq)
    assert store.get(("facts",), "wall").value == {"text": FALSE_CLAIM}
    # an operator rewrite is what reads return, versioned
    memory.rewrite(poisoned, {"text": "The wall cannot be seen from the Moon."}, "corrected")
    assert store.get(("facts",), "wall").value == {"text": "The wall cannot be seen from the Moon."}
    assert len(memory.store.versions(poisoned)) == 2
    types = [e.type for e in memory.log.events]
    assert types.count("memory_write") == 2 and "memory_quarantine" in types and "memory_rollback" in types


def test_create_agent_middleware_screens_messages_from_other_agents(probe):
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel

    seen_by_model: list = []

    class Model(FakeMessagesListChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            seen_by_model.append([m.content for m in messages])
            return super()._generate(messages, stop, run_manager, **kwargs)

    from misguard.integrations import Protection

    protection = Protection([probe], framework="langchain")
    agent = create_agent(Model(responses=[AIMessage("summary")]),
                         middleware=[lg.MisguardMiddleware.build(protection, agent="writer")])
    agent.invoke({"messages": [HumanMessage("summarise"), AIMessage("The moon is cheese.", name="researcher"),
                               AIMessage("BAD plan", name="planner")]})
    assert seen_by_model == [["summarise", "The [corrected] is cheese.", "[message withheld by misguard: contains BAD]"]]
    assert [(s, r) for s, r, _, _ in probe.seen] == [("researcher", "writer"), ("planner", "writer")]
    protection.finish()


def test_bad_input_is_a_clear_error(monkeypatch, probe):
    with pytest.raises(IntegrationError, match="cannot read a graph from dict"):
        lg.protect({"not": "a graph"}, interceptors=[probe])
    app = _pipeline({}).compile()
    with pytest.raises(ConfigError, match="pass llm="):
        lg.protect(app, defense="self-check", settings=Settings())
    with pytest.raises(ConfigError, match="needs a claim store"):
        lg.protect(app, defense="claim-guard", settings=Settings())
    with pytest.raises(ConfigError, match="nothing to protect with"):
        lg.protect(app)
    lg.protect(app, interceptors=[probe])
    with pytest.raises(IntegrationError, match="already protected"):
        lg.protect(app, interceptors=[probe])
    import importlib.metadata as md

    real = md.version
    monkeypatch.setattr(md, "version", lambda name: "0.6.0" if name == "langgraph" else real(name))
    with pytest.raises(IntegrationError, match="supports langgraph 1.x; this environment has 0.6.0"):
        lg.protect(_pipeline({}).compile(), interceptors=[probe])

    def missing(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(md, "version", missing)
    with pytest.raises(MissingExtraError, match=r"misguard\[langgraph\]"):
        lg.protect(_pipeline({}).compile(), interceptors=[probe])


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_nodes_of_one_superstep_share_a_round(probe, mode):
    """Two nodes that run side by side in one superstep read the writer's message in the
    same round (each node's own task namespace must not start a round of its own)."""
    import asyncio

    def writer(state: State):
        return {"messages": [AIMessage("Findings.")]}

    def reader(state: State):
        return {}

    builder = StateGraph(State)
    builder.add_node("writer", writer)
    for name in ("left", "right"):
        builder.add_node(name, reader)
        builder.add_edge("writer", name)
    builder.add_edge(START, "writer")
    app = builder.compile()
    guard = lg.protect(app, interceptors=[probe])
    if mode == "invoke":
        app.invoke({"messages": [HumanMessage("go")], "note": ""})
    else:
        asyncio.run(app.ainvoke({"messages": [HumanMessage("go")], "note": ""}))
    log = guard.finish()
    assert sorted((s, r, n) for s, r, n, _ in probe.seen) == [("writer", "left", 1), ("writer", "right", 1)]
    assert probe.rounds == [1] and log.rounds() == [1]
