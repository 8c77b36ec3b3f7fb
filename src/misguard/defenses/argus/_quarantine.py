"""Quarantine: a sender judged deliberate once is cut off from then on.

Its messages of later rounds are blocked on every channel, and the concluder reads none of
its messages, those delivered before it was caught included. This is G-Safeguard's
response (drop a flagged agent's messages) on ARGUS's own evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...mas import Interception, InterceptorAction


class Quarantine:
    """Senders caught so far, with the round each was caught in."""

    def __init__(self) -> None:
        self.caught: dict[str, int] = {}

    def catch(self, sender: str, round: int) -> bool:
        """Quarantine `sender` from the round after `round`; False if it already was."""
        if sender in self.caught:
            return False
        self.caught[sender] = round
        return True

    def block(self, sender: str, round: int) -> Interception | None:
        """The decision for a message `sender` sends in `round`, if it is quarantined.

        Only from the round after the catch: a round's messages are intercepted
        concurrently, and a decision must not depend on which of them finished first."""
        caught = self.caught.get(sender)
        if caught is None or caught >= round:
            return None
        return self._blocked(caught)

    def review(self, messages: Sequence[Mapping[str, Any]]) -> dict[str, Interception]:
        """What the concluder may not read: every message of a quarantined sender."""
        return {m["id"]: self._blocked(self.caught[m["sender"]]) for m in messages if m["sender"] in self.caught}

    @staticmethod
    def _blocked(caught: int) -> Interception:
        return Interception(InterceptorAction.BLOCK, reason=f"sender quarantined in round {caught}",
                            details={"quarantined_in_round": caught})
