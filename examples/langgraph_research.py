"""A LangGraph research team protected by misguard's claim guard, in one call.

    misguard models serve local/qwen2.5-1.5b &          # any OpenAI-compatible server works
    python examples/langgraph_research.py
    python examples/langgraph_research.py --fake        # no server: scripted answers

A researcher node drafts notes (here it repeats a known false claim), a writer node turns
them into a short brief. `protect(...)` screens every message one node wrote before another
reads it; the writer reads the corrected notes. The shared store is guarded too: a poisoned
note written by the researcher is quarantined and the writer's lookup does not return it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.store.memory import InMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import FALSE_CLAIM, claim_params, claim_store, options  # noqa: E402

from misguard.claims import ClaimGuard, ThresholdDecision  # noqa: E402
from misguard.integrations import ClaimMemoryScreen, GuardedMemory  # noqa: E402
from misguard.integrations.langgraph import GuardedStore, protect  # noqa: E402


class State(TypedDict):
    messages: Annotated[list, add_messages]


def build(ask, seen: dict) -> StateGraph:
    """The app as its author wrote it: `ask(system, text)` is any chat model call."""

    def researcher(state: State, *, store):
        topic = state["messages"][0].content
        notes = ask("You are a researcher. Write three short notes.", topic)
        store.put(("notes",), "latest", {"text": notes})
        return {"messages": [AIMessage(notes)]}

    def writer(state: State, *, store):
        saved = store.get(("notes",), "latest")
        brief = ask("You are a writer. Turn the notes into a two-sentence brief.", state["messages"][-1].content)
        seen["note in store"] = saved.value["text"] if saved else None
        return {"messages": [AIMessage(brief)]}

    builder = StateGraph(State)
    builder.add_node("researcher", researcher)
    builder.add_node("writer", writer)
    builder.add_edge(START, "researcher")
    builder.add_edge("researcher", "writer")
    builder.add_edge("writer", END)
    return builder


def main(argv: list[str] | None = None) -> dict:
    args = options(__doc__.splitlines()[0], argv)
    seen: dict = {}
    if args.fake:
        def ask(system: str, text: str) -> str:
            seen.setdefault(system.split(".")[0], text)
            if system.startswith("You are a researcher"):
                return f"Note 1: {FALSE_CLAIM[0].upper() + FALSE_CLAIM[1:]}. Note 2: it is about 21,000 km long."
            return "The wall is long and old; a brief for the class."
    else:
        from openai import OpenAI

        client = OpenAI(base_url=args.base_url, api_key="not-needed")

        def ask(system: str, text: str) -> str:
            seen.setdefault(system.split(".")[0], text)
            out = client.chat.completions.create(model=args.model, max_tokens=200, temperature=0, messages=[
                {"role": "system", "content": system}, {"role": "user", "content": text}])
            return out.choices[0].message.content or ""

    store = claim_store(args)
    builder = build(ask, seen)
    # --- the protection: one call for the messages, one wrapper for the store ------------
    guard = protect(builder, defense="claim-guard", claim_store=store, params=claim_params(args),
                    log_path=Path(args.workdir) / "langgraph-events.jsonl")
    decision = ThresholdDecision(args.threshold) if args.threshold else None
    memory = GuardedMemory(Path(args.workdir) / "langgraph-memory.db", protection=guard,
                           screens=[ClaimMemoryScreen(ClaimGuard(store, decision=decision))])
    app = builder.compile(store=GuardedStore.wrap(InMemoryStore(), memory))
    # ---------------------------------------------------------------------------------------
    app.invoke({"messages": [HumanMessage("The Great Wall of China, for a school brief.")]})
    log = guard.finish()
    for m in log.messages(delivered_only=False):
        print(f"{m['sender']} -> {m['receiver']} [{m['action']}]\n  sent: {m['original']}\n  read: {m['text']}")
    quarantined = [e.data["record_id"] for e in log.of_type("memory_quarantine")]
    print(f"the writer's store lookup returned: {seen['note in store']!r} ({len(quarantined)} write quarantined)")
    print(f"event log: {Path(args.workdir) / 'langgraph-events.jsonl'}")
    return {"writer_read": seen.get("You are a writer"), "messages": log.messages(delivered_only=False),
            "quarantined": quarantined, "note_in_store": seen["note in store"]}


if __name__ == "__main__":
    main()
