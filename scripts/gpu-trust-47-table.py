#!/usr/bin/env python3
"""One line per graded pair of each gradebook given (its journal.jsonl): student, exercise, state,
points, the rules that flagged it, and the first compiled-reach finding of a tool-aware flag.
Used by scripts/gpu-trust-47.sh; runs anywhere on a fetched gradebook."""
import json
import sys
from pathlib import Path

for book in sys.argv[1:]:
    journal = Path(book) / "journal.jsonl"
    if not journal.is_file():
        continue
    print(f"== {book}")
    rows = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    for r in sorted(rows, key=lambda r: (r["exercise"], r["student"])):
        state = r.get("state", "?")
        if state == "not-submitted":
            continue
        rules = ",".join(f["rule"] for f in r.get("flags", [])) or "-"
        why = ""
        for f in r.get("flags", []):
            if f["rule"] == "tool-aware":
                why = f["message"][:110]
        if state == "not-gradable":
            why = r.get("reason", "")[:110]
        print(f"{r['student']:<18} {r['exercise']:<18} {state:<13} {r.get('points', 0):>6.1f}/{r.get('max', 0):<5.0f} {rules:<28} {why}")
