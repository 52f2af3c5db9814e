#!/usr/bin/env python3
# NOTE (2026-11-25): this experiment drives the harness with --repeat/--vary/--call-times/--gate, which the
# harness no longer has (the grader now serves, clocks and checks the timed calls: grader/src/tools/served.rs);
# it ran against the bundles of its date, and reruns need one of those.
"""What one CUDA process costs on this machine, alone and many at once: the question behind grade's
throughput. Runs after a `grade` of the bench class (it takes a graded submission's binaries and the
exercise's cases from the work folder) and prints a table; JSON to OUT_JSON.

Each probe is one kind of process grade starts (a bare CUDA context, the program on its public
cases, each sanitizer tool, ncu); a batch runs N of them C at a time and reports processes per
second, the CPU seconds they used (all descendants, getrusage) and how busy the machine's cores were
(/proc/stat). With --gpus 0,1 a batch also runs C on each GPU at once: if two GPUs' batches take
as long as one GPU's, something host-wide (CPU or the driver) is the limit.

Sets (--set): "all" each probe alone and at rising concurrency; "variants" ncu's options and
environment settings that might make a process cheaper; "variants2" the sanitizers and ncu with one
hardware queue, ncu over several runs; "gpus" one GPU against two (needs --gpus); "mix" (needs
--gpus) kinds side by side for a fixed time, one kind per GPU: does one GPU's ncu slow the other's
sanitizers, and do two GPUs' ncu runs slow each other?

Every ncu here takes the lock file of its GPU (TMPDIR per GPU), as grade's do: ncu serialises the
kernels of all instances that share a TMPDIR. (Until 2026-11-22 evening all shared /tmp's, so the
"gpus" rows of ncu before then had one lock for both GPUs; "mix" repeats them with a lock per GPU.)

Usage: gpu-startup-bench.py WORK_DIR EXERCISE STUDENT OUT_JSON [--gpus 0,1] [--set all|variants|variants2|gpus|mix]
"""
import glob, itertools, json, os, resource, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor

work, exercise, student, out_json = sys.argv[1:5]
gpus = sys.argv[sys.argv.index("--gpus") + 1].split(",") if "--gpus" in sys.argv else None
probe_set = sys.argv[sys.argv.index("--set") + 1] if "--set" in sys.argv else "all"
# The plan's folder is "grade", or "grade-gpuN" where several GPUs graded.
sub = next(d for d in sorted(glob.glob(os.path.join(work, "grade*", exercise, student))) if glob.glob(os.path.join(d, "timing", "*")))
def binary(flavor):
    return next(p for p in glob.glob(os.path.join(sub, flavor, "*")) if os.path.isfile(p) and "." not in os.path.basename(p) and os.access(p, os.X_OK))


debug, release = binary("sanitize"), binary("timing")
cases = sorted(glob.glob(os.path.join(work, "..", "cases", exercise, "case*.in")))
bench_in = glob.glob(os.path.join(work, "..", "cases", exercise, "bench-*.in"))[0]
tmp = tempfile.mkdtemp()
ctx_src = os.path.join(tmp, "ctx.cu")
open(ctx_src, "w").write(r"""
// A bare CUDA process: driver initialised, the primary context made, then released. Prints how
// long each took (ms) on stderr; an argument keeps the context for that many seconds.
#include <cuda.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
static double ms() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int c, char** v) {
  double t0 = ms();
  if (cuInit(0)) return 2;
  double t1 = ms();
  CUdevice d; CUcontext ctx;
  if (cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&ctx, d) || cuCtxSetCurrent(ctx)) return 3;
  CUdeviceptr p; if (cuMemAlloc(&p, 1 << 20)) return 4;
  double t2 = ms();
  if (c > 1) sleep(atoi(v[1]));
  cuMemFree(p);
  cuDevicePrimaryCtxRelease(d);
  double t3 = ms();
  fprintf(stderr, "phases %.1f %.1f %.1f\n", t1 - t0, t2 - t1, t3 - t2);
  return 0;
}
""")
ctx = os.path.join(tmp, "ctx")
subprocess.run(["nvcc", "-arch=sm_90", "-o", ctx, ctx_src, "-lcuda"], check=True)


