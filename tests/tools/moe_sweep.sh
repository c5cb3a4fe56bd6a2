#!/usr/bin/env bash
# The MoE tables of CONFORMANCE.md: every block of examples/models/moe/ compiled for test8x8 on
# each mesh, run on waferrun and compared with torch's output (1e-4), one markdown row per
# export style. With EXTRA (e.g. --expert-parallel) the cells also count the plans whose
# experts went on bands (the manifest's op `band` fields).
#
#   WAFERC=build/bin/waferc WAFERRUN=build/bin/waferrun tests/tools/moe_sweep.sh 1x1 2x2 3x2 4x4 5x3
#   EXTRA=--expert-parallel tests/tools/moe_sweep.sh 2x2 4x4 6x4 8x8
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export WAFERC_TARGET_PATH=${WAFERC_TARGET_PATH:-$SRC/targets}
waferc=${WAFERC:-waferc}
waferrun=${WAFERRUN:-waferrun}
case $waferc in */*) npycmp=${NPYCMP:-$(dirname "$waferc")/wafer-npycmp} ;; *) npycmp=${NPYCMP:-wafer-npycmp} ;; esac
M=$SRC/examples/models/moe
EXTRA=${EXTRA:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
MESHES=("$@")
[ ${#MESHES[@]} -gt 0 ] || { echo "usage: moe_sweep.sh MESH..." >&2; exit 2; }
# style NAME: the row a block belongs to
style() {
  case $1 in
    moe_ec_* | moe_ecg_* | moe_cap_*) echo "sparse: expert choice, capacity (moe_ec_*, moe_ecg_*, moe_cap_*)" ;;
    moe_l4_* | moe_tw_*) echo "stacked expert weights: Llama 4's tiled tokens, per-token weights (moe_l4_*, moe_tw_*)" ;;
    moe_hf_*) echo "Hugging Face's torch.where (moe_hf_*)" ;;
    moe_nz_*) echo "torch.nonzero token lists (moe_nz_*)" ;;
    moe_sw_* | moe_gs_*) echo "Switch / GShard capacity (moe_sw_*, moe_gs_*)" ;;
    moe_ds_*) echo "DeepSeek's argsort, V2 and V3 gates (moe_ds_*)" ;;
    *) echo "dense (moe_e*, moe_b2_*)" ;;
  esac
}
: >"$tmp/results"
for f in "$M"/moe_*.onnx; do
  b=$(basename "$f" .onnx)
  for mesh in "${MESHES[@]}"; do
    d=$tmp/$b.$mesh
    res=fail
    # shellcheck disable=SC2086
    if "$waferc" "$f" -o "$d" --target=test8x8 --mesh="$mesh" $EXTRA -q 2>"$tmp/err"; then
      if "$waferrun" "$d" --input "x=$M/${b}_input.npy" --output-dir "$d/out" -q 2>>"$tmp/err" &&
        "$npycmp" "$d/out/y.npy" "$M/${b}_ref.npy" --atol 1e-4 --rtol 0 >/dev/null 2>&1; then
        res=pass
        grep -q '"band":' "$d/manifest.json" && res=band
      else
        res=wrong
      fi
    else
      res="exit$?"
    fi
    printf '%s\t%s\t%s\t%s\n' "$(style "$b")" "$b" "$mesh" "$res" >>"$tmp/results"
    rm -rf "$d"
  done
done
python3 - "$tmp/results" "$EXTRA" "${MESHES[@]}" <<'EOF'
import collections, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
extra, meshes = sys.argv[2], sys.argv[3:]
order, cells, blocks = [], collections.defaultdict(list), collections.defaultdict(set)
for st, b, mesh, res in rows:
    if st not in order:
        order.append(st)
    cells[(st, mesh)].append(res)
    blocks[st].add(b)
print("| style | blocks | " + " | ".join(meshes) + " |")
print("|---|---:|" + "---:|" * len(meshes))
for st in order:
    out = []
    for mesh in meshes:
        r = cells[(st, mesh)]
        ok = sum(x in ("pass", "band") for x in r)
        cell = "%d/%d" % (ok, len(r))
        if extra:
            cell += " (%d on bands)" % sum(x == "band" for x in r)
        out.append(cell)
    print("| %s | %d | %s |" % (st, len(blocks[st]), " | ".join(out)))
other = [(b, mesh, res) for st, b, mesh, res in rows if res not in ("pass", "band")]
print("\nnot passing: " + (", ".join("%s %s %s" % o for o in other) or "none"))
EOF
