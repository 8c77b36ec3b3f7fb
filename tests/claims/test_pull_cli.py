"""`misguard claims pull` and `claims stats` through the CLI runner, against loopback servers."""

from __future__ import annotations

import json

import pytest

from typer.testing import CliRunner

from misguard.cli.main import app
from tests.helpers.route_server import route_server

from .test_pull import GOOGLE_KEY, google_api, site_routes

runner = CliRunner()
H = ["--embedder", "hashing/256"]


def _flat(result) -> str:
    return " ".join(result.output.split())


@pytest.mark.parametrize("backend", ["sqlite", "qdrant"])
def test_pull_feed_and_pages_twice_then_stats(tmp_path, backend):
    if backend == "qdrant":
        pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")
    db = tmp_path / "db" if backend == "sqlite" else f"qdrant:{tmp_path / 'q'}"
    with route_server(site_routes()) as site:
        pages = tmp_path / "pages.txt"
        pages.write_text(f"# fact-check articles\n{site.url}/es.html\n\n{site.url}/hi.html\n")
        args = [*H, "claims", "pull", "--db", str(db), "--feed", f"{site.url}/feed.json", "--page", str(pages),
                "--allow-private", "--retries", "0"]
        first = runner.invoke(app, args)
        assert first.exit_code == 0, first.output
        assert "9 added, 0 updated, 0 unchanged" in _flat(first)
        assert "7 review(s), 6 pulled (1 unreadable left out)" in _flat(first)
        assert "skipped ClaimReview #3: no reviewRating" in _flat(first)
        second = runner.invoke(app, args)
        assert second.exit_code == 0, second.output
        assert "0 added, 0 updated, 9 unchanged" in _flat(second)
    stats = runner.invoke(app, [*H, "claims", "stats", "--db", str(db), "--json"])
    assert stats.exit_code == 0, stats.output
    info = json.loads(stats.output)
    assert info["claims"] == 9
    assert info["publisher"]["Chequeo Test"] == 4 and info["language"]["es"] == 4
    assert sum(info["review_age"].values()) == 9 and info["review_age"]["undated"] == 1
    table = runner.invoke(app, [*H, "claims", "stats", "--db", str(db)])
    assert "review_age" in table.output and "undated" in table.output


def test_private_addresses_need_allow_private(tmp_path):
    with route_server(site_routes()) as site:
        result = runner.invoke(app, [*H, "claims", "pull", "--db", str(tmp_path / "db"), "--feed", f"{site.url}/feed.json"])
        assert site.requests == []
    assert result.exit_code == 2
    assert "failed" in _flat(result) and "non-public" in _flat(result) and "nothing from it was written" in _flat(result)


def test_a_failing_source_exits_2_after_writing_the_others(tmp_path):
    with route_server(site_routes()) as site:
        result = runner.invoke(app, [*H, "claims", "pull", "--db", str(tmp_path / "db"), "--allow-private", "--retries", "0",
                                     "--feed", f"{site.url}/gone.json", "--feed", f"{site.url}/list.jsonld"])
    assert result.exit_code == 2
    assert "HTTP 404" in _flat(result) and "3 added" in _flat(result)


def test_google_key_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MISGUARD_GOOGLE_API_KEY", GOOGLE_KEY)
    with route_server({"/v1alpha1/claims:search": google_api}) as api:
        result = runner.invoke(app, [*H, "claims", "pull", "--db", str(tmp_path / "db"), "--google-factcheck",
                                     "--query", "cures", "--api-base", api.url, "--allow-private"])
        assert result.exit_code == 0, result.output
        assert "4 added" in _flat(result)
        assert len(api.requests) == 2
        monkeypatch.delenv("MISGUARD_GOOGLE_API_KEY")
        wrong = runner.invoke(app, [*H, "claims", "pull", "--db", str(tmp_path / "db"), "--google-factcheck",
                                    "--query", "cures", "--api-base", api.url, "--allow-private", "--api-key", "wrong-key-77",
                                    "--retries", "0"])
    assert wrong.exit_code == 2 and "API key not valid" in _flat(wrong) and "wrong-key-77" not in wrong.output


def test_usage_errors_say_what_to_do(tmp_path):
    db = ["--db", str(tmp_path / "db")]
    none = runner.invoke(app, [*H, "claims", "pull", *db])
    assert none.exit_code == 2 and "--feed URL_OR_FILE" in _flat(none)
    stray = runner.invoke(app, [*H, "claims", "pull", *db, "--feed", "x.json", "--query", "q"])
    assert stray.exit_code == 2 and "go with --google-factcheck" in _flat(stray)
    nokey = runner.invoke(app, [*H, "claims", "pull", *db, "--google-factcheck", "--query", "q"])
    assert nokey.exit_code == 2 and "MISGUARD_GOOGLE_API_KEY" in _flat(nokey)
    listing = tmp_path / "urls.txt"
    listing.write_text("https://ok.example/a\nnot a url\n")
    bad = runner.invoke(app, [*H, "claims", "pull", *db, "--page", str(listing)])
    assert bad.exit_code == 2 and "urls.txt:2" in _flat(bad)
    since = runner.invoke(app, [*H, "claims", "pull", *db, "--feed", "x.json", "--since", "yesterday"])
    assert since.exit_code == 2 and "2026-01-31" in _flat(since)
