#!/usr/bin/env python3
"""The table of this record's README, from the benches' logs (`python3 summary.py` in this folder):
each bench's wall time, its phases summed over the six chunks, its call runs (confirming rounds,
warm-up runs) and the students its chunks doubted, with the rules that doubted them."""
import io, json, pathlib, tarfile

here = pathlib.Path(__file__).parent
order = ["a1", "b1", "b2", "a2", "b3", "a3", "a4", "b4", "a5", "c1", "c2", "a6"]
print("| bench | bundle | wall | pairs/min | tools | timing | fresh | waited | call runs (confirming, warm-up) | doubted |")
print("|---|---|---|---|---|---|---|---|---|---|")
rules = {}
for tag in order:
    with tarfile.open(here / f"{tag}-logs.tgz") as t:
        text = t.extractfile(f"logs/bench-{tag}.jsonl").read().decode()
        table = t.extractfile("logs/table.txt").read().decode()
    wall = float(table.split(" s,")[0].split(", ")[-1])
    ev = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
    calls = [e for e in ev if e.get("event") == "stage_done" and e.get("stage") == "call"]
    warm = [e for e in calls if e["run"] == 2**32 - 1]
    confirming = [e for e in calls if 1 << 20 <= e["run"] < 2**32 - 1]
    chunks = [e for e in ev if e.get("event") == "chunk"]
    total = lambda k: sum(c["phases"][k] for c in chunks)
    doubted = [(c["exercise"], who, why) for c in chunks for who, why in (c["phases"].get("doubted") or {}).items()]
    for _, _, why in doubted:
        for w in why:
            rules[w.split(":")[0]] = rules.get(w.split(":")[0], 0) + 1
    bundle = {"a": "A (main)", "b": "B (warm-up)", "c": "C (prebuild after timing)"}[tag[0]]
    print(f"| {tag} | {bundle} | {wall:.1f} s | {60 * 60 / wall:.1f} | {total('tools'):.1f} | {total('timing'):.1f} | {total('fresh'):.1f} | {total('waited'):.1f} | {len(calls)} ({len(confirming)}, {len(warm)}) | {len(doubted)} |")
print()
print("Rules that doubted a first call, over all twelve benches:", ", ".join(f"{k} {v}" for k, v in sorted(rules.items())))

# Each first whole call of a student in the A and B benches: whether a build of the next chunk ended
# while it ran (a build's stage_done between the call before it and its own), and whether it was
# doubted.
counts = {}
for tag in [t for t in order if t[0] in "ab"]:
    with tarfile.open(here / f"{tag}-logs.tgz") as t:
        ev = [json.loads(l) for l in t.extractfile(f"logs/bench-{tag}.jsonl").read().decode().splitlines() if l.startswith("{")]
    doubted = {(c["exercise"], who) for c in ev if c.get("event") == "chunk" for who in (c["phases"].get("doubted") or {})}
    builds_since = False
    for e in ev:
        if e.get("event") != "stage_done":
            continue
        if e["stage"].startswith("build"):
            builds_since = True
        elif e["stage"] == "call":
            if e["run"] < 1 << 20 and e["variant"] != "reference":
                key = (builds_since, (e["submission"], e["variant"]) in doubted)
                counts[key] = counts.get(key, 0) + 1
            builds_since = False
for beside in (True, False):
    n = counts.get((beside, True), 0) + counts.get((beside, False), 0)
    print(f"students' first calls {'while builds ended' if beside else 'with no build ending'}: {n}, doubted {counts.get((beside, True), 0)}")
