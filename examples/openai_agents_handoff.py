"""An OpenAI Agents SDK triage app protected by misguard's claim guard, in one call.

    misguard models serve local/qwen2.5-1.5b &
    python examples/openai_agents_handoff.py
    python examples/openai_agents_handoff.py --fake     # the SDK's ScriptedModel, no server

A researcher agent answers and hands off to a writer agent. `protect(researcher, ...)`
screens what the researcher wrote before the writer's model reads it; the session is
guarded too, so a poisoned answer stored in it is not read back in the next run.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from agents import Agent, Runner, SQLiteSession, set_tracing_disabled

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import FALSE_CLAIM, claim_params, claim_store, options  # noqa: E402

from misguard.claims import ClaimGuard, ThresholdDecision  # noqa: E402
from misguard.integrations import ClaimMemoryScreen, GuardedMemory  # noqa: E402
from misguard.integrations.openai_agents import GuardedSession, item_text, protect  # noqa: E402


def build(model_for) -> Agent:
    """The app as its author wrote it: `model_for(name)` is the model of each agent."""
    writer = Agent(name="writer", instructions="Write a two-sentence brief from the research.", model=model_for("writer"))
    return Agent(name="researcher", instructions="Research the topic, then hand off to the writer.",
                 model=model_for("researcher"), handoffs=[writer])


async def run(argv: list[str] | None = None) -> dict:
    args = options(__doc__.splitlines()[0], argv)
    set_tracing_disabled(True)
    models: dict = {}
    if args.fake:
        from agents.testing import ScriptedModel, assistant_message, function_call

        scripts = {
            "researcher": [[assistant_message(f"Finding: {FALSE_CLAIM}.", item_id="r1"),
                            function_call("transfer_to_writer", {}, call_id="h1")]],
            "writer": [[assistant_message("Brief: the wall is long and old.", item_id="w1")],
                       [assistant_message("Noted.", item_id="w2")]],
        }
        model_for = lambda name: models.setdefault(name, ScriptedModel(scripts[name]))  # noqa: E731
    else:
        from agents import OpenAIChatCompletionsModel
        from openai import AsyncOpenAI

        client = AsyncOpenAI(base_url=args.base_url, api_key="not-needed")
        model_for = lambda name: OpenAIChatCompletionsModel(model=args.model, openai_client=client)  # noqa: E731
    researcher = build(model_for)
    store = claim_store(args)
    # --- the protection: one call for the agents, one wrapper for the session ------------
    guard = protect(researcher, defense="claim-guard", claim_store=store, params=claim_params(args),
                    log_path=Path(args.workdir) / "agents-events.jsonl")
    decision = ThresholdDecision(args.threshold) if args.threshold else None
    memory = GuardedMemory(Path(args.workdir) / "agents-memory.db", protection=guard,
                           screens=[ClaimMemoryScreen(ClaimGuard(store, decision=decision))])
    session = GuardedSession(SQLiteSession("brief", str(Path(args.workdir) / "sessions.db")), memory, protection=guard)
    # ---------------------------------------------------------------------------------------
    result = await Runner.run(researcher, "The Great Wall of China, for a school brief.", session=session)
    print("final:", result.final_output)
    later = await session.get_items()  # what the next run reads back
    log = guard.finish()
    for m in log.messages(delivered_only=False):
        print(f"{m['sender']} -> {m['receiver']} [{m['action']}]\n  sent: {m['original']}\n  read: {m['text']}")
    print(f"session items read back: {len(later)} of {len(await session.inner.get_items())} stored")
    writer_calls = models["writer"].calls if args.fake else []
    return {"messages": log.messages(delivered_only=False), "read_back": [item_text(i) for i in later],
            "writer_input": [item_text(i) for i in writer_calls[0].input] if writer_calls else []}


def main(argv: list[str] | None = None) -> dict:
    return asyncio.run(run(argv))


if __name__ == "__main__":
    main()
