"""The bug benches of calls 4-6 from their event logs: wall, pairs a minute, the phases summed over
the six chunks, the students doubted and the whole calls. Run from this folder: python3
summary-bench.py (unpacks the logs into a temporary folder)."""
import glob
import json
import os
import tarfile
import tempfile

tmp = tempfile.mkdtemp()
for outer in glob.glob("call-*/*logs.tgz"):
    dest = os.path.join(tmp, outer.replace("/", "_"))
    with tarfile.open(outer) as t:
        t.extractall(dest)
    for inner in glob.glob(os.path.join(dest, "*.tgz")):
        with tarfile.open(inner) as t:
            t.extractall(inner[:-4])

walls = {}
for table in glob.glob(os.path.join(tmp, "**", "table.txt"), recursive=True):
    for line in open(table):
        name, rest = line.split(":", 1)
        walls[name.strip()] = float(rest.split(",")[1].split()[0])

print("| call | bench | wall | pairs/min | tools | timing | fresh | doubted | whole calls |")
print("|---|---|---|---|---|---|---|---|---|")
seen = set()
for path in sorted(glob.glob(os.path.join(tmp, "**", "bench-*.jsonl"), recursive=True)):
    name = os.path.basename(path)[: -len(".jsonl")]
    if "streams" in name or name in seen:
        continue
    seen.add(name)
    call = path[len(tmp) + 1 :].split("_")[0]
    phases = {"tools": 0.0, "timing": 0.0, "fresh": 0.0}
    doubted = calls = pairs = 0
    for line in open(path):
        o = json.loads(line)
        if o.get("event") == "chunk":
            for k in phases:
                phases[k] += o["phases"].get(k, 0.0)
            doubted += len(o["phases"].get("doubted", {}))
            calls += o["phases"].get("runs", {}).get("call", {}).get("count", 0)
        if o.get("event") == "graded":
            pairs += 1
    wall = walls[name]
    print(
        f"| {call} | {name} | {wall:.1f} s | {pairs / wall * 60:.1f} | {phases['tools']:.1f} | "
        f"{phases['timing']:.1f} | {phases['fresh']:.1f} | {doubted} | {calls} |"
    )
