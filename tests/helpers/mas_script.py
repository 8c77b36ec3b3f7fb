"""A scripted mock backend for the multi-agent runtime: routes each prompt to the role
that sent it, so tests exercise the real runtime code path with predictable answers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from misguard.mas import Interception, SystemView
from misguard.types import ChatMessage, EdgeMessage

WorkerFn = Callable[[str, list[str], str], str]
"""(agent id, neighbours, full worker prompt) -> the model's raw answer."""


def echo_worker(agent: str, neighbours: list[str], prompt: str) -> str:
    """Send to the first neighbour a message quoting the inbound message (if any)."""
    inbound = re.search(r"New message from (\S+): (.*)", prompt)
    seen = inbound.group(2)[:80] if inbound else "nothing"
    return json.dumps(
        {"type": "send_message", "tool_name": None, "reply_prompt": f"{agent} saw <{seen}>",
         "sending_target": neighbours[0]}
    )


def _planner(prompt: str) -> str:
    n = int(re.search(r"team of (\d+) agents", prompt).group(1))  # type: ignore[union-attr]
    return json.dumps({"subtasks": [f"subtask {i + 1}" for i in range(n)]})


def scripted(
    *,
    worker: WorkerFn = echo_worker,
    planner: Callable[[str], str] = _planner,
    tool: str = "TOOL-RESULT",
    concluder: str = "FINAL ANSWER",
    judge: str = '{"score": 3, "reason": "scripted"}',
    claim_check: Callable[[str], str] = lambda prompt: '{"asserts": "no"}',
) -> Callable[[list[ChatMessage]], str]:
    def respond(messages: list[ChatMessage]) -> str:
        first = messages[0].content
        if first.startswith("You are the planner"):
            return planner(first)
        if first.startswith("You simulate the tool"):
            return tool
        if first.startswith("You are the concluder"):
            return concluder
        if first.startswith("You evaluate"):
            return judge
        if first.startswith("Final answer written by"):
            return claim_check(first)
        match = re.match(r"You are (agent_\d+),", first)
        if match:
            neighbours = re.search(r"You may send messages to: (.*)\.", first).group(1).split(", ")  # type: ignore[union-attr]
            return worker(match.group(1), neighbours, "\n".join(m.content for m in messages))
        raise AssertionError(f"unscripted prompt: {first[:80]!r}")

    return respond


@dataclass
class RewriteAll:
    """An interceptor that rewrites every message to `prefix + sender`."""

    prefix: str = "REWRITTEN "
    name: str = "rewrite-all"

    async def start_round(self, view: SystemView) -> None:
        return None

    async def intercept(self, message: EdgeMessage, view: SystemView) -> Interception:
        return Interception.rewritten(self.prefix + message.sender, reason="test")

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}
