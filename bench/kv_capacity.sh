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
# Then the full-size models of Table 5 (FULL="model:decode-mesh ...", PROMPTS), from
# `wafer-bench llm --no-sim`'s kv_capacity: the planner's layout of one layer's decode step
# (compiled, not run), the layers spread over the wafer's decode-sized regions, weights and
# caches in f32 (as waferc's plans hold them) and in f16, beside the paper's figures.
set -euo pipefail
MODELS=${MODELS:-"llama_mha_halfrope llama_gqa_interleaved"}
MESHES=${MESHES:-"4 8 16"}
BIG=${BIG:-6000}
FULL=${FULL:-"llama3-8b:360 llama2-13b:375 llama3-8b:375x497 llama2-13b:375x497"}
PROMPTS=${PROMPTS:-"4096 128"}
bench=${WAFER_BENCH:-wafer-bench}
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

# Table 5 at full size (no fit: "-")
# kv heads replicated per query head (what waferc compiles with a switch from a larger prefill
# region) and colocated with q (each held once: waferc's lighter step on one region)
printf '\n| model | kv heads | decode region | regions | layers on the fullest | prompt | f32: shift | concat | f16: shift | concat | shift / concat | rows | WaferLLM: shift | concat |\n'
printf '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for f in $FULL; do
  for gqa in replicate colocate; do
  for P in $PROMPTS; do
    "$bench" llm --model="${f%%:*}" --decode-mesh="${f#*:}" --prompt="$P" --no-sim --gqa=$gqa >"$tmp/llm.json" 2>/dev/null
    python3 - "$tmp/llm.json" "$gqa" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
if sys.argv[2] == "colocate" and not d["layout"]["decode"]["kv_colocated"]:
    sys.exit(0)  # MHA: nothing to colocate, the replicated row says it
kv = d["kv_capacity"]
paper = {"llama3-8b": (137548, 382), "llama2-13b": (6168, 16)}.get(d["model"], ("", ""))
n = lambda v: "-" if v is None or v < 0 else str(v)
r = kv["f16"]["shift_over_concat"]
print("| %s | %s | %dx%d | %d | %d | %d | %s | %s | %s | %s | %s | %d | %s | %s |" % (
    d["model"], "colocated" if d["layout"]["decode"]["kv_colocated"] else "replicated", kv["region"][0], kv["region"][1], kv["regions_with_layers"], kv["max_layers_per_region"],
    d["prompt"], n(kv["f32"]["shift_max_new_tokens"]), n(kv["f32"]["concat_max_new_tokens"]),
    n(kv["f16"]["shift_max_new_tokens"]), n(kv["f16"]["concat_max_new_tokens"]), "-" if r is None else "%.1f" % r,
    kv["region"][1], paper[0], paper[1]))
PY
  done
  done
done
