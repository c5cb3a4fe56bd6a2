#!/usr/bin/env bash
# MeshGEMM and Cannon on W x H meshes with a K whose cuts over x and y differ (docs/gemm.md,
# "MeshGEMM and Cannon on W×H", K): batched MatMuls whose operands are graph inputs get K
# padded to lcm(W, H) tiles per matrix. ONNX's test_matmul_3d / 4d on 2x3, 3x2, 5x2 and 3x5
# (vs output_0.pb and the interpreter, and the manifest's padded_shape), awkward .wir batches
# (odd K, a 2-D B shared by the batch, a 1-D A), an operand computed on the mesh whose cuts
# make no lcm tiles, the input padded to a computed operand's cuts when they do
# (relu(a) . b and ONNX test_gemm_transposeA on 5x2) and the relayout of K over the fabric
# when they do not (relu(a) . b on 2x3 and 3x2);
# Gemm with a rank-0 C (a scalar graph input bound from a rank-0 .npy) on 2x3 and 3x3, and a
# rank-0 result written as a rank-0 .npy; and
# `auto`: the lowering it emits is the lowest of the candidates its manifest entry lists, and
# every listed candidate's prediction is what that algorithm's plan reports (or, listed as
# "-", that the algorithm refuses the op).
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}

# run NAME MODEL MESH "INPUTS" OUT REF [WANT] -- waferc flags...: compile, run, compare.
. "$SRC/tests/tools/plan_run.sh"

# The manifest checks below (padded, bpad, check_auto and the rank-0 C) are queued in
# $TMP/checks, one line each, and made by one python3 run at the end (checks_run): one start-up
# instead of one per plan.
: >"$TMP/checks"
queue() { local IFS=$'\t'; printf '%s\n' "$*" >>"$TMP/checks"; }

# padded PLAN MESH ALGO: the op's lowering is ALGO's lcm grid over the whole batch, and A's
# and B's padded K is lcm(W, H) * ceil(K / lcm) (the blocks the lowering multiplied).
padded() { queue padded "$@"; }

# ---- ONNX: A [2,3,4] x B [2,4,3] and A [1,2,3,4] x B [1,2,4,3]; K = 4 cuts in no lcm ----
if [ -d "$NODE/test_matmul_3d" ]; then
  for t in test_matmul_3d test_matmul_4d; do
    dir=$NODE/$t
    wafer-pb2npy "$dir/test_data_set_0/input_0.pb" "$TMP/$t.a.npy"
    wafer-pb2npy "$dir/test_data_set_0/input_1.pb" "$TMP/$t.b.npy"
    wafer-pb2npy "$dir/test_data_set_0/output_0.pb" "$TMP/$t.want.npy"
    ins="a=$TMP/$t.a.npy b=$TMP/$t.b.npy"
    waferc "$dir/model.onnx" --interpret --input a="$TMP/$t.a.npy" --input b="$TMP/$t.b.npy" \
      --output-dir "$TMP/$t.ref" -q || fail "$t: interpreter failed"
    for mesh in 2x3 3x2 5x2 3x5; do
      for algo in meshgemm cannon; do
        run "$t-$mesh-$algo" "$dir/model.onnx" "$mesh" "$ins" c "$TMP/$t.ref/c.npy" "$TMP/$t.want.npy" \
          --gemm-algo=$algo
        padded "$TMP/$t-$mesh-$algo" "$mesh" "$algo"
      done
    done
  done
else
  echo "note: $NODE not found (libonnx-testdata): node tests skipped"
fi

