#!/usr/bin/env bash
# waferc --pipeline=N against one region (BENCHMARKS.md "Pipelined plans", docs/pipeline.md):
# a whole LLaMA-shaped model exported by torch (examples/models/export.py tiny_llama: token
# ids to logits, RMSNorm, RoPE, GQA, SwiGLU) compiled for wse2 on one W x H mesh whole and over
# N bands of it, SIMULATED. Per row: the latency of one prompt (every stage and transfer in
# order), the period with the pipeline full (the busiest band's stage and transfers), the
# transfers' simulated cycles against their prediction, the largest SRAM a PE holds, and the
# ratios to the single region in the same run ("-" where the model does not fit it whole).
#   bench/pipeline.sh                                  # the configurations below
#   CONFIGS="256:8:2:4:64:16" NS="2 4" bench/pipeline.sh  # E:H:KV:LAYERS:L:MESH ...
# Needs /usr/bin/python3 with torch and onnx (Debian python3-torch, python3-onnx).
set -euo pipefail
CONFIGS=${CONFIGS:-"128:4:2:4:32:8 128:4:2:4:32:16 256:8:2:4:64:16 256:8:2:4:64:32"}
NS=${NS:-"2 4"}
MODE=${MODE:-timing}
. "$(dirname "${BASH_SOURCE[0]}")/env.bash" # $here, targets, $waferc, $waferrun, $tmp

printf '%-26s %-6s %10s %10s %9s %9s %12s %9s %8s\n' "model (E:H:KV:layers:L)" "mesh" "latency" "period" \
  "lat/one" "period/one" "transfers" "predicted" "SRAM KiB"
for cfg in $CONFIGS; do
  IFS=: read -r e h kv layers l mesh <<<"$cfg"
  d=$tmp/m$e.$h.$kv.$layers.$l
  /usr/bin/python3 "$here/examples/models/export.py" --out "$d" --only tiny_llama --embed "$e" --heads "$h" \
    --kv-heads "$kv" --layers "$layers" --seq "$l" --vocab 512 --static >/dev/null 2>&1
  one=
  for n in 1 $NS; do
    p=$d/plan$n
    args=(); [ "$n" -gt 1 ] && args=(--pipeline="$n")
    rc=0
    "$waferc" "$d/tiny_llama.onnx" -o "$p" --target=wse2 --mesh="${mesh}x${mesh}" -q "${args[@]}" 2>"$p.err" || rc=$?
    if [ "$rc" = 4 ]; then # over a PE's SRAM: said, and the row says so
      printf '%-26s %-6s %10s\n' "$e:$h:$kv:$layers:$l" "${mesh}x${mesh}/$n" "does not fit (waferc exit 4)"
      continue
    fi
    [ "$rc" = 0 ] || { cat "$p.err" >&2; exit 1; }
    out=(); [ "$MODE" = functional ] && out=(--output-dir "$p/out")
    "$waferrun" "$p" --mode="$MODE" --input input_ids="$d/tiny_llama_input.npy" "${out[@]}" --report "$p/r.json" -q
    if [ "$MODE" = functional ]; then
      wafer-npycmp "$p/out/logits.npy" "$d/tiny_llama_ref.npy" --atol 1e-4 --rtol 0 >/dev/null ||
        { echo "$cfg N=$n: the plan's output differs from torch's" >&2; exit 1; }
    fi
    row=$(python3 - "$p" "$n" "$one" <<'PY'
import json, sys
p, n, one = sys.argv[1], int(sys.argv[2]), sys.argv[3]
r = json.load(open(p + "/r.json"))
def sram(d):
    m = json.load(open(d + "/manifest.json"))
    return max(c["memory_bytes"] for reg in m["regions"] for c in reg["classes"])
if n == 1:
    lat = per = r["cycles"]["total"]
    tr = pr = 0
    mem = sram(p)
else:
    lat, per = r["latency_cycles"], r["period_cycles"]
    tr = sum(t["cycles"] for t in r["transfers"])
    pr = sum(t["predicted_cycles"] for t in r["transfers"])
    mem = max(sram(s["plan"]) for s in r["stages"])
base = [int(x) for x in one.split(",")] if one else ([lat, per] if n == 1 else None)
f = lambda a, b: "%.2f" % (a / b) if base else "-"
print("%d %d %s %s %d %d %.1f" % (lat, per, f(lat, base and base[0]), f(per, base and base[1]), tr, pr, mem / 1024))
PY
)
    read -r lat per rl rp tr pr mem <<<"$row"
    [ "$n" = 1 ] && one="$lat,$per"
    printf '%-26s %-6s %10s %10s %9s %9s %12s %9s %8s\n' "$e:$h:$kv:$layers:$l" "${mesh}x${mesh}/$n" "$lat" "$per" \
      "$rl" "$rp" "$tr" "$pr" "$mem"
  done
done
