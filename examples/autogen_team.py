"""An AutoGen AgentChat team protected by misguard's claim guard, in one call.

    misguard models serve local/qwen2.5-1.5b &
    python examples/autogen_team.py
    python examples/autogen_team.py --fake      # AutoGen's ReplayChatCompletionClient, no server

A researcher and a writer take turns (round robin). `protect(team, ...)` screens each
response before the other participant buffers it; the writer's model reads the correction.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import FALSE_CLAIM, claim_params, claim_store, options  # noqa: E402

from misguard.integrations.autogen import protect  # noqa: E402


def build(client_for) -> RoundRobinGroupChat:
    """The app as its author wrote it: `client_for(name)` is each agent's model client."""
    researcher = AssistantAgent("researcher", model_client=client_for("researcher"),
                                system_message="Research the topic in three short notes.")
    writer = AssistantAgent("writer", model_client=client_for("writer"),
                            system_message="Write a two-sentence brief from the notes.")
    return RoundRobinGroupChat([researcher, writer], termination_condition=MaxMessageTermination(3))


async def run(argv: list[str] | None = None) -> dict:
    args = options(__doc__.splitlines()[0], argv)
    clients: dict = {}
    if args.fake:
        from autogen_ext.models.replay import ReplayChatCompletionClient

        class Recording(ReplayChatCompletionClient):
            def __init__(self, outputs):
                super().__init__(outputs)
                self.requests: list = []

            async def create(self, messages, **kwargs):
                self.requests.append([m.content for m in messages if isinstance(m.content, str)])
                return await super().create(messages, **kwargs)

        scripts = {"researcher": [f"Note: {FALSE_CLAIM}."], "writer": ["Brief: the wall is long and old."]}
        client_for = lambda name: clients.setdefault(name, Recording(scripts[name]))  # noqa: E731
    else:
        from autogen_core.models import ModelFamily
        from autogen_ext.models.openai import OpenAIChatCompletionClient

        info = {"vision": False, "function_calling": False, "json_output": True, "family": ModelFamily.UNKNOWN,
                "structured_output": True}
        client_for = lambda name: OpenAIChatCompletionClient(  # noqa: E731
            model=args.model, base_url=args.base_url, api_key="not-needed", model_info=info)
    team = build(client_for)
    # --- the protection: one call -----------------------------------------------------------
    guard = protect(team, defense="claim-guard", claim_store=claim_store(args), params=claim_params(args),
                    log_path=Path(args.workdir) / "autogen-events.jsonl")
    # ---------------------------------------------------------------------------------------
    await team.run(task="The Great Wall of China, for a school brief.")
    log = guard.finish()
    for m in log.messages(delivered_only=False):
        print(f"{m['sender']} -> {m['receiver']} [{m['action']}]\n  sent: {m['original']}\n  read: {m['text']}")
    return {"messages": log.messages(delivered_only=False),
            "writer_read": clients["writer"].requests[0] if args.fake else []}


def main(argv: list[str] | None = None) -> dict:
    return asyncio.run(run(argv))


if __name__ == "__main__":
    main()
