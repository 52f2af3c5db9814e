"""The tables of this record's README, from its own logs: python3 summary.py (in this folder)."""
import json
import os
import subprocess
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OBJECTS = os.path.join(HERE, "..", "2026-11-30-objects-49", "3-new", "grades.tgz")


def untar(path, into):
    with tarfile.open(path) as t:
        t.extractall(into)


def lines(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def bench(tmp, tag):
    d = os.path.join(tmp, tag)
    untar(os.path.join(d, "logs.tgz"), d)
    events = lines(os.path.join(d, "logs", f"bench-{tag}.jsonl"))
    # "bench-l1: exit 0, 112.1 s, 60 pairs, ..."
    wall = float(open(os.path.join(d, "logs", "table.txt")).read().split(", ")[1].split()[0])
    sums = {"tools": 0.0, "timing": 0.0, "fresh": 0.0}
    doubted = 0
    for e in events:
        if e.get("event") == "chunk":
            for k in sums:
                sums[k] += e["phases"].get(k, 0.0)
            doubted += len(e["phases"].get("doubted") or {})
    runs = [e for e in events if e.get("event") == "stage_done" and e["stage"].startswith("sanitize")]
    over = sorted(round(e["secs"], 1) for e in runs if e["secs"] >= 12)
    pairs = sum(1 for e in events if e.get("event") == "graded")
    return wall, pairs, sums, doubted, len(runs), over


def perf_table(root):
    d = os.path.join(root, "perf")
    untar(os.path.join(d, "logs.tgz"), d)
    return open(os.path.join(d, "logs", "table.txt")).read().strip()


def main():
    tmp = tempfile.mkdtemp()
    untar(os.path.join(HERE, "call1.tgz"), tmp)
    print("| bench | lanes | wall | pairs/min | tools | timing | fresh | doubted | sanitizer runs of 12 s or more |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tag, lanes in [("l1", 1), ("l2", 2), ("l1b", 1), ("l2b", 2)]:
        wall, pairs, s, doubted, n, over = bench(tmp, tag)
        print(f"| {tag} | {lanes} | {wall} s | {pairs / wall * 60:.1f} | {s['tools']:.1f} | {s['timing']:.1f} | {s['fresh']:.1f} | {doubted} | {len(over)} of {n}: {over} |")
    md5 = subprocess.run(
        f"cd {tmp} && for t in l1 l2 l1b l2b; do tar -xzf $t/grades.tgz -C $t; md5sum < $t/grades-bench-$t/grades.csv; done",
        shell=True, capture_output=True, text=True).stdout.split("\n")
    print("gradebooks identical:", len({m for m in md5 if m}) == 1)
    # The SASS read per cubin: five adversarial students on 03, against the 38-student record,
    # with 726a79b's bundle (call 1) and 76d6ebc's (call 2).
    before = tempfile.mkdtemp()
    untar(OBJECTS, before)
    rec = {e["student"]: e for e in lines(os.path.join(before, "grades-adv-a", "journal.jsonl"))}
    second = tempfile.mkdtemp()
    untar(os.path.join(HERE, "call2.tgz"), second)
    flags = lambda x: sorted((f["rule"], f.get("message", "")) for f in x.get("flags", []))
    again = {e["student"]: e for e in lines(os.path.join(second, "grades-sass", "journal.jsonl"))}
    print()
    print("| student | points (call 1, call 2) | before | flags | same flags and messages (call 1, call 2) |")
    print("|---|---|---|---|---|")
    for e in lines(os.path.join(tmp, "grades-sass", "journal.jsonl")):
        r, a = rec[e["student"]], again[e["student"]]
        rules = ", ".join(f["rule"] for f in e["flags"]) or "none"
        print(f"| {e['student']} | {e['points']:g}, {a['points']:g} | {r['points']:g} | {rules} | {flags(e) == flags(r)}, {flags(a) == flags(r)} |")
    print()
    print(perf_table(second))


main()
