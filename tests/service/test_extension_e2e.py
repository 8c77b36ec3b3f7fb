"""End to end: Debian's Chromium loads the unpacked extension, which checks a local test
page through the real service (uvicorn on loopback, e5 embeddings, the shipped decision)
and marks the false paragraphs only. The screenshot is kept in runs/test-artifacts/.

The page's paragraphs were written for this test; the false ones are paraphrases and
translations of sample claims the guard is known to catch (how often it catches such
texts in general is `misguard bench claims`' job, not this test's).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

import httpx
import pytest

from misguard.claims import ClaimGuard, ClaimStore, read_claims
from misguard.embed import get_embedder
from misguard.service import ServiceSettings, create_app
from tests.helpers.live_service import live_server
from tests.helpers.page_server import Page, page_server

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "extension"
CHROMIUM = os.environ.get("MISGUARD_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = REPO / "runs" / "test-artifacts"
KEY = "e2e-key"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"),
]

#: (element id, language, repeats a false claim?, html)
BLOCKS = [
    ("en-false", "en", True, "<p id='en-false'>A reader wrote in to say that bulls become furious when they see the colour red, which is why matadors use red capes.</p>"),
    ("en-true", "en", False, "<p id='en-true'>Our town library extends its opening hours on Saturdays from next month, the council announced on Tuesday.</p>"),
    ("fr-false", "fr", True, "<p id='fr-false'>Selon un message viral, boire de l'eau chaude citronnée chaque matin guérirait le diabète de type 2 en un mois.</p>"),
    ("fr-true", "fr", False, "<p id='fr-true'>Le marché du samedi ouvre à huit heures et ferme à quatorze heures, sauf pendant les vacances d'été.</p>"),
    ("es-false", "es", True, "<li id='es-false'>Los vikingos llevaban cascos con cuernos cuando iban a la batalla, según cuenta el folleto del museo.</li>"),
    ("es-true", "es", False, "<li id='es-true'>El equipo de fútbol local ganó su tercer partido consecutivo el domingo por la tarde ante su público.</li>"),
    ("zh-false", "zh", True, "<div class='comment' id='zh-false'>有人说，人类只使用了大脑的百分之十。这是我在网上看到的一条评论。</div>"),
    ("de-true", "de", False, "<div class='review' id='de-true'>Die Stadtbibliothek bleibt am Montag wegen Renovierungsarbeiten geschlossen und öffnet am Dienstag wieder.</div>"),
]
LATE = ("late-false", "en", True, "Some people still claim that the moon landings were filmed in a television studio.")

PAGE = f"""<!doctype html><html><head><meta charset="utf-8"><title>misguard test page</title></head>
<body><main><h1>Community news</h1>
{''.join(b[3] for b in BLOCKS[:4])}
<ul>{''.join(b[3] for b in BLOCKS[4:6])}</ul>
<section id="comments">{''.join(b[3] for b in BLOCKS[6:])}</section>
</main>
<script>
  // Text that arrives after the first paint, like a comment feed.
  setTimeout(() => {{
    const p = document.createElement("p");
    p.id = "{LATE[0]}";
    p.textContent = "{LATE[3]}";
    document.querySelector("main").append(p);
  }}, 1500);
</script></body></html>"""


@pytest.fixture(scope="module")
def service_url():
    tmp = Path(tempfile.mkdtemp(prefix="misguard-e2e-"))
    sample = resources.files("misguard.claims").joinpath("data", "sample_claims.jsonl")
    with resources.as_file(sample) as path, ClaimStore.open(tmp / "db", get_embedder("e5"), create=True) as store:
        store.add(read_claims(path))
    settings = ServiceSettings(db=tmp / "db", api_keys=[KEY])
    try:
        with live_server(create_app(settings, make_guard=ClaimGuard)) as url:
            # One check before the browser's: the guard's first call (model load, warm-up) can
            # outlast the extension's 15 s request timeout when the test workers share 2 cores.
            warm = httpx.post(f"{url}/v1/check", json={"texts": [BLOCKS[0][3]]},
                              headers={"Authorization": f"Bearer {KEY}"}, timeout=120)
            assert warm.status_code == 200, warm.text
            yield url
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (the test extra)")
    with sync_api.sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True,  # Chromium's new headless mode runs extensions
            args=[f"--disable-extensions-except={EXTENSION}", f"--load-extension={EXTENSION}", "--no-sandbox",
                  "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
        )
        worker = context.service_workers[0] if context.service_workers else context.wait_for_event("serviceworker")
        extension_id = worker.url.split("/")[2]
        yield context, extension_id
        context.close()


def configure(context, extension_id: str, backend: str, key: str) -> None:
    """Set the backend and key through the extension's own options page."""
    options = context.new_page()
    options.goto(f"chrome-extension://{extension_id}/options.html")
    options.fill("#backendUrl", backend)
    options.fill("#apiKey", key)
    options.click("#save")
    options.wait_for_function("document.getElementById('result').textContent === 'Saved.'")
    options.close()


def test_false_paragraphs_are_marked_and_true_ones_are_not(browser, service_url):
    context, extension_id = browser
    configure(context, extension_id, service_url, KEY)
    with page_server({"/news": Page(PAGE)}) as site:
        page = context.new_page()
        page.goto(f"{site.url}/news")
        # 120 s: room for one retry (the extension waits 30 s after a failed request)
        page.wait_for_selector(f"#{LATE[0]}[data-misguard]", timeout=120_000)
        page.wait_for_function(
            f"[...document.querySelectorAll('{', '.join('#' + b[0] for b in BLOCKS)}')].every(e => e.dataset.misguard)",
            timeout=60_000,
        )
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "extension-e2e.png"), full_page=True)
        marks = {b[0]: page.get_attribute(f"#{b[0]}", "data-misguard") for b in [*BLOCKS, LATE]}
        expected = {b[0]: "flagged" if b[2] else "ok" for b in [*BLOCKS, LATE]}
        assert marks == expected
        notes = page.locator(".misguard-note")
        assert notes.count() == sum(b[2] for b in [*BLOCKS, LATE])
        first = notes.first.inner_text()
        assert "fact-checked" in first and "reliability" in first and notes.first.locator("a").get_attribute("href").startswith("https://")
        assert page.locator(".misguard-notice").count() == 0
        page.close()


def test_backend_down_gives_a_quiet_notice_and_an_intact_page(browser):
    context, extension_id = browser
    configure(context, extension_id, "http://127.0.0.1:9", KEY)  # nothing listens on port 9
    with page_server({"/news": Page(PAGE)}) as site:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{site.url}/news")
        notice = page.wait_for_selector(".misguard-notice", timeout=30_000)
        assert "not checked" in notice.inner_text()
        assert page.locator(".misguard-note").count() == 0 and page.locator("[data-misguard]").count() == 0
        assert page.inner_text("#en-true").startswith("Our town library") and errors == []
        page.close()
