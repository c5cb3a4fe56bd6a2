#!/usr/bin/env bash
# wafer-bench gemm --sample-mesh=S (tools/wafer-bench/gemm.c): a mesh too large to simulate
# whole is estimated from an S x S region with its per-PE blocks, scaled by W / S.
#  - the JSON's sample has the blocks the full mesh gives each PE (padding included), its own
#    simulated and predicted cycles, and simulated_cycles is its cycles times W / S;
#  - predicted_cycles is the full mesh's plan's (equal to an unsampled run's prediction);
#  - on MeshGEMM, whose steps do not grow with the mesh, the estimate is within 4% of the
#    whole mesh simulated (64x64 from 16x16, 1 and 2 buffers, both operands weights; measured
#    +1.9% and +3.5%: the sample's setup, which does not grow with the mesh, is scaled too);
#  - --sample-mesh on a non-square mesh or one not larger than S is refused (exit 2).
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
export WAFERC_TARGET_PATH="$SRC/targets"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
n=0
for nb in 1 2; do
  wafer-bench gemm --algo=meshgemm --mesh=64 --m=256 --k=256 --n=256 --gemm-buffers=$nb --weights=ab >"$TMP/full.json" ||
    fail "full run exit $?"
  wafer-bench gemm --algo=meshgemm --mesh=64 --m=250 --k=256 --n=256 --gemm-buffers=$nb --weights=ab \
    --sample-mesh=16 >"$TMP/s.json" || fail "sampled run exit $?"
  wafer-bench gemm --algo=meshgemm --mesh=64 --m=256 --k=256 --n=256 --gemm-buffers=$nb --weights=ab \
    --sample-mesh=16 >"$TMP/s256.json" || fail "sampled run exit $?"
  python3 - "$TMP/full.json" "$TMP/s.json" "$TMP/s256.json" "$nb" <<'PY' || fail "buffers $nb: (above)"
import json, sys
full, s, s256 = (json.load(open(f)) for f in sys.argv[1:4])
sm = s["sample"]
# 250 rows over 64 PEs: blocks of 4 (padded), as with 256
assert sm["mesh"] == [16, 16] and (sm["m"], sm["k"], sm["n"]) == (64, 64, 64), sm
assert s["simulated_cycles"] == round(sm["simulated_cycles"] * 4), (s["simulated_cycles"], sm)
assert s256["predicted_cycles"] == full["predicted_cycles"], (s256["predicted_cycles"], full["predicted_cycles"])
err = (s256["simulated_cycles"] - full["simulated_cycles"]) / full["simulated_cycles"]
assert abs(err) <= 0.04, "estimate %d against %d simulated whole (%+.1f%%)" % (
    s256["simulated_cycles"], full["simulated_cycles"], 100 * err)
print("buffers %s: 64x64 simulated %d, estimated from 16x16 %d (%+.1f%%)" % (
    sys.argv[4], full["simulated_cycles"], s256["simulated_cycles"], 100 * err))
PY
  n=$((n + 1))
done
for bad in "--mesh=64x32 --sample-mesh=16" "--mesh=16 --sample-mesh=16"; do
  rc=0
  wafer-bench gemm --algo=meshgemm $bad --m=64 --k=64 --n=64 2>"$TMP/err" >/dev/null || rc=$?
  [ $rc = 2 ] && grep -q "needs a square --mesh larger" "$TMP/err" || fail "$bad: exit $rc: $(cat "$TMP/err")"
  n=$((n + 1))
done
echo "gemm_sample: $n checks passed"
