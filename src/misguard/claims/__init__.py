"""Claim guard: multilingual retrieval-augmented misinformation detection (the "Safer
Web" system): a store of fact-checked claims, the crawler, topic, detection, manager and
judge agents, red-team generators for the paper's attacks, and the fitting of the flag
decision (`fit_decision`; docs/claims.md).

    store = ClaimStore.open("claims-db", get_embedder("e5"), create=True)
    # or any backend by its spec: open_claim_store("qdrant+http://HOST:6333/claims", ...)
    store.add(read_claims("claims.jsonl"))
    verdict = ClaimGuard(store).check("Translate from French to English: ...")
"""

from ._analysis import Analysis
from ._backends import STORE_BACKENDS, open_claim_store, store_backend
from ._crawl import Chunk, crawl, extract_text
from ._crossfit import Fit, cross_validate, leave_one_source_out
from ._detect import (
    FEATURES,
    Decision,
    LLMJudge,
    LogisticDecision,
    MatchContext,
    ThresholdDecision,
    default_decision,
    features,
    fit_logistic,
    load_decision,
    parse_yes_no,
)
from ._fit import (
    DecisionFit,
    RankerFit,
    StoreBuild,
    build_checkthat_store,
    build_training_store,
    fit_cosine_threshold,
    fit_decision,
    fit_language_shift,
    fit_ranker_on_tweets,
    retrieval_metrics,
    save_decision,
)
from ._guard import MAX_CHARS, ClaimGuard
from ._ingest import FIELDS, FORMATS, ClaimFile, detect_format, read_claim_file, read_claims, sample_claims_path, stable_id, to_claimreview
from ._judge import DocumentReport, JudgeAgent, Notification
from ._pull import (
    AGE_BANDS,
    CLAIM_SOURCES,
    GOOGLE_FACTCHECK_API,
    ClaimSource,
    FeedSource,
    GoogleFactCheckSource,
    PageSource,
    PullReport,
    SourceReport,
    SourceReviews,
    pull_claims,
    review_age_counts,
)
from ._integrity import Check, VerifyReport, rebuild_index, reembed_store, verify_store
from ._rank import RANK_FEATURES, RANKINGS, LinearRanker, average_precision_at, fit_ranker, reciprocal_rank
from ._reader import EmbeddingReader, load_reader
from ._redteam import ATTACKS, LANGUAGES, AttackGenerator, mcq_template, wrap
from ._reviews import Review, ReviewProblem, find_claimreviews, jsonld_documents, review_id
from ._screen import Injection, find_injections
from ._screen import screen as screen_injections
from ._rows import verdict_row
from ._shift import LanguageShift
from ._social import STEPS as SOCIAL_STEPS
from ._social import normalize_social
from ._sources import (
    CheckThat,
    DevSet,
    PaperQuery,
    TrainingData,
    TweetQuery,
    load_checkthat,
    load_devset,
    load_distractors,
    load_training_data,
    load_true_claims,
    paper_queries,
)
from ._encoder import EncoderFit, EncoderPair, EncoderRecipe, encoder_pairs, fit_encoder
from ._store import ClaimStore, IngestReport
from ._text import clean_text, guess_language, segment, strip_instructions
from ._unmask import DEFAULT_UNMASK, UNMASK_STEPS, unmask
from ._topics import TOPICS, LLMTopicClassifier, OfflineTopicClassifier, parse_topics, topic_accuracy
from ._training import Row, TweetAnalysis, analyse_tweets
from ._verdicts import FALSE_LIKE, normalize_verdict

__all__ = [
    "AGE_BANDS", "CLAIM_SOURCES", "GOOGLE_FACTCHECK_API", "ClaimSource", "FeedSource", "GoogleFactCheckSource",
    "PageSource", "PullReport", "Review", "ReviewProblem", "SourceReport", "SourceReviews", "find_claimreviews",
    "jsonld_documents", "pull_claims", "review_age_counts", "review_id",
    "RANKINGS", "RANK_FEATURES", "SOCIAL_STEPS", "LinearRanker", "average_precision_at", "fit_ranker",
    "normalize_social", "reciprocal_rank",
    "ATTACKS", "FALSE_LIKE", "FEATURES", "FORMATS", "LANGUAGES", "MAX_CHARS", "TOPICS",
    "Analysis", "AttackGenerator", "Chunk", "ClaimGuard", "ClaimStore", "Decision", "DocumentReport",
    "IngestReport", "EmbeddingReader", "load_reader", "JudgeAgent", "LLMJudge", "LanguageShift", "LLMTopicClassifier", "LogisticDecision",
    "MatchContext", "Notification", "OfflineTopicClassifier", "ThresholdDecision",
    "clean_text", "crawl", "default_decision", "detect_format", "extract_text", "features",
    "fit_logistic", "guess_language", "load_decision", "mcq_template", "normalize_verdict",
    "parse_topics", "parse_yes_no", "read_claims", "segment", "stable_id", "strip_instructions",
    "to_claimreview", "topic_accuracy", "verdict_row", "wrap",
    "DEFAULT_UNMASK", "UNMASK_STEPS", "unmask", "Injection", "find_injections", "screen_injections",
    "Check", "VerifyReport", "rebuild_index", "reembed_store", "verify_store",
    # where a store lives (SQLite directory, Qdrant collection)
    "STORE_BACKENDS", "open_claim_store", "store_backend",
    # fitting the decision
    "CheckThat", "DecisionFit", "DevSet", "Fit", "PaperQuery", "RankerFit", "Row", "StoreBuild", "TrainingData",
    "TweetAnalysis", "TweetQuery", "analyse_tweets", "build_checkthat_store", "build_training_store",
    "cross_validate", "fit_cosine_threshold", "fit_decision", "fit_language_shift", "fit_ranker_on_tweets", "leave_one_source_out",
    "load_checkthat", "load_devset", "load_distractors", "load_training_data", "load_true_claims", "paper_queries",
    "retrieval_metrics", "save_decision",
    # fine-tuning the encoder
    "EncoderFit", "EncoderPair", "EncoderRecipe", "encoder_pairs", "fit_encoder",
    # claim files
    "FIELDS", "ClaimFile", "read_claim_file", "sample_claims_path",
]
