#!/usr/bin/env python3
"""The record of the other fixes and half-fixes: fix-record.py GPU-WORD OUT.json SOURCE...

Reads `check --format json` reports of the versions in scripts/alt-fixes/ (as
scripts/gpu-bug-fixes.sh writes them: check-<exercise>-<version>.json) from each SOURCE, a folder
or a .tgz, searched whole (a .tgz inside another is opened too), keeps the reports whose GPU name
contains GPU-WORD ("H100", "H200"), and writes the compact record the book fills its tables of
other fixes from (book/tool/src/fixes.rs): for each version its exercise, what it is for, check's
outcome, the steps that failed and its timing without the commands and raw counters. SOURCEs are
given oldest first, from the workbook's root: a version's later report replaces an earlier one (a re-run after a change)."""
import io
import json
import os
import re
import sys
import tarfile

# check-<exercise>-<version>.json; an early run named the version without the exercise's prefix.
NAME = re.compile(r"check-(\d\d-[a-z0-9-]+)\.json$")


def reports(source):
    """(path inside SOURCE, bytes) of every check report in a folder or a .tgz, recursively."""
    def from_tar(label, tar):
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not member.isfile():
                continue
            data = tar.extractfile(member).read()
            if member.name.endswith(".tgz"):
                yield from from_tar(f"{label}/{member.name}", tarfile.open(fileobj=io.BytesIO(data)))
            elif NAME.search(member.name):
                yield f"{label}/{member.name}", data

    if source.endswith(".tgz"):
        yield from from_tar(source, tarfile.open(source))
        return
    for root, dirs, files in os.walk(source):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            if name.endswith(".tgz"):
                yield from from_tar(path, tarfile.open(path))
            elif NAME.search(name):
                yield path, open(path, "rb").read()


def compact(report, exercise, version, path):
    perf = report.get("perf")
    if perf:
        perf = dict(perf, commands=[])
        perf["versions"] = [
            {k: v for k, v in ver.items() if k not in ("counters", "timeline", "counted")}
            for ver in perf["versions"]
        ]
    return {
        "exercise": exercise,
        "version": version,
        "expect": "fail" if version.endswith("-half") else "pass",
        "outcome": report["outcome"],
        "report": path,
        "failed": [s["name"] for s in report["steps"] if s["status"] == "failed"],
        "perf": perf,
    }


def main():
    word, out, sources = sys.argv[1], sys.argv[2], sys.argv[3:]
    by_version, gpu, used = {}, None, []
    for source in sources:
        for path, data in reports(source):
            try:
                report = json.loads(data)
            except ValueError:
                print(f"skipped, not a report: {path}", file=sys.stderr)
                continue
            name = (report.get("gpu") or {}).get("name", "")
            if word not in name:
                continue
            exercise = report["exercise"]
            version = NAME.search(path).group(1).removeprefix(f"{exercise}-")
            if not version.startswith(f"{exercise}-"):
                version = f"{exercise}-{version}"
            if not os.path.exists(f"scripts/alt-fixes/{version}.region.cu"):
                continue  # a version since replaced (59-aos-soa-hot-cold)
            by_version[version] = compact(report, exercise, version, path)
            gpu = name
            used.append(path)
    record = {
        "gpu": gpu,
        "source": sources,
        "fixes": [by_version[v] for v in sorted(by_version)],
    }
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(f"{out}: {len(by_version)} versions on {gpu}, from {len(used)} reports", file=sys.stderr)


if __name__ == "__main__":
    main()
