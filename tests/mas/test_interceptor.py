"""The defense seam: pass, rewrite and block, recorded in the log; receivers and the
concluder see the rewritten text, never the original."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from misguard.config import LLMSettings, Settings
from misguard.embed import get_embedder
from misguard.errors import ConfigError
from misguard.llm import get_llm
from misguard.mas import (
    DEFENSES,
    ConclusionReviewer,
    DefenseContext,
    Interception,
    Interceptor,
    MASConfig,
    MultiAgentSystem,
    RoleLLMs,
    SystemView,
    Task,
    build_defense,
    defense_params,
)
from misguard.types import EdgeMessage, Usage
from tests.helpers.mas_script import scripted


@dataclass
class Rewriter:
    """Rewrites every message on the watched edges; counts rounds it was told about."""

    edges: set[tuple[str, str]] | None = None
    name: str = "rewriter"
    rounds_seen: list[int] = field(default_factory=list)

    async def start_round(self, view: SystemView) -> None:
        assert view.graph.number_of_nodes() == 3
        self.rounds_seen.append(view.round)

    async def intercept(self, message: EdgeMessage, view: SystemView) -> Interception:
        if self.edges is not None and message.edge not in self.edges:
            return Interception.passed("not watched")
        return Interception.rewritten(
            f"CORRECTED({message.sender})", reason="test rewrite",
            usage=Usage(calls=1, prompt_tokens=10, completion_tokens=5, latency_s=0.01),
        )

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


@dataclass
class Blocker:
    name: str = "blocker"

    async def start_round(self, view: SystemView) -> None:
        return None

    async def intercept(self, message: EdgeMessage, view: SystemView) -> Interception:
        if message.sender == "agent_2":
            return Interception.blocked("agent_2 is quarantined")
        return Interception.passed()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


def _system(llm, *interceptors, rounds=2):
    task = Task(id="t", user_input="Task.", agent_num=3)
    return MultiAgentSystem(task, RoleLLMs(worker=llm), MASConfig(topology="full", rounds=rounds), interceptors=interceptors)


def _prompts_of(llm, prefix):
    return ["\n".join(m.content for m in call) for call in llm.calls if call[0].content.startswith(prefix)]


def test_protocol_is_structural():
    assert isinstance(Rewriter(), Interceptor) and isinstance(Blocker(), Interceptor)
    assert not isinstance(Rewriter(), ConclusionReviewer) and isinstance(ConcluderEditor(), ConclusionReviewer)


@dataclass
class ConcluderEditor(Blocker):
    """Passes every message on its edge; for the concluder only, hides agent_1's messages and
    rewrites agent_2's."""

    name: str = "editor"

    async def intercept(self, message: EdgeMessage, view: SystemView) -> Interception:
        return Interception.passed()

    async def review_conclusion(self, messages: Any, view: SystemView) -> dict[str, Interception]:
        assert view.log.rounds() == [1, 2]  # after the last round, with the whole log
        return {m["id"]: Interception.blocked("hidden") if m["sender"] == "agent_1"
                else Interception.rewritten(f"REVIEWED({m['sender']})", usage=Usage(calls=1))
                for m in messages if m["sender"] in ("agent_1", "agent_2")}


async def test_a_conclusion_review_changes_what_the_concluder_reads_not_what_receivers_saw():
    llm = get_llm("mock", LLMSettings(), respond=scripted())
    result = await _system(llm, ConcluderEditor()).run()
    concluder = _prompts_of(llm, "You are the concluder")[0]
    assert "agent_1 ->" not in concluder and "REVIEWED(agent_2)" in concluder and "agent_3 ->" in concluder
    # receivers saw every message as sent
    assert all(m["action"] == "pass" and m["text"] == m["original"] for m in result.log.messages())
    reviews = list(result.log.of_type("conclusion_review"))
    assert sorted((e.data["sender"], e.data["action"]) for e in reviews) == [
        ("agent_1", "block"), ("agent_1", "block"), ("agent_2", "rewrite"), ("agent_2", "rewrite")]
    assert all(e.data["text_before"] and (e.data["text_after"] == "REVIEWED(agent_2)") == (e.data["sender"] == "agent_2")
               for e in reviews)
    assert result.log.usage_by("interceptor")["editor"].calls == 2


