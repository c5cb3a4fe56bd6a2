#!/usr/bin/env bash
# wafer-moe (docs/moe.md) on small systems:
#  1. mapping on Fig. 8's example (4x4 dies, TP=4): the JSON has baseline, er and her with
#     all_to_all_us, allreduce_us, ftd_area, avg_hops; ER halves the FTD's hops (8/3 -> 4/3),
#     shrinks its area (9 -> 4) and cuts the all-to-all about 2x; its two-hop rings cost more
#     allreduce; the allreduce without its all-gather half is faster, but without it ER's
#     dispatch must fetch shards from every group member and slows; --heatmap writes the
#     link maps (PNG + CSV) whose dispatch bytes match the JSON's busiest link;
#  2. mapping across two wafers: HER keeps the all-to-all inside each wafer (no byte crosses a
#     border) and beats the baseline's communication;
#  3. balance over a generated trace: none, greedy, topology and non_invasive with
#     max_over_avg_load, critical_migration_us, moe_latency_us; every balancer lowers the
#     peak load, the non-invasive one puts no copy on the critical path while the invasive
#     ones do, and topology-aware copies travel fewer hops than greedy ones;
#  4. a trace written by `wafer-moe trace` and read back by --trace gives the same result as
#     the generator; a malformed trace is exit 1 naming its line; bad command lines exit 2.
set -euo pipefail
command -v wafer-moe >/dev/null || { echo "wafer-moe not built (no SimGrid): skipped"; exit 0; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
wafer-moe mapping --dies=4x4 --tp=4 --model=deepseek-v3 --tokens=256 --heatmap "$out/heat" > "$out/m.json"
wafer-moe mapping --dies=4x4 --wafers=2 --tp=4 --model=qwen3 --tokens=256 > "$out/w.json"
wafer-moe balance --dies=4x4 --model=qwen3 --gen=mixed --iterations=40 --tokens=1024 > "$out/b.json"
wafer-moe trace --gen=mixed --model=qwen3 --iterations=40 --tokens=1024 -o "$out/t.trace"
wafer-moe balance --dies=4x4 --model=qwen3 --trace="$out/t.trace" --tokens=1024 > "$out/bt.json"
python3 - "$out" <<'PY'
import csv, json, os, sys
d = sys.argv[1]
m = json.load(open(d + "/m.json"))
for k in ("baseline", "er", "her"):
    for f in ("all_to_all_us", "allreduce_us", "ftd_area", "avg_hops"):
        assert f in m[k] and m[k][f] >= 0, (k, f)
    assert m[k]["all_to_all_us"] > 0 and m[k]["allreduce_us"] > 0, k
b, e = m["baseline"], m["er"]
assert b["ftd_area"] == 9 and e["ftd_area"] == 4, (b["ftd_area"], e["ftd_area"])
assert abs(b["avg_hops"] - 8 / 3) < 1e-9 and abs(e["avg_hops"] - 4 / 3) < 1e-9, (b["avg_hops"], e["avg_hops"])
assert b["all_to_all_us"] > 1.8 * e["all_to_all_us"], (b["all_to_all_us"], e["all_to_all_us"])
assert e["allreduce_us"] > b["allreduce_us"], "ER's two-hop rings should cost more allreduce"
for k in ("baseline", "er"):
    assert m[k]["allreduce_without_ag_us"] < m[k]["allreduce_us"], k
    assert m[k]["all_to_all_eq1_us"] > 0, k
# without the all-gather a die fetches shards from every group member: ER loses its short FTDs
assert e["all_to_all_without_ag_us"] > 1.5 * e["all_to_all_us"], (e["all_to_all_without_ag_us"], e["all_to_all_us"])
# the heatmaps: 4 directions x (dispatch, allreduce) x 3 mappings, PNG + CSV, and the link CSVs
for k in ("baseline", "er", "her"):
    for ph in ("dispatch", "allreduce"):
        for dn in "ewns":
            for ext in ("png", "csv"):
                p = "%s/heat/%s_%s_link_%s.%s" % (d, k, ph, dn, ext)
                assert os.path.getsize(p) > 0, p
rows = list(csv.DictReader(open(d + "/heat/er_dispatch_links.csv")))
assert len(rows) == 48, len(rows)   # 4x4 mesh: 24 links each way
busiest = max(float(r["bytes"]) for r in rows)
assert abs(busiest / 1e6 - e["dispatch_max_link_mb"]) < 1e-6 * busiest, (busiest, e["dispatch_max_link_mb"])
assert open(d + "/heat/er_dispatch_link_e.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n"

w = json.load(open(d + "/w.json"))
assert w["wafers"] == [2, 1], w["wafers"]
assert w["her"]["dispatch_cross_wafer_mb"] == 0, w["her"]
assert w["baseline"]["dispatch_cross_wafer_mb"] > 0, w["baseline"]
assert w["her"]["comm_us"] < w["baseline"]["comm_us"], (w["her"]["comm_us"], w["baseline"]["comm_us"])

bal = json.load(open(d + "/b.json"))
names = ("none", "greedy", "topology", "non_invasive")
for k in names:
    for f in ("max_over_avg_load", "critical_migration_us", "moe_latency_us"):
        assert f in bal[k], (k, f)
    assert bal[k]["max_over_avg_load"] >= 1 and bal[k]["moe_latency_us"] > 0, k
assert bal["none"]["critical_migration_us"] == 0 and bal["none"]["expert_copies"] == 0
for k in names[1:]:
    assert bal[k]["max_over_avg_load"] < bal["none"]["max_over_avg_load"], (k, bal[k]["max_over_avg_load"])
    assert bal[k]["expert_copies"] > 0, k
assert bal["non_invasive"]["critical_migration_us"] == 0, bal["non_invasive"]
assert bal["greedy"]["critical_migration_us"] > 0 and bal["topology"]["critical_migration_us"] > 0
assert bal["topology"]["copy_avg_hops"] < bal["greedy"]["copy_avg_hops"], \
    (bal["topology"]["copy_avg_hops"], bal["greedy"]["copy_avg_hops"])

bt = json.load(open(d + "/bt.json"))
for k in names:
    assert bt[k] == bal[k], (k, bt[k], bal[k])
PY

# errors
printf 'experts 128\n1 2 3\n' > "$out/bad.trace"
set +e
wafer-moe balance --dies=4x4 --model=qwen3 --trace="$out/bad.trace" 2> "$out/err"; rc=$?
set -e
[ "$rc" = 1 ] || { echo "malformed trace: exit $rc, expected 1"; exit 1; }
grep -q "bad.trace:2:" "$out/err" || { echo "malformed trace: no line number"; cat "$out/err"; exit 1; }
for args in "mapping --dies=4x4 --model=qwen3 --tokens=256" "mapping --dies=4x4 --tp=4 --model=qwen9" \
            "mapping --dies=4 --tp=4 --model=qwen3" "balance --dies=4x4 --model=qwen3 --gen=chat --iterations=3" \
            "mapping --dies=4x4 --tp=4 --model=qwen3 --tokenz=3" "mappin"; do
  set +e
  wafer-moe $args 2>/dev/null; rc=$?
  set -e
  [ "$rc" = 2 ] || { echo "wafer-moe $args: exit $rc, expected 2"; exit 1; }
done
wafer-moe --help | grep -q "wafer-moe mapping"
wafer-moe --version | grep -q "wafer-moe (waferc)"
echo "wafer_moe: mapping, heatmaps, hierarchical mapping, balancers, traces and errors checked"
