#!/usr/bin/env python3
"""The table of this record's README, from its own logs: each bench's wall time (table.txt), its
phases summed over the six chunks (the grade's `chunk` events), and its call runs (`stage_done`).
Usage: python3 summary.py (from this folder)."""
import glob, io, json, os, tarfile

here = os.path.dirname(os.path.abspath(__file__))
print("| call | bench | wall | pairs/min | tools | tools, chunks 2-6 | timing | waited for the prebuild | call runs (confirming) | gradebook |")
print("|---|---|---|---|---|---|---|---|---|---|")
books = {}
for call in sorted(d for d in os.listdir(here) if os.path.isdir(os.path.join(here, d))):
    for v in ["old1", "new1", "new2", "old2"]:
        tgz = os.path.join(here, call, f"bench-{v}-logs.tgz")
        files = {}
        with tarfile.open(tgz) as t:
            for m in t.getmembers():
                if m.isfile():
                    files[os.path.basename(m.name)] = t.extractfile(m).read().decode()
        events = [json.loads(l) for l in files[f"bench-{v}.jsonl"].splitlines() if l.startswith("{")]
        chunks = [e for e in events if e.get("event") == "chunk"]
        calls = [e for e in events if e.get("event") == "stage_done" and e["stage"] == "call"]
        wall = files["table.txt"].split(",")[1].strip()
        rate = files["table.txt"].split(",")[3].strip()
        phase = lambda k, c=chunks: sum(x["phases"][k] for x in c)
        book = files[f"bench-{v}-grades.csv"]
        books.setdefault(book, len(books) + 1)
        print(f"| {call} | {v} | {wall} | {rate.split()[0]} | {phase('tools'):.1f} | {phase('tools', chunks[1:]):.1f} | "
              f"{phase('timing'):.1f} | {phase('waited'):.1f} | {len(calls)} ({sum(1 for c in calls if c['run'] > 0)}) | {books[book]} |")
print(f"\n{len(books)} distinct gradebook(s) over the twelve benches.")
