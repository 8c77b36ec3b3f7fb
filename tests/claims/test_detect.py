import numpy as np
import pytest

from misguard.claims import (
    FEATURES,
    ClaimGuard,
    LLMJudge,
    LogisticDecision,
    MatchContext,
    default_decision,
    features,
    fit_logistic,
    load_decision,
    parse_yes_no,
)
from misguard.claims._detect import FEATURES_ANY_READER, FEATURES_EN_READER, FEATURES_NO_READER, FEATURES_PLAIN, script_of
from misguard.errors import ConfigError, LLMOutputError
from misguard.llm import get_llm


def _ctx(**kw):
    base = dict(s1=0.9, body=0.88, support=0.85, votes=1.0,
                text="Napoleon was barely 5 feet tall", claim_text="Napoleon Bonaparte was 5 feet tall",
                segment_kind="option", script="latin", language="en")
    return MatchContext(**{**base, **kw})


def test_features_follow_the_declared_order():
    x = features(_ctx())
    assert x.shape == (len(FEATURES),)
    named = dict(zip(FEATURES, x))
    assert named["body"] == pytest.approx(0.88) and named["number_hit"] == 1.0 and named["option"] == 1.0
    assert named["lang_en"] == 1.0 and named["s1_en"] == pytest.approx(0.9) and named["votes"] == 1.0
    clash = dict(zip(FEATURES, features(_ctx(text="Napoleon was 1.69 metres"))))
    assert clash["number_clash"] == 1.0 and clash["number_hit"] == 0.0
    zh = dict(zip(FEATURES, features(_ctx(script="cjk", language="zh"))))
    assert zh["lexical"] == 0.0 and zh["s1_zh"] == pytest.approx(0.9) and zh["lang_en"] == 0.0
    other = dict(zip(FEATURES, features(_ctx(language="und"))))
    assert other["lang_other"] == 1.0
    assert named["social"] == 0.0 and named["s1_social"] == 0.0
    tweet = dict(zip(FEATURES, features(_ctx(social=True))))
    assert tweet["social"] == 1.0 and tweet["s1_social"] == pytest.approx(0.9)


def test_reader_feature_is_its_value_for_english_texts_only():
    assert dict(zip(FEATURES, features(_ctx())))["reader_en"] == 0.0  # no reader
    assert dict(zip(FEATURES, features(_ctx(reader=0.8))))["reader_en"] == pytest.approx(0.8)
    # the bundled readers read English only: other languages get no score
    assert dict(zip(FEATURES, features(_ctx(reader=0.8, language="fr"))))["reader_en"] == 0.0
    # a reader of every language (`reader_any`) has its value whatever the language
    french = dict(zip(FEATURES, features(_ctx(reader=0.8, language="fr"))))
    assert french["reader_any"] == pytest.approx(0.8) and dict(zip(FEATURES, features(_ctx())))["reader_any"] == 0.0


def test_a_decision_that_reads_the_reader_needs_one(tmp_path, store):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, len(FEATURES)))
    for names in (FEATURES_EN_READER, FEATURES_ANY_READER):
        with_reader = fit_logistic(x, x[:, -1] > 0, embedder="hashing/256", trained_on="synthetic", names=names)
        path = tmp_path / "m.json"
        path.write_text(with_reader.to_json())
        assert load_decision(path).names == names
        with pytest.raises(ConfigError, match="--reader SPEC"):
            ClaimGuard(store, decision=with_reader)
    # a decision fitted without one reads every feature but the readers'
    without = fit_logistic(x, x[:, 0] > 0, embedder="hashing/256", trained_on="synthetic")
    assert "reader_en" not in without.names and len(without.coef) == len(FEATURES) - 2
    # both readers at once is no decision `fit_decision` fits
    both = fit_logistic(x, x[:, 0] > 0, embedder="hashing/256", trained_on="synthetic", names=FEATURES)
    path.write_text(both.to_json())
    with pytest.raises(ConfigError, match="other features"):
        load_decision(path)


def test_script_of():
    assert script_of("Hello there") == "latin"
    assert script_of("مرحبا بكم") == "arabic"
    assert script_of("नमस्ते दुनिया") == "devanagari"
    assert script_of("你好世界") == "cjk"
    assert script_of("Привет мир") == "other"


def test_logistic_fit_save_load(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, len(FEATURES)))
    y = x[:, 0] + 0.1 * rng.normal(size=200) > 0
    model = fit_logistic(x, y, embedder="hashing/256", trained_on="synthetic")
    assert model.score(np.r_[3.0, np.zeros(len(FEATURES) - 1)]) > 0.9
    assert model.score(np.r_[-3.0, np.zeros(len(FEATURES) - 1)]) < 0.1
    path = tmp_path / "m.json"
    path.write_text(model.to_json())
    again = load_decision(path)
    assert again.score(x[0]) == pytest.approx(model.score(x[0]))


def test_decision_file_with_other_features_is_refused(tmp_path):
    path = tmp_path / "m.json"
    path.write_text('{"features": ["s1"], "mean": [0], "scale": [1], "coef": [1], "intercept": 0, "threshold": 0.5, "embedder": "e5"}')
    with pytest.raises(ConfigError, match="other features"):
        load_decision(path)
    with pytest.raises(ConfigError, match="does not exist"):
        load_decision(tmp_path / "none.json")


