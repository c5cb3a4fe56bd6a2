#!/usr/bin/env bash
# LLaMA-shaped blocks exported by torch (examples/models/export.py: RMSNorm, rotate-half RoPE,
# GQA, SwiGLU with F = 2.5 E), compiled for wse2 and SIMULATED (BENCHMARKS.md "Transformer
# blocks"). Per configuration: total cycles (simulated and predicted), each op's share of the
# critical path (the cycles by which its last PE ends after the previous op's last PE: the
# skew a GEMM leaves behind is not charged to the small op after it) against its prediction,
# the worst op, the attention's, prefill tokens/s at the target clock and the SRAM a PE holds.
# Then MHA, GQA and MQA of one width side by side, and GQA/MQA with the kv heads replicated
# against gathered (waferc --gqa), with the cost model's choice.
#   bench/transformer.sh                              # the configurations below
#   CONFIGS="256:8:2:64:16" KV_SWEEP= GQA_SWEEP= bench/transformer.sh   # E:H:KV:L:N ...
# Needs /usr/bin/python3 with torch and onnx (Debian python3-torch, python3-onnx).
set -euo pipefail
CONFIGS=${CONFIGS-"256:8:2:64:16 256:8:2:256:16 512:8:2:128:32 512:8:2:512:32 1024:16:4:128:64"}
KV_SWEEP=${KV_SWEEP-"256:8:64:16"}
GQA_SWEEP=${GQA_SWEEP-"256:8:2:64:16 256:8:1:64:16 512:8:2:128:32 1024:16:4:128:64 512:32:8:128:32"}
MODE=${MODE:-timing}
. "$(dirname "${BASH_SOURCE[0]}")/env.bash" # $here, targets, $waferc, $waferrun, $tmp

export_block() { # E H KV L DIR
  [ -f "$5/llama_block.onnx" ] ||
    /usr/bin/python3 "$here/examples/models/export.py" --out "$5" --only llama_block --embed "$1" --heads "$2" \
      --kv-heads "$3" --seq "$4" --static >/dev/null 2>&1
}

run() { # E H KV L N: prints one table row
  local e=$1 h=$2 kv=$3 l=$4 n=$5 d=$tmp/e$1h$2kv$3l$4n$5
  export_block "$e" "$h" "$kv" "$l" "$d"
  "$waferc" "$d/llama_block.onnx" -o "$d/plan" --target=wse2 --mesh="${n}x${n}" -q
  out=(); [ "$MODE" = functional ] && out=(--output-dir "$d/out")
  "$waferrun" "$d/plan" --mode="$MODE" --input x="$d/llama_block_input.npy" "${out[@]}" \
    --report "$d/r.json" -q
  if [ "$MODE" = functional ]; then
    wafer-npycmp "$d/out/y.npy" "$d/llama_block_ref.npy" --atol 1e-4 --rtol 0 >/dev/null ||
      { echo "E=$e H=$h: the plan's output differs from torch's" >&2; exit 1; }
  fi
  python3 - "$d/r.json" "$e" "$h" "$kv" "$l" "$n" "$d/plan/manifest.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
e, h, kv, l, n = sys.argv[2:7]
sram = max(c["memory_bytes"] for reg in json.load(open(sys.argv[7]))["regions"] for c in reg["classes"])
prev, worst, att = 0, (0.0, ""), None
for o in r["ops"]:
    inc, prev = o["end"] - prev, o["end"]
    p = o["predicted_cycles"]
    err = inc / p - 1 if p else 0.0
    if abs(err) > abs(worst[0]):
        worst = (err, o["op"])
    if o["op"] == "attention":
        att = (inc, p)
tot = r["cycles"]
tok = r["clock_hz"] / tot["total"] * int(l)
print("| %s | %s/%s | %s | %sx%s | %d | %d | %+.1f%% | %d / %d (%+.1f%%) | %+.1f%% (%s) | %.3g | %d |" % (
    e, h, kv, l, n, n, tot["total"], tot["predicted"], 100.0 * (tot["total"] / tot["predicted"] - 1),
    att[0], att[1], 100.0 * (att[0] / att[1] - 1), 100.0 * worst[0], worst[1], tok, sram))
PY
}

hdr() {
  printf '| E | heads/kv | L | mesh | cycles | predicted | total error | attention simulated / predicted | worst op | prefill tokens/s | SRAM bytes per PE |\n'
  printf '|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n'
}
hdr
for c in $CONFIGS; do
  IFS=: read -r e h kv l n <<<"$c"
  run "$e" "$h" "$kv" "$l" "$n"
done
for c in $KV_SWEEP; do
  IFS=: read -r e h l n <<<"$c"
  printf '\nMHA, GQA and MQA at E=%s, %s heads, L=%s on %sx%s (head-layout packs, replicates or gathers the kv heads: the statistics gqa-shared / gqa-replicated / gqa-gathered):\n\n' "$e" "$h" "$l" "$n" "$n"
  hdr
  for kv in "$h" $((h / 4)) 1; do run "$e" "$h" "$kv" "$l" "$n"; done
done

gqa() { # E H KV L N MODE: "cycles predicted" of the block with --gqa=MODE
  local d=$tmp/e$1h$2kv$3l$4n$5
  export_block "$1" "$2" "$3" "$4" "$d"
  local rc=0
  "$waferc" "$d/llama_block.onnx" -o "$d/$6" --target=wse2 --mesh="${5}x${5}" --gqa="$6" -q 2>/dev/null || rc=$?
  [ "$rc" = 4 ] && { echo "- -"; return; } # does not fit a PE
  [ "$rc" = 0 ] || return "$rc"
  "$waferrun" "$d/$6" --mode=timing --report "$d/$6.json" -q
  python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["cycles"]; print(c["total"], c["predicted"])' "$d/$6.json"
}
if [ -n "$GQA_SWEEP" ]; then
  printf '\nGQA and MQA with the kv heads replicated onto their query heads'"'"' columns or gathered inside the attention (waferc --gqa), and what --gqa=auto chose:\n\n'
  printf '| E | heads/kv | L | mesh | replicated cycles (predicted) | gathered cycles (predicted) | replicated / gathered | auto chose |\n'
  printf '|---:|---|---:|---|---:|---:|---:|---|\n'
  for c in $GQA_SWEEP; do
    IFS=: read -r e h kv l n <<<"$c"
    read -r rc rp < <(gqa "$e" "$h" "$kv" "$l" "$n" replicate)
    read -r gc gp < <(gqa "$e" "$h" "$kv" "$l" "$n" gather)
    d=$tmp/e${e}h${h}kv${kv}l${l}n${n}
    chose=$("$waferc" "$d/llama_block.onnx" -o "$d/auto" --target=wse2 --mesh="${n}x${n}" -q --statistics 2>&1 |
      sed -n 's/.*gqa-gathered: 1/gathered/p; s/.*gqa-replicated: 1/replicated/p; s/.*gqa-shared: 1/shared/p' | head -1) ||
      chose="does not fit"
    cell() { [ "$1" = - ] && echo "does not fit" || echo "$1 ($2)"; }
    ratio=-
    [ "$rc" != - ] && [ "$gc" != - ] && ratio=$(python3 -c "print('%.2f' % ($rc / $gc))")
    printf '| %s | %s/%s | %s | %sx%s | %s | %s | %s | %s |\n' "$e" "$h" "$kv" "$l" "$n" "$n" "$(cell "$rc" "$rp")" \
      "$(cell "$gc" "$gp")" "$ratio" "$chose"
  done
fi
