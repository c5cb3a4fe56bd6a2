#!/usr/bin/env bash
# Causal attention of H heads over S tokens (E = H·D) on an N x N mesh of wse2, SIMULATED in
# timing mode, two ways in one run (BENCHMARKS.md "Attention"):
#   packed      attention {heads, head_dim} over [1, S, E] {S_y, E_x}, as head-layout writes it
#               (backend/ops/lower_attention.c: K/V by column broadcast, online softmax, causal
#               rounds skipped, heads spanning columns summed along x)
#   transposed  the exporter's chain over [H, S, D] {H, S_y, D_x} without head-layout:
#               transpose(k), matmul, scale, additive mask, softmax, matmul, as partition and
#               lower-gemm lower it (the key transpose and the GEMMs' own choices)
# Prints cycles, predictions and packed/transposed per configuration.
#   bench/attention.sh                       # the configurations below
#   CONFIGS="16:64:8:32" bench/attention.sh  # N:S:H:D ...
set -euo pipefail
CONFIGS=${CONFIGS:-"16:64:8:32 16:128:8:32 16:64:16:16 32:128:8:64 32:256:16:32"}
. "$(dirname "${BASH_SOURCE[0]}")/env.bash" # $here, targets, $waferc, $waferrun, $tmp

gen() { # N S H D: packed.wir, transposed.wir
  python3 - "$tmp" "$@" <<'PY'
import sys
d, n, s, h, hd = sys.argv[1], *map(int, sys.argv[2:])
e, scale = h * hd, 1.0 / hd ** 0.5
open(d + "/packed.wir", "w").write(
    "module @p {\n  func @main(%%q: f32[1, %d, %d], %%k: f32[1, %d, %d], %%v: f32[1, %d, %d]) -> f32[1, %d, %d] {\n"
    "    %%o = attention(%%q, %%k, %%v) {scale = %r, causal = true, heads = %d, head_dim = %d} : f32[1, %d, %d]\n"
    "    return %%o\n  }\n}\n" % (s, e, s, e, s, e, s, e, scale, h, hd, s, e))
mask = ", ".join("%s" % ("-1e30" if j > i else "0.0") for i in range(s) for j in range(s))
open(d + "/transposed.wir", "w").write(
    "module @t {\n  const @scale : f32[1] = dense<%r>\n  const @mask : f32[%d, %d] = dense<[%s]>\n"
    "  func @main(%%q: f32[%d, %d, %d], %%k: f32[%d, %d, %d], %%v: f32[%d, %d, %d]) -> f32[%d, %d, %d] {\n"
    "    %%kt = transpose(%%k) {perm = [0, 2, 1]} : f32[%d, %d, %d]\n"
    "    %%sc = matmul(%%q, %%kt) : f32[%d, %d, %d]\n"
    "    %%ss = mul(%%sc, @scale) : f32[%d, %d, %d]\n"
    "    %%sm = add(%%ss, @mask) : f32[%d, %d, %d]\n"
    "    %%p = softmax(%%sm) {axis = -1} : f32[%d, %d, %d]\n"
    "    %%o = matmul(%%p, %%v) : f32[%d, %d, %d]\n"
    "    return %%o\n  }\n}\n" % ((scale, s, s, mask) + (h, s, hd) * 4 + (h, hd, s) + (h, s, s) * 4 + (h, s, hd)))
PY
}

# The transposed chain is compiled without raise and head-layout: raise would make it the
# attention op again (it raises [H, S, D] chains too), and head-layout, which packs it only when
# q, k and v are projections (here they are the function's arguments), would write it back as
# the same chain between reshapes to [1, H, S, D] (docs/attention.md).
PLAIN="canonicalize,cse,dce,partition,lower-gemm,symbol-dce"
run() { # NAME MESH: "cycles predicted lowering-of-the-biggest-op"
  local d=$tmp/$1 pipe=()
  [ "$1" = transposed ] && pipe=(--pass-pipeline="$PLAIN")
  "$waferc" "$tmp/$1.wir" -o "$d" --target=wse2 --mesh="$2" -q "${pipe[@]}"
  "$waferrun" "$d" --mode=timing --report "$d/r.json" -q
  python3 - "$d" <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/r.json"))
m = json.load(open(sys.argv[1] + "/manifest.json"))
ops = " ".join("%s:%s" % (o["op"], o.get("lowering", "")) for o in m["ops"])
print(r["cycles"]["total"], r["cycles"]["predicted"], ops)
PY
}

printf '| mesh | S | H | D | packed cycles (predicted) | transposed cycles (predicted) | transposed / packed | transposed path as lowered |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---|\n'
for c in $CONFIGS; do
  IFS=: read -r n s h hd <<<"$c"
  gen "$n" "$s" "$h" "$hd"
  read -r pc pp _ < <(run packed "${n}x${n}")
  read -r tc tp tops < <(run transposed "${n}x${n}")
  printf '| %sx%s | %s | %s | %s | %s (%s) | %s (%s) | %.2f | %s |\n' "$n" "$n" "$s" "$h" "$hd" "$pc" "$pp" "$tc" "$tp" \
    "$(python3 -c "print($tc / $pc)")" "$tops"
done
