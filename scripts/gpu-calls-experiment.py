#!/usr/bin/env python3
# NOTE (2026-11-25): this experiment drives the harness with --repeat/--vary/--call-times/--gate, which the
# harness no longer has (the grader now serves, clocks and checks the timed calls: grader/src/tools/served.rs);
# it ran against the bundles of its date, and reruns need one of those.
"""Can whole-call timings share the GPU's time with other programs' start-up? The question behind
grade's exclusive phase: each call-timing process spends ~0.3 s making its CUDA context (and more
loading and saving a bench of 64-256 MB) for a few milliseconds of timed calls. With `--gate`, the
harness starts up, loads its inputs, then waits for a turn: one process at a time has its calls
timed while others start or end. Are those calls as fast as calls timed with nothing else running,
and how much CPU time does a call use (blocking sync: waits are not CPU time)?

Builds (nvcc, on the GPU machine) the reference fixes of 03, 01 and 57 and a few adversarial files,
writes their bench inputs, then times each binary's calls:
  alone   one process at a time (grade's exclusive phase today)
  gate-K  K processes at once, the calls of one at a time (turns in order of readiness)
Prints, per mode and binary, the judged call (fastest after the first) and its CPU time, medians
over the runs, and the mode's runs per second. JSON rows to OUT/calls.jsonl.

Usage: gpu-calls-experiment.py OUT [--runs N]
"""
import json, os, statistics, struct, subprocess, sys, tempfile, threading, time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

out_dir = sys.argv[1]
runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 6
os.makedirs(out_dir, exist_ok=True)
work = tempfile.mkdtemp(prefix="calls-")
NVCC = os.environ.get("NVCC", "nvcc")

BINARIES = {
    "03-ref": "solutions/03-race/reduce.cu",
    "03-alt": "tests/fixtures/adversarial/honest-alt/reduce.cu",
    "03-threaded-host": "tests/fixtures/adversarial/threaded-host/reduce.cu",
    "03-decoy-host": "tests/fixtures/adversarial/decoy-host/reduce.cu",
    "01-ref": "solutions/01-index/transpose.cu",
    "57-ref": "solutions/57-reduction/sum.cu",
    "57-original": "exercises/57-reduction/sum.cu",
    "57-decoy-host": "tests/fixtures/adversarial/decoy-host/sum.cu",
}


def build(name):
    exe = os.path.join(work, name)
    r = subprocess.run([NVCC, "-std=c++17", "-O3", "-lineinfo", "-arch=sm_90", "-I", "harness", "harness/harness.cu", "harness/warm.cu", BINARIES[name], "-o", exe], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"build {name} failed:\n{r.stderr}")
    return exe


def write_input(path, params, inputs, outputs):
    """The harness's CBIN file: params, input buffers with their bytes, output headers."""
    with open(path, "wb") as f:
        f.write(b"CBIN" + struct.pack("<II", 1, len(params)))
        for k, v in params.items():
            f.write(struct.pack("<H", len(k)) + k.encode() + struct.pack("<q", v))
        f.write(struct.pack("<I", len(inputs)))
        for k, a in inputs.items():
            f.write(struct.pack("<H", len(k)) + k.encode() + struct.pack("<BQ", 1, a.size))
            f.write(a.astype(np.float32).tobytes())
        f.write(struct.pack("<I", len(outputs)))
        for k, n in outputs.items():
            f.write(struct.pack("<H", len(k)) + k.encode() + struct.pack("<BQ", 1, n))


rng = np.random.default_rng(7)
benches = {}
for ex, params, name, lo, hi, n_out, out_name in [
    ("03", {"n": 16777216}, "x", 0.0, 1.0, 1, "total"),
    ("57", {"n": 67108864}, "x", 0.0, 1.0, 1, "total"),
    ("01", {"rows": 4096, "cols": 8192}, "in", -1.0, 1.0, 4096 * 8192, "out"),
]:
    n = 1
    for v in params.values():
        n *= v
    path = os.path.join(work, f"{ex}.in")
    write_input(path, params, {name: rng.uniform(lo, hi, n)}, {out_name: n_out})
    vary = os.path.join(work, f"{ex}.vary")
    open(vary, "w").write(f"{name} {lo} 0.9 0.8 0.95 0.85\n")
    benches[ex] = (path, vary)

