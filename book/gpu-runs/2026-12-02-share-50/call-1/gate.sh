#!/usr/bin/env bash
# May ncu start before its turn, its program held by a gate (sh reading a FIFO, then exec)?
# Rows: how long each way took, and how many kernels ncu's CSV holds with their median time.
cd "$(mktemp -d)"
nvcc -O3 -o k "$OLDPWD/.gpu/gate.cu" || exit 1
F="--metrics gpu__time_duration.sum --csv --print-units base --clock-control base --cache-control all"
now() { date +%s.%N; }
d() { python3 -c "print(round($2 - $1, 2))"; }
kern() { python3 - "$1" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10 and r[-1].replace('.','',1).isdigit()]
v = sorted(float(r[-1]) for r in rows)
print('%d kernels, median %s ns' % (len(v), v[len(v)//2] if v else '-'))
PY
}
W=$PWD
for i in 1 2 3; do s=$(now); ncu $F ./k > plain$i.csv 2>&1; echo "plain$i: $(d $s $(now)) s, $(kern plain$i.csv)"; done
s=$(now); ncu $F sh -c 'exec ./k' > sh.csv 2>&1; echo "sh-exec: $(d $s $(now)) s, $(kern sh.csv)"
for i in 1 2; do
  rm -f g$i; mkfifo g$i
  ncu $F sh -c "read -r _ < g$i; exec ./k" > gated$i.csv 2>&1 & p=$!
  sleep 2; s=$(now); echo go > g$i; wait $p; echo "gated$i (let go after 2 s): $(d $s $(now)) s from let-go, $(kern gated$i.csv)"
done
for i in 1 2; do
  rm -f h$i; mkfifo h$i
  s=$(now)
  ncu $F ./k > a$i.csv 2>&1 & a=$!
  ncu $F sh -c "read -r _ < h$i; exec ./k" > b$i.csv 2>&1 & b=$!
  wait $a; ta=$(now); echo go > h$i; wait $b
  echo "pair$i: A $(d $s $ta) s ($(kern a$i.csv)); B $(d $ta $(now)) s after A ($(kern b$i.csv)); both $(d $s $(now)) s"
done
tar czf "$OUT/gate-csv.tgz" -C "$W" . --exclude=k 2>/dev/null
