"""What a defended multi-agent run did, in plain words (`misguard run` and the demo)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from ..mas import MASResult


def cut(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def show_defense(result: MASResult, hijacked: Sequence[str], console: Console) -> None:
    """Sentences removed, senders quarantined, messages blocked and kept from the concluder."""
    events = list(result.log.of_type("interception"))
    for e in events:
        details = e.data["details"]
        for done in details.get("redacted") or ():
            console.print(f"  round {e.round}, {e.data['sender']} -> {e.data['receiver']}: removed "
                          f"(risk {done['risk']:.2f}) \"{cut(done['sentence'], 120)}\"", highlight=False)
        if e.data["action"] == "rewrite" and not details.get("redacted"):
            console.print(f"  round {e.round}, {e.data['sender']} -> {e.data['receiver']}: rewritten ({e.data['reason']})",
                          highlight=False)
        if details.get("quarantined"):
            who = "the hijacked agent" if details["quarantined"] in hijacked else (
                "an honest agent" if hijacked else "no attack was run")
            console.print(f"  round {e.round}: {details['quarantined']} ({who}) quarantined: its later messages "
                          "are blocked and the concluder reads none of its messages", highlight=False)
    blocked = sum(e.data["action"] == "block" for e in events)
    hidden = sum(e.data["action"] == "block" for e in result.log.of_type("conclusion_review"))
    removed = sum(len(e.data["details"].get("redacted") or ()) for e in events)
    rewritten = sum(e.data["action"] == "rewrite" for e in events)
    console.print(f"  in all: {rewritten} message(s) changed ({removed} sentence(s) removed), {blocked} blocked, "
                  f"{hidden} kept from the concluder, out of {len(events)} checked", highlight=False)
