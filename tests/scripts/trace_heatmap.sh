#!/usr/bin/env bash
# waferrun --trace and --heatmap (docs/report-format.md): the trace is valid Chrome Trace
# Event JSON (required fields, per-track monotonic timestamps, proper nesting, metadata),
# byte-identical across runs, capped by --trace-limit with the drop recorded, its event count
# (printed and in otherData) that of the file, every op's mesh-wide span the report's, async
# fabric streams (Cannon) on tracks of their own, and a run stopped by --max-cycles marked
# incomplete; the heatmaps are valid PNGs of the same size with a CSV of one row per PE.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, NODE, NPY, TMP, fail, n

x=$SRC/examples/mlp_softmax_x.npy
waferc "$SRC/examples/mlp_softmax.wir" -o "$TMP/plan" --target=test4x4 || fail "waferc exited $?"
for run in 1 2; do
  waferrun "$TMP/plan" --input x="$x" --report "$TMP/report$run.json" --trace "$TMP/trace$run.json" \
    --heatmap "$TMP/heat$run" >"$TMP/summary$run.txt" || fail "waferrun exited $?"
done
cmp "$TMP/trace1.json" "$TMP/trace2.json" || fail "traces differ between two runs"
for f in "$TMP"/heat1/*; do
  cmp "$f" "$TMP/heat2/$(basename "$f")" || fail "heatmap $(basename "$f") differs between two runs"
done
waferrun "$TMP/plan" --input x="$x" --trace "$TMP/small.json" --trace-limit 10 >"$TMP/small.txt" ||
  fail "limited run exited $?"
waferrun "$TMP/plan" -q --input x="$x" --trace "$TMP/bad.json" --trace-limit 0 2>/dev/null \
  && fail "--trace-limit 0 accepted"
# --heatmap-scale: a fixed scale of the user's (the colours move, the data stays), and
# malformed scales refused at the command line.
waferrun "$TMP/plan" -q --input x="$x" --heatmap "$TMP/heat_half" --heatmap-scale=0:50 || fail "--heatmap-scale=0:50 exited $?"
for bad in 50:10 0:200 -5:10 abc 10 "0:50x"; do
  rc=0; waferrun "$TMP/plan" -q --input x="$x" --heatmap "$TMP/heat_bad" --heatmap-scale="$bad" 2>"$TMP/err" || rc=$?
  [ $rc = 2 ] && grep -q "heatmap-scale" "$TMP/err" || fail "--heatmap-scale=$bad: expected exit 2 naming the option, got $rc"
  [ ! -e "$TMP/heat_bad" ] || fail "--heatmap-scale=$bad: heatmaps written anyway"
done

# A run stopped by --max-cycles writes its trace, marked neither finished nor complete.
rc=0; waferrun "$TMP/plan" -q --input x="$x" --trace "$TMP/stopped.json" --max-cycles 40 2>/dev/null || rc=$?
[ $rc = 5 ] || fail "--max-cycles 40 should stop the run with exit 5, got $rc"
python3 - "$TMP/stopped.json" <<'PY' || fail "the stopped run's trace claims to be complete"
import json, sys
meta = json.load(open(sys.argv[1]))["otherData"]
assert meta["run_finished"] is False and meta["complete"] is False, meta
PY

python3 - "$TMP" "$SRC/tests/tools" <<'PY' || fail "trace/heatmap check failed"
import json, os, re, struct, sys, zlib
tmp = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from trace_check import check_trace
report = json.load(open(os.path.join(tmp, "report1.json")))
cycles, pes = report["cycles"]["total"], report["pes"]["count"]

def printed_events(path):
    m = re.search(r"trace: +\S+, (\d+) events", open(path).read())
    assert m, path + ": no trace line"
    return int(m.group(1))
meta, cats, names = check_trace(os.path.join(tmp, "trace1.json"), report)
assert meta["tracks"] == "pe" and meta["mesh"] == [4, 4], "a 4x4 mesh gets one track per PE"
assert meta["dropped_events"] == 0 and meta["complete"] is True and meta["run_finished"] is True
assert len([n for n in names.values() if "async" not in n]) == pes, "one named track per PE"
assert {"op", "compute", "comm"} <= cats, "categories missing: %r" % cats
assert printed_events(os.path.join(tmp, "summary1.txt")) == meta["events"], "printed event count differs from the file"
meta, cats, _ = check_trace(os.path.join(tmp, "small.json"))
assert meta["limit"] == 10 and meta["dropped_events"] > 0
assert meta["complete"] is False and meta["run_finished"] is True
assert printed_events(os.path.join(tmp, "small.txt")) == meta["events"], "printed event count differs from the file"

from png_check import read_png, colormap, colours

def near(seen, want):
    """want's colour (within rounding of the 3-decimal CSV value) fills a PE's block (47x47
    pixels on a 4x4 mesh): far more than the colour bar's few rows of any one colour."""
    return sum(n for c, n in seen.items() if all(abs(c[k] - want[k]) <= 1 for k in range(3))) >= 1000

def check_heat(heat, lo, hi):
    stems = ["pe_busy", "link_n", "link_e", "link_s", "link_w"]
    assert sorted(os.listdir(heat)) == sorted([s + ".png" for s in stems] + [s + ".csv" for s in stems])
    imgs = {s: read_png(os.path.join(heat, s + ".png")) for s in stems}
    sizes = {im[:2] for im in imgs.values()}
    assert len(sizes) == 1, "heatmaps of one mesh differ in size: %r" % sizes
    w, h = sizes.pop()
    assert w >= 4 * 48 and h >= 4 * 48, "a 4x4 mesh must be scaled up (48 px per PE), got %dx%d" % (w, h)
    total_link = 0
    for s in stems:
        rows = open(os.path.join(heat, s + ".csv")).read().splitlines()
        want = ["x", "y", "value"] + (["cycles", "compute", "communication", "stall", "idle", "overlap"]
                                      if s == "pe_busy" else ["wavelets"])
        assert rows[0].split(",") == want, s + ": bad CSV header " + rows[0]
        cells = [r.split(",") for r in rows[1:]]
        assert len(cells) == pes, "%s.csv: %d rows for %d PEs" % (s, len(cells), pes)
        assert len({(c[0], c[1]) for c in cells}) == pes, s + ": duplicate PE rows"
        vals = [float(c[2]) for c in cells]
        if s == "pe_busy":
            assert all(0 <= v <= 100 for v in vals) and max(vals) > 0, "busy % out of range"
            scaled = [v / 100.0 for v in vals]
        else:
            # wavelets per cycle of link capacity: 0..1, the count over the run's cycles
            assert all(0 <= v <= 1 for v in vals), s + ": a link over its capacity"
            for c in cells:
                assert abs(float(c[2]) - int(c[3]) / cycles) < 1e-6, s + ": value is not wavelets / cycles: %r" % c
                total_link += int(c[3])
            scaled = vals
        # the fixed scale: each PE's colour is its value's place between lo and hi percent
        seen = colours(imgs[s][2])
        for c, v in zip(cells, scaled):
            if s != "pe_busy" and int(c[3]) == 0:
                continue  # an edge port without a link is grey, not zero
            t = (100 * v - lo) / (hi - lo)
            assert near(seen, colormap(t)), "%s: PE (%s,%s) = %s is not coloured on the %g:%g scale" % (s, c[0], c[1], c[2], lo, hi)
    assert total_link == report["links"]["wavelet_hops"], "link CSVs sum to %d, report says %d hops" % (total_link, report["links"]["wavelet_hops"])

check_heat(os.path.join(tmp, "heat1"), 0, 100)
check_heat(os.path.join(tmp, "heat_half"), 0, 50)
assert open(os.path.join(tmp, "heat1", "pe_busy.csv")).read() == open(os.path.join(tmp, "heat_half", "pe_busy.csv")).read()
PY

# Above 256 PEs the trace has one counter track per row.
cat > "$TMP/rows.wir" <<'WIR'
module @rows {
  func @main(%x: f32[64, 64]) -> f32[64, 64] {
    %e = exp(%x) : f32[64, 64]
    %y = softmax(%e) {axis = -1} : f32[64, 64]
    return %y
  }
}
WIR
python3 "$SRC/tests/tools/npy.py" "$TMP/rows_x.npy" 64,64 3 1.0
waferc "$TMP/rows.wir" -o "$TMP/rplan" --target=wse2 --mesh=32x32 || fail "waferc (rows) exited $?"
waferrun "$TMP/rplan" -q --input x="$TMP/rows_x.npy" --trace "$TMP/rows.json" || fail "waferrun (rows) exited $?"
python3 - "$TMP/rows.json" <<'PY' || fail "row-mode trace check failed"
import json, sys
t = json.load(open(sys.argv[1]))
assert t["otherData"]["tracks"] == "row" and t["otherData"]["mesh"] == [32, 32]
last = {}
for e in t["traceEvents"]:
    if e["ph"] != "C":
        continue
    row = e["name"]
    assert row.startswith("row ") and 0 <= int(row[4:]) < 32
    assert e["ts"] > last.get(row, -1), row + ": counter timestamps not increasing"
    last[row] = e["ts"]
    for k in ("compute", "fabric", "async"):
        assert 0 <= e["args"][k] <= 32, "count outside the row: %r" % e
assert len(last) == 32, "expected a counter track per row, got %d" % len(last)
PY
# Cannon's shifts are async streams under compute: each PE's engines get tracks of their own
# holding comm spans, and the last op's mesh-wide span is there like every other.
waferc "$SRC/examples/mlp_softmax.wir" -o "$TMP/cplan" --target=test4x4 --gemm-algo=cannon -q || fail "waferc (cannon) exited $?"
waferrun "$TMP/cplan" --input x="$x" --report "$TMP/creport.json" --trace "$TMP/cannon.json" >"$TMP/csummary.txt" ||
  fail "waferrun (cannon) exited $?"
python3 - "$TMP" "$SRC/tests/tools" <<'PY' || fail "Cannon trace check failed"
import json, os, re, sys
tmp = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from trace_check import check_trace
report = json.load(open(os.path.join(tmp, "creport.json")))
meta, cats, names = check_trace(os.path.join(tmp, "cannon.json"), report)
assert meta["complete"] is True
t = json.load(open(os.path.join(tmp, "cannon.json")))["traceEvents"]
asyn = [e for e in t if e["ph"] == "X" and e.get("args", {}).get("async")]
pes_with = {names[e["tid"]].split(" async")[0] for e in asyn}
assert len(pes_with) == report["pes"]["count"], "async streams on %d of %d PEs" % (len(pes_with), report["pes"]["count"])
assert any(e["cat"] == "comm" for e in asyn), "no async comm span"
assert report["pes"]["overlap_cycles"] > 0, "Cannon should overlap its shifts with compute"
m = re.search(r"trace: +\S+, (\d+) events", open(os.path.join(tmp, "csummary.txt")).read())
assert m and int(m.group(1)) == len(t), "printed event count differs from the file"
PY
echo "trace_heatmap: trace valid and deterministic; heatmaps valid"
