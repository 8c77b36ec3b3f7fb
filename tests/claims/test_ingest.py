import json

import pytest

from misguard.claims import ClaimStore, read_claims, to_claimreview
from misguard.errors import DataError
from misguard.types import VerdictLabel

from .conftest import SAMPLE


def test_sample_reads_with_original_verdicts_kept():
    claims = read_claims(SAMPLE)
    assert len(claims) >= 30
    pants = next(c for c in claims if c.verdict_original == "Pants on Fire")
    assert pants.verdict is VerdictLabel.FALSE


def test_csv(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text('id,text,rating,url\n1,"A claim, with a comma",Mostly False,http://x\n2,Another claim,true,\n')
    claims = read_claims(path)
    assert [c.id for c in claims] == ["1", "2"]
    assert claims[0].text == "A claim, with a comma" and claims[0].verdict is VerdictLabel.MOSTLY_FALSE


def test_liar_tsv_keeps_quotes_literally(tmp_path):
    row = ["11.json", "pants-fire", 'He said "no" and then', "x", "sp", "job", "TX", "rep", "0", "0", "0", "0", "0", "ctx"]
    row2 = ["12.json", "half-true", "Second \"quoted statement", *row[3:]]
    path = tmp_path / "l.tsv"
    path.write_text("\t".join(row) + "\n" + "\t".join(row2) + "\n")
    claims = read_claims(path)
    assert claims[0].id == "liar:11" and claims[0].text == 'He said "no" and then'
    assert claims[0].verdict is VerdictLabel.FALSE and claims[0].verdict_original == "pants-fire"
    assert claims[1].text == 'Second "quoted statement' and claims[1].verdict is VerdictLabel.MIXED


def test_liar_wrong_column_count_names_the_line(tmp_path):
    path = tmp_path / "l.tsv"
    good = "\t".join(["1.json", "false", "ok", *["x"] * 11])
    path.write_text(good + "\n" + "2.json\tfalse\tshort row\n")
    with pytest.raises(DataError, match=r"l.tsv:2: .*14"):
        read_claims(path)


def test_snopes_rows(tmp_path):
    path = tmp_path / "snopes.jsonl"
    rows = [
        {"url": "https://www.snopes.com/fact-check/a-thing/", "rating": "mostly-false", "title": "Did X?",
         "statement": "X did a thing.", "date_iso": "2020-01-02"},
        {"url": "https://www.snopes.com/fact-check/b/", "rating": "false", "title": "Headline only?", "statement": ""},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    claims = read_claims(path)  # format detected from the keys
    assert claims[0].id == "snopes:fact-check/a-thing" and claims[0].date == "2020-01-02"
    assert claims[1].text == "Headline only?"


def test_claimreview_round_trip(tmp_path):
    claims = read_claims(SAMPLE)
    path = tmp_path / "cr.json"
    path.write_text(json.dumps({"@context": "https://schema.org", "@graph": to_claimreview(claims)}))
    back = read_claims(path)
    assert [(c.id, c.text, c.verdict, c.verdict_original, c.url) for c in back] == [
        (c.id, c.text, c.verdict, c.verdict_original, c.url) for c in claims
    ]


def test_claimreview_numeric_rating(tmp_path):
    item = {"@type": "ClaimReview", "claimReviewed": "x is y", "url": "http://a",
            "reviewRating": {"ratingValue": 1, "bestRating": 5, "worstRating": 1}}
    path = tmp_path / "one.json"
    path.write_text(json.dumps(item))
    assert read_claims(path)[0].verdict is VerdictLabel.FALSE


@pytest.mark.parametrize(
    "doc, message",
    [
        ("{not json", "not JSON"),
        ('{"@type": "Thing"}', "no ClaimReview"),
        ('{"@type": "ClaimReview", "claimReviewed": "x"}', "reviewRating"),
        ('{"@type": "ClaimReview", "reviewRating": {"alternateName": "False"}}', "no claim text"),
        ('{"@type": "ClaimReview", "claimReviewed": "x", "reviewRating": {"ratingValue": "high"}}', "not a number"),
    ],
)
def test_malformed_claimreview_is_a_clear_error(tmp_path, doc, message):
    path = tmp_path / "bad.json"
    path.write_text(doc)
    with pytest.raises(DataError, match=message):
        read_claims(path)


def test_binary_file_is_rejected_with_its_line(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_bytes(b'{"text": "ok", "verdict": "false"}\n\xff\xfe\x00\x01')
    with pytest.raises(DataError, match=r"b.jsonl:2: not UTF-8"):
        read_claims(path)


def test_bad_row_aborts_the_file_and_nothing_is_written(tmp_path, embedder):
    store = ClaimStore.open(tmp_path / "db", embedder, create=True)
    store.add(read_claims(SAMPLE))
    before = store.stats()
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"id": "n1", "text": "new claim", "verdict": "false"}\n{"id": "n2", "verdict": "false"}\n')
    with pytest.raises(DataError, match=r"mixed.jsonl:2: row has no claim text"):
        store.add(read_claims(path))
    assert store.stats() == before and store.get("n1") is None


def test_unknown_format_and_missing_file(tmp_path):
    (tmp_path / "x.xml").write_text("<a/>")
    with pytest.raises(DataError, match="--format"):
        read_claims(tmp_path / "x.xml")
    with pytest.raises(DataError, match="no such file"):
        read_claims(tmp_path / "nope.jsonl")


def test_fields_not_read_and_unknown_ratings_are_reported_and_strict_refuses(tmp_path):
    from misguard.claims import read_claim_file

    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"id": "1", "text": "The moon is made of cheese", "verdict": "false", "source_name": "x", "notes": "y"},
        {"id": "2", "text": "Bananas are berries", "rating": "banana"},
        {"id": "3", "claim": "Water is wet", "label": "banana", "source_name": ""},  # aliases are read; empty is nothing
    ]) + "\n")
    result = read_claim_file(path)
    assert [c.verdict for c in result.claims] == [VerdictLabel.FALSE, VerdictLabel.OTHER, VerdictLabel.OTHER]
    assert result.unknown_fields == {"source_name": 1, "notes": 1} and result.unknown_verdicts == {"banana": 2}
    warnings = result.warnings()
    assert len(warnings) == 2 and "'source_name' (1 rows)" in warnings[0] and "'banana' (2 rows)" in warnings[1]
    with pytest.raises(DataError, match="strict.*banana"):
        read_claim_file(path, strict=True)
    clean = tmp_path / "ok.csv"
    clean.write_text("id,claim,rating,lang\n1,A claim,Pants on Fire,en\n")
    assert read_claim_file(clean, strict=True).warnings() == []
