#!/usr/bin/env bash
# How the GEMM algorithms rank on shapes and meshes nobody picked: runs the seeded random
# MatMul/Gemm sweep of tests/scripts/matmul_random.sh (every --gemm-algo, test8x8, meshes
# 1..6 per side, M, K, N in 1..40, batches; every result checked against a Python reference)
# and summarizes its simulated cycles: per algorithm, how often it is the fastest and its
# cycles over the fastest (median, worst); and auto's choice against the fastest.
# Usage: bench/gemm_random.sh [cases] [seed]   (PATH must hold waferc, waferrun, wafer-npycmp)
#   PATH=$PWD/build/bin:$PATH bench/gemm_random.sh 100 1
set -uo pipefail
SRC=${WAFERC_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
CASES=${1:-100}
SEED=${2:-1}
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
MATMUL_RANDOM_CASES=$CASES MATMUL_RANDOM_SEED=$SEED WAFERC_SOURCE_DIR=$SRC \
  sh "$SRC/tests/scripts/matmul_random.sh" | tee "$OUT" >&2
status=${PIPESTATUS[0]}
python3 - "$OUT" "$CASES" "$SEED" <<'PY'
import re, statistics, sys
path, cases, seed = sys.argv[1], sys.argv[2], sys.argv[3]
algos = ["meshgemm", "cannon", "summa", "allgather"]
rows = []
for line in open(path):
    if ": " not in line or line.startswith("FAIL"):
        continue
    cyc = dict((a, int(c)) for a, c in re.findall(r"\b(meshgemm|cannon|summa|allgather|auto) (\d+)", line))
    if "(no dist.gemm)" in line or len(cyc) < 2 or "auto" not in cyc:
        continue
    rows.append(cyc)
print("seed %s, %s cases: %d with a dist.gemm that auto and at least one algorithm ran" % (seed, cases, len(rows)))
print("%-10s %8s %8s %14s %14s" % ("algorithm", "ran", "fastest", "median / best", "worst / best"))
for a in algos + ["auto"]:
    ratios, wins, ran = [], 0, 0
    for r in rows:
        if a not in r:
            continue
        ran += 1
        best = min(v for k, v in r.items() if k != "auto")
        ratios.append(r[a] / best)
        wins += r[a] == best
    if ratios:
        print("%-10s %8d %8d %14.3f %14.3f" % (a, ran, wins, statistics.median(ratios), max(ratios)))
PY
exit "$status"
