#!/usr/bin/env python3
"""Where a check's time went, from `check --format json` reports (their `time_spent`).

Usage: scripts/check-time-spent.py REPORT.json... -- one line a report: its wall-clock seconds (from
the matching .secs file where the GPU script wrote one), its outcome, whether the original's and the
reference fix's measurements were kept, and its four longest stages."""
import json
import sys
from pathlib import Path


def line(path: Path) -> str:
    try:
        r = json.loads(path.read_text())
    except Exception as e:  # a report the check could not finish writing
        return f"{path.stem}: unreadable ({e})"
    secs = path.with_suffix(".secs")
    wall = secs.read_text().strip() if secs.exists() else "?"
    spent = sorted(r.get("time_spent", []), key=lambda s: -s["secs"])[:4]
    kept = any(s["name"] == "timing: kept" for s in r.get("steps", []))
    timing = next((s["summary"] for s in r.get("steps", []) if s["name"] == "timing"), "-")
    top = ", ".join(f"{s['stage']} {s['secs']:.1f}" for s in spent)
    return f"{path.stem}: {wall} s, {r.get('outcome')}, kept={'yes' if kept else 'no'} | {timing[:90]} | {top}"


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(line(Path(p)))