def outs(tag):
    args = []
    for i, c in enumerate(cases):
        args += [c, os.path.join(tmp, f"{tag}{i}.out")]
    return args


SAN = ["compute-sanitizer", "--xml", "--save", os.path.join(tmp, "{n}.xml"), "--error-exitcode", "86",
       "--print-limit", "64", "--target-processes", "application-only"]
METRICS = "gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum"


def ncu(metrics=METRICS, clock="base", cache="all", repeat="3"):
    return ["ncu", "--csv", "--print-units", "base", "--metrics", metrics, "--clock-control", clock,
            "--cache-control", cache, "--log-file", "{tmp}/{n}.csv", release, "--repeat", repeat, bench_in,
            os.path.join(tmp, "bench.out")]


# name: (argv, extra environment)
probes = {
    "ctx": ([ctx], {}),
    "run (5 cases)": ([release, "--poison"] + outs("run"), {}),
    "sandbox only": (["unshare", "--pid", "--fork", "--mount-proc", "--net", "true"], {}),
    "sandboxed ctx": (["unshare", "--pid", "--fork", "--mount-proc", "--net", ctx], {}),
    "memcheck (1 case)": (SAN[:1] + ["--tool", "memcheck", "--leak-check", "full"] + SAN[1:] + [debug, cases[0], os.path.join(tmp, "m.out")], {}),
    "racecheck (1 case)": (SAN[:1] + ["--tool", "racecheck"] + SAN[1:] + [debug, cases[0], os.path.join(tmp, "r.out")], {}),
    "initcheck (1 case)": (SAN[:1] + ["--tool", "initcheck"] + SAN[1:] + [debug, cases[0], os.path.join(tmp, "i.out")], {}),
    "synccheck (1 case)": (SAN[:1] + ["--tool", "synccheck"] + SAN[1:] + [debug, cases[0], os.path.join(tmp, "s.out")], {}),
    "memcheck ctx only": (SAN[:1] + ["--tool", "memcheck"] + SAN[1:] + [ctx], {}),
    "ncu (bench)": (ncu(), {}),
    # Variants: what might make a process cheaper.
    "ctx 1 connection": ([ctx], {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}),
    "ctx eager modules": ([ctx], {"CUDA_MODULE_LOADING": "EAGER"}),
    "run 1 connection": ([release, "--poison"] + outs("run"), {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}),
    "ncu time only": (ncu(metrics="gpu__time_duration.sum"), {}),
    "ncu repeat 1": (ncu(repeat="1"), {}),
    "ncu clock none": (ncu(clock="none"), {}),
    "ncu cache none": (ncu(cache="none"), {}),
    "run 5 cases x2 (public+hidden)": ([release, "--poison"] + outs("a") + outs("b"), {}),
    "ncu 1 connection": (ncu(), {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}),
    # One ncu over eight runs of the program: what ncu's own start-up costs beside the runs'.
    "ncu over 8 runs": (ncu()[:-5] + ["--target-processes", "all", "sh", "-c", " ".join(
        [f"for i in 1 2 3 4 5 6 7 8; do {release} --repeat 3 {bench_in} {os.path.join(tmp, 'loop.out')}; done"])], {}),
}
for tool in ["memcheck", "racecheck", "initcheck", "synccheck"]:
    argv, _ = probes[f"{tool} (1 case)"]
    probes[f"{tool} 1 connection"] = (argv, {"CUDA_DEVICE_MAX_CONNECTIONS": "1"})
ncores = os.cpu_count()


def cpu_busy():
    v = list(map(int, open("/proc/stat").readline().split()[1:]))
    return sum(v), v[3] + v[4]


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


counter = itertools.count(1)


def one(name, gpu):
    n = next(counter)  # one call, atomic under the GIL: threads never share a file name
    argv, extra = probes[name]
    argv = [a.replace("{n}", str(n)).replace("{tmp}", tmp) for a in argv]
    env = dict(os.environ, **extra)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    if argv[0] == "ncu":
        env["TMPDIR"] = os.path.join(tmp, f"ncu-lock-{gpu}")
        os.makedirs(env["TMPDIR"], exist_ok=True)
    s = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    wall = time.monotonic() - s
    err = p.stderr.decode(errors="replace")
    phases = next(([float(x) for x in l.split()[1:]] for l in err.splitlines() if l.startswith("phases ")), None)
    ok = p.returncode in (0, 86)
    return wall, ok, "" if ok else err[-300:], phases


