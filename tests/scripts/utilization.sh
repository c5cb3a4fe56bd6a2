#!/usr/bin/env bash
# Honest utilization (docs/cycle-model.md, "Accounting"): with every dist.gemm algorithm,
# including those whose async fabric streams run under compute (MeshGEMM, Cannon), each PE's
# cycles fall in exactly one of compute, communication, stall and idle. Per PE (the heatmap's
# pe_busy.csv) and over the mesh (report.json) the four classes add up to the run's cycles
# exactly and none is negative; overlap (async fabric under compute) is part of compute; every
# percentage in the summary, the report and the heatmap CSV lies within 0-100%.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n

cat >"$TMP/mlp.wir" <<'EOF'
module @mlp {
  func @main(%x: f32[24, 16], %w1: f32[16, 32], %w2: f32[32, 24]) -> f32[24, 24] {
    %h = matmul(%x, %w1) : f32[24, 32]
    %g = gelu(%h) : f32[24, 32]
    %y = matmul(%g, %w2) : f32[24, 24]
    return %y
  }
}
EOF

# check PLAN LABEL ASYNC: runs PLAN (timing mode: the same cycles, no data) and checks the
# accounting; ASYNC=1 requires some overlap (the algorithm streams under compute).
check() {
  local d=$1 label=$2 async=$3
  waferrun "$d" --mode=timing --report "$d/r.json" --heatmap "$d/h" >"$d/summary.txt" ||
    fail "$label: waferrun exited $?"
  python3 - "$d" "$label" "$async" <<'PY' || fail "$label: the cycle classes do not add up (see above)"
import json, os, re, sys
d, label, want_overlap = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
errs = []
r = json.load(open(os.path.join(d, "r.json")))
total, pes = r["cycles"]["total"], r["pes"]
count = pes["count"]
classes = [pes[k] for k in ("compute_cycles", "communication_cycles", "stall_cycles", "idle_cycles")]
if sum(classes) != count * total:
    errs.append("report: classes sum to %d, PE-cycles are %d" % (sum(classes), count * total))
if min(classes) < 0:
    errs.append("report: a negative class %r" % classes)
if not 0 <= pes["overlap_cycles"] <= pes["compute_cycles"]:
    errs.append("report: overlap %d outside 0..compute %d" % (pes["overlap_cycles"], pes["compute_cycles"]))
for k in ("utilization", "busy"):
    if not 0 <= pes[k] <= 1:
        errs.append("report: pes.%s = %g outside 0..1" % (k, pes[k]))
for o in r["ops"]:
    for k in ("compute", "communication", "stall", "idle", "overlap"):
        if o[k] < 0:
            errs.append("report: op %d %s = %d" % (o["index"], k, o[k]))
    # an op's classes fit in its span on every PE: idle is what is left, never clamped
    left = o["cycles"] * count - o["compute"] - o["communication"] - o["stall"]
    if o["idle"] != left:
        errs.append("report: op %d: idle %d, but span x PEs minus the classes is %d" % (o["index"], o["idle"], left))
    if o["overlap"] > o["compute"]:
        errs.append("report: op %d: overlap %d > compute %d" % (o["index"], o["overlap"], o["compute"]))
rows = open(os.path.join(d, "h", "pe_busy.csv")).read().splitlines()
head = rows[0].split(",")
if head != ["x", "y", "value", "cycles", "compute", "communication", "stall", "idle", "overlap"]:
    errs.append("pe_busy.csv: header %r" % head)
sums = [0, 0, 0, 0, 0]
for row in rows[1:]:
    x, y, busy, cyc, comp, comm, stall, idle, ov = row.split(",")
    cyc, comp, comm, stall, idle, ov = map(int, (cyc, comp, comm, stall, idle, ov))
    where = "PE (%s,%s)" % (x, y)
    if cyc != total:
        errs.append("%s: cycles %d, the run took %d" % (where, cyc, total))
    if comp + comm + stall + idle != cyc or min(comp, comm, stall, idle) < 0:
        errs.append("%s: %d + %d + %d + %d != %d cycles" % (where, comp, comm, stall, idle, cyc))
    if not 0 <= ov <= comp:
        errs.append("%s: overlap %d outside 0..%d" % (where, ov, comp))
    if not 0 <= float(busy) <= 100 or abs(float(busy) - 100.0 * (comp + comm) / cyc) > 5e-4:
        errs.append("%s: busy %s%% (compute + communication = %d of %d)" % (where, busy, comp + comm, cyc))
    for i, v in enumerate((comp, comm, stall, idle, ov)):
        sums[i] += v
if len(rows) - 1 != count:
    errs.append("pe_busy.csv: %d rows for %d PEs" % (len(rows) - 1, count))
want = [pes[k] for k in ("compute_cycles", "communication_cycles", "stall_cycles", "idle_cycles", "overlap_cycles")]
if sums != want:
    errs.append("pe_busy.csv sums %r, report %r" % (sums, want))
if want_overlap and pes["overlap_cycles"] == 0:
    errs.append("expected async fabric under compute (overlap > 0)")
text = open(os.path.join(d, "summary.txt")).read()
m = re.search(r"PEs: +([\d.]+)% busy \(compute ([\d.]+)%, fabric ([\d.]+)%\), ([\d.]+)% stalled, ([\d.]+)% idle", text)
if not m:
    errs.append("summary: no PEs line in %r" % text)
else:
    v = [float(g) for g in m.groups()]
    if any(not 0 <= p <= 100 for p in v):
        errs.append("summary: a percentage outside 0-100: %r" % v)
    if abs(v[1] + v[2] + v[3] + v[4] - 100) > 0.25:
        errs.append("summary: compute + fabric + stalled + idle = %.1f%%" % (v[1] + v[2] + v[3] + v[4]))
for p in re.findall(r"([\d.]+)%", text):
    if not 0 <= float(p) <= 100:
        errs.append("summary: %s%%" % p)
for e in errs[:20]:
    print("%s: %s" % (label, e), file=sys.stderr)
sys.exit(1 if errs else 0)
PY
  n=$((n + 1))
}

for mesh in 4x4 3x3; do
  for algo in meshgemm cannon summa allgather; do
    d="$TMP/$algo-$mesh"
    waferc "$TMP/mlp.wir" -o "$d" --target=test8x8 --mesh=$mesh --gemm-algo=$algo -q ||
      fail "$algo $mesh: waferc exited $?"
    async=0
    case $algo in meshgemm | cannon) async=1 ;; esac
    check "$d" "$algo $mesh" $async
  done
done
# The report that showed 153.8% busy: the ONNX MLP with Cannon on WSE-2 at 8x8.
waferc "$SRC/examples/models/mlp2.onnx" -o "$TMP/mlp2" --target=wse2 --mesh=8x8 --gemm-algo=cannon -q ||
  fail "mlp2: waferc exited $?"
check "$TMP/mlp2" "mlp2 cannon 8x8" 1
echo "utilization: $n runs, every PE-cycle in one class"
