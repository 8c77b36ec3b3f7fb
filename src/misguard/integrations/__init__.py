"""Protect the agents people already run: a framework-neutral layer and one thin adapter per
framework, each imported only when used (and installed through its own extra).

    from misguard.integrations.langgraph import protect          # extra `langgraph`
    from misguard.integrations.openai_agents import protect      # extra `openai-agents`
    from misguard.integrations.autogen import protect            # extra `autogen`

    guard = protect(app, defense="argus")
    ...                                  # run the app as before
    guard.finish(); guard.save("events.jsonl")   # the native runtime's event log

The neutral layer (`Protection`) runs any registered defense's interceptors on each message
that crosses from one agent to another, grows the communication graph, maps framework steps
to rounds and writes the event log; `GuardedMemory` records, screens and repairs writes to a
framework's shared memory.
"""

from ._core import BLOCK_TEXT, Delivery, IntegrationError, Message, Protection, build_interceptors
from ._parity import ParityReport, compare_decisions, replay
from ._memory import HIDDEN, UNKNOWN, ClaimMemoryScreen, GuardedMemory, MemoryScreen, MemoryVerdict, WriteResult, value_text

__all__ = [
    "BLOCK_TEXT",
    "HIDDEN",
    "UNKNOWN",
    "ClaimMemoryScreen",
    "Delivery",
    "GuardedMemory",
    "IntegrationError",
    "MemoryScreen",
    "Message",
    "MemoryVerdict",
    "ParityReport",
    "Protection",
    "WriteResult",
    "build_interceptors",
    "compare_decisions",
    "replay",
    "value_text",
]
