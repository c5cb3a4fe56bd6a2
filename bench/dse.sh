#!/usr/bin/env bash
# WATOS's figures from wafer-dse (die level: 1F1B on SimGrid), each beside the paper's claim.
# Results: BENCHMARKS.md "Training co-exploration (issue 20)". Every number printed is measured
# here; the paper's column is what WATOS reports (ASTRA-sim with a profiled operator table).
#
#   bench/dse.sh              # Fig. 15 (recomputation on and off), 16, 18, 22, search time
#   QUICK=1 bench/dse.sh      # recomputation on only, no fault runs
#   OP_COSTS=roofline bench/dse.sh   # wafer-dse --op-costs (default: its own, the simulated table)
set -euo pipefail
dse=${WAFER_DSE:-wafer-dse}
if [ -n "${OP_COSTS:-}" ]; then dse="$dse --op-costs=$OP_COSTS"; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
models=llama2-30b,llama3-70b,gpt-175b,gshard-137b
wafers=config1,config2,config3,config4
$dse --models=$models --wafers=$wafers --recompute=on > "$out/on.json"
if [ -z "${QUICK:-}" ]; then
  $dse --models=$models --wafers=$wafers --recompute=off > "$out/off.json"
  for r in 0.05 0.1 0.2; do
    $dse --models=$models --wafers=config3 --faults=links:$r,dies:$r --no-sim > "$out/f_$r.json"
  done
fi
python3 - "$out" <<'PY'
import json, os, sys
d = sys.argv[1]
J = lambda n: json.load(open(os.path.join(d, n + ".json")))
on = J("on")
models = list(on["best"])
wafers = list(on["best"][models[0]])
def tput(x):
    return x["throughput_tflops"] if x and x.get("iteration_s") else None
def fmt(v, f="{:.2f}"):
    return f.format(v) if v is not None else "-"

runs = [("on", on)] + ([("off", J("off"))] if os.path.exists(os.path.join(d, "off.json")) else [])
for tag, r in runs:
    print(f"\nFig. 15 ({'with' if tag == 'on' else 'without'} recomputation): throughput normalized to the slowest wafer "
          "(SimGrid 1F1B; paper: Config 3 best for every model)")
    print("| model | " + " | ".join(wafers) + " | ranking | analytic ranking |")
    print("|---|" + "---|" * (len(wafers) + 2))
    for m in models:
        t = [r["best"][m][w]["throughput_tflops"] if r["best"][m][w] else None for w in wafers]
        lo = min(x for x in t if x is not None) if any(x is not None for x in t) else None
        cells = [fmt(x / lo) if x is not None else "OOM" for x in t]
        print(f"| {m} | " + " | ".join(cells) + f" | {' > '.join(r['ranking'][m])} | {' > '.join(r['analytic_ranking'][m])} |")
    print("\nchosen strategy per wafer (TP x PP, split, TP shape, recomputed op-layers, Mem_pairs):")
    for m in models:
        row = []
        for w in wafers:
            b = r["best"][m][w]
            row.append(f"{w}: " + (f"{b['tp']}x{b['pp']} {b['tp_split']} {b['tp_shape']} rec={sum(b['recomputed_op_layers'])} "
                                   f"pairs={len(b['mem_pairs'])}" if b else "OOM"))
        print(f"  {m}: " + "; ".join(row))

print("\nFig. 16: WATOS against the baselines on each model's best wafer, throughput ratio "
      "(paper: 2.74x Megatron-wafer, 1.53x Cerebras, on Config 3)")
print("| model | wafer | WATOS TFLOPS | Megatron-like (TP, PP) | x Megatron | Cerebras-like | x Cerebras | analytic model |")
print("|---|---|---|---|---|---|---|---|")
for m in models:
    w = on["ranking"][m][0]
    b, bl = on["best"][m][w], on["baselines"][m][w]
    mg, cb = tput(bl["megatron"]), tput(bl["cerebras"])
    an = tput(bl["analytic"])
    mgs = f"{fmt(mg, '{:.0f}')} ({bl['megatron'].get('tp', '-')}, {bl['megatron'].get('pp', '-')})"
    print(f"| {m} | {w} | {b['throughput_tflops']:.0f} | {mgs} | {fmt(b['throughput_tflops'] / mg if mg else None)} | "
          f"{fmt(cb, '{:.0f}')} | {fmt(b['throughput_tflops'] / cb if cb else None)} | {fmt(an, '{:.0f}')} |")

print("\nFig. 18: ablation on each model's best wafer, throughput normalized to the baseline "
      "(paper: rises at each step)")
print("| model | wafer | baseline | +R | +M | +GA |")
print("|---|---|---|---|---|---|")
for m in models:
    a = on["ablation"][m]
    base = tput(a["baseline"])
    cells = [fmt(tput(a[k]) / base if base and tput(a[k]) else None, "{:.4f}") for k in ("baseline", "+R", "+M", "+GA")]
    print(f"| {m} | {a['wafer']} | " + " | ".join(cells) + " |")

fr = [r for r in ("0.05", "0.1", "0.2") if os.path.exists(os.path.join(d, f"f_{r}.json"))]
if fr:
    print("\nFig. 22: faults on Config 3 (links and dies at the same rate), robust over non-robust iteration time "
          "(alpha-beta 1F1B)")
    print("| model | " + " | ".join(f"rate {r}" for r in fr) + " |")
    print("|---|" + "---|" * len(fr))
    for m in models:
        cells = []
        for r in fr:
            f = J(f"f_{r}").get("faults", {}).get(m, {}).get("config3")
            if not f:
                cells.append("-")
            else:
                g = f.get("gain")
                cells.append(f"{g:.3f} ({f['dead_dies']} dies, {f['dead_links']} links)" if g else
                             f"robust {fmt(tput(f['robust']), '{:.0f}')} / non-robust OOM ({f['dead_dies']} dies)")
        print(f"| {m} | " + " | ".join(cells) + " |")

print(f"\nsearch: {on['search_s']:.1f} s host time for {len(models)} models x {len(wafers)} wafers "
      f"(schedulers {on['schedulers_s']:.1f} s, the rest SimGrid, the ablation's and baselines' searches); "
      f"GA {on.get('ga_s_per_100_steps', 0):.4f} s per 100 steps (paper: 0.274 s per 100 steps)")
PY
