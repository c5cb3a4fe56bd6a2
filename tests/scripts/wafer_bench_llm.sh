#!/usr/bin/env bash
# wafer-bench llm (BENCHMARKS.md, "Full-size estimates") on the small built-in test-tiny configuration:
#  1. the JSON object has both figures, cost_model and simulated, each with prefill and decode
#     tokens/s, time to first token and time per token, and the per-op breakdowns; every
#     figure is positive, and prefill and decode differ (one P-token pass against one token);
#  2. the prefill sample runs on the prefill mesh itself here (S = W), so its scaled layer is
#     the simulated layer as is; a smaller sample (--sample-mesh) scales its mesh-stepped ops;
#  3. --no-sim prints the cost model alone; bad command lines exit 2;
#  4. decode with kv heads colocated with q (--gqa=colocate, and auto's choice) and replicated.
set -euo pipefail
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
wafer-bench llm --model=test-tiny --prefill-mesh=16x16 --decode-mesh=8x8 --prompt=64 --generate=8 --gqa=replicate \
  > "$out/a.json"
wafer-bench llm --model=test-tiny --prefill-mesh=16x16 --decode-mesh=8x8 --prompt=64 --generate=8 \
  --sample-mesh=8 --gqa=replicate > "$out/b.json"
wafer-bench llm --model=test-tiny --prefill-mesh=16x16 --decode-mesh=8x8 --prompt=64 --generate=8 --no-sim \
  --gqa=replicate > "$out/c.json"
# one decode region on the wafer (376x498 of wse2's 750x994): both layers and the head share it
wafer-bench llm --model=test-tiny --prefill-mesh=16x16 --decode-mesh=376x498 --prompt=64 --no-sim > "$out/d.json"
# one layer's decode step over a PE's SRAM: no capacity, said on stderr, the cost model still printed
wafer-bench llm --model=test-tiny --prefill-mesh=16x16 --decode-mesh=1x1 --prompt=64 --no-sim > "$out/e.json" \
  2> "$out/e.err"
grep -q "kv_capacity: null" "$out/e.err" || { echo "no word of the null capacity"; cat "$out/e.err"; exit 1; }
# kv heads colocated with q in decode (each held once): asked for, and auto's
wafer-bench llm --model=test-tiny --prefill-mesh=16x16 --decode-mesh=8x8 --prompt=64 --generate=8 --gqa=colocate \
  > "$out/f.json"
wafer-bench llm --model=test-tiny --prefill-mesh=16x16 --decode-mesh=8x8 --prompt=64 --generate=8 --no-sim > "$out/g.json"
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
a = json.load(open(d + "/a.json"))
b = json.load(open(d + "/b.json"))
c = json.load(open(d + "/c.json"))
assert a["prefill_mesh"] == [16, 16] and a["decode_mesh"] == [8, 8], a["prefill_mesh"]
assert a["prompt"] == 64 and a["generate"] == 8 and a["decode_context"] == 68
for fig in ("cost_model", "simulated"):
    f = a[fig]
    for k in ("prefill_tokens_per_s", "decode_tokens_per_s", "time_to_first_token_s", "decode_time_per_token_s",
              "prefill_cycles", "decode_step_cycles"):
        assert f[k] > 0, (fig, k, f[k])
    assert f["prefill_tokens_per_s"] != f["decode_tokens_per_s"], fig
    # tokens/s and the times say the same thing
    assert abs(f["prefill_tokens_per_s"] * f["time_to_first_token_s"] - 64) < 1e-3 * 64, fig
    assert abs(f["decode_tokens_per_s"] * f["decode_time_per_token_s"] - 1) < 1e-3, fig
cm = a["cost_model"]
names = [o["op"] for o in cm["prefill_layer_ops"]]
for op in ("q_proj", "attention", "o_proj", "gate_up_proj", "down_proj", "input_norm"):
    assert op in names, (op, names)
