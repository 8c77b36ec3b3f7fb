"""What the ARGUS rectifier decided on each monitored message, per run directory of
`bench misinfotask` (its events/*.jsonl): rewrites, passes, unusable answers, messages
flagged for review, the sentences redacted (by risk, or with `goal_redact` as a restated
goal), the goals it inferred, and with `quarantine` the senders caught by a message, by the
sender detector or by their mean risk (how many of them the hijacked agent; for a hijacked agent no message caught,
its highest message risk), their later messages blocked and the
messages hidden from the concluder. Run from the repo root, e.g.
`.venv/bin/python docs/scripts/misinfotask_rectifier_decisions.py runs/table/inject-argus-gt15`."""
import sys
from collections import Counter
from pathlib import Path
from misguard.mas import read_events
for run_dir in sys.argv[1:]:
    total = Counter()
    for path in sorted(Path(run_dir, "events").glob("*.jsonl")):
        log = read_events(path)
        monitored = [e.data for e in log.of_type("interception") if e.data["details"].get("monitored")]
        counts = Counter("unusable" if d["details"].get("rectifier_unusable") else d["action"] for d in monitored)
        counts["monitored"], counts["need_review"] = len(monitored), sum(bool(d["details"].get("need_review")) for d in monitored)
        redacted = [r for d in monitored for r in d["details"].get("redacted") or []]
        counts["redacted_by_risk"] = sum("goal_cosine" not in r for r in redacted)
        counts["redacted_as_goal"] = sum("goal_cosine" in r for r in redacted)
        goals = [g for e in log.of_type("interceptor_round") for g in e.data.get("goals") or []]
        # with risk_all_channels the risk path also runs on unmonitored channels (details "monitored": False)
        unmonitored = [e.data for e in log.of_type("interception") if e.data["details"].get("monitored") is False]
        counts["unmonitored_rewrite"] = sum(d["action"] == "rewrite" for d in unmonitored)
        counts["unmonitored_redacted"] = sum(len(d["details"].get("redacted") or []) for d in unmonitored)
        # quarantine: senders caught, whether each is the agent the attack hijacked
        hijacked = {t for e in log.of_type("attack") for t in e.data.get("targets") or []}
        counts["agents"] = len(next(log.of_type("start")).data["agents"])
        counts["hijacked_agents"] = len(hijacked)
        caught = [e for e in log.of_type("interception") if e.data["details"].get("quarantined")]
        counts["quarantined"] = len(caught)
        counts["quarantined_hijacked"] = sum(e.data["sender"] in hijacked for e in caught)
        for e in caught:  # what caught each sender: its riskiest redacted sentence
            worst = max(e.data["details"].get("redacted") or [{"risk": 0.0, "sentence": ""}], key=lambda r: r["risk"])
            print(f"  {path.stem}: {e.data['sender']} caught in round {e.round} "
                  f"({'hijacked' if e.data['sender'] in hijacked else 'not hijacked'}), risk {worst['risk']:.3f}: {worst['sentence'][:120]}")
        for agent in sorted(hijacked - {e.data["sender"] for e in caught}):  # missed: how close its messages came
            risks = [e.data["details"]["risk"] for e in log.of_type("interception")
                     if e.data["sender"] == agent and "risk" in e.data["details"]]
            print(f"  {path.stem}: hijacked {agent} not caught by a message; its highest message risk "
                  f"{max(risks, default=float('nan')):.3f} over {len(risks)} scored messages")
        # a sender quarantined without a message that caught it was caught at a round's start
        # (interceptor_round) or at conclusion (conclusion_review) by sender-level evidence: the
        # sender detector (`sender_model_path`) or its mean risk (`quarantine_mean_threshold`),
        # which the blocks of its messages name
        by_message = {e.data["sender"] for e in caught}
        everyone = {a for e in log.of_type("interceptor_round") for a in e.data.get("quarantined") or {}}
        everyone |= {e.data["sender"] for e in log.of_type("conclusion_review") if e.data["action"] == "block"}
        named = {e.data["sender"]: e.data["details"].get("quarantined_by", "sender detector")
                 for kind in ("interception", "conclusion_review") for e in log.of_type(kind)
                 if e.data["action"] == "block" and "quarantined_in_round" in e.data["details"]}
        for sender in sorted(everyone - by_message):
            by = named.get(sender, "sender detector")
            key = "quarantined_by_" + by.replace(" ", "_").replace("sender_", "")
            counts[key] += 1
            counts[key + "_hijacked"] += sender in hijacked
            print(f"  {path.stem}: {sender} quarantined by the {by} "
                  f"({'hijacked' if sender in hijacked else 'not hijacked'})")
        counts["blocked_quarantined"] = sum(e.data["action"] == "block" and "quarantined_in_round" in e.data["details"]
                                            for e in log.of_type("interception"))
        counts["concluder_hidden"] = sum(e.data["action"] == "block" for e in log.of_type("conclusion_review"))
        print(f"{path}: {dict(counts)}; goals at the last round: {sorted(set(goals))[-3:]}")
        total += counts
    print(f"{run_dir}: {dict(total)}")
