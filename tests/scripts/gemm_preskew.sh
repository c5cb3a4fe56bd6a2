#!/usr/bin/env bash
# Pre-skewed weights (docs/gemm.md, "Pre-skewed weights"): a MeshGEMM or Cannon operand that
# is a constant of the module, used only there, is written by the host in the aligned block
# order (the manifest's weights[].skew), and the lowering leaves it out of the alignment.
#  - Results equal the reference interpreter with A, B or both constant, on square and
#    non-square meshes (the lcm grid, renaming Cannon and MeshGEMM), K padded for the shifts,
#    ragged M and N, 1-wide meshes (where a whole-K operand is not pre-skewed), and batched
#    GEMMs (a shared 2-D weight and a stacked 3-D one).
#  - A constant's alignment costs 0 cycles and 0 wavelets, in the simulation: from the trace,
#    no PE moves a wavelet on a constant operand's ring colors before its first multiply, and
#    with both operands constant no PE moves any, nor spends a cycle outside its instructions
#    before that multiply. The same GEMM with graph inputs shifts and waits (the premise).
#  - The report's per-op cycles and the prediction fall; explain names the pre-skewed operands
#    and predicts alignment 0 when both are.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh"

# model NAME MODE ASHAPE BSHAPE CSHAPE: $TMP/NAME.wir with A and/or B (MODE none, a, b, ab)
# constants read from $TMP/NAME.a.npy / .b.npy, the others arguments; random data, and the
# interpreter's result in $TMP/NAME.ref/.
model() {
  local name=$1 mode=$2
  python3 "$NPY" "$TMP/$name.a.npy" "$3" 1 1.0
  python3 "$NPY" "$TMP/$name.b.npy" "$4" 2 1.0
  python3 "$SRC/tests/tools/matmul_wir.py" "$TMP" "$name" "$mode" "$3" "$4" "$5"
  local ins=()
  case $mode in *a*) ;; *) ins+=(--input a="$TMP/$name.a.npy") ;; esac
  case $mode in *b*) ;; *) ins+=(--input b="$TMP/$name.b.npy") ;; esac
  waferc "$TMP/$name.wir" --interpret "${ins[@]}" --output-dir "$TMP/$name.ref" -q || fail "$name: interpreter failed"
}

# inputs NAME MODE: the run's inputs (the operands that are not constants)
inputs() {
  local s=""
  case $2 in *a*) ;; *) s="a=$TMP/$1.a.npy" ;; esac
  case $2 in *b*) ;; *) s="$s b=$TMP/$1.b.npy" ;; esac
  echo "$s"
}

# skews PLAN: how many weights the manifest has pre-skewed
skews() {
  python3 -c 'import json,sys; print(sum("skew" in t for t in json.load(open(sys.argv[1]))["weights"]["tensors"]))' "$1/manifest.json"
}

