#!/usr/bin/env python3
"""same-outside-regions.py FILE...: each FILE (a student's bare exercise file, e.g.
tests/fixtures/honest-variety/NAME/FILE.cu) must equal some exercises/*/FILE.cu line for line outside
its marked regions (// ANCHOR: name ... // ANCHOR_END: name; the anchor lines themselves count as
outside). Prints the exercise each file matches, or why none does; exits 1 if any file fails.

A line reader only: it says nothing of what the preprocessor makes of a region (that is the point of
the fixtures it checks)."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
START = re.compile(r"^\s*// ANCHOR: ([A-Za-z0-9_-]+)\s*$")
END = re.compile(r"^\s*// ANCHOR_END: ([A-Za-z0-9_-]+)\s*$")


def skeleton(text):
    """The lines outside regions, with each region collapsed to one ('region', name) entry."""
    out, inside = [], None
    for number, line in enumerate(text.split("\n"), 1):
        if inside is None:
            m = START.match(line)
            out.append(line)
            if m:
                inside = m.group(1)
                out.append(("region", inside))
            elif END.match(line):
                raise ValueError(f"line {number}: ANCHOR_END outside a region")
        else:
            m = END.match(line)
            if m and m.group(1) == inside:
                out.append(line)
                inside = None
            elif START.match(line) or END.match(line):
                raise ValueError(f"line {number}: an anchor inside region {inside}")
    if inside is not None:
        raise ValueError(f"region {inside} is never closed")
    return out


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"outside-region entry {i}: {x!r} != {y!r}"
    return f"{len(a)} entries against {len(b)}"


def check(path):
    path = pathlib.Path(path)
    mine = skeleton(path.read_text())
    reasons = []
    for base in sorted(ROOT.glob(f"exercises/*/{path.name}")):
        theirs = skeleton(base.read_text())
        if mine == theirs:
            return True, f"{path}: same as {base.relative_to(ROOT)} outside its regions"
        reasons.append(f"{base.relative_to(ROOT)}: {first_difference(mine, theirs)}")
    return False, f"{path}: matches no exercise outside regions ({'; '.join(reasons) or 'no exercise file of that name'})"


def main(paths):
    bad = 0
    for p in paths:
        try:
            ok, what = check(p)
        except ValueError as e:
            ok, what = False, f"{p}: {e}"
        print(("ok   " if ok else "FAIL ") + what)
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