# ---- .wir batches with awkward sizes ----
# gen NAME ASHAPE BSHAPE CSHAPE: from tests/tools/plan_run.sh
# K = 7: 2x3 cuts it 8 / 9 (pad 12), 3x2 9 / 8, 5x2 10 / 8 (pad 10), 3x5 9 / 10 (pad 15)
gen odd 3,5,7 3,7,6 3,5,6
for mesh in 2x3 3x2 5x2 3x5; do
  for algo in meshgemm cannon; do
    run "odd-$mesh-$algo" "$TMP/odd.wir" "$mesh" "a=$TMP/odd.a.npy b=$TMP/odd.b.npy" c "$TMP/odd.ref/c.npy" "" \
      --gemm-algo=$algo
    padded "$TMP/odd-$mesh-$algo" "$mesh" "$algo"
  done
done
# a 2-D B shared by the batch (broadcast), a batch dim of 1, a 1-D A (vector-matrix)
cases="shared_b:2,1,9,7:7,5:2,1,9,5:2x3 bcast_a:1,4,7:3,7,8:3,4,8:3x2 vecmat:7:2,7,5:2,5:2x3"
for c in $cases; do
  IFS=: read -r name as bs cs mesh <<<"$c"
  gen "$name" "$as" "$bs" "$cs"
  for algo in meshgemm cannon; do
    run "$name-$mesh-$algo" "$TMP/$name.wir" "$mesh" "a=$TMP/$name.a.npy b=$TMP/$name.b.npy" c \
      "$TMP/$name.ref/c.npy" "" --gemm-algo=$algo
    padded "$TMP/$name-$mesh-$algo" "$mesh" "$algo"
  done
done

# A computed operand keeps partition's blocks: the shift algorithms re-cut its K to lcm tiles
# over the fabric first (lower_relayout.c; relu(a)'s K = 7 is cut 4 + 3 over x, B's 3 + 3 + 1
# over y on 2x3: both become K' = 12, 6 + 6 and 4 + 4 + 4, per matrix of the batch), giving the
# interpreter's C; auto lists them with the relayout in their prediction.
python3 "$NPY" "$TMP/rl.a.npy" 2,5,7 3 1.0 "$TMP/rl.b.npy" 2,7,6 4 1.0 \
  "$TMP/r5.a.npy" 2,3,6 5 1.0 "$TMP/r5.b.npy" 2,6,4 6 1.0 "$TMP/s.a.npy" 4,6 7 1.0
printf 'module @g {\n  func @main(%%a: f32[2, 5, 7], %%b: f32[2, 7, 6]) -> f32[2, 5, 6] {\n    %%r = relu(%%a) : f32[2, 5, 7]\n    %%c = matmul(%%r, %%b) : f32[2, 5, 6]\n    return %%c\n  }\n}\n' >"$TMP/rl.wir"
waferc "$TMP/rl.wir" --interpret --input a="$TMP/rl.a.npy" --input b="$TMP/rl.b.npy" \
  --output-dir "$TMP/rl.ref" -q || fail "rl: interpreter failed"
