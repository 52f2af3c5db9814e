"""The performance classes of calls 3-5 from their event logs: wall, pairs a minute, the phases
summed over the three chunks, the mean ncu process and whole call, and when the original's build
ran (beside the tools, or after them, on the way to the timed phase). Run
from this folder: python3 summary.py (unpacks the logs into a temporary folder)."""
import glob
import json
import os
import tarfile
import tempfile

tmp = tempfile.mkdtemp()
for outer in sorted(glob.glob("call-[345]/logs.tgz")):
    call = outer.split("/")[0]
    dest = os.path.join(tmp, call)
    with tarfile.open(outer) as t:
        t.extractall(dest)
    for inner in glob.glob(os.path.join(dest, "*-logs.tgz")):
        with tarfile.open(inner) as t:
            t.extractall(inner[: -len("-logs.tgz")])

print("| call | grade | wall | pairs | pairs/min | tools | timing | fresh | ncu run | whole call | original built |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for call in sorted(os.listdir(tmp)):
    walls = {}
    for line in open(os.path.join("..", os.path.basename(os.getcwd()), call, "table.txt")):
        tag, rest = line.split(" perf:", 1)
        walls[tag] = float(rest.split(",")[1].split()[0])
    for tag, wall in walls.items():
        log = os.path.join(tmp, call, tag, "logs", "perf.jsonl")
        phases = {"tools": 0.0, "timing": 0.0, "fresh": 0.0}
        runs = {"timing": [0, 0.0], "call": [0, 0.0]}
        pairs, starts, tools = 0, {}, {}
        for line in open(log):
            o = json.loads(line)
            if o.get("event") == "chunk":
                for k in phases:
                    phases[k] += o["phases"].get(k, 0.0)
                tools[o["exercise"]] = o["phases"]["tools"]
                for k in runs:
                    r = o["phases"]["runs"].get(k, {})
                    runs[k][0] += r.get("count", 0)
                    runs[k][1] += r.get("total_s", 0.0)
            if o.get("event") == "graded":
                pairs += 1
            if o.get("event") == "stage_done" and o["variant"] == "original" and o["stage"].startswith("build"):
                starts[o["submission"]] = o["from_s"]
        mean = lambda k: runs[k][1] / max(runs[k][0], 1)
        after = sum(starts[ex] >= tools[ex] for ex in starts)
        where = f"{after} of {len(starts)} after the tools"
        print(
            f"| {call} | {tag} | {wall:.1f} s | {pairs} | {pairs / wall * 60:.1f} | {phases['tools']:.1f} | "
            f"{phases['timing']:.1f} | {phases['fresh']:.1f} | {mean('timing'):.2f} s | {mean('call'):.2f} s | {where} |"
        )
