from __future__ import annotations

import os
from pathlib import Path

import pytest

# Tests that import onnxruntime themselves start it before misguard can turn its usage
# telemetry off; nothing a test runs may record or send any.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
# Rich wraps tables and messages at the terminal width; tests read whole lines, so the
# width is fixed rather than taken from whatever terminal (or none) runs them.
os.environ["COLUMNS"] = "200"

REPO = Path(__file__).resolve().parents[1]
# MISGUARD_DATA_DIR is the settings field `data_dir`: one name for users and tests.
SHARED_DATA = Path(os.environ.get("MISGUARD_DATA_DIR") or REPO.parent / "shared" / "data")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Real-model tests first: under `make test`'s two xdist workers the longest file then
    starts at once on one worker while the other runs the rest of the suite."""
    items.sort(key=lambda item: item.get_closest_marker("local_llm") is None)


@pytest.fixture
def shared_data() -> Path:
    """../shared/data, or skip with the reason (the data may not be committed or shipped)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}; set MISGUARD_DATA_DIR")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _clean_misguard_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's MISGUARD_* variables or settings file."""
    for key in list(os.environ):
        if key.startswith("MISGUARD_") and key != "MISGUARD_DATA_DIR":
            monkeypatch.delenv(key)
