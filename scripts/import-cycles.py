#!/usr/bin/env python3
"""The import circles between the grading engine's modules (grader/src), tests left out: each set of
modules that reach one another through `crate::`, `super::` or `self::` paths is printed, then how
many there are (a module's use of its own ancestors is not an edge: a parent declares its children). Then the
rooms' graph: which room (exercise, tools, engine, ...) uses which, and every use that climbs back up
the pipeline (exercise -> tools -> engine -> judge -> plans -> report, with class and learner beside), which should be none.

    python3 scripts/import-cycles.py        # from the workbook root; exits 1 unless "0 cycles" and "0 climbs" (.ci/run)
"""
import os
import re
import sys
root='grader/src'
mods={}
for dp,dn,fn in os.walk(root):
    for f in fn:
        if not f.endswith('.rs'): continue
        p=os.path.join(dp,f)
        rel=p[len(root)+1:-3]
        if rel.endswith('/mod'): rel=rel[:-4]
        if rel=='lib': continue
        name=rel.replace('/','::')
        text=open(p).read()
        # drop test modules
        i=text.find('#[cfg(test)]\nmod tests')
        if i>=0: text=text[:i]
        mods[name]=text
edges={m:set() for m in mods}
names=sorted(mods,key=len,reverse=True)
for m,text in mods.items():
    for ref in re.findall(r'crate::([a-z_]+(?:::[a-z_]+)*)',text):
        # longest module prefix
        parts=ref.split('::')
        for k in range(len(parts),0,-1):
            cand='::'.join(parts[:k])
            if cand in mods and cand!=m and not m.startswith(cand+'::') :
                edges[m].add(cand); break
    # super:: and self:: paths, read from where the module sits: a file `a/b.rs` (module a::b) and a
    # folder's `a/b/mod.rs` (module a::b too) both have `super` = a; `self` = the module itself.
    parent = '::'.join(m.split('::')[:-1])
    for kind, ref in re.findall(r'\b(super|self)::([a-z_]+(?:::[a-z_]+)*)', text):
        base = parent if kind == 'super' else m
        parts = ref.split('::')
        for k in range(len(parts), 0, -1):
            cand = '::'.join(([base] if base else []) + parts[:k])
            if cand in mods and cand != m and not m.startswith(cand + '::'):
                edges[m].add(cand); break
    for kind, base_ref, items in re.findall(r'use (super|self)::([a-z_:]*?)::?\{([^}]*)\}', text):
        base = parent if kind == 'super' else m
        base = '::'.join(x for x in [base, base_ref.strip(':')] if x)
        for item in items.split(','):
            item = item.strip().split(' ')[0].split('::')[0]
            cand = base + '::' + item if base else item
            if cand in mods and cand != m and not m.startswith(cand + '::'): edges[m].add(cand)
    # use crate::a::{b, c}
    for grp in re.findall(r'use crate::([a-z_:]+)::\{([^}]*)\}',text):
        base=grp[0]
        for item in grp[1].split(','):
            item=item.strip().split(' ')[0].split('::')[0]
            cand=base+'::'+item
            if cand in mods and cand!=m: edges[m].add(cand)
# find SCCs
index={};low={};st=[];on=set();res=[];i=[0]
sys.setrecursionlimit(10000)
def sc(v):
    index[v]=low[v]=i[0];i[0]+=1;st.append(v);on.add(v)
    for w in edges[v]:
        if w not in index: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],index[w])
    if low[v]==index[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        if len(comp)>1:res.append(sorted(comp))
for v in edges:
    if v not in index: sc(v)
for c in res: print(c)
print(len(res),'cycles')

# The rooms, by how far down the pipeline they sit: a room may use those below it, never above.
LEVEL = {'hash': 0, 'exit': 0, 'environment': 0, 'untrusted': 0,
         'exercise': 1, 'class': 2, 'tools': 2, 'learner': 2, 'engine': 3, 'judge': 4, 'plans': 5,
         'report': 6}
rooms = {}
for m, targets in edges.items():
    if m.endswith('::tests') or m.split('::')[-1] == 'tests':
        continue
    for t in targets:
        a, b = m.split('::')[0], t.split('::')[0]
        if a != b:
            rooms.setdefault((a, b), set()).add((m, t))
for (a, b), uses in sorted(rooms.items()):
    print(f"{a} -> {b}: {len(uses)} module pair(s)")
climbs = [(a, b, sorted(u)) for (a, b), u in sorted(rooms.items()) if LEVEL.get(b, 0) >= LEVEL.get(a, 0)]
for a, b, uses in climbs:
    print(f"climbs: {a} -> {b}: " + ", ".join(f"{m} -> {t}" for m, t in uses))
print(len(climbs), 'climbs')
sys.exit(1 if res or climbs else 0)
