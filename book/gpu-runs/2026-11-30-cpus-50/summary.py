#!/usr/bin/env python3
"""The tables of this record's README, from the benches' logs (`python3 summary.py` in this folder):
each bench's wall time, its phases summed over the six chunks, its call runs (confirming rounds) and
the students its chunks doubted, with the rules; then where the grade's processes ran while the
whole calls were timed (the `ps` samples of `bench.sh`)."""
import gzip, io, json, pathlib, re, tarfile

here = pathlib.Path(__file__).parent
cores = {"a": 0, "d": 2, "e": 4}
benches = []
for call in sorted(here.glob("call-*-logs.tgz")):
    with tarfile.open(call) as t:
        names = t.getnames()
        for tag in [m.group(1) for n in names for m in [re.match(r"\./(\w\d)/logs\.tgz$", n)] if m]:
            inner = tarfile.open(fileobj=io.BytesIO(t.extractfile(f"./{tag}/logs.tgz").read()))
            jsonl = inner.extractfile(f"logs/bench-{tag}.jsonl").read().decode()
            table = inner.extractfile("logs/table.txt").read().decode()
            psr = gzip.decompress(t.extractfile(f"./{tag}-psr.txt.gz").read()).decode()
            grades = inner.extractfile(f"logs/bench-{tag}-grades.csv").read()
            benches.append((call.name, tag, jsonl, table, psr, grades))
# In the order they ran: each call's, in the order its script names them.
ran = [t for c in sorted(here.glob("call-*.sh")) for t in re.findall(r"\b([ade]\d)(?::\d| \d )", c.read_text())]
benches.sort(key=lambda b: ran.index(b[1]))

print("| call | bench | CUDABUGS_TIMED_CORES | wall | pairs/min | tools | timing | of it alone (calls) | fresh | waited | call runs (confirming) | doubted |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
rules = {}
for call, tag, jsonl, table, _, _ in benches:
    wall = float(table.split(" s,")[0].split(", ")[-1])
    ev = [json.loads(l) for l in jsonl.splitlines() if l.startswith("{")]
    calls = [e for e in ev if e.get("event") == "stage_done" and e.get("stage") == "call"]
    confirming = [e for e in calls if e["run"] >= 1 << 20]
    chunks = [e for e in ev if e.get("event") == "chunk"]
    total = lambda k: sum(c["phases"].get(k, 0) for c in chunks)
    doubted = [(c["exercise"], who, why) for c in chunks for who, why in (c["phases"].get("doubted") or {}).items()]
    for _, _, why in doubted:
        for w in why:
            rules[w.split(":")[0]] = rules.get(w.split(":")[0], 0) + 1
    print(f"| {call[:6]} | {tag} | {cores[tag[0]]} | {wall:.1f} s | {60 * 60 / wall:.1f} | {total('tools'):.1f} | {total('timing'):.1f} | {total('calls'):.1f} | {total('fresh'):.1f} | {total('waited'):.1f} | {len(calls)} ({len(confirming)}) | {len(doubted)} |")
print()
print("Rules that doubted a first call, over all benches:", ", ".join(f"{k} {v}" for k, v in sorted(rules.items())) or "none")
for k, name in cores.items():
    rows = [b for b in benches if b[1][0] == k]
    walls = [float(b[3].split(" s,")[0].split(", ")[-1]) for b in rows]
    print(f"CUDABUGS_TIMED_CORES={name}: {len(rows)} benches, mean wall {sum(walls) / len(walls):.1f} s")
print("Gradebooks:", "all", len(benches), "identical" if len({b[5] for b in benches}) == 1 else "DIFFER")
print()
# The performance class (call 3): 6 students x 51, 52, 57, without (pa) and with (pd) the cores.
with tarfile.open(here / "call-3-logs.tgz") as t:
    perf_grades = set()
    for tag in ["pa", "pd"]:
        inner = tarfile.open(fileobj=io.BytesIO(t.extractfile(f"./{tag}/logs.tgz").read()))
        table = inner.extractfile("logs/table.txt").read().decode()
        ev = [json.loads(l) for l in inner.extractfile("logs/perf.jsonl").read().decode().splitlines() if l.startswith("{")]
        perf_grades.add(inner.extractfile("logs/perf-grades.csv").read())
        chunks = [e for e in ev if e.get("event") == "chunk"]
        confirming = [e for e in ev if e.get("event") == "stage_done" and e.get("stage") == "call" and e["run"] >= 1 << 20]
        doubted = sum(len(c["phases"].get("doubted") or {}) for c in chunks)
        print(f"perf class {tag} (CUDABUGS_TIMED_CORES={2 if tag == 'pd' else 0}): {table.split(';')[0].strip()}; timing {sum(c['phases'].get('timing', 0) for c in chunks):.1f} s; confirming call runs {len(confirming)}; doubted {doubted}")
print()
print("Performance gradebooks:", "identical" if len(perf_grades) == 1 else "DIFFER")
print()
# Where nvcc's processes (the builds, at nice 19) ran: the share of their samples on the CPUs the
# timed calls had to themselves (14 and 15 with 2 cores, 12-15 with 4, as `tools::cpus` picks).
build = re.compile(r"^(cicc|ptxas|cudafe\+\+|nvcc|cc1plus|fatbinary|nvlink|ld|as|gcc|g\+\+|x86_64-linux-g)")
print("| bench | build samples (nice 19) | of them on the timed calls' CPUs |")
print("|---|---|---|")
for call, tag, _, _, psr, _ in benches:
    own = set(range(16 - cores[tag[0]], 16)) if cores[tag[0]] else {14, 15}
    n = on = 0
    for line in psr.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "19" and build.match(parts[2]):
            n += 1
            on += int(parts[0]) in own
    print(f"| {tag} | {n} | {on} ({100 * on / max(n, 1):.1f}%) |")
