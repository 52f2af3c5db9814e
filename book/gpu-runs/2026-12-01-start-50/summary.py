"""The table of starts.txt: for each batch (label, N processes at once, round), the wall from the
first start to the last end, and per process the medians and maxima of its phases: exec to main,
main to a ready context, the kernel, the exit. Run: python3 summary.py [starts.txt]."""
import statistics
import sys
from collections import defaultdict

path = sys.argv[1] if len(sys.argv) > 1 else "starts.txt"
batches = defaultdict(list)
for line in open(path):
    f = line.split()
    if len(f) != 8:
        continue
    label, n, rnd = f[0], int(f[1]), f[2]
    started, main, context, kernel, ended = map(float, f[3:])
    batches[(label, n, rnd)].append((started, main, context, kernel, ended))

print("| tool | at once | round | wall | to main (med, max) | context (med, max) | kernel (med) | exit (med) | contexts ready, spread |")
print("|---|---|---|---|---|---|---|---|---|")
for (label, n, rnd), ps in sorted(batches.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
    wall = max(p[4] for p in ps) - min(p[0] for p in ps)
    to_main = [p[1] - p[0] for p in ps]
    context = [p[2] - p[1] for p in ps]
    kernel = [p[3] - p[2] for p in ps]
    exit_ = [p[4] - p[3] for p in ps]
    ready = sorted(p[2] for p in ps)
    spread = ready[-1] - ready[0]
    med = statistics.median
    print(f"| {label} | {n} | {rnd} | {wall:.2f} s | {med(to_main):.2f}, {max(to_main):.2f} | "
          f"{med(context):.2f}, {max(context):.2f} | {med(kernel):.3f} | {med(exit_):.2f} | {spread:.2f} s |")
