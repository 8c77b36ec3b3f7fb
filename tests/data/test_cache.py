"""Named datasets: fetch from loopback with every file checked against its pin, `add` by
hand, verify, resolve from the cache or a mirror."""

from __future__ import annotations

import shutil

import pytest

from misguard.data import DataCache
from misguard.errors import ConfigError, DataError
from misguard.net import PageFetcher, RetryingFetcher, any_address
from tests.helpers.route_server import Answer

from .conftest import CONTENT, archive, make_dataset


def loopback() -> RetryingFetcher:
    return RetryingFetcher(PageFetcher(policy=any_address, timeout_s=5), retries=0)


def cache_files(cache: DataCache) -> list[str]:
    return sorted(str(p.relative_to(cache.root)) for p in cache.root.rglob("*") if p.is_file())


def test_fetch_places_verified_files_and_derives_and_a_second_fetch_downloads_nothing(tmp_path, site, dataset):
    cache = DataCache(tmp_path / "cache")
    report = cache.fetch(dataset.name, loopback())
    assert len(report.downloaded) == 3
    assert sorted(report.placed) == ["a.txt", "claims.jsonl", "d.txt", "joined.txt", "notes/b.tsv"]
    assert cache_files(cache) == ["tests/pinned/a.txt", "tests/pinned/claims.jsonl", "tests/pinned/d.txt",
                                  "tests/pinned/joined.txt", "tests/pinned/notes/b.tsv"]
    assert (cache.root / "tests/pinned/joined.txt").read_bytes() == CONTENT["a.txt"] + CONTENT["notes/b.tsv"]
    assert all(s.state == "ok" for s in cache.status(dataset.name))
    requests = len(site.requests)
    again = cache.fetch(dataset.name, loopback())
    assert again.downloaded == () and len(site.requests) == requests


def test_only_missing_files_are_downloaded(tmp_path, site, dataset):
    cache = DataCache(tmp_path / "cache")
    cache.fetch(dataset.name, loopback())
    (cache.root / "tests/pinned/a.txt").unlink()
    (cache.root / "tests/pinned/joined.txt").write_bytes(b"corrupted\n")
    report = cache.fetch(dataset.name, loopback())
    assert report.downloaded == (f"{site.url}/files/a.txt",)
    assert sorted(report.placed) == ["a.txt", "joined.txt"]
    assert all(s.state == "ok" for s in cache.status(dataset.name))


def test_a_hash_mismatch_is_refused_and_nothing_is_written(tmp_path, site, dataset):
    site.routes["/files/b.tsv"] = Answer(b"id\ttext\n1\tBETA\n", content_type="text/plain")
    cache = DataCache(tmp_path / "cache")
    with pytest.raises(DataError, match=r"refused: .*/files/b\.tsv has sha256 .* pinned .* for notes/b\.tsv"):
        cache.fetch(dataset.name, loopback())
    assert cache_files(cache) == []  # not even the files that did match, and no staging left behind


def test_an_archive_lacking_a_pinned_member_writes_nothing(tmp_path, site, dataset):
    site.routes["/release.zip"] = Answer(b"PK\x05\x06" + b"\x00" * 18, content_type="application/zip")  # an empty zip
    cache = DataCache(tmp_path / "cache")
    with pytest.raises(DataError, match="lacked claims.jsonl, d.txt; nothing was written"):
        cache.fetch(dataset.name, loopback())
    assert cache_files(cache) == []


def test_without_network_the_error_names_the_url_and_the_add_command(tmp_path):
    dataset = make_dataset("http://127.0.0.1:9")  # the discard port: nothing listens
    cache = DataCache(tmp_path / "cache")
    with pytest.raises(DataError) as caught:
        cache.fetch(dataset.name, loopback())
    message = str(caught.value)
    assert "http://127.0.0.1:9/files/a.txt" in message and f"misguard data add {dataset.name} FILE" in message
    assert "nothing was written" in message and cache_files(cache) == []


def test_add_checks_hashes_and_takes_archives(tmp_path, dataset):
    cache = DataCache(tmp_path / "cache")
    hand = tmp_path / "downloads"
    hand.mkdir()
    (hand / "a-renamed.txt").write_bytes(CONTENT["a.txt"])
    (hand / "b.tsv").write_bytes(CONTENT["notes/b.tsv"])
    (hand / "release.zip").write_bytes(archive())
    (hand / "wrong.txt").write_bytes(b"not a pinned file\n")
    with pytest.raises(DataError, match=r"wrong.txt: sha256 [0-9a-f]{64} \(18 bytes\) is none of .* pinned files; nothing was written"):
        cache.add(dataset.name, [hand / "a-renamed.txt", hand / "wrong.txt"])
    assert cache_files(cache) == []
    assert cache.add(dataset.name, [hand / "a-renamed.txt"]) == ["a.txt"]
    assert sorted(cache.add(dataset.name, [hand / "b.tsv", hand / "release.zip"])) == [
        "claims.jsonl", "d.txt", "joined.txt", "notes/b.tsv"]
    assert all(s.state == "ok" for s in cache.status(dataset.name))
    with pytest.raises(DataError, match="no such file"):
        cache.add(dataset.name, [hand / "absent.txt"])


