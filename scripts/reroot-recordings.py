#!/usr/bin/env python3
"""Rewrite, once, the machine paths that recordings and records carry (issue 36, point 5).

- A tool recording (a folder with a `protocol` file, made by `--record-tools`): every path under
  the recording machine's workbook becomes `${WORKBOOK}/...`, which `Replay` serves as the
  replaying workbook's root (grader/src/tools/launcher.rs, `Rooted`).
- Any other text file (records, transcripts): those paths become relative to the workbook.

Usage: scripts/reroot-recordings.py ROOT PATH...   (ROOT: the recording machine's workbook, e.g. /work/main)
"""
import os
import re
import sys

MARK = b"${WORKBOOK}"


def swap(data: bytes, root: bytes, to: bytes, relative: bool) -> bytes:
    # The root as a whole path component (as `swap_root` in launcher.rs), with its `/` when made
    # relative: "/w/main/x" -> "x", a lone "/w/main" -> ".".
    name = rb"[A-Za-z0-9_.\-]"
    if relative:
        data = re.sub(re.escape(root) + rb"/", b"", data)
        return re.sub(re.escape(root) + rb"(?!" + name + rb")", b".", data)
    return re.sub(re.escape(root) + rb"(?!" + name + rb")", to, data)


def recording_dirs(path):
    for d, _, files in os.walk(path):
        if "protocol" in files:
            yield d


def main():
    root = sys.argv[1].rstrip("/").encode()
    changed = 0
    for top in sys.argv[2:]:
        recordings = set(recording_dirs(top)) if os.path.isdir(top) else set()
        walk = os.walk(top) if os.path.isdir(top) else [(os.path.dirname(top), [], [os.path.basename(top)])]
        for d, _, files in walk:
            in_recording = any(d == r or d.startswith(r + os.sep) for r in recordings)
            for f in files:
                p = os.path.join(d, f)
                data = open(p, "rb").read()
                if root not in data:
                    continue
                if not in_recording and b"\0" in data:
                    continue  # a binary file outside a recording is left as it is
                new = swap(data, root, MARK, relative=not in_recording)
                if new != data:
                    open(p, "wb").write(new)
                    changed += 1
    print(f"{changed} files rewritten")


if __name__ == "__main__":
    main()
