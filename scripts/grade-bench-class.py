#!/usr/bin/env python3
"""A class for grade's throughput benchmark: STUDENTS students, each with a file for every exercise
named on the command line, a third of them the untouched original, the rest the reference fix;
every file made unique by a comment inside its marked region, so that nothing is shared between
students' builds. Usage: grade-bench-class.py OUT_DIR STUDENTS ID [ID ...]"""
import os, re, sys

out, students, ids = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for s in range(students):
    for ex in ids:
        folder = os.path.join("exercises", ex)
        source = next(f for f in os.listdir(folder) if f.endswith(".cu"))
        base = "exercises" if s % 3 == 0 else "solutions"
        text = open(os.path.join(base, ex, source)).read()
        text = re.sub(r"(// ANCHOR: (\w+)\n)", lambda m: m.group(1) + f"// student {s:03d}\n", text, count=1)
        path = os.path.join(out, f"student{s:03d}", "exercises", ex, source)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write(text)