def test_a_decision_fitted_before_the_social_features_reads_only_its_own():
    rng = np.random.default_rng(1)
    n = len(FEATURES_PLAIN)
    old = LogisticDecision(mean=[0.0] * n, scale=[1.0] * n, coef=rng.normal(size=n).tolist(), intercept=0.3,
                           names=FEATURES_PLAIN)
    again = LogisticDecision.from_json(old.to_json())
    assert again.names == FEATURES_PLAIN
    x = features(_ctx())
    tweet = features(_ctx(social=True))
    assert again.score(tweet) == pytest.approx(again.score(x)) == pytest.approx(old.score(x))
    logit = float(np.asarray(old.coef) @ x[:n] + 0.3)
    assert old.score(x) == pytest.approx(1 / (1 + np.exp(-logit)))
    with pytest.raises(ConfigError, match="do not fit"):
        LogisticDecision(mean=[0.0], scale=[1.0], coef=[1.0, 2.0], intercept=0.0, names=("s1",))


def test_a_decision_fitted_with_the_social_features_reads_them():
    rng = np.random.default_rng(2)
    x = np.array([features(_ctx(s1=float(s), social=bool(i % 2))) for i, s in enumerate(rng.uniform(0.7, 1.0, 300))])
    # Social texts repeat a claim from a lower cosine on: 0.8 instead of 0.9.
    y = x[:, 0] >= np.where(x[:, FEATURES.index("social")] > 0, 0.8, 0.9)
    model = fit_logistic(x, y, embedder="hashing/256", trained_on="synthetic", c=100.0)
    assert model.names == FEATURES_NO_READER
    assert model.score(features(_ctx(s1=0.85, social=True))) > 0.5 > model.score(features(_ctx(s1=0.85)))
    plain = fit_logistic(x, y, embedder="hashing/256", trained_on="synthetic", c=100.0, names=FEATURES_PLAIN)
    assert len(plain.coef) == len(FEATURES_PLAIN)
    assert plain.score(features(_ctx(s1=0.85, social=True))) == pytest.approx(plain.score(features(_ctx(s1=0.85))))


def test_shipped_decision_exists_for_e5_only():
    model = default_decision("e5/multilingual-e5-small-q4")
    assert isinstance(model, LogisticDecision) and len(model.coef) == len(model.names)
    with pytest.raises(ConfigError, match="--decision"):
        default_decision("hashing/256")


def test_shipped_decision_with_the_minilm_reader_names_it():
    model = default_decision("e5/multilingual-e5-small-q4", "st/minilm")
    assert model.names[-1] == "reader_en" and model.reader == {"kind": "embedding", "embedder": "st/minilm"}
    assert model.coef[model.names.index("reader_en")] > 0


def test_guard_without_a_fitted_model_says_what_to_do(store):
    with pytest.raises(ConfigError, match="No fitted decision model"):
        ClaimGuard(store)


@pytest.mark.parametrize("answer, expected", [("Yes", True), ("yes.", True), (" No", False), ("NO, it is not", False)])
def test_parse_yes_no(answer, expected):
    assert parse_yes_no(answer) is expected


def test_llm_judge_uses_the_papers_prompts_and_refuses_garbage():
    llm = get_llm("mock", outputs=["Yes", "No", "Maybe?"])
    judge = LLMJudge(llm, prompt=1)
    assert judge.judge("Sydney is the capital", ["Australia moves its capital to Sydney"]) is True
    assert "content, intent, and meaning" in llm.calls[0][0].content
    assert "Australia moves its capital" in llm.calls[0][1].content
    assert judge.judge("q", ["h"]) is False
    with pytest.raises(LLMOutputError):
        judge.judge("q", ["h"])
    assert "same content, purpose, and semantic similarity" in LLMJudge(llm, prompt=2).messages("q", ["h"])[0].content
    with pytest.raises(ConfigError):
        LLMJudge(llm, prompt=4)


def test_guard_with_llm_judge_lets_it_decide(store):
    from misguard.claims import ThresholdDecision

    llm = get_llm("mock", outputs=["No"])
    guard = ClaimGuard(store, decision=ThresholdDecision(0.0), judge=LLMJudge(llm))
    v = guard.check("Goldfish can only remember things for three seconds")
    assert not v.flagged and v.decided_by == "llm-judge-2" and "llm-judge-2" in v.stages


async def test_llm_judge_works_inside_a_running_event_loop(store):
    """generate_sync cannot nest in a running loop: the judge awaits, or moves to a thread."""
    from misguard.claims import ThresholdDecision

    llm = get_llm("mock", outputs=["Yes", "No"])
    judge = LLMJudge(llm)
    assert await judge.judge_async("q", ["h"]) is True
    guard = ClaimGuard(store, decision=ThresholdDecision(0.0), judge=judge)
    v = guard.check("Goldfish can only remember things for three seconds")  # sync call inside the loop
    assert v.decided_by == "llm-judge-2" and not v.flagged


def test_the_shipped_decisions_keep_their_scores():
    """Pinned scores of both shipped decision files on two fixed matches: a change to the
    features, their order or the file format that moves a shipped decision's output fails here."""
    plain = MatchContext(s1=0.91, body=0.9, support=0.88, votes=1.0, text="Goldfish only remember three seconds",
                         claim_text="Goldfish can only remember things for three seconds", segment_kind="body",
                         script="latin", language="en", query_generic=0.8, claim_generic=0.82)
    tweet = MatchContext(s1=0.86, body=0.84, support=0.8, votes=0.5, text="RT @x: Les poissons rouges 3 secondes",
                         claim_text="Goldfish can only remember things for three seconds", segment_kind="option",
                         script="latin", language="fr", query_generic=0.79, claim_generic=0.82, social=True, reader=0.7)
    default = default_decision("e5/multilingual-e5-small-q4")
    with_reader = default_decision("e5/multilingual-e5-small-q4", "st/minilm")
    assert [default.score(features(c)) for c in (plain, tweet)] == pytest.approx([0.981662957028407, 0.5955108272338028], abs=1e-12)
    assert [with_reader.score(features(c)) for c in (plain, tweet)] == pytest.approx([0.9640463451593981, 0.6201875652774559], abs=1e-12)