dnames = [o["op"] for o in cm["decode_layer_ops"]]
assert "decode_attention" in dnames and "q_proj" in dnames, dnames
assert all(o["kind"].startswith("meshgemv") for o in cm["decode_layer_ops"] if o["op"].endswith("_proj"))
assert all(o["kind"] == "meshgemm" for o in cm["prefill_layer_ops"] if o["op"].endswith("_proj"))
# the per-op breakdowns add up to the layer
assert sum(o["count"] * o["cycles"] for o in cm["prefill_layer_ops"]) == cm["prefill_layer_cycles"]
assert sum(o["count"] * o["cycles"] for o in cm["decode_layer_ops"]) == cm["decode_layer_cycles"]
assert cm["prefill_cycles"] == cm["prefill_layer_cycles"] * a["config"]["layers"] + cm["prefill_once_cycles"]
sim = a["simulated"]
ps = sim["prefill_sample"]
assert ps["mesh"] == [16, 16] and ps["step_scale"] == 1 and ps["cycles"] > 0
assert sim["prefill_layer_cycles"] == ps["cycles"]
# the sample's ops are the layer's, lowered as the cost model assumes
ops = [o["op"] for o in ps["sample_ops"]]
assert ops.count("dist.gemm") == 7 and "attention" in ops, ops
# the final norm and LM head are sampled too; the embedding gather is the cost model's
once = sim["once"]
assert once["prefill_sample_cycles"] > 0 and once["decode_sample_cycles"] > 0
assert once["prefill_cycles"] == once["prefill_sample_cycles"] + once["embedding_from_cost_model"][0]
assert sim["prefill_cycles"] == round(sim["prefill_layer_cycles"] * a["config"]["layers"]) + once["prefill_cycles"]
dops = [o["op"] for o in sim["decode_sample"]["sample_ops"]]
assert dops.count("dist.gemv") == 7 and "decode_attention" in dops, dops
assert sim["decode_sample"]["cache_tokens_per_row"] == 9  # ceil((64 + 8 / 2) / 8)
# the decode sample's GEMVs run the K-tree shapes the cost model tuned (decode_ktree), so each
# one's plan prediction is the cost model's figure for that projection
kt = a["decode_ktree"]
assert all(kt[ax]["k"] in (1, 2) and kt[ax]["groups"] >= 0 for ax in ("along_y", "along_x")), kt
cmc = {o["op"]: o["cycles"] for o in cm["decode_layer_ops"]}
pred = {o["result"]: o["predicted"] for o in sim["decode_sample"]["sample_ops"] if o["op"] == "dist.gemv"}
for res, op in (("wq_out", "q_proj"), ("wk_out", "kv_proj"), ("wo_out", "o_proj"), ("wg_out", "gate_up_proj"),
                ("wd_out", "down_proj")):
    assert pred[res] == cmc[op], (res, pred[res], op, cmc[op])
