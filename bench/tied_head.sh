#!/usr/bin/env bash
# An embedding lookup and an LM head tied to it (ids [1, L] -> gather(table [V, E]) -> logits
# [1, L, V]) on an N x N mesh of wse2, SIMULATED in timing mode, two ways in one run
# (BENCHMARKS.md "Tied LM head"):
#   tied        one copy of the table, {V_y, E_x}: the head is dist.gemm_t(x, table)
#               (passes/partition_table.c, the default)
#   two copies  partition{tie-heads=false}: the head's own weight [E, V] {E_y, V_x} as a
#               dist.gemm (the cost model's algorithm) beside the table
# The head's weight is written as the table's transpose, as torch's exporter folds a tied head.
# Prints cycles (simulated and predicted), SRAM bytes per PE and the ratios; "does not fit"
# where the planner exits 4.
#   bench/tied_head.sh                          # the configurations below
#   CONFIGS="16:256:2048:64" bench/tied_head.sh # N:E:V:L ...
set -euo pipefail
CONFIGS=${CONFIGS:-"16:256:2048:64 16:256:4096:64 32:256:8192:64 32:512:8192:128"}
. "$(dirname "${BASH_SOURCE[0]}")/env.bash" # $here, targets, $waferc, $waferrun, $tmp
PIPE="canonicalize,raise,cse,dce,head-layout,partition{tie-heads=%s},lower-gemm,symbol-dce"

gen() { # E V L: m.wir (constants as raw f32 files: the table and its transpose)
  python3 - "$tmp" "$@" <<'PY'
import struct, sys
d, e, v, l = sys.argv[1], *map(int, sys.argv[2:])
t = [((i * 131 + j * 31) % 997) / 997.0 - 0.5 for i in range(v) for j in range(e)]
open(d + "/table.f32", "wb").write(struct.pack("<%df" % (v * e), *t))
h = [t[j * e + i] for i in range(e) for j in range(v)]
open(d + "/head.f32", "wb").write(struct.pack("<%df" % (v * e), *h))
open(d + "/m.wir", "w").write(
    "module @lm {\n  const @table : f32[%d, %d] = file<\"table.f32\", offset = 0>\n"
    "  const @head : f32[%d, %d] = file<\"head.f32\", offset = 0>\n"
    "  func @main(%%ids: i64[1, %d]) -> f32[1, %d, %d] {\n"
    "    %%x = gather(@table, %%ids) {axis = 0} : f32[1, %d, %d]\n"
    "    %%logits = matmul(%%x, @head) : f32[1, %d, %d]\n"
    "    return %%logits\n  }\n}\n" % (v, e, e, v, l, l, v, l, e, l, v))
PY
}

run() { # TIE MESH: "cycles predicted bytes-per-PE head-op gather-lowering" or "-"
  local d=$tmp/plan_$1
  rm -rf "$d"
  # shellcheck disable=SC2059
  if ! "$waferc" "$tmp/m.wir" -o "$d" --target=wse2 --mesh="$2" -q --pass-pipeline="$(printf "$PIPE" "$1")" \
    2>"$tmp/err"; then
    grep -q "does not fit" "$tmp/err" && { echo "-"; return; }
    cat "$tmp/err" >&2
    exit 1
  fi
  "$waferrun" "$d" --mode=timing --report "$d/r.json" -q
  python3 - "$d" <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/r.json"))
m = json.load(open(sys.argv[1] + "/manifest.json"))
mem = max(c["memory_bytes"] for g in m["regions"] for c in g["classes"])
print(r["cycles"]["total"], r["cycles"]["predicted"], mem, m["ops"][-1]["op"], m["ops"][0]["lowering"])
PY
}

printf '| mesh | E | V | L | tied: cycles (predicted) | bytes/PE | two copies: cycles (predicted) | bytes/PE | cycles tied / two copies | bytes tied / two copies |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for c in $CONFIGS; do
  IFS=: read -r n e v l <<<"$c"
  gen "$e" "$v" "$l"
  read -r tc tp tb _ <<<"$(run true "${n}x$n")"
  read -r uc up ub _ <<<"$(run false "${n}x$n")"
  if [ "$tc" = - ] || [ "$uc" = - ]; then
    t="$tc ($tp) | $tb"; [ "$tc" = - ] && t="does not fit | "
    u="$uc ($up) | $ub"; [ "$uc" = - ] && u="does not fit | "
    printf '| %sx%s | %s | %s | %s | %s | %s | | |\n' "$n" "$n" "$e" "$v" "$l" "$t" "$u"
  else
    python3 - "$n" "$e" "$v" "$l" "$tc" "$tp" "$tb" "$uc" "$up" "$ub" <<'PY'
import sys
n, e, v, l, tc, tp, tb, uc, up, ub = sys.argv[1:]
print("| %sx%s | %s | %s | %s | %s (%s) | %s | %s (%s) | %s | %.2f | %.2f |" %
      (n, n, e, v, l, tc, tp, tb, uc, up, ub, int(tc) / int(uc), int(tb) / int(ub)))
PY
  fi
done
