#!/usr/bin/env bash
# WaferLLM's Table 5 at the scale waferc compiles (BENCHMARKS.md "KV cache capacity"): the most
# tokens a prompt can be followed by under the shift cache and under the concat baseline, on
# square wse2 meshes, as waferc's memory planner finds them: `waferc --generate=BIG` exits 4 and
# names the largest N for which both phases fit (a search over compiles, docs/generation.md).
# Per model and mesh, in one run: both maxima, their ratio, and the rows of PEs (the ratio's
# ceiling when only the cache grew with N), with RoPE's tables held (the default) and with its
# rows computed at each step's position (--rope=computed: no table grows with N).
#   bench/kv_capacity.sh                       # the models and meshes below
#   MODELS="llama_mha_halfrope" MESHES="8 16" BIG=6000 bench/kv_capacity.sh
set -euo pipefail
MODELS=${MODELS:-"llama_mha_halfrope llama_gqa_interleaved"}
MESHES=${MESHES:-"4 8 16"}
BIG=${BIG:-6000}
. "$(dirname "${BASH_SOURCE[0]}")/env.bash" # $here, targets, $waferc, $waferrun, $tmp
G=$here/examples/models/generate

# most MODEL N POLICY [FLAG]: the largest --generate the planner accepts, ">= BIG" when BIG fits
most() {
  local m=$1 n=$2 pol=$3 L rc=0
  L=$(head -c 256 "$G/${m}_prompt.npy" | tr -d '\000' | head -1 | grep -a -o '{.*}' | sed -E 's/.*\(1, ([0-9]+)\).*/\1/')
  "$waferc" "$G/$m.onnx" -o "$tmp/p" --target=wse2 --mesh="${n}x$n" --input-shape "input_ids=1x$L" \
    --generate="$BIG" --kv-cache="$pol" ${4:-} -q 2>"$tmp/err" >/dev/null || rc=$?
  if [ $rc -eq 0 ]; then echo ">=$BIG"; return; fi
  grep -o 'at most --generate=[0-9]*' "$tmp/err" | grep -o '[0-9]*$' || echo "-"
}

ratio() { case "$1$2" in *'>'* | *-*) echo - ;; *) awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }' ;; esac; }
printf '| model | mesh | rows | RoPE held: shift | concat | shift / concat | RoPE computed: shift | concat | shift / concat |\n'
printf '|---|---|---:|---:|---:|---:|---:|---:|---:|\n'
for m in $MODELS; do
  for n in $MESHES; do
    s=$(most "$m" "$n" shift)
    c=$(most "$m" "$n" concat)
    s2=$(most "$m" "$n" shift --rope=computed)
    c2=$(most "$m" "$n" concat --rope=computed)
    printf '| %s | %sx%s | %s | %s | %s | %s | %s | %s | %s |\n' "$m" "$n" "$n" "$n" "$s" "$c" "$(ratio "$s" "$c")" \
      "$s2" "$c2" "$(ratio "$s2" "$c2")"
  done
done