def test_resolve_names_files_and_paths_from_the_cache_or_a_mirror(tmp_path, site, dataset):
    mirror = tmp_path / "mirror"
    (mirror / "tests/pinned/notes").mkdir(parents=True)
    for path, data in CONTENT.items():
        (mirror / "tests/pinned" / path).write_bytes(data)
    cache = DataCache(tmp_path / "cache", [mirror])
    # The mirror lacks the derived file: single files resolve, the whole dataset does not.
    assert cache.resolve(f"{dataset.name}/notes/b.tsv") == mirror / "tests/pinned/notes/b.tsv"
    assert cache.resolve_root(dataset.name + "/claims.jsonl") == mirror
    with pytest.raises(DataError, match=f"dataset {dataset.name} is not in the cache .* mirror .* misguard data fetch"):
        cache.resolve(dataset.name)
    (mirror / "tests/pinned/joined.txt").write_bytes(CONTENT["a.txt"] + CONTENT["notes/b.tsv"])
    assert cache.resolve(dataset.name) == mirror / "tests/pinned/a.txt"  # the entry file
    assert cache.resolve_root(dataset.name) == mirror
    cache.fetch(dataset.name, loopback())
    assert cache.resolve(dataset.name) == tmp_path / "cache/tests/pinned/a.txt"  # the cache comes first
    (tmp_path / "cache/tests/pinned/claims.jsonl").write_bytes(b"{}\n")
    assert cache.resolve(f"{dataset.name}/claims.jsonl") == mirror / "tests/pinned/claims.jsonl"  # a bad copy is passed over
    (mirror / "tests/pinned/claims.jsonl").write_bytes(b"[]\n")
    with pytest.raises(DataError, match=rf"claims.jsonl has sha256 .*, not the pinned .*misguard data fetch {dataset.name}"):
        cache.resolve(f"{dataset.name}/claims.jsonl")
    existing = tmp_path / "mine.tsv"
    existing.write_text("x")
    assert cache.resolve(existing) == existing
    with pytest.raises(DataError, match="no such file, and no dataset of that name"):
        cache.resolve("no-such-dataset/file.tsv")


def test_unpublished_datasets_can_only_be_added(tmp_path):
    cache = DataCache(tmp_path / "cache")
    with pytest.raises(DataError, match="not published for download.*misguard data add devset-multilingual"):
        cache.fetch("devset-multilingual", loopback())
    with pytest.raises(ConfigError, match="Unknown dataset"):
        cache.fetch("nope", loopback())


@pytest.mark.shared_data
def test_the_pins_match_the_shared_data_and_snopes_rebuilds_byte_for_byte(shared_data, tmp_path):
    from misguard.data import dataset_names, get_dataset

    cache = DataCache(tmp_path / "cache", [shared_data])
    for name in dataset_names():
        if name.startswith("pinned-test-"):
            continue
        states = [s for s in cache.status(name) if s.kind == "mirror"]
        assert all(s.state == "ok" for s in states), [(s.file.path, s.state) for s in states if s.state != "ok"]
    snopes = get_dataset("snopes")
    raw = [shared_data / snopes.directory / f.path for f in snopes.files if not f.derived]
    placed = cache.add("snopes", raw)  # the raw files only: the claim file is rebuilt and checked
    assert "snopes_claims.jsonl" in placed
    assert cache.resolve("snopes") == cache.root / "claims/snopes-cs598gw/snopes_claims.jsonl"


def test_a_copy_in_the_cache_survives_a_failed_refetch(tmp_path, site, dataset):
    cache = DataCache(tmp_path / "cache")
    cache.fetch(dataset.name, loopback())
    before = {p: (cache.root / "tests/pinned" / p).read_bytes() for p in CONTENT}
    shutil.rmtree(cache.root / "tests/pinned/notes")
    site.routes["/files/b.tsv"] = Answer(b"tampered\n")
    with pytest.raises(DataError, match="refused"):
        cache.fetch(dataset.name, loopback())
    for path, data in before.items():
        if path != "notes/b.tsv":
            assert (cache.root / "tests/pinned" / path).read_bytes() == data