for mesh in 2x3 3x2; do
  for algo in meshgemm cannon; do
    run "rl-$mesh-$algo" "$TMP/rl.wir" $mesh "a=$TMP/rl.a.npy b=$TMP/rl.b.npy" c "$TMP/rl.ref/c.npy" "" --gemm-algo=$algo
    grep -q '^\.sym \$kp_a ' "$TMP/rl-$mesh-$algo"/programs/*.wpe || fail "rl-$mesh-$algo: A's K is not re-cut"
    grep -q "(K 7 re-cut to [0-9]* on the mesh)" "$TMP/rl-$mesh-$algo/manifest.json" ||
      fail "rl-$mesh-$algo: explain does not name the re-cut K"
  done
done
run "rl-2x3-auto" "$TMP/rl.wir" 2x3 "a=$TMP/rl.a.npy b=$TMP/rl.b.npy" c "$TMP/rl.ref/c.npy" ""

# One operand computed, the other an input: the input is padded to the computed one's cuts
# when they make whole lcm tiles. On 5x2 relu(a)'s K = 6 is 5 blocks of 2 (10 = lcm): B's
# [2, 6, 4] pads K to 10 (2 blocks of 5). ONNX Gemm(transA=1): A = transpose(a), likewise.
# bpad PLAN KPAD: the lowering is an lcm grid and input b's K is padded to KPAD.
bpad() { queue bpad "$@"; }
printf 'module @g {\n  func @main(%%a: f32[2, 3, 6], %%b: f32[2, 6, 4]) -> f32[2, 3, 4] {\n    %%r = relu(%%a) : f32[2, 3, 6]\n    %%c = matmul(%%r, %%b) : f32[2, 3, 4]\n    return %%c\n  }\n}\n' >"$TMP/r5.wir"
waferc "$TMP/r5.wir" --interpret --input a="$TMP/r5.a.npy" --input b="$TMP/r5.b.npy" \
  --output-dir "$TMP/r5.ref" -q || fail "r5: interpreter failed"
for algo in meshgemm cannon; do
  run "r5-5x2-$algo" "$TMP/r5.wir" 5x2 "a=$TMP/r5.a.npy b=$TMP/r5.b.npy" c "$TMP/r5.ref/c.npy" "" --gemm-algo=$algo
  bpad "$TMP/r5-5x2-$algo" 10
done
t=test_gemm_transposeA
if [ -d "$NODE/$t" ]; then
  dir=$NODE/$t
  for i in 0 1 2; do wafer-pb2npy "$dir/test_data_set_0/input_$i.pb" "$TMP/ta.$i.npy"; done
  wafer-pb2npy "$dir/test_data_set_0/output_0.pb" "$TMP/ta.want.npy"
  waferc "$dir/model.onnx" --interpret --input a="$TMP/ta.0.npy" --input b="$TMP/ta.1.npy" \
    --input c="$TMP/ta.2.npy" --output-dir "$TMP/ta.ref" -q || fail "$t: interpreter failed"
  for algo in meshgemm cannon; do
    run "ta-5x2-$algo" "$dir/model.onnx" 5x2 "a=$TMP/ta.0.npy b=$TMP/ta.1.npy c=$TMP/ta.2.npy" y \
      "$TMP/ta.ref/y.npy" "$TMP/ta.want.npy" --gemm-algo=$algo
    bpad "$TMP/ta-5x2-$algo" 10
  done
fi

# ---- Gemm with a scalar C: a rank-0 graph input, bound from a rank-0 .npy ----
t=test_gemm_default_scalar_bias
if [ -d "$NODE/$t" ]; then
  dir=$NODE/$t
  for i in 0 1 2; do wafer-pb2npy "$dir/test_data_set_0/input_$i.pb" "$TMP/sb.$i.npy"; done
  wafer-pb2npy "$dir/test_data_set_0/output_0.pb" "$TMP/sb.want.npy"
  queue rank0_npy "$TMP/sb.2.npy" "$t: input_2.pb is not a rank-0 array"
  ins="a=$TMP/sb.0.npy b=$TMP/sb.1.npy c=$TMP/sb.2.npy"
  waferc "$dir/model.onnx" --interpret --input a="$TMP/sb.0.npy" --input b="$TMP/sb.1.npy" \
    --input c="$TMP/sb.2.npy" --output-dir "$TMP/sb.ref" -q || fail "$t: interpreter failed"
  for ma in 2x3:auto 2x3:cannon 3x3:auto 3x3:meshgemm; do
    mesh=${ma%:*} algo=${ma#*:}
    run "sb-$mesh-$algo" "$dir/model.onnx" "$mesh" "$ins" y "$TMP/sb.ref/y.npy" "$TMP/sb.want.npy" \
      --gemm-algo=$algo
  done
  queue rank0_c "$TMP/sb-2x3-auto/manifest.json" "$t: C is not the plan's rank-0 input"
fi
# Scalars in and out: e = c * d is a rank-0 result (held as [1]); the plan writes it rank 0.
python3 - "$TMP" <<'PY'
import struct, sys
for name, v in (("c", 1.5), ("d", -0.25)):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (), }"
    hdr += " " * (63 - (len(hdr) + 10) % 64) + "\n"
    open("%s/s.%s.npy" % (sys.argv[1], name), "wb").write(
        b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + struct.pack("<f", v))
PY
printf 'module @s {\n  func @main(%%a: f32[4, 6], %%c: f32[], %%d: f32[]) -> (f32[4, 6], f32[]) {\n    %%e = mul(%%c, %%d) : f32[]\n    %%y = add(%%a, %%e) : f32[4, 6]\n    return %%y, %%e\n  }\n}\n' >"$TMP/s.wir"
waferc "$TMP/s.wir" --interpret --input a="$TMP/s.a.npy" --input c="$TMP/s.c.npy" --input d="$TMP/s.d.npy" \
  --output-dir "$TMP/s.ref" -q || fail "s: interpreter failed"
for mesh in 2x3 3x3; do
  run "s-$mesh" "$TMP/s.wir" "$mesh" "a=$TMP/s.a.npy c=$TMP/s.c.npy d=$TMP/s.d.npy" y "$TMP/s.ref/y.npy" ""
  # wafer-npycmp compares shapes: the plan's e.npy must be rank 0 like the interpreter's
  wafer-npycmp "$TMP/s-$mesh/out/e.npy" "$TMP/s.ref/e.npy" --atol 1e-6 >/dev/null ||
    fail "s-$mesh: the scalar result differs from the interpreter's (value or rank)"
done

# ---- auto: the lowest of every algorithm that can lower the op, as each would report ----
# check_auto NAME MODEL MESH: compile with auto and with each algorithm; the auto plan's
# lowering is the candidate with the lowest listed prediction and reports exactly it; each
# listed number is that algorithm's own plan's predicted_cycles; "-" means it refuses (exit 3).
check_auto() {
  local name=$1 model=$2 mesh=$3 a rc
  waferc "$model" -o "$TMP/$name-auto" --target=test8x8 --mesh="$mesh" -q || fail "$name: auto compile"
  for a in meshgemm cannon summa allgather; do
    rc=0
    waferc "$model" -o "$TMP/$name-$a" --target=test8x8 --mesh="$mesh" --gemm-algo=$a -q 2>/dev/null || rc=$?
    echo "$a $rc" >>"$TMP/$name.rcs"
  done
  queue auto "$TMP" "$name"
  n=$((n + 1))
}
check_auto odd-2x3 "$TMP/odd.wir" 2x3
check_auto odd-5x2 "$TMP/odd.wir" 5x2
check_auto shared_b-3x5 "$TMP/shared_b.wir" 3x5
check_auto rl-2x3 "$TMP/rl.wir" 2x3
check_auto r5-5x2 "$TMP/r5.wir" 5x2
gen big 96,70 70,96 96,96
check_auto big-2x4 "$TMP/big.wir" 2x4
check_auto big-4x4 "$TMP/big.wir" 4x4
gen sq 2,32,32 2,32,32 2,32,32 # a batch where a shift algorithm is the lowest (square mesh)
check_auto sq-2x2 "$TMP/sq.wir" 2x2
[ -d "$NODE/test_matmul_2d" ] && check_auto m2d-3x2 "$NODE/test_matmul_2d/model.onnx" 3x2
# ---- the queued manifest checks ----
python3 - "$TMP/checks" <<'PY' || exit 1
import ast, json, math, sys, traceback

class Fail(Exception):
    pass

def padded(plan, mesh, algo):
    m = json.load(open(plan + "/manifest.json"))
    w, h = map(int, mesh.split("x"))
    op = m["ops"][-1]
    name = {"meshgemm": "meshgemm-interleave-lcm", "cannon": "cannon-ring-lcm"}[algo]
    if not op["lowering"].startswith(name):
        raise Fail("lowering %r, want %s" % (op["lowering"], name))
    a, b = m["inputs"][0], m["inputs"][1]
    K = a["shape"][-1]
    L = w * h // math.gcd(w, h)
    want = L * -(-K // L)
    ka = a.get("padded_shape", a["shape"])[-1]
    kb = b.get("padded_shape", b["shape"])[len(b["shape"]) - 2]
    if ka != want or kb != want:
        raise Fail("K = %d padded to %d (A) and %d (B), want %d" % (K, ka, kb, want))
    if "(K %d padded to %d)" % (K, want) not in op.get("explain", ""):
        raise Fail("explain does not name the padding: %r" % op.get("explain"))

def bpad(plan, kpad):
    m = json.load(open(plan + "/manifest.json"))
    gemm = [o for o in m["ops"] if o["op"] == "dist.gemm"][0]
    assert gemm["lowering"].split(" ")[0].endswith("-lcm"), gemm["lowering"]
    b = [t for t in m["inputs"] if t["name"] == "b"][0]
    k = b.get("padded_shape", b["shape"])[len(b["shape"]) - 2]
    assert k == int(kpad), "b's K pads to %d, want %s" % (k, kpad)

def rank0_npy(path, what):
    head = open(path, "rb").read(128)
    d = ast.literal_eval(head[10:10 + int.from_bytes(head[8:10], "little")].decode())
    if d["shape"] != ():
        raise Fail(what)

def rank0_c(path, what):
    c = [t for t in json.load(open(path))["inputs"] if t["name"] == "c"]
    if not (len(c) == 1 and c[0]["shape"] == [] and c[0]["split"] == []):
        raise Fail(what)

def auto(tmp, name):
    op = json.load(open("%s/%s-auto/manifest.json" % (tmp, name)))["ops"][-1]
    cands = {}
    for part in op["explain"].split(":", 1)[1].split(" (lowest")[0].split(","):
        w = part.split()
        cands[w[0]] = None if w[1] == "-" else int(w[1])
    assert set(cands) == {"meshgemm", "cannon", "summa", "allgather"}, cands
    ok = {a: c for a, c in cands.items() if c is not None}
    best = min(ok.values())
    chosen = op["lowering"].split("-")[0]
    assert op["predicted_cycles"] == best, (op["predicted_cycles"], best, cands)
    assert chosen in ok and ok[chosen] == best, (op["lowering"], cands)
    for line in open("%s/%s.rcs" % (tmp, name)):
        a, rc = line.split()
        if cands[a] is None:
            assert rc == "3", "%s is listed as unable but compiled (exit %s)" % (a, rc)
            continue
        assert rc == "0", "%s is listed at %d but exits %s" % (a, cands[a], rc)
        got = json.load(open("%s/%s-%s/manifest.json" % (tmp, name, a)))["ops"][-1]["predicted_cycles"]
        assert got == cands[a], "%s: listed %d, its plan predicts %d" % (a, cands[a], got)
    print(name, "auto ->", op["lowering"], cands)

# what each kind's failure says (as the checks said when each ran on its own)
said = {
    "padded": lambda a: "%s: the manifest's K padding (above)" % a[0],
    "bpad": lambda a: "%s: B's K padding" % a[0],
    "rank0_npy": lambda a: a[1],
    "rank0_c": lambda a: a[1],
    "auto": lambda a: "%s: auto's choice does not follow its candidates" % a[1],
}
bad = 0
for line in open(sys.argv[1]):
    kind, *args = line.rstrip("\n").split("\t")
    try:
        globals()[kind](*args)
    except Exception as e:
        if isinstance(e, Fail) and kind == "padded":
            print(e, file=sys.stderr)
        elif not isinstance(e, Fail):
            traceback.print_exc()
        print("FAIL: " + said[kind](args), file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY
# the padded shift algorithms are candidates (they were left out before)
grep -q "meshgemm [0-9]* (K 7 padded to 12)" "$TMP/odd-2x3-auto/manifest.json" ||
  fail "odd-2x3: auto did not weigh the padded meshgemm"
echo "ok: $n gemm_padded_k cases"
