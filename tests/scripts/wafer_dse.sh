#!/usr/bin/env bash
# wafer-dse (docs/dse.md) on small runs:
#  1. one model on two Table II wafers: the JSON has ranking, best (TP, PP, placement,
#     recomputation, iteration time from SimGrid and from the alpha-beta evaluator), ablation
#     (baseline, +R, +M, +GA), baselines (megatron, cerebras, analytic) and search_s; the
#     ranking is ordered by iteration time; every chosen plan uses at most the wafer's dies; the
#     ablation never falls; --heatmap writes compute, DRAM and D2D maps (PNG + CSV);
#  2. faults: the robust scheduler is no slower than the non-robust one (alpha-beta); with
#     SimGrid the fault results come from SimGrid (the platform's routes go round dead links),
#     alongside alpha-beta's, which charges the TP rings' detours round dead links too, and
#     the same seed gives the same results;
#  3. the same seed gives the same answer; --enumerate lists candidates under the area, and a
#     candidate's name is a wafer;
#  4. bad command lines exit 2 naming the problem, a target without a core array exits 1.
set -euo pipefail
command -v wafer-dse >/dev/null || { echo "wafer-dse not built (no SimGrid): skipped"; exit 0; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
wafer-dse --models=llama2-30b --wafers=config3,config1 --ga-steps=40 --heatmap "$out/heat" > "$out/a.json"
wafer-dse --models=llama2-30b --wafers=config3,config1 --ga-steps=40 --no-sim > "$out/b.json"
wafer-dse --models=llama2-30b --wafers=config3,config1 --ga-steps=40 --no-sim > "$out/b2.json"
wafer-dse --models=llama2-30b --wafers=config3 --ga-steps=20 --no-sim --faults=links:0.1,dies:0.1 --seed=3 > "$out/f.json"
wafer-dse --models=llama2-30b --wafers=config3 --ga-steps=20 --faults=links:0.15 --seed=3 > "$out/fs.json"
wafer-dse --models=llama2-30b --wafers=config3 --ga-steps=20 --faults=links:0.15 --seed=3 > "$out/fs2.json"
wafer-dse --enumerate > "$out/e.json"
wafer-dse --models=llama2-30b --wafers=enum-c18-k5 --ga-steps=10 --no-sim > "$out/en.json"
python3 - "$out" <<'PY'
import json, os, sys
d = sys.argv[1]
a = json.load(open(d + "/a.json"))
for k in ("ranking", "best", "ablation", "baselines", "search_s"):
    assert k in a, k
m = "llama2-30b"
r = a["ranking"][m]
assert sorted(r) == ["config1", "config3"], r
its = [a["best"][m][w]["iteration_s"] for w in r]
assert its == sorted(its), its
dies = {"config1": 64, "config3": 56}
for w, b in a["best"][m].items():
    assert b["tp"] * b["pp"] <= dies[w], (w, b["tp"], b["pp"])
    assert len(b["placement"]) == b["pp"]
    assert b["iteration_source"] == "simgrid-1f1b"
    assert b["iteration_s"] > 0 and abs(b["iteration_s"] - b["iteration_ab_s"]) / b["iteration_ab_s"] < 0.2, b
ab = a["ablation"][m]
t = [ab[k]["throughput_tflops"] for k in ("baseline", "+R", "+M", "+GA")]
assert all(y >= x * 0.999 for x, y in zip(t, t[1:])), t
for k in ("megatron", "cerebras", "analytic"):
    assert k in a["baselines"][m]["config3"], k
assert a["baselines"][m]["config3"]["megatron"]["tp"] == 8
assert a["search_s"] > 0
for w in ("config3", "config1"):
    for kind in ("compute", "dram"):
        for ext in ("png", "csv"):
            assert os.path.getsize(f"{d}/heat/{m}_{w}_{kind}.{ext}") > 0, (w, kind, ext)
    assert os.path.getsize(f"{d}/heat/{m}_{w}_d2d_links.csv") > 0
b, b2 = json.load(open(d + "/b.json")), json.load(open(d + "/b2.json"))
assert b["best"] == b2["best"] and b["ranking"] == b2["ranking"], "same seed, same answer"
assert b["best"][m]["config3"]["iteration_source"] == "alpha-beta-1f1b"
f = json.load(open(d + "/f.json"))["faults"][m]["config3"]
assert f["dead_dies"] > 0, f
rob = f["robust"]["iteration_s"]
non = f["non_robust"]["iteration_s"]
assert rob is not None and (non is None or non >= rob * 0.999), f
fs = json.load(open(d + "/fs.json"))["faults"][m]["config3"]
assert fs["dead_links"] > 0 and fs["iteration_source"] == "simgrid-1f1b", fs
for k in ("robust", "non_robust"):
    t, ab = fs[k]["iteration_s"], fs[k]["iteration_ab_s"]
    assert t > 0 and t != ab and abs(t - ab) / ab < 0.2, (k, fs)
assert fs == json.load(open(d + "/fs2.json"))["faults"][m]["config3"], "same seed, same fault results"
# the non-robust plan is the healthy wafer's (no die is dead here) on links some of which are
# dead inside its TP rings: alpha-beta charges the rings' detours (train_sched.c, ring_eq1)
healthy_ab = json.load(open(d + "/fs.json"))["best"][m]["config3"]["iteration_ab_s"]
assert fs["non_robust"]["iteration_ab_s"] > healthy_ab * 1.001, (healthy_ab, fs)
e = json.load(open(d + "/e.json"))["candidates"]
assert len(e) >= 8 and all(c["dram_gb_per_die"] > 0 for c in e)
en = json.load(open(d + "/en.json"))
assert en["ranking"][m] == ["enum-c18-k5"] and en["best"][m]["enum-c18-k5"]["tp"] >= 1
print("wafer-dse: ok")
PY
set +e
wafer-dse --models=llama-7b > /dev/null 2> "$out/err"; rc=$?
[ $rc -eq 2 ] && grep -q "unknown model 'llama-7b'" "$out/err" || { echo "unknown model: rc $rc"; cat "$out/err"; exit 1; }
wafer-dse --wafers=nosuchwafer --models=llama2-30b > /dev/null 2> "$out/err"; rc=$?
[ $rc -eq 2 ] && grep -q "unknown die target 'nosuchwafer'" "$out/err" || { echo "unknown wafer: rc $rc"; cat "$out/err"; exit 1; }
wafer-dse --recompute=maybe > /dev/null 2> "$out/err"; rc=$?
[ $rc -eq 2 ] && grep -q "expected on or off" "$out/err" || { echo "bad recompute: rc $rc"; exit 1; }
wafer-dse --faults=links:2 > /dev/null 2> "$out/err"; rc=$?
[ $rc -eq 2 ] && grep -q "bad rate" "$out/err" || { echo "bad faults: rc $rc"; cat "$out/err"; exit 1; }
wafer-dse --modles=gpt-175b > /dev/null 2> "$out/err"; rc=$?
[ $rc -eq 2 ] && grep -q "did you mean '--models'" "$out/err" || { echo "typo: rc $rc"; cat "$out/err"; exit 1; }
wafer-dse --models=llama2-30b --wafers=moe-b200 > /dev/null 2> "$out/err"; rc=$?
[ $rc -eq 1 ] && grep -q "no core array" "$out/err" || { echo "no core array: rc $rc"; cat "$out/err"; exit 1; }
wafer-dse --models=llama2-30b --wafers=enum-c99-k1 > /dev/null 2> "$out/err"; rc=$?
[ $rc -eq 2 ] && grep -q "no enumerated candidate" "$out/err" || { echo "bad enum: rc $rc"; exit 1; }
wafer-dse --help | grep -q "usage: wafer-dse" || exit 1
wafer-dse --version | grep -q "wafer-dse (waferc)" || exit 1
echo "wafer-dse errors: ok"
