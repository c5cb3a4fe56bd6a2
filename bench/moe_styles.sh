#!/usr/bin/env bash
# MoE blocks of every export style at 32-64 tokens (larger than the committed ones), as plans
# on the whole mesh, SIMULATED (test8x8, functional mode, every output checked against
# torch's at 1e-4): DeepSeek's sorted dispatch (V2 and V3 gates), expert choice, top-k with a
# capacity (gathered and added back), Switch and
# GShard capacity einsums, Hugging Face's torch.where (a batch of 2, a shared expert, the mask
# permuted tokens first) and torch.nonzero token lists (examples/models/export_moe.py's
# classes). With BASE_WAFERC / BASE_WAFERRUN (another build's tools) each block runs on both
# and the ratio is printed (above 1: the tools under test take fewer cycles). BENCHMARKS.md,
# "MoE blocks of every style".
#   bench/moe_styles.sh                                    # meshes 4x4 8x8
#   MESHES="8x8" BASE_WAFERC=old/waferc BASE_WAFERRUN=old/waferrun bench/moe_styles.sh
# Needs /usr/bin/python3 with torch and onnx (Debian python3-torch, python3-onnx).
set -euo pipefail
MESHES=${MESHES:-"4x4 8x8"}
. "$(dirname "${BASH_SOURCE[0]}")/env.bash" # $here, targets, $waferc, $waferrun, $tmp

/usr/bin/python3 - "$here/examples/models" "$tmp" <<'PY' >"$tmp/blocks" 2>/dev/null
import sys
sys.path.insert(0, sys.argv[1])
import export_moe as em
blocks = {
    "ds_t32": (em.SORTED, dict(t=32, e=32, f=32, n=8, k=2)),
    "ds_v3_t32": (em.SORTED, dict(t=32, e=32, f=32, n=8, k=2, groups=4, top_groups=2)),
    "ec_t64": (em.SPARSE, dict(t=64, e=32, f=32, n=8, k=0, c=16, expert="swiglu", dispatch="ec")),
    "cap_t64": (em.SPARSE, dict(t=64, e=32, f=32, n=8, k=2, c=16, expert="swiglu", dispatch="cap")),
    "gs_t64": (em.CAPACITY, dict(t=64, e=32, f=32, n=8, c=16, expert="swiglu", top2=True)),
    "hf_b2_t32": (em.DYNAMIC, dict(t=(2, 32), e=32, f=32, n=8, k=2, expert="swiglu", norm=True)),
    "hf_shared_t64": (em.DYNAMIC, dict(t=64, e=32, f=32, n=4, k=2, expert="swiglu", norm=False, shared=True)),
    "hf_tok_t48": (em.DYNAMIC, dict(t=(2, 24), e=16, f=16, n=8, k=2, expert="swiglu", norm=True, tokens_first=True)),
    "nz_t64": (None, dict(t=64, e=32, f=32, n=4, mode="putacc")),
    "sw_t64": (em.CAPACITY, dict(t=64, e=32, f=32, n=8, c=8, expert="gelu")),
}
for seed, (name, (table, c)) in enumerate(blocks.items(), 1):
    name = "moe_" + name  # the export picks the class by the table and a few name prefixes
    if table is not None:
        table[name] = c
    em.export(name, c, sys.argv[2], seed)
    print(name)
PY

run() { # run WAFERC WAFERRUN BLOCK MESH DIR: prints the simulated cycles
  "$1" "$tmp/$3.onnx" -o "$5" --target=test8x8 --mesh="$4" -q 2>"$5.err" || { cat "$5.err" >&2; return 1; }
  "$2" "$5" -q --input x="$tmp/$3_input.npy" --output-dir "$5/out" --report "$5/r.json"
  wafer-npycmp "$5/out/y.npy" "$tmp/$3_ref.npy" --atol 1e-4 --rtol 0 >/dev/null ||
    { echo "$3 $4: the plan's output differs from torch's" >&2; return 1; }
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["cycles"]["total"])' "$5/r.json"
}

printf '%-22s %-6s %12s %12s %8s\n' block mesh cycles "base cycles" "base/new"
while read -r b; do
  for mesh in $MESHES; do
    c=$(run "$waferc" "$waferrun" "$b" "$mesh" "$tmp/$b.$mesh")
    if [ -n "${BASE_WAFERC:-}" ]; then
      cb=$(run "$BASE_WAFERC" "${BASE_WAFERRUN:?}" "$b" "$mesh" "$tmp/$b.$mesh.base")
      printf '%-22s %-6s %12s %12s %7.2fx\n' "$b" "$mesh" "$c" "$cb" "$(python3 -c "print($cb / $c)")"
    else
      printf '%-22s %-6s %12s\n' "$b" "$mesh" "$c"
    fi
  done
done <"$tmp/blocks"