with ThreadPoolExecutor(8) as pool:
    exes = dict(zip(BINARIES, pool.map(build, BINARIES)))


def command(name, k, gate):
    bench, vary = benches[name[:2]]
    d = os.path.join(work, f"run-{name}-{k}")
    os.makedirs(d, exist_ok=True)
    times = os.path.join(d, "call.times")
    for suffix in ("", ".ready", ".done"):
        if os.path.exists(times + suffix):
            os.remove(times + suffix)
    args = [exes[name], "--call-times", times] + (["--gate"] if gate else []) + ["--poison", "--repeat", "3", "--vary", vary, bench, os.path.join(d, "out")]
    return args, times


def parse(times):
    calls, mem = [], None
    for line in open(times):
        f = line.split()
        if f[0] == "gpu-memory":
            mem = float(f[1])
        else:
            calls.append((float(f[0]), float(f[1]) if len(f) > 1 else None))
    rest = calls[1:] or calls
    judged = min(rest, key=lambda c: c[0])
    return judged[0], judged[1], mem


def run_alone(jobs):
    rows = []
    for k, name in enumerate(jobs):
        args, times = command(name, k, False)
        t = time.monotonic()
        r = subprocess.run(args, capture_output=True)
        wall = time.monotonic() - t
        rows.append(dict(name=name, ok=r.returncode == 0, process_s=wall, turn_s=None, **dict(zip(("call_ns", "cpu_ns", "gpu_memory"), parse(times) if r.returncode == 0 else (None, None, None)))))
    return rows


def run_gated(jobs, slots):
    turn = threading.Lock()

    def one(item):
        k, name = item
        args, times = command(name, k, True)
        t = time.monotonic()
        p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        turn_s = None
        while not os.path.exists(times + ".ready") and p.poll() is None:
            time.sleep(0.001)
        if p.poll() is None:
            with turn:
                g = time.monotonic()
                p.stdin.write(b"g")
                p.stdin.flush()
                while not os.path.exists(times + ".done") and p.poll() is None:
                    time.sleep(0.0005)
                turn_s = time.monotonic() - g
        p.stdin.close()
        p.wait()
        wall = time.monotonic() - t
        ok = p.returncode == 0
        return dict(name=name, ok=ok, process_s=wall, turn_s=turn_s, **dict(zip(("call_ns", "cpu_ns", "gpu_memory"), parse(times) if ok else (None, None, None))))

    with ThreadPoolExecutor(slots) as pool:
        return list(pool.map(one, enumerate(jobs)))


# Interleave the binaries, as a class's chunk does.
jobs = [n for _ in range(runs) for n in BINARIES]
rows = []
for mode in ["alone", "gate-2", "gate-3", "gate-4", "alone"]:
    t = time.monotonic()
    got = run_alone(jobs) if mode == "alone" else run_gated(jobs, int(mode.split("-")[1]))
    total = time.monotonic() - t
    for r in got:
        r["mode"] = mode
    rows += got
    print(f"{mode}: {len(jobs)} processes in {total:.2f} s = {len(jobs) / total:.2f} per s", flush=True)
    rows.append(dict(mode=mode, summary=True, processes=len(jobs), wall_s=total))

with open(os.path.join(out_dir, "calls.jsonl"), "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")

print(f"{'binary':18} {'mode':7} {'call ms med':>11} {'min':>7} {'max':>7} {'cpu ms':>7} {'mem MiB':>8} {'proc s':>6} fails")
for name in BINARIES:
    for mode in ["alone", "gate-2", "gate-3", "gate-4"]:
        rs = [r for r in rows if r.get("name") == name and r["mode"] == mode]
        ok = [r for r in rs if r["ok"]]
        if not ok:
            print(f"{name:18} {mode:7} all {len(rs)} failed")
            continue
        c = [r["call_ns"] / 1e6 for r in ok]
        cpu = [r["cpu_ns"] / 1e6 for r in ok if r["cpu_ns"] is not None]
        mem = [r["gpu_memory"] / 2**20 for r in ok if r["gpu_memory"]]
        print(f"{name:18} {mode:7} {statistics.median(c):11.2f} {min(c):7.2f} {max(c):7.2f} {statistics.median(cpu) if cpu else float('nan'):7.2f} {statistics.median(mem) if mem else 0:8.0f} {statistics.median(r['process_s'] for r in ok):6.2f} {len(rs) - len(ok)}")