# ---- results equal the interpreter ----
# K 14 padded for the shifts on W x H, M and N ragged: every mode on every kind of mesh; K 20
# cut evenly, and the 6x4 grid (lcm 12), with B alone
for case in "10,14 14,9 10,9 a b ab" "12,20 20,8 12,8 b"; do
  set -- $case
  for mode in "${@:4}"; do
    nm="r-${1/,/x}-${2/,/x}-$mode"
    model "$nm" $mode "$1" "$2" "$3"
    meshes="3x3 4x4 2x3 4x2 1x4 4x1"
    [ "$1" = 12,20 ] && meshes="3x2 6x4"
    for mesh in $meshes; do
      for algo in meshgemm cannon; do
        run "$nm-$mesh-$algo" "$TMP/$nm.wir" "$mesh" "$(inputs "$nm" $mode)" c "$TMP/$nm.ref/c.npy" "" --gemm-algo=$algo
        k=$(skews "$TMP/$nm-$mesh-$algo")
        # an operand whose K is split over one PE line only (1-wide meshes) is not pre-skewed
        want=${#mode}
        [ "$mesh" = 1x4 ] && [ "$mode" != b ] && want=$((want - 1))
        [ "$mesh" = 4x1 ] && [ "$mode" != a ] && want=$((want - 1))
        [ "$k" = "$want" ] || fail "$nm-$mesh-$algo: $k pre-skewed weights, expected $want"
      done
    done
  done
done
# batched: a 2-D weight shared by the batch, and a stacked 3-D one
model bs b "2,6,10" "10,8" "2,6,8"
model bk ab "3,5,12" "3,12,7" "3,5,7"
for mesh in 3x3 2x3; do
  for algo in meshgemm cannon; do
    run "bs-$mesh-$algo" "$TMP/bs.wir" "$mesh" "$(inputs bs b)" c "$TMP/bs.ref/c.npy" "" --gemm-algo=$algo
    run "bk-$mesh-$algo" "$TMP/bk.wir" "$mesh" "$(inputs bk ab)" c "$TMP/bk.ref/c.npy" "" --gemm-algo=$algo
    [ "$(skews "$TMP/bs-$mesh-$algo")" = 1 ] && [ "$(skews "$TMP/bk-$mesh-$algo")" = 2 ] ||
      fail "batched on $mesh ($algo): the weights are not pre-skewed"
  done
done
# auto weighs the shift algorithms with their weights pre-skewed, and stays exact
run "auto-4x4" "$TMP/r-10x14-14x9-b.wir" 4x4 "$(inputs r-10x14-14x9-b b)" c "$TMP/r-10x14-14x9-b.ref/c.npy" ""

# ---- a constant's alignment: 0 cycles, 0 wavelets (the trace), and the report ----
for mesh in 4x4 3x3 2x3; do
  for algo in meshgemm cannon; do
    for mode in none b ab; do
      nm="t-$mode"
      [ -f "$TMP/$nm.wir" ] || model "$nm" $mode 12,24 24,12 12,12
      d="$TMP/$nm-$mesh-$algo"
      run "$nm-$mesh-$algo" "$TMP/$nm.wir" "$mesh" "$(inputs "$nm" $mode)" c "$TMP/$nm.ref/c.npy" "" --gemm-algo=$algo
      ins=()
      for kv in $(inputs "$nm" $mode); do ins+=(--input "$kv"); done
      waferrun "$d" -q "${ins[@]}" --trace "$d/trace.json" --report "$d/report.json" ||
        fail "$nm-$mesh-$algo: traced run exited $?"
    done
    python3 - "$TMP" "$mesh" "$algo" <<'PY' || fail "$mesh $algo: a constant operand's alignment (above)"
import json, re, sys
tmp, mesh, algo = sys.argv[1:]

def phases(mode):
    d = "%s/t-%s-%s-%s" % (tmp, mode, mesh, algo)
    # the colors of B's ring: the ones routed along y
    bcol = set()
    for line in open(d + "/programs/main.wpe"):
        m = re.match(r"\.color (c\d+) (.*)", line)
        if m and "along y" in m.group(2):
            bcol.add(m.group(1))
    ev = json.load(open(d + "/trace.json"))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    names = {e["tid"]: e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
    pe = {t: re.match(r"PE \((\d+),(\d+)\)", n).group(0) for t, n in names.items()}
    main, streams, start = {}, {}, {}
    for e in ev:
        if e.get("ph") != "X" or e["tid"] not in pe:
            continue
        if e.get("cat") == "op":
            start[pe[e["tid"]]] = min(e["ts"], start.get(pe[e["tid"]], e["ts"]))
        if e.get("cat") in ("op", "task"):  # spans, not instructions
            continue
        (streams if e.get("args", {}).get("async") else main).setdefault(pe[e["tid"]], []).append(e)
    out = {"b_wavelets": 0, "wavelets": 0, "wait": 0}
    for p, es in main.items():
        es.sort(key=lambda e: e["ts"])
        first = next(i for i, e in enumerate(es) if e["name"] == "matmul")
        t0 = es[first]["ts"]
        # the cycles before the first multiply that no instruction of the PE took: waiting
        out["wait"] = max(out["wait"], t0 - start[p] - sum(e["dur"] for e in es[:first]))
        for s in streams.get(p, []):
            if s["ts"] >= t0:
                continue
            w = s["args"].get("wavelet_cycles", 0)
            out["wavelets"] += w
            col = re.search(r"color (c\d+)", s["args"]["synopsis"])
            if col and col.group(1) in bcol:
                out["b_wavelets"] += w
    rep = json.load(open(d + "/report.json"))
    man = json.load(open(d + "/manifest.json"))
    out["cycles"] = rep["ops"][0]["cycles"]
    out["predicted"] = man["ops"][0]["predicted_cycles"]
    out["explain"] = man["ops"][0].get("explain", "")
    return out

none, b, ab = phases("none"), phases("b"), phases("ab")
tag = "%s %s" % (mesh, algo)
assert none["b_wavelets"] > 0 and none["wavelets"] > 0, "%s: premise: inputs are aligned on the mesh %r" % (tag, none)
assert b["b_wavelets"] == 0, "%s: B is a weight, yet moves %d wavelets before the first multiply" % (tag, b["b_wavelets"])
assert b["wavelets"] > 0, "%s: A (an input) must still align: %r" % (tag, b)
assert ab["wavelets"] == 0, "%s: both weights, yet %d wavelets move before the first multiply" % (tag, ab["wavelets"])
assert ab["wait"] == 0, "%s: both weights, yet a PE waits %d cycles before its first multiply" % (tag, ab["wait"])
assert none["wait"] > 0, "%s: premise: with inputs a PE waits for the alignment %r" % (tag, none)
assert ab["cycles"] < b["cycles"] <= none["cycles"] and ab["cycles"] < none["cycles"], \
    "%s: simulated cycles none %d, B weight %d, both %d" % (tag, none["cycles"], b["cycles"], ab["cycles"])
assert ab["predicted"] < none["predicted"] and b["predicted"] <= none["predicted"], \
    "%s: predicted none %d, B weight %d, both %d" % (tag, none["predicted"], b["predicted"], ab["predicted"])
mine = lambda ex: next(p for p in ex.split(":", 1)[1].split(",") if p.split()[0] == algo)
assert "(alignment 0; A and B pre-skewed)" in mine(ab["explain"]), "%s: explain %r" % (tag, ab["explain"])
assert "; B pre-skewed)" in mine(b["explain"]) and "pre-skewed" not in none["explain"], \
    "%s: explain %r / %r" % (tag, b["explain"], none["explain"])
print(tag, "op cycles: inputs %d, B weight %d, both weights %d (predicted %d, %d, %d)" %
      (none["cycles"], b["cycles"], ab["cycles"], none["predicted"], b["predicted"], ab["predicted"]))
PY
    n=$((n + 1))
  done
done
echo "gemm_preskew: $n checks passed"
