#!/usr/bin/env bash
# Issue 50: is the relay what moves 62-launches' whole call? Four grades of four students on 62 (the
# half-fix, launch-ex, honest-ref, honest-alt), CUDABUGS_RELAY 1, 0, 1, 0, in one call; the bundle in
# .gpu/xtask, logs in $OUT. Prints each grade's whole calls.
set -u
n=0
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
rm -rf c62; mkdir c62
for s in half-fix launch-ex honest-ref honest-alt; do cp -r tests/fixtures/adversarial/$s c62/; done
mkdir -p $OUT/l
for r in 1 0 1 0; do
  n=$((n+1))
  rm -rf g62-$n .cudabugs/work
  s=$(date +%s.%N)
  CUDABUGS_RELAY=$r timeout 100 .gpu/xtask grade c62 --exercises 62-launches --secret-seed 7 --out g62-$n --format json > $OUT/l/g$n.jsonl 2>$OUT/l/g$n.err
  e=$(date +%s.%N)
  python3 - g62-$n $r $s $e <<'PY'
import json,sys,os
d,r,s,e=sys.argv[1],sys.argv[2],float(sys.argv[3]),float(sys.argv[4])
out=[]
for who in ['half-fix','launch-ex','honest-ref','honest-alt']:
    try:
        j=json.load(open(f'{d}/feedback/{who}.json'))
        sp=[x.get('speed',{}) for x in j['exercises'] if x.get('speed')][0]
        out.append(f"{who} {sp['learner_ns']/1e3:.1f}us")
    except Exception as ex: out.append(f"{who} ?{ex}")
print(f"relay={r} {e-s:.0f}s ref {sp.get('reference_ns',0)/1e3:.1f}us orig {sp.get('original_ns',0)/1e3:.1f}us |", ' | '.join(out))
PY
done
(cd $OUT && tar czf l.tgz l && rm -rf l)