def batch(name, c, n, gpu_list):
    """n processes per GPU in gpu_list, c at a time per GPU."""
    jobs = [(g, i) for i in range(n) for g in gpu_list]
    t0, i0 = cpu_busy()
    u0 = child_cpu()
    s = time.monotonic()
    with ThreadPoolExecutor(max_workers=c * len(gpu_list)) as pool:
        res = list(pool.map(lambda j: one(name, j[0]), jobs))
    wall = time.monotonic() - s
    t1, i1 = cpu_busy()
    cpu = child_cpu() - u0
    walls = sorted(r[0] for r in res)
    fails = [r[2] for r in res if not r[1]]
    phases = [r[3] for r in res if r[3]]
    row = {
        "probe": name, "concurrency": c, "gpus": gpu_list, "processes": len(jobs), "wall_s": round(wall, 2),
        "per_s": round(len(jobs) / wall, 2), "median_process_s": round(walls[len(walls) // 2], 3),
        "cpu_s_per_process": round(cpu / len(jobs), 3),
        "machine_busy_pct": round(100 * (1 - (i1 - i0) / max(1, t1 - t0)), 1), "failed": len(fails),
        "first_failure": fails[0] if fails else "",
        # ctx only: median ms of driver init, context + 1 MB allocation, release.
        "phases_ms": [round(sorted(p[k] for p in phases)[len(phases) // 2], 1) for k in range(3)] if phases else None,
    }
    rows.append(row)
    print(json.dumps(row), flush=True)
    return row


def steady(specs, seconds=15):
    """Each (probe, C, gpu) of specs C at a time on its GPU, all at once, each starting new processes
    for `seconds`: one row per spec, its processes per second until its last one ended."""
    t0, i0 = cpu_busy()
    start = time.monotonic()
    deadline = start + seconds

    def loop(name, gpu):
        done, fails, last = 0, [], start
        while time.monotonic() < deadline:
            _, ok, err, _ = one(name, gpu)
            done, last = done + 1, time.monotonic()
            if not ok:
                fails.append(err)
        return done, fails, last

    with ThreadPoolExecutor(max_workers=sum(c for _, c, _ in specs)) as pool:
        futures = [(spec, [pool.submit(loop, spec[0], spec[2]) for _ in range(spec[1])]) for spec in specs]
        results = [(spec, [f.result() for f in fs]) for spec, fs in futures]
    t1, i1 = cpu_busy()
    busy = round(100 * (1 - (i1 - i0) / max(1, t1 - t0)), 1)
    label = " + ".join(f"{n} x{c} gpu{g}" for n, c, g in specs)
    for (name, c, gpu), res in results:
        n = sum(r[0] for r in res)
        fails = [e for r in res for e in r[1]]
        wall = max(r[2] for r in res) - start
        row = {"probe": name, "concurrency": c, "gpus": [gpu], "processes": n, "wall_s": round(wall, 2), "per_s": round(n / wall, 2),
               "median_process_s": round(wall * c / max(1, n), 3), "cpu_s_per_process": None, "machine_busy_pct": busy,
               "failed": len(fails), "first_failure": fails[0] if fails else "", "phases_ms": None, "together": label}
        rows.append(row)
        print(json.dumps(row), flush=True)


rows = []
facts = {"cores": ncores, "gpus": subprocess.run(["nvidia-smi", "--query-gpu=index,name,persistence_mode,compute_mode", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()}
print(json.dumps(facts), flush=True)
first = [gpus[0]] if gpus else [None]
if probe_set == "all":
    # Each probe alone (three in a row), then the process kinds grade starts most, at rising concurrency.
    for name in list(probes)[:10]:
        batch(name, 1, 3, first)
    for name in ["ctx", "sandboxed ctx", "memcheck (1 case)", "run (5 cases)"]:
        for c in [4, 8, 12, 16]:
            batch(name, c, 2 * c, first)
    for name in ["racecheck (1 case)", "initcheck (1 case)", "synccheck (1 case)"]:
        batch(name, 12, 24, first)
    batch("ncu (bench)", 4, 8, first)
    # A process that holds a context all along (what persistence mode would do): does start-up get cheaper?
    keeper = subprocess.Popen([ctx, "600"], env=dict(os.environ, **({"CUDA_VISIBLE_DEVICES": gpus[0]} if gpus else {})))
    time.sleep(1)
    batch("ctx", 1, 3, first)
    batch("ctx", 12, 24, first)
    batch("memcheck (1 case)", 12, 24, first)
    keeper.kill()
elif probe_set == "variants":
    for name in ["ctx", "ctx 1 connection", "ctx eager modules", "run (5 cases)", "run 1 connection", "run 5 cases x2 (public+hidden)"]:
        batch(name, 1, 3, first)
        batch(name, 12, 24, first)
    for name in ["ncu (bench)", "ncu time only", "ncu repeat 1", "ncu clock none", "ncu cache none"]:
        batch(name, 1, 3, first)
        batch(name, 4, 8, first)
    # Where a bare process and an ncu run spend their system calls.
    for name, argv in [("ctx", [ctx]), ("ncu", [a.replace("{n}", "strace").replace("{tmp}", tmp) for a in ncu()])]:
        r = subprocess.run(["strace", "-f", "-c", "-w", "-o", os.path.join(os.path.dirname(out_json), f"strace-{name}.txt")] + argv, capture_output=True)
        print(f"strace {name}: exit {r.returncode}", flush=True)
elif probe_set == "variants2":
    for tool in ["memcheck", "racecheck", "initcheck", "synccheck"]:
        batch(f"{tool} 1 connection", 12, 24, first)
    for name in ["ncu (bench)", "ncu 1 connection"]:
        batch(name, 1, 3, first)
        batch(name, 4, 8, first)
    batch("ncu (bench)", 8, 16, first)
    batch("ncu over 8 runs", 1, 2, first)
elif probe_set == "gpus":
    assert gpus and len(gpus) > 1, "--set gpus needs --gpus 0,1"
    batch("ctx", 1, 3, first)
    for name in ["ctx", "ctx 1 connection", "memcheck 1 connection", "run 1 connection", "racecheck 1 connection"]:
        batch(name, 12, 24, [gpus[0]])
        batch(name, 12, 24, gpus)
    batch("ncu 1 connection", 4, 8, [gpus[0]])
    batch("ncu 1 connection", 4, 8, gpus)
elif probe_set == "mix":
    assert gpus and len(gpus) > 1, "--set mix needs --gpus 0,1"
    g0, g1 = gpus[0], gpus[1]
    tools, timing, cases_run = ("memcheck 1 connection", 12), ("ncu 1 connection", 4), ("run 1 connection", 12)
    for kind in [tools, timing, cases_run]:
        steady([(kind[0], kind[1], g0)])
    steady([(tools[0], tools[1], g0), (timing[0], timing[1], g1)])
    steady([(cases_run[0], cases_run[1], g0), (timing[0], timing[1], g1)])
    steady([(timing[0], timing[1], g0), (timing[0], timing[1], g1)])
    steady([(tools[0], tools[1], g0), (tools[0], tools[1], g1)])
json.dump({"facts": facts, "rows": rows}, open(out_json, "w"), indent=1)
print(f"{'probe':30} {'C':>3} {'gpus':>5} {'n':>4} {'wall':>6} {'per s':>6} {'median':>7} {'cpu/proc':>8} {'busy%':>6} fail phases_ms")
for r in rows:
    g = ",".join(x or "-" for x in r["gpus"])
    print(f"{r['probe']:30} {r['concurrency']:>3} {g:>5} {r['processes']:>4} {r['wall_s']:>6} {r['per_s']:>6} {r['median_process_s']:>7} {str(r['cpu_s_per_process']):>8} {r['machine_busy_pct']:>6} {r['failed']} {r['phases_ms'] or ''} {r.get('together', '')}")