async def test_rewrite_reaches_receivers_and_concluder_not_the_original():
    llm = get_llm("mock", LLMSettings(), respond=scripted())
    rewriter = Rewriter()
    result = await _system(llm, rewriter).run()
    assert rewriter.rounds_seen == [1, 2]
    round2 = [p for p in _prompts_of(llm, "You are agent_") if "New message from" in p]
    assert round2 and all("CORRECTED(" in p and "saw <" not in p.split("New message from")[1] for p in round2)
    concluder = _prompts_of(llm, "You are the concluder")[0]
    assert "CORRECTED(agent_1)" in concluder and "saw <" not in concluder
    messages = result.log.messages()
    assert all(m["action"] == "rewrite" and m["original"] != m["text"] for m in messages)
    interceptions = list(result.log.of_type("interception"))
    assert len(interceptions) == len(messages) == 6
    assert all(e.data["interceptor"] == "rewriter" and e.data["text_before"].startswith("agent_") for e in interceptions)
    usage = result.log.usage_by("interceptor")["rewriter"]
    assert usage.calls == 6 and usage.prompt_tokens == 60
    end = next(result.log.of_type("end"))
    assert end.data["usage_by_interceptor"]["rewriter"]["completion_tokens"] == 30


async def test_block_hides_the_message_and_stops_later_interceptors():
    llm = get_llm("mock", LLMSettings(), respond=scripted())
    rewriter = Rewriter()
    result = await _system(llm, Blocker(), rewriter, rounds=1).run()
    blocked = [m for m in result.log.messages(delivered_only=False) if not m["delivered"]]
    assert len(blocked) == 1 and blocked[0]["sender"] == "agent_2" and blocked[0]["text"] is None
    assert all(m["sender"] != "agent_2" for m in result.log.messages())
    by_message = {}
    for e in result.log.of_type("interception"):
        by_message.setdefault(e.data["message_id"], []).append(e.data["interceptor"])
    assert by_message[blocked[0]["id"]] == ["blocker"]  # the rewriter never saw it
    concluder = _prompts_of(llm, "You are the concluder")[0]
    assert "agent_2 ->" not in concluder


async def test_pass_on_unwatched_edges_keeps_the_text():
    llm = get_llm("mock", LLMSettings(), respond=scripted())
    result = await _system(llm, Rewriter(edges={("agent_1", "agent_2")}), rounds=1).run()
    for m in result.log.messages():
        if (m["sender"], m["receiver"]) == ("agent_1", "agent_2"):
            assert m["text"] == "CORRECTED(agent_1)" and m["action"] == "rewrite"
        else:
            assert m["text"] == m["original"] and m["action"] == "pass"


@dataclass
class SlowOnFirstAgent:
    """Passes every message, but takes longest on agent_1's (an LLM defense on a busy model)."""

    name: str = "slow"

    async def start_round(self, view: SystemView) -> None:
        return None

    async def intercept(self, message: EdgeMessage, view: SystemView) -> Interception:
        await asyncio.sleep(0.05 if message.sender == "agent_1" else 0.0)
        return Interception.passed()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


async def test_messages_keep_send_order_however_long_the_defense_takes():
    """The concluder reads messages in log order: a defense that passes everything must
    leave the run exactly as it was, whatever each interception cost."""
    plain = get_llm("mock", LLMSettings(), respond=scripted())
    base = await _system(plain, rounds=2).run()
    slow = get_llm("mock", LLMSettings(), respond=scripted())
    defended = await _system(slow, SlowOnFirstAgent(), rounds=2).run()
    order = [(m["round"], m["sender"]) for m in defended.log.messages()]
    assert order == [(r, f"agent_{i}") for r in (1, 2) for i in (1, 2, 3)]
    assert [m["text"] for m in defended.log.messages()] == [m["text"] for m in base.log.messages()]
    assert _prompts_of(slow, "You are the concluder") == _prompts_of(plain, "You are the concluder")


