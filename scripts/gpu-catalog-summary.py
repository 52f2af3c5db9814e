#!/usr/bin/env python3
"""One line per exercise of a verify record: outcome, what showed the bug, and the checks that did
not pass (truncated). Usage: gpu-catalog-summary.py verification.json [ID_PREFIX_REGEX]"""
import json, re, sys
d = json.load(open(sys.argv[1]))
pick = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None
print(f"{d['gpu']['name'] if d.get('gpu') else '?'}: {len(d['exercises'])} exercises, {d['wall_seconds']:.1f} s, phases {({k: round(v, 1) for k, v in (d.get('phases') or {}).items() if v})}")
for e in d["exercises"]:
    if pick and not pick.match(e["id"]):
        continue
    outcome = e["outcome"] if isinstance(e["outcome"], str) else json.dumps(e["outcome"])
    bad = [f"{c['name']}: {c['summary']}" for c in e["checks"] if c["status"] != "passed"]
    f = e.get("finding") or {}
    where = f" [{f.get('kind')} {f.get('location', '')}]" if f else ""
    seen = ",".join(f"{s['tool']}:{s.get('kind') or s.get('kinds') or s.get('status')}" for s in e.get("original_under_tools") or [])
    print(f"{e['id']:<24} {outcome:<8}{where} {seen[:90]} | {' ; '.join(bad)[:300]}")
