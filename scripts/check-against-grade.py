#!/usr/bin/env python3
"""The check-against-grade table of an adversarial run: each `check --format json` of a file of the
suite (CHECKS/check-<student>-<exercise>.json, as scripts/gpu-trust-run.sh PART=check writes
them) beside the class's grade of the same file (the journals under CLASS/grades-adversarial-*/).
A check agrees with grade when it passes exactly where grade gives full points.

    scripts/check-against-grade.py book/gpu-runs/2026-11-25-trust/checks book/gpu-runs/2026-11-25-trust/class
"""
import glob
import json
import os
import sys

EXERCISES = ["03-race", "57-reduction", "62-launches", "63-transfers"]


def main(checks: str, classes: str) -> None:
    grades = {}
    for journal in glob.glob(os.path.join(classes, "grades-adversarial-*", "journal.jsonl")):
        for line in open(journal):
            pair = json.loads(line)
            if pair.get("state") == "graded":
                flags = sorted({f["rule"] for f in pair.get("flags", [])})
                grades[(pair["student"], pair["exercise"])] = (pair["points"], flags)
    print("| student | exercise | check | rules and failed steps in check | grade | grade's flags | agree |")
    print("|---|---|---|---|---|---|---|")
    for path in sorted(glob.glob(os.path.join(checks, "check-*.json"))):
        name = os.path.basename(path)[len("check-"):-len(".json")]
        exercise = next(e for e in EXERCISES if name.endswith("-" + e))
        student = name[: -len(exercise) - 1]
        report = json.load(open(path))
        failed = [s["name"] for s in report["steps"] if s["status"] != "passed"]
        graded = grades.get((student, exercise))
        points = "-" if graded is None else f"{graded[0]:g}"
        agree = "-" if graded is None else ("yes" if (report["outcome"] == "pass") == (graded[0] == 100) else "NO")
        flags = ", ".join(graded[1]) if graded else "-"
        print(f"| {student} | {exercise} | {report['outcome']} | {', '.join(failed) or '-'} | {points} | {flags} | {agree} |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
