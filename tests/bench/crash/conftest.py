from __future__ import annotations

import pytest

from misguard.config import EmbedSettings, Settings

#: Trials per target in the suite; `misguard bench crash --trials 50` is the full run.
CI_TRIALS = 8


@pytest.fixture
def settings() -> Settings:
    # The hashing embedder: what is measured is the storage under a kill, not the model.
    return Settings(embed=EmbedSettings(model="hashing/256"))


def assert_safe(summary: dict, target: str, trials: int) -> dict:
    """No corrupted store, no mixed state, no acknowledged write lost; the kills happened."""
    t = summary["targets"][target]
    assert t["trials"] == trials
    assert t["corrupted"] == 0 and t["mixed"] == 0 and t["trials_losing_acknowledged_writes"] == 0, t
    assert t["killed"] >= trials // 2, t  # the kill landed while the process ran
    return t
