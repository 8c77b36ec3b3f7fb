"""Decision parity: ARGUS decides the same on the same messages through the adapter layer
as in the native runtime (scripted agents and rectifier, hashing embedder)."""

from __future__ import annotations

import pytest

from misguard.integrations import Protection, compare_decisions, replay
from misguard.mas import EventLog
from tests.defenses.test_argus import argus, backend, system


@pytest.mark.parametrize("topology,params", [
    ("chain", {"top_k": 8}),
    ("star", {"quarantine": True, "top_k": 8}),
    ("full", {"top_k": 6}),
    ("full", {"prescreen": False, "dynamic_localization": False, "top_k": 20}),
])
async def test_argus_makes_the_same_decisions_through_the_adapter_layer(topology, params):
    llm = backend()
    native = system(llm, argus(llm, **params), rounds=3, topology=topology)
    await native.run()
    assert any(m["action"] == "rewrite" for m in native.log.messages(delivered_only=False))  # something to decide
    replayed = await _replay(native.log, Protection([argus(backend(), **params)], framework="replay"))
    report = compare_decisions(native.log, replayed)
    assert report.same, report.differences[:3]
    assert report.messages == len(native.log.messages(delivered_only=False)) and report.rounds == 3


async def _replay(log: EventLog, protection: Protection) -> EventLog:
    import asyncio

    return await asyncio.to_thread(replay, log, protection)


async def test_a_different_defense_is_caught():
    llm = backend()
    native = system(llm, argus(llm), rounds=2)
    await native.run()
    replayed = await _replay(native.log, Protection([argus(backend(), prescreen=False, top_k=1)]))
    report = compare_decisions(native.log, replayed)
    assert not report.same and {d["kind"] for d in report.differences} >= {"interceptor_round"}
