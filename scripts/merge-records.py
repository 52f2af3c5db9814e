#!/usr/bin/env python3
"""Merge verification records of one GPU into one: merge-records.py BASE.json PART.json... > OUT.json.

Each later record's exercises replace the earlier ones of the same id (a part re-run after a fix
replaces the first run); the header (GPU, driver, tools) is the last part's, the command and the
wall time list every part's, and the outcome passes only when every exercise of the result does.
The exercises are sorted by id, as `verify` writes them."""
import json
import sys

records = [json.load(open(path)) for path in sys.argv[1:]]
merged = dict(records[-1])
by_id = {}
for record in records:
    for exercise in record["exercises"]:
        by_id[exercise["id"]] = exercise
merged["exercises"] = [by_id[k] for k in sorted(by_id)]
merged["command"] = " ; ".join(r["command"] for r in records)
merged["wall_seconds"] = sum(r["wall_seconds"] for r in records)
failed = [e["id"] for e in merged["exercises"] if e.get("outcome", "pass") not in ("pass", "n/a", "skipped")]
merged["outcome"] = "pass" if not failed else "fail"
json.dump(merged, sys.stdout, indent=2)
sys.stdout.write("\n")
if failed:
    print(f"not passing: {', '.join(failed)}", file=sys.stderr)
