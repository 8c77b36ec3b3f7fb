"""Probe: render the non-English dev queries (fr/es/ar/hi/zh, the "translate" attack) in English
with the local LLM first, then run the default ClaimGuard on the original and on the English
text. Prints, per language x label, n, % flagged and % right claim id at top-1 (false rows) for
both, and the LLM cost. Per-row results go to --output (JSONL, outside the repo).

Caveats: the shipped decision was fitted on rows that include these dev claims, so absolute
numbers are in sample; the point is original vs translated. The LLM runs with temperature 0,
seed 0, one slot and no prompt-prefix cache, so answers do not depend on call order; the
response cache (--cache-dir, default MISGUARD_LLM__CACHE_DIR or /work/runs-claims/translate-cache)
makes reruns free; the cost line reports the calls that made the cached answers. Needs the
runs-claims/base store (`bench claims`). On 2 cores a translation takes ~3.5 s when the machine
is otherwise idle; beside another CPU job llama.cpp slows down many times, past the default 120 s
timeout (hence TIMEOUT_S=300). Run from the repo root:

    OMP_NUM_THREADS=2 MISGUARD_LLM__N_THREADS=2 MISGUARD_LLM__TIMEOUT_S=300 nice -n 5 .venv/bin/python docs/scripts/claims_translate_probe.py [--limit N] [--output FILE]
"""
import argparse, json, statistics, time
from collections import defaultdict
from pathlib import Path
from misguard.config import load_settings
from misguard.embed import get_embedder
from misguard.claims import ClaimGuard, ClaimStore
from misguard.llm import get_llm
from misguard.types import ChatMessage

p = argparse.ArgumentParser()
p.add_argument("--data", default="/work/shared/data/claims/devset-multilingual/queries.jsonl")
p.add_argument("--store", default="/work/runs-claims/base/store")
p.add_argument("--output", default="/work/runs-claims/translate-probe.jsonl")
p.add_argument("--cache-dir", default=None)
p.add_argument("--limit", type=int, default=0, help="first N rows only (a quick test)")
a = p.parse_args()
rows = [r for r in map(json.loads, open(a.data)) if r["lang"] != "en"]
rows = rows[:a.limit] if a.limit else rows
print(f"{len(rows)} non-English rows", flush=True)

settings = load_settings()
cache = a.cache_dir or settings.llm.cache_dir or "/work/runs-claims/translate-cache"
settings = load_settings(llm={"cache_dir": str(cache), "parallel": 1, "prompt_cache": False})
llm = get_llm("local/qwen2.5-1.5b", settings.llm)
PROMPT = ("Render the following text in English. Translate the whole text as given. Reply with the "
          "English translation only: no notes, no comments, no explanations.\n\nText:\n{text}")
started, seconds = time.perf_counter(), []
for i, r in enumerate(rows):
    c = llm.generate_sync([ChatMessage.user(PROMPT.format(text=r["text"]))], temperature=0.0, seed=0, max_tokens=256)
    r["translation"], r["llm_tokens"] = c.text.strip(), (c.prompt_tokens, c.completion_tokens)
    seconds.append(c.latency_s)  # a cached answer keeps the latency and tokens of the call that made it
    if (i + 1) % 10 == 0 or i + 1 == len(rows):
        print(f"  {i + 1}/{len(rows)} translated, median {statistics.median(seconds):.1f} s "
              f"per call, {time.perf_counter() - started:.0f} s", flush=True)

guard = ClaimGuard(ClaimStore.open(Path(a.store), get_embedder(None, settings.embed)))
for key, texts in (("orig", [r["text"] for r in rows]), ("en", [r["translation"] for r in rows])):
    verdicts = [v for i in range(0, len(texts), 64) for v in guard.check_many(texts[i:i + 64])]
    for r, v in zip(rows, verdicts):
        top = v.candidates[0].claim_id if v.candidates else None
        r[f"flagged_{key}"], r[f"score_{key}"], r[f"top1_{key}"] = v.flagged, round(v.score, 4), top

groups = defaultdict(list)
for r in rows:
    groups[(r["lang"], r["label"])].append(r); groups[("all", r["label"])].append(r)
pct = lambda xs: f"{100 * sum(xs) / len(xs):5.1f}" if xs else "    -"
print(f"\n{'lang':4} {'label':5} {'n':>4} {'flag orig':>9} {'flag en':>8} {'top1 orig':>9} {'top1 en':>8}")
for (lang, label), rs in sorted(groups.items(), key=lambda kv: (kv[0][0] == "all", kv[0])):
    right = lambda k: [x[f"top1_{k}"] == x["claim_id"] for x in rs] if label == "false" else []
    print(f"{lang:4} {label:5} {len(rs):4} {pct([x['flagged_orig'] for x in rs]):>9} {pct([x['flagged_en'] for x in rs]):>8} "
          f"{pct(right('orig')):>9} {pct(right('en')):>8}")
false_rows = [r for r in rows if r["label"] == "false"]
print(f"\nfalse rows missed on the original: {sum(not r['flagged_orig'] for r in false_rows)}, of them flagged in English: "
      f"{sum(not r['flagged_orig'] and r['flagged_en'] for r in false_rows)}; flagged on the original but not in English: "
      f"{sum(r['flagged_orig'] and not r['flagged_en'] for r in false_rows)}")
tok = [r["llm_tokens"] for r in rows]
print(f"\nLLM {llm.spec}: {len(rows)} calls ({llm.usage.cached_calls} from the cache this run; counts below are of the "
      f"calls that made the answers), {sum(t[0] for t in tok)} prompt + {sum(t[1] for t in tok)} completion tokens, "
      f"median {statistics.median(seconds):.2f} s per translation, {sum(seconds):.0f} s in the model; "
      f"{sum(t[1] >= 256 for t in tok)} hit max_tokens")
Path(a.output).parent.mkdir(parents=True, exist_ok=True)
with open(a.output, "w") as f:
    for r in rows:
        f.write(json.dumps({k: r[k] for k in ("qid", "claim_id", "label", "lang", "text", "translation", "flagged_orig",
                                               "flagged_en", "score_orig", "score_en", "top1_orig", "top1_en")},
                           ensure_ascii=False) + "\n")
print(f"rows -> {a.output}")
