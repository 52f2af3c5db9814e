#!/usr/bin/env python3
"""Issue 47's driver records, from fetched gradebooks (their journal.jsonl): per graded pair, the
kernel time ncu judged against the kernel time CUPTI recorded in the plain call timing (learner and
reference fix), the rules that fired, and the perf steps about launches and copy overlap. Then the
spread of plain/ncu over every pair whose program is a reference fix (the band of the rule
`faster-under-ncu`). Used by scripts/gpu-trust-47.sh; runs anywhere."""
import json
import sys
from pathlib import Path

ratios = []
for book in sys.argv[1:]:
    journal = Path(book) / "journal.jsonl"
    if not journal.is_file():
        continue
    print(f"== {book}: plain = CUPTI's kernel time in a plain call, ncu = ncu's (us)")
    rows = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    for r in sorted(rows, key=lambda r: (r["exercise"], r["student"])):
        if r.get("state") == "not-submitted":
            continue
        s = r.get("speed") or {}
        rules = ",".join(f["rule"] for f in r.get("flags", [])) or "-"

        def pair(ncu, plain):
            if ncu is None or plain is None:
                return "-"
            return f"{plain / 1e3:.1f}/{ncu / 1e3:.1f}={plain / ncu:.2f}"

        lr = pair(s.get("learner_ns"), s.get("learner_plain_kernel_ns"))
        rr = pair(s.get("reference_ns"), s.get("reference_plain_kernel_ns"))
        if s.get("learner_ns") and s.get("learner_plain_kernel_ns") and "ref" in r["student"]:
            ratios.append((s["learner_plain_kernel_ns"] / s["learner_ns"], r["exercise"]))
        if s.get("reference_ns") and s.get("reference_plain_kernel_ns"):
            ratios.append((s["reference_plain_kernel_ns"] / s["reference_ns"], r["exercise"] + " (ref)"))
        print(f"{r['student']:<14} {r['exercise']:<20} {r.get('points', 0):>5.1f}/{r.get('max', 0):<4.0f} "
              f"learner {lr:<22} reference {rr:<22} {rules}")
        for step in r.get("steps", []):
            text = json.dumps(step)
            if any(k in text for k in ("launches", "copy-overlap", "copy time overlapped", "faster-under-ncu", "CUPTI")):
                print(f"    {step.get('name', '?')}: {step.get('status', '?')}: {str(step.get('summary', step.get('message', '')))[:150]}")
if ratios:
    ratios.sort()
    vals = [x for x, _ in ratios]
    print(f"plain/ncu over {len(vals)} reference-fix runs: min {vals[0]:.2f} ({ratios[0][1]}), "
          f"median {vals[len(vals) // 2]:.2f}, max {vals[-1]:.2f} ({ratios[-1][1]})")
    same = {}
    for x, ex in ratios:
        same.setdefault(ex.replace(" (ref)", ""), []).append(x)
    spread = [max(v) / min(v) for v in same.values() if len(v) > 1 and min(v) > 0]
    if spread:
        print(f"the same fix as learner and as reference: largest plain/ncu ratio between the two {max(spread):.2f}")
