from misguard.claims import TOPICS, LLMTopicClassifier, OfflineTopicClassifier, parse_topics, topic_accuracy
from misguard.llm import get_llm
from misguard.prompts import load_prompts


def test_ten_paper_topics_in_the_prompts():
    prompts = load_prompts("misguard.claims", "safer_web")
    assert len(TOPICS) == 10
    for topic in TOPICS:
        assert topic in prompts.templates["query_topics"] and topic in prompts.templates["headline_topic"]
    assert "Respond ONLY with the exact category name" in prompts.templates["headline_topic"]


def test_parse_topics_keeps_order_and_ignores_noise():
    answer = "Health & Nutrition\nConspiracy Theories (General)\nCooking"
    assert parse_topics(answer) == ["Health & Nutrition", "Conspiracy Theories (General)"]
    assert parse_topics("nothing useful") == []


def test_llm_classifier_with_mock():
    llm = get_llm("mock", outputs=["Animals & Wildlife", "Politics & International Affairs, Education & History"])
    clf = LLMTopicClassifier(llm)
    assert clf.classify_claim("Camels store water in humps") == "Animals & Wildlife"
    assert clf.classify_query("q") == ["Politics & International Affairs", "Education & History"]


def test_offline_classifier_shapes(embedder):
    clf = OfflineTopicClassifier(embedder, max_topics=3)
    vecs = embedder.embed(["dogs and cats at the zoo", "the central bank raised interest rates"], "query")
    one = clf.predict_one(vecs, "query")
    many = clf.predict_many(vecs, "query")
    assert len(one) == 2 and all(t in TOPICS for t in one)
    assert all(1 <= len(m) <= 3 and m[0] == o for m, o in zip(many, one))
    assert topic_accuracy([["a", "b"], ["c"]], ["b", "d"]) == 0.5


def test_centroids_are_cached_beside_the_store(tmp_path, embedder):
    first = OfflineTopicClassifier(embedder, cache_dir=tmp_path)
    vec = embedder.embed("a court fined the company", "query")
    expected = first.predict_many(vec, "query")
    calls = embedder.usage.calls
    second = OfflineTopicClassifier(embedder, cache_dir=tmp_path)
    assert second.predict_many(vec, "query") == expected and embedder.usage.calls == calls
    assert len(list(tmp_path.glob("topic-centroids-query-*.npy"))) == 1