assert sim["decode_step_cycles"] == sim["decode_layer_cycles"] * a["config"]["layers"] + once["decode_cycles"]
# 2. a smaller sample scales its GEMMs and attention by W / S = 2
bs = b["simulated"]["prefill_sample"]
assert bs["mesh"] == [8, 8] and bs["step_scale"] == 2
assert b["simulated"]["prefill_layer_cycles"] > bs["cycles"]
assert b["cost_model"] == a["cost_model"]
# the KV cache's capacity (Table 5) from the planner's layout of the decode sample: the cache
# slot is k and v's blocks (kv_width over 8 columns, f32); test-tiny's two layers take two
# 8x8 regions of the wafer, one each, so a row's slots are what one layer leaves of the SRAM
kv = a["kv_capacity"]
pb = kv["planner_bytes_per_pe"]
assert kv["region"] == [8, 8] and kv["regions_with_layers"] == 2 and kv["max_layers_per_region"] == 1, kv
assert pb["cache_per_slot"] == 2 * -(-a["layout"]["decode"]["kv_width"] // 8) * 4, pb
assert pb["layer_weights"] > 0 and pb["beside"] > 0 and pb["head_weights"] > 0, pb
sram = a["memory_per_pe"]["sram_bytes"]
for dt, elem in (("f32", 4), ("f16", 2)):
    f = kv[dt]
    slot = pb["cache_per_slot"] // 4 * elem
    assert f["cache_slots_per_row"] == (sram - pb["beside"] - pb["layer_weights"] // 4 * elem) // slot, (dt, f)
    # shift fills the 8 rows; concat only the last, which the 64-token prompt left 8 tokens in
    assert f["shift_max_new_tokens"] == f["cache_slots_per_row"] * 8 - 64, (dt, f)
    assert f["concat_max_new_tokens"] == f["cache_slots_per_row"] - 8, (dt, f)
    assert abs(f["shift_over_concat"] - 8) < 1e-3, f
assert kv["f16"]["cache_slots_per_row"] > 2 * kv["f32"]["cache_slots_per_row"], kv
assert c["kv_capacity"] == kv and b["kv_capacity"] == kv
d = json.load(open(sys.argv[1] + "/d.json"))
kd = d["kv_capacity"]
pd = kd["planner_bytes_per_pe"]
assert kd["regions_with_layers"] == 1 and kd["max_layers_per_region"] == 2, kd
free = sram - max(pd["beside"], pd["head_beside"]) - 2 * pd["layer_weights"] - 2 * pd["head_weights"]
assert kd["f32"]["cache_slots_per_row"] == free // (2 * pd["cache_per_slot"]), kd
assert kd["f32"]["shift_max_new_tokens"] == kd["f32"]["cache_slots_per_row"] * 498 - 64, kd
# colocated: k and v are one sub-piece of each kv head per column (test-tiny's 2 kv heads over 4
# columns each, 4 of each head's 16 columns per PE), q the two query heads' same pieces; the
# decode sample simulates; the cache slot is half the replicated one's, so more slots fit
f = json.load(open(sys.argv[1] + "/f.json"))
g = json.load(open(sys.argv[1] + "/g.json"))
lf, la = f["layout"]["decode"], a["layout"]["decode"]
assert lf["kv_colocated"] and not la["kv_colocated"] and g["layout"]["decode"]["kv_colocated"], (lf, la)
assert lf["kv_width"] == 8 * 4 and la["kv_width"] == 8 * 8 and lf["q_width"] == 8 * 2 * 4, (lf, la)
pf = f["kv_capacity"]["planner_bytes_per_pe"]
assert pf["cache_per_slot"] == 2 * 4 * 4 and pf["cache_per_slot"] < pb["cache_per_slot"], (pf, pb)
assert f["kv_capacity"]["f16"]["cache_slots_per_row"] > kv["f16"]["cache_slots_per_row"], (f["kv_capacity"], kv)
assert f["simulated"]["decode_tokens_per_s"] > 0 and f["cost_model"]["decode_tokens_per_s"] > 0, f["simulated"]
assert f["cost_model"]["prefill_tokens_per_s"] == a["cost_model"]["prefill_tokens_per_s"]
e = json.load(open(sys.argv[1] + "/e.json"))
assert e["kv_capacity"] is None and e["cost_model"]["decode_step_cycles"] > 0, e["kv_capacity"]
# 3. the cost model alone
assert c["simulated"] is None and c["cost_model"] == a["cost_model"]
print("ok: cost model prefill %.0f tok/s, decode %.0f tok/s; simulated %.0f / %.0f" % (
    cm["prefill_tokens_per_s"], cm["decode_tokens_per_s"], sim["prefill_tokens_per_s"], sim["decode_tokens_per_s"]))
PY
set +e
wafer-bench llm --model=no-such-model > /dev/null 2> "$out/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "llama3-8b" "$out/err" || { echo "unknown model: exit $rc"; cat "$out/err"; exit 1; }
set +e
wafer-bench llm --model=test-tiny --prefill-mesh=0x4 > /dev/null 2>&1; rc=$?
set -e
[ $rc -eq 2 ] || { echo "bad mesh: exit $rc"; exit 1; }
set +e
wafer-bench llm --model=test-tiny --prefill-mesh=800x800 > /dev/null 2>&1; rc=$?
set -e
[ $rc -eq 4 ] || { echo "mesh past the target: exit $rc"; exit 1; }
echo ok
