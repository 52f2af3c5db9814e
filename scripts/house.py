#!/usr/bin/env python3
"""The house rules of issue 36, checked on the rustfmt-formatted Rust of the workspace (CI runs it):
no function over 100 lines, no file over 600 lines without a one-line reason near its top
(`//! One file: ...` in its first five lines), and (issue 49) stages run only through the session:
no call of the scheduler's `execute` outside `plans/session.rs`. Prints what breaks a rule and the longest functions;
exits 1 when a rule is broken.

    python3 scripts/house.py            # from the workbook root
"""
import os
import re
import sys

ROOTS = ["grader/src", "grader/tests", "grader/benches", "src", "tests", "book/tool/src", "book/tool/tests", "build.rs"]
MAX_FN, MAX_FILE = 100, 600
# Calls that only one file may make: every plan runs its stages through `Session::run`.
ONLY_IN = {"scheduler::execute(": "grader/src/plans/session.rs"}
FN = re.compile(r"^(\s*)(pub(\([^)]*\))? )?(const )?(async )?(unsafe )?fn (\w+)")


def files():
    for root in ROOTS:
        if os.path.isfile(root):
            yield root
        for d, _, names in os.walk(root):
            for n in names:
                if n.endswith(".rs"):
                    yield os.path.join(d, n)


def functions(lines):
    """(length, line, name) of each fn: rustfmt closes a fn's body at its own indentation."""
    for i, l in enumerate(lines):
        m = FN.match(l)
        if not m or l.rstrip().endswith(";"):
            continue
        end = next((j for j in range(i, len(lines)) if lines[j] == m.group(1) + "}"), i)
        yield end - i + 1, i + 1, m.group(7)


broken, longest = [], []
for path in files():
    lines = open(path).read().split("\n")
    if len(lines) > MAX_FILE and not any("One file:" in l for l in lines[:5]):
        broken.append(f"{path}: {len(lines)} lines and no `//! One file: ...` reason at its top")
    for call, home in ONLY_IN.items():
        for at, l in enumerate(lines, 1):
            if call in l and path != home and not l.lstrip().startswith("//"):
                broken.append(f"{path}:{at}: `{call}` outside {home} (run stages through the session)")
    for n, at, name in functions(lines):
        longest.append((n, f"{path}:{at} {name}"))
        if n > MAX_FN:
            broken.append(f"{path}:{at}: fn {name} is {n} lines (at most {MAX_FN})")
longest.sort(reverse=True)
for n, where in longest[:3]:
    print(f"{n:4} {where}")
for b in broken:
    print("broken:", b)
print(len(broken), "broken")
sys.exit(1 if broken else 0)