def test_defense_registry_walk():
    """Every registered defense resolves its typed parameters and builds interceptors from a
    context (the default embedder: ARGUS's shipped risk model is e5's), or says what it still
    needs (G-Safeguard: trained weights)."""
    assert {"none", "argus", "argus-paper", "self-check", "g-safeguard"} <= set(DEFENSES.names())  # plug-ins discovered
    context = DefenseContext(Settings(), {"worker": get_llm("mock")}, get_embedder("e5"))
    for entry in DEFENSES:
        assert {"description", "settings_key", "needs_llm"} <= set(entry.metadata), entry.name
        try:
            interceptors = build_defense(entry.name, context)
        except ConfigError as exc:
            assert (entry.name == "g-safeguard" and "defenses fit-gsafeguard" in str(exc)) or (
                entry.name == "claim-guard" and "needs a claim store" in str(exc))
            continue
        assert all(isinstance(i, Interceptor) for i in interceptors), entry.name
        assert all(i.describe()["name"] for i in interceptors)
    assert build_defense("none", context) == ()


def test_defense_params_are_typed_and_validated():
    params = defense_params("argus", Settings(), {"alpha": "0.5", "dynamic_localization": False})
    assert params.alpha == 0.5 and params.dynamic_localization is False and params.beta == 0.6
    with pytest.raises(ConfigError, match="bad parameter for defense 'argus': alpha"):
        defense_params("argus", Settings(), {"alpha": "high"})
    with pytest.raises(ConfigError, match="nonsense"):
        defense_params("argus", Settings(), {"nonsense": 1})
    with pytest.raises(ConfigError, match="takes no parameters"):
        defense_params("none", Settings(), {"alpha": 1})


def test_a_preset_changes_the_defaults_and_what_the_user_set_still_wins(tmp_path):
    from misguard.config import load_settings

    recommended = defense_params("argus", Settings())
    assert recommended.risk_model == "shipped" and recommended.quarantine and not recommended.rectifier_llm
    paper = defense_params("argus-paper", Settings())
    assert paper.risk_model is None and paper.rectifier_llm and not paper.quarantine and not paper.risk_all_channels
    assert paper.alpha == recommended.alpha  # what the preset does not name keeps its default
    # a settings file value beats the preset, an override beats both
    (tmp_path / "misguard.toml").write_text("[defense.argus]\nquarantine = true\nalpha = 0.3\n")
    settings = load_settings(tmp_path / "misguard.toml")
    paper = defense_params("argus-paper", settings, {"alpha": 0.4})
    assert paper.quarantine and paper.rectifier_llm and paper.alpha == 0.4


async def test_view_log_is_read_only_and_start_round_reports_are_logged():
    class Probe:
        name = "probe"

        async def start_round(self, view):
            for m in view.log.messages():
                m["text"] = "TAMPERED"
            for e in view.log.of_type("message"):
                e.data["text"] = "TAMPERED"
            view.graph.add_edge("agent_1", "intruder")
            return {"seen": len(view.log.messages())}

        async def intercept(self, message, view):
            return Interception.passed()

        def describe(self):
            return {"name": self.name}

    llm = get_llm("mock", LLMSettings(), respond=scripted())
    result = await _system(llm, Probe(), rounds=2).run()
    assert all(m["text"] != "TAMPERED" for m in result.log.messages())
    assert "intruder" not in result.graph
    reports = [e for e in result.log.of_type("interceptor_round")]
    assert [(e.round, e.data["interceptor"], e.data["seen"]) for e in reports] == [(1, "probe", 0), (2, "probe", 3)]


async def test_edge_history_exposes_delivered_text_per_edge():
    llm = get_llm("mock", LLMSettings(), respond=scripted())
    result = await _system(llm, Rewriter(), rounds=2).run()
    history = result.log.edge_history()
    assert sum(len(v) for v in history.values()) == 6
    assert all(result.graph.has_edge(*edge) for edge in history)
    assert all(m["text"].startswith("CORRECTED") for msgs in history.values() for m in msgs)
