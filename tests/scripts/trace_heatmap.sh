#!/usr/bin/env bash
# waferrun --trace and --heatmap (docs/report-format.md): the trace is valid Chrome Trace
# Event JSON (required fields, per-track monotonic timestamps, proper nesting, metadata),
# byte-identical across runs, capped by --trace-limit with the drop recorded; the heatmaps are
# valid PNGs of the same size with a CSV of one row per PE.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, NODE, NPY, TMP, fail, n

x=$SRC/examples/mlp_softmax_x.npy
waferc "$SRC/examples/mlp_softmax.wir" -o "$TMP/plan" --target=test4x4 || fail "waferc exited $?"
for run in 1 2; do
  waferrun "$TMP/plan" -q --input x="$x" --report "$TMP/report$run.json" --trace "$TMP/trace$run.json" \
    --heatmap "$TMP/heat$run" || fail "waferrun exited $?"
done
cmp "$TMP/trace1.json" "$TMP/trace2.json" || fail "traces differ between two runs"
for f in "$TMP"/heat1/*; do
  cmp "$f" "$TMP/heat2/$(basename "$f")" || fail "heatmap $(basename "$f") differs between two runs"
done
waferrun "$TMP/plan" -q --input x="$x" --trace "$TMP/small.json" --trace-limit 10 || fail "limited run exited $?"
waferrun "$TMP/plan" -q --input x="$x" --trace "$TMP/bad.json" --trace-limit 0 2>/dev/null \
  && fail "--trace-limit 0 accepted"

python3 - "$TMP" <<'PY' || fail "trace/heatmap check failed"
import json, os, struct, sys, zlib
tmp = sys.argv[1]
report = json.load(open(os.path.join(tmp, "report1.json")))
cycles, pes = report["cycles"]["total"], report["pes"]["count"]

def check_trace(path, limit=None):
    t = json.load(open(path))
    meta, evs = t["otherData"], t["traceEvents"]
    assert meta["tracks"] == "pe", "a 4x4 mesh gets one track per PE"
    assert meta["mesh"] == [4, 4] and meta["events"] >= 0 and meta["dropped_events"] >= 0
    assert meta["complete"] == (meta["dropped_events"] == 0)
    tracks, names, cats = {}, {}, set()
    for e in evs:
        for k in ("name", "ph", "pid"):
            assert k in e, "event without %s: %r" % (k, e)
        if e["ph"] == "M":
            if e["name"] == "thread_name":
                names[e["tid"]] = e["args"]["name"]
            continue
        assert isinstance(e["ts"], int) and 0 <= e["ts"] <= cycles, "ts outside the run: %r" % e
        if e["ph"] == "X":
            assert isinstance(e["dur"], int) and e["dur"] > 0, "bad dur: %r" % e
            assert e["ts"] + e["dur"] <= cycles, "span past the end of the run: %r" % e
            cats.add(e["cat"])
            tracks.setdefault(e["tid"], []).append(e)
    spans = sum(len(v) for v in tracks.values())
    assert spans <= meta["events"], "more spans than the recorded event count"
    for tid, es in tracks.items():
        assert tid in names, "track %d has no name" % tid
        stack, last = [], -1
        for e in es:  # file order
            assert e["ts"] >= last, "track %d: ts not monotonic" % tid
            last = e["ts"]
            while stack and stack[-1] <= e["ts"]:
                stack.pop()
            assert not stack or e["ts"] + e["dur"] <= stack[-1], "track %d: spans overlap without nesting: %r" % (tid, e)
            stack.append(e["ts"] + e["dur"])
    return meta, cats, len(names)

meta, cats, ntracks = check_trace(os.path.join(tmp, "trace1.json"))
assert meta["dropped_events"] == 0, "the default limit should hold a 4x4 run"
assert ntracks == pes, "one named track per PE: %d tracks, %d PEs" % (ntracks, pes)
assert {"op", "compute", "comm"} <= cats, "categories missing: %r" % cats
meta, cats, _ = check_trace(os.path.join(tmp, "small.json"))
assert meta["limit"] == 10 and meta["events"] == 10 and meta["dropped_events"] > 0
assert meta["complete"] is False

def png_size(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path + ": not a PNG"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, path + ": bad CRC in " + kind.decode()
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype == 2, path + ": expected 8-bit RGB"
            size = (w, h)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h = size
    assert len(zlib.decompress(idat)) == h * (1 + 3 * w), path + ": pixel data does not match IHDR"
    return size

heat = os.path.join(tmp, "heat1")
stems = ["pe_busy", "link_n", "link_e", "link_s", "link_w"]
assert sorted(os.listdir(heat)) == sorted([s + ".png" for s in stems] + [s + ".csv" for s in stems])
sizes = {png_size(os.path.join(heat, s + ".png")) for s in stems}
assert len(sizes) == 1, "heatmaps of one mesh differ in size: %r" % sizes
w, h = sizes.pop()
assert w >= 4 * 48 and h >= 4 * 48, "a 4x4 mesh must be scaled up (48 px per PE), got %dx%d" % (w, h)
for s in stems:
    rows = open(os.path.join(heat, s + ".csv")).read().splitlines()
    assert rows[0].split(",")[:3] == ["x", "y", "value"], s + ": bad CSV header"
    cells = [tuple(r.split(",")) for r in rows[1:]]
    assert len(cells) == pes, "%s.csv: %d rows for %d PEs" % (s, len(cells), pes)
    assert len({(c[0], c[1]) for c in cells}) == pes, s + ": duplicate PE rows"
    vals = [float(c[2]) for c in cells]
    if s == "pe_busy":
        assert all(0 <= v <= 100 for v in vals) and max(vals) > 0, "busy % out of range"
    else:
        assert all(v >= 0 for v in vals)
total_link = sum(float(r.split(",")[2]) for s in stems[1:] for r in open(os.path.join(heat, s + ".csv")).read().splitlines()[1:])
assert total_link == report["links"]["wavelet_hops"], "link CSVs sum to %g, report says %d hops" % (total_link, report["links"]["wavelet_hops"])
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
    assert 0 <= e["args"]["compute"] <= 32 and 0 <= e["args"]["fabric"] <= 32, "count outside the row: %r" % e
assert len(last) == 32, "expected a counter track per row, got %d" % len(last)
PY
echo "trace_heatmap: trace valid and deterministic; heatmaps valid"
