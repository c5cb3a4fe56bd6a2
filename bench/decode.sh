#!/usr/bin/env bash
# Generation on the mesh (BENCHMARKS.md "Decode"): a LLaMA-shaped model with a dynamic
# sequence axis (examples/models/export.py tiny_llama: RMSNorm, rotate-half RoPE, GQA, SwiGLU),
# compiled with waferc --generate for wse2 on square meshes and SIMULATED by waferrun --generate
# (every token from the mesh's own argmax). Per mesh, in one run:
#  - decode cycles per step (and the cost model's, for a full cache: its prediction) and
#    tokens/s with MeshGEMV's K-tree allreduce, the pipeline
#    (chain + broadcast) and the ring allreduce (--gemv-allreduce), and their ratios;
#  - the shift cache against the concat baseline (cycles per step, and the most tokens one row
#    of PEs holds after the last step);
#  - the prefill's cycles and time to first token, and the switch (0 fabric words: decode runs
#    on the prefill's region; its prediction is 0 too).
#   bench/decode.sh                                   # the configurations below
#   CONFIGS="256:8:2" MESHES="8 16" PROMPT=32 GEN=16 bench/decode.sh
# Needs /usr/bin/python3 with torch and onnx (Debian python3-torch, python3-onnx).
set -euo pipefail
CONFIGS=${CONFIGS:-"256:8:2"}
MESHES=${MESHES:-"32 48 64"}
PROMPT=${PROMPT:-32}
GEN=${GEN:-16}
. "$(dirname "${BASH_SOURCE[0]}")/env.bash" # $here, targets, $waferc, $waferrun, $tmp

# gen DIR MODEL MESH LABEL OPTIONS...: compiles and runs, leaves DIR/LABEL.json (the report)
gen() {
  local d=$1 model=$2 n=$3 label=$4
  shift 4
  "$waferc" "$model" -o "$d/$label" --target=wse2 --mesh="${n}x${n}" --input-shape "input_ids=1x$PROMPT" \
    --generate="$GEN" -q "$@"
  "$waferrun" "$d/$label" --input input_ids="$d/prompt.npy" --generate="$GEN" --output-dir "$d/$label.out" \
    --report "$d/$label.json" -q >/dev/null
}

printf '| E | heads/kv | mesh | prompt + new | prefill cycles | TTFT (us) | switch | K-tree cycles/step | predicted | pipeline | ring | pipeline / K-tree | ring / K-tree | K-tree tokens/s | concat cycles/step | concat / shift | most tokens in a row: shift / concat |\n'
printf '|---:|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n'
for cfg in $CONFIGS; do
  IFS=: read -r e h kv <<<"$cfg"
  d=$tmp/e$e
  /usr/bin/python3 "$here/examples/models/export.py" --out "$d" --only tiny_llama --embed "$e" --heads "$h" \
    --kv-heads "$kv" --layers 2 --vocab 256 --dynamic >/dev/null 2>&1
  /usr/bin/python3 -c "import numpy as np; np.save('$d/prompt.npy', (np.arange($PROMPT, dtype=np.int64) * 7 % 256).reshape(1, -1))"
  for n in $MESHES; do
    if ! gen "$d" "$d/tiny_llama.onnx" "$n" ktree --gemv-allreduce=ktree 2>/dev/null; then
      echo "| $e | $h/$kv | ${n}x$n | $PROMPT + $GEN | does not fit (both phases' weights and the cache) | | | | | | | | | | | | |"
      continue
    fi
    # a variant that does not compile (exit 4: SRAM, colors or route codes) gets "-" in its columns
    rm -f "$d"/{pipeline,ring,concat}.json
    gen "$d" "$d/tiny_llama.onnx" "$n" pipeline --gemv-allreduce=pipeline 2>/dev/null || true
    gen "$d" "$d/tiny_llama.onnx" "$n" ring --gemv-allreduce=ring 2>/dev/null || true
    gen "$d" "$d/tiny_llama.onnx" "$n" concat --gemv-allreduce=ktree --kv-cache=concat 2>/dev/null || true
    for v in pipeline ring concat; do
      [ -f "$d/$v.json" ] || continue
      cmp -s "$d/ktree.out/tokens.npy" "$d/$v.out/tokens.npy" || { echo "$v: other tokens than ktree's" >&2; exit 1; }
    done
    python3 - "$d" "$e" "$h" "$kv" "$n" "$PROMPT" "$GEN" <<'PY'
import json, sys
d, e, h, kv, n, p, g = sys.argv[1:8]
import os
r = {k: json.load(open("%s/%s.json" % (d, k))) for k in ("ktree", "pipeline", "ring", "concat")
     if os.path.exists("%s/%s.json" % (d, k))}
step = {k: v["decode"]["cycles_per_step"] for k, v in r.items()}
nan = float("nan")
for k in ("pipeline", "ring", "concat"):
    step.setdefault(k, nan)
pre, sw = r["ktree"]["prefill"], r["ktree"]["switch"]
occ = lambda k: max(r[k]["kv_cache"]["occupancy"])
pred = json.load(open(d + "/ktree/decode/manifest.json"))["predicted_cycles"]
print(("| %s | %s/%s | %sx%s | %s + %s | %d | %.2f | %d cycles, %d words | %.0f | %d (%+.1f%%) | %.0f | %.0f | %.2f | %.2f | %.3g | %.0f | %.2f | %d / %s |" % (
    e, h, kv, n, n, p, g, pre["cycles"], pre["time_to_first_token_s"] * 1e6, sw["cycles"], sw["fabric_words"],
    step["ktree"], pred, 100.0 * (pred / step["ktree"] - 1), step["pipeline"], step["ring"], step["pipeline"] / step["ktree"], step["ring"] / step["ktree"],
    r["ktree"]["decode"]["tokens_per_s"], step["concat"], step["concat"] / step["ktree"], occ("ktree"),
    occ("concat") if "concat" in r else "-")).replace("nan", "-"))
PY
  done
done
