#!/usr/bin/env bash
# Batched and 1-D MatMul on meshes larger than 1x1 (docs/gemm.md, "Batched GEMM"): ONNX's
# test_matmul_3d / test_matmul_4d with every --gemm-algo on 2x2 and 3x3 and with allgather on
# non-square meshes, checked against output_0.pb and the reference interpreter; .wir matmuls
# with broadcast batch dims (a 2-D B shared by the batch, a batch dim of 1 on either side),
# sizes the mesh does not divide, M = 1, K = 1 (K whole on every PE), vector-matrix and
# matrix-vector products, and an attention-shaped graph (Q.Kt, softmax, P.V on [B, H, S, D]).
# Checks the manifest holds one dist.gemm per batched matmul whose prediction is the sum of
# its matrices'. Also the transpose of split matrices (a relayout over the fabric), alone and
# as attention's Kt, and a dot product of two vectors (a rank-0 result, held as [1]).
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}

# run NAME MODEL MESH "INPUTS" OUT REF [WANT] -- waferc flags...: compile, run, compare.
. "$SRC/tests/tools/plan_run.sh"

# lowering PLAN OPINDEX: "op lowering predicted" of the manifest's op, from LOWERING, which
# load_lowerings fills for every PLAN OPINDEX the checks at the end of this script ask about
# (one python3 start-up for all of them; the plans stay in $TMP until then).
declare -A LOWERING
# (PLAN:ops instead gives the plan's ops, comma-separated)
load_lowerings() { # PLAN:OPINDEX ...
  local key rest out
  out=$(python3 - "$@" <<'PY'
import json, sys
for key in sys.argv[1:]:
    plan, i = key.rsplit(":", 1)
    ops = json.load(open(plan + "/manifest.json"))["ops"]
    if i == "ops":
        print(key, ",".join(o["op"] for o in ops))
        continue
    o = ops[int(i)]
    print(key, o["op"], o["lowering"].replace(" ", "_"), o["predicted_cycles"])
PY
  ) || fail "cannot read the manifests' lowerings"
  while read -r key rest; do
    LOWERING[$key]=$rest
  done <<<"$out"
}
lowering() {
  [ -n "${LOWERING[$1:$2]:-}" ] || fail "no lowering loaded for $1 op $2"
  echo "${LOWERING[$1:$2]}"
}

# ---- ONNX node tests: A [2,3,4] x B [2,4,3] and A [1,2,3,4] x B [1,2,4,3] ----
if [ -d "$NODE/test_matmul_3d" ]; then
  for t in test_matmul_3d test_matmul_4d; do
    dir=$NODE/$t
    wafer-pb2npy "$dir/test_data_set_0/input_0.pb" "$TMP/$t.a.npy"
    wafer-pb2npy "$dir/test_data_set_0/input_1.pb" "$TMP/$t.b.npy"
    wafer-pb2npy "$dir/test_data_set_0/output_0.pb" "$TMP/$t.want.npy"
    ins="a=$TMP/$t.a.npy b=$TMP/$t.b.npy"
    waferc "$dir/model.onnx" --interpret --input a="$TMP/$t.a.npy" --input b="$TMP/$t.b.npy" \
      --output-dir "$TMP/$t.ref" -q || fail "$t: interpreter failed"
    for mesh in 2x2 3x3; do
      for algo in meshgemm cannon summa allgather auto; do
        run "$t-$mesh-$algo" "$dir/model.onnx" "$mesh" "$ins" c "$TMP/$t.ref/c.npy" "$TMP/$t.want.npy" \
          --gemm-algo=$algo
      done
    done
    for mesh in 2x3 3x2; do
      run "$t-$mesh-allgather" "$dir/model.onnx" "$mesh" "$ins" c "$TMP/$t.ref/c.npy" \
        "$TMP/$t.want.npy" --gemm-algo=allgather
    done
    node_tests="${node_tests:-} $t"
  done
else
  echo "note: $NODE not found (libonnx-testdata): node tests skipped"
fi

# ---- .wir matmuls: broadcast batch dims, odd sizes, M = 1, 1-D operands ----
# gen NAME ASHAPE BSHAPE CSHAPE: from tests/tools/plan_run.sh
cases="shared_b:2,3,4:4,5:2,3,5 bcast_a:1,3,4:2,4,5:2,3,5 odd:2,1,7,5:3,5,9:2,3,7,9
       rows1:2,1,5:2,5,9:2,1,9 vecmat:5:5,9:9 vecmat_b:5:3,5,9:3,9 matvec:7,5:5:7
       matvec_b:2,7,5:5:2,7 k1:3,4,1:1,6:3,4,6 vec_k1:1:3,1,2:3,2"
for c in $cases; do
  IFS=: read -r name as bs cs <<<"$c"
  gen "$name" "$as" "$bs" "$cs"
  for ma in 2x2:meshgemm 2x2:summa 3x3:meshgemm 3x3:cannon 3x3:summa 3x3:allgather; do
    mesh=${ma%:*} algo=${ma#*:}
    run "$name-$mesh-$algo" "$TMP/$name.wir" "$mesh" "a=$TMP/$name.a.npy b=$TMP/$name.b.npy" c \
      "$TMP/$name.ref/c.npy" "" --gemm-algo=$algo
  done
done
run "odd-2x3-allgather" "$TMP/odd.wir" 2x3 "a=$TMP/odd.a.npy b=$TMP/odd.b.npy" c "$TMP/odd.ref/c.npy" "" \
  --gemm-algo=allgather

# A matrix-vector product after exp: K = 5 is padded on 2x2 and exp(0) = 1 fills A's padding;
# the row sum reads only the real elements of the padded axis.
python3 "$NPY" "$TMP/mve.a.npy" 2,7,5 1 1.0 "$TMP/mve.b.npy" 5 2 1.0
printf 'module @g {\n  func @main(%%a: f32[2, 7, 5], %%b: f32[5]) -> f32[2, 7] {\n    %%e = exp(%%a) : f32[2, 7, 5]\n    %%c = matmul(%%e, %%b) : f32[2, 7]\n    return %%c\n  }\n}\n' >"$TMP/mve.wir"
waferc "$TMP/mve.wir" --interpret --input a="$TMP/mve.a.npy" --input b="$TMP/mve.b.npy" \
  --output-dir "$TMP/mve.ref" -q || fail "mve: interpreter failed"
for mesh in 2x2 3x3; do
  run "mve-$mesh" "$TMP/mve.wir" "$mesh" "a=$TMP/mve.a.npy b=$TMP/mve.b.npy" c "$TMP/mve.ref/c.npy" ""
done

# The manifest: [2,1,7,5] x [3,5,9] is one dist.gemm over 2*3 matrices; its prediction is six
# times the rank-2 [7,5] x [5,9] GEMM's (the same blocks, the same algorithm).
gen single 7,5 5,9 7,9
for algo in meshgemm cannon summa allgather; do
  run "single-3x3-$algo" "$TMP/single.wir" 3x3 "a=$TMP/single.a.npy b=$TMP/single.b.npy" c \
    "$TMP/single.ref/c.npy" "" --gemm-algo=$algo
done
# (the manifests' checks: at the end, with the others)

# ---- attention-shaped: S = Q.Kt, P = softmax(S), O = P.V on [B, H, S, D] = [2, 3, 8, 4] ----
# (without `raise`, which would fuse the three into one attention op)
cat >"$TMP/att.wir" <<'EOF'
module @att {
  func @main(%q: f32[2, 3, 8, 4], %kt: f32[2, 3, 4, 8], %v: f32[2, 3, 8, 4]) -> f32[2, 3, 8, 4] {
    %s = matmul(%q, %kt) : f32[2, 3, 8, 8]
    %p = softmax(%s) {axis = -1} : f32[2, 3, 8, 8]
    %o = matmul(%p, %v) : f32[2, 3, 8, 4]
    return %o
  }
}
EOF
python3 "$NPY" "$TMP/q.npy" 2,3,8,4 1 1.0 "$TMP/kt.npy" 2,3,4,8 2 1.0 "$TMP/v.npy" 2,3,8,4 3 1.0 \
  "$TMP/k.npy" 2,3,8,4 4 1.0 "$TMP/t.npy" 2,7,5 5 1.0 "$TMP/va.npy" 5 6 1.0 "$TMP/vb.npy" 5 7 1.0
att_in="q=$TMP/q.npy kt=$TMP/kt.npy v=$TMP/v.npy"
waferc "$TMP/att.wir" --interpret --input q="$TMP/q.npy" --input kt="$TMP/kt.npy" --input v="$TMP/v.npy" \
  --output-dir "$TMP/att.ref" -q || fail "att: interpreter failed"
for mesh in 2x2 4x4; do
  for algo in meshgemm cannon summa allgather; do
    run "att-$mesh-$algo" "$TMP/att.wir" "$mesh" "$att_in" o "$TMP/att.ref/o.npy" "" \
      --pass-pipeline="canonicalize,dce,partition,lower-gemm{algo=$algo}"
  done
done

# ---- the same with K as stored: Kt = transpose(K) is the mirror relayout over the fabric
# (lower_transpose.c), then the batched GEMMs ----
sed -e 's/%kt: f32\[2, 3, 4, 8\]/%k: f32[2, 3, 8, 4]/' \
    -e 's/^    %s = matmul/    %kt = transpose(%k) {perm = [0, 1, 3, 2]} : f32[2, 3, 4, 8]\n    %s = matmul/' \
    "$TMP/att.wir" >"$TMP/att_t.wir"
grep -q "transpose(%k)" "$TMP/att_t.wir" || fail "att_t: the sed script did not apply"
att_in="q=$TMP/q.npy k=$TMP/k.npy v=$TMP/v.npy"
waferc "$TMP/att_t.wir" --interpret --input q="$TMP/q.npy" --input k="$TMP/k.npy" --input v="$TMP/v.npy" \
  --output-dir "$TMP/att_t.ref" -q || fail "att_t: interpreter failed"
for mesh in 2x2 4x4; do
  for algo in meshgemm summa; do
    run "att_t-$mesh-$algo" "$TMP/att_t.wir" "$mesh" "$att_in" o "$TMP/att_t.ref/o.npy" "" \
      --pass-pipeline="canonicalize,dce,partition,lower-gemm{algo=$algo}"
  done
done

# ---- transposes alone: a batch of 7x5 matrices (padded blocks) on 1x1 .. 4x4 ----
printf 'module @t {\n  func @main(%%a: f32[2, 7, 5]) -> f32[2, 5, 7] {\n    %%c = transpose(%%a) {perm = [0, 2, 1]} : f32[2, 5, 7]\n    return %%c\n  }\n}\n' >"$TMP/tr.wir"
waferc "$TMP/tr.wir" --interpret --input a="$TMP/t.npy" --output-dir "$TMP/tr.ref" -q || fail "tr: interpreter"
# (non-square meshes: the two-phase relayout, lower_relayout.c; more in transpose_rect.sh)
for mesh in 1x1 2x2 3x3 4x4 2x3 3x2; do
  run "tr-$mesh" "$TMP/tr.wir" "$mesh" "a=$TMP/t.npy" c "$TMP/tr.ref/c.npy" ""
done

# ---- a dot product of two vectors: a rank-0 result, held as [1] on the mesh (partition's
# widen_computed_scalars; was rejected, exit 3) and written as a rank-0 array ----
printf 'module @g {\n  func @main(%%a: f32[5], %%b: f32[5]) -> f32[] {\n    %%c = matmul(%%a, %%b) : f32[]\n    return %%c\n  }\n}\n' >"$TMP/dot.wir"
waferc "$TMP/dot.wir" --interpret --input a="$TMP/va.npy" --input b="$TMP/vb.npy" --output-dir "$TMP/dot.ref" -q ||
  fail "dot: interpreter"
for mesh in 1x1 2x2 3x2; do
  run "dot-$mesh" "$TMP/dot.wir" "$mesh" "a=$TMP/va.npy b=$TMP/vb.npy" c "$TMP/dot.ref/c.npy" ""
done

# ---- the manifests' lowerings (every plan above stays in $TMP), read by one python3 run ----
keys=()
for t in ${node_tests:-}; do keys+=("$TMP/$t-3x3-meshgemm:0"); done
for algo in meshgemm cannon summa allgather; do keys+=("$TMP/odd-3x3-$algo:0" "$TMP/single-3x3-$algo:0"); done
keys+=("$TMP/vecmat_b-3x3-summa:0" "$TMP/matvec_b-3x3-summa:ops" "$TMP/att-4x4-meshgemm:2" "$TMP/att_t-4x4-meshgemm:0")
load_lowerings "${keys[@]}"
# Both node tests have two matrices in the batch: one dist.gemm, two GEMMs.
for t in ${node_tests:-}; do
  set -- $(lowering "$TMP/$t-3x3-meshgemm" 0)
  [ "$1 $2" = "dist.gemm meshgemm-interleave_x2" ] || fail "$t: manifest op is '$1 $2'"
done
# [2,1,7,5] x [3,5,9] is one dist.gemm over 2*3 matrices; its prediction six times the
# rank-2 [7,5] x [5,9] GEMM's.
for algo in meshgemm cannon summa allgather; do
  set -- $(lowering "$TMP/odd-3x3-$algo" 0)
  op=$1 low=$2 batched=$3
  set -- $(lowering "$TMP/single-3x3-$algo" 0)
  [ "$op" = dist.gemm ] && [ "$low" = "${2}_x6" ] ||
    fail "odd $algo: manifest op '$op $low', want 'dist.gemm ${2}_x6'"
  [ "$batched" -eq $((6 * $3)) ] || fail "odd $algo: predicted $batched, want 6 x $3"
done
# A vector-matrix product is a one-row GEMM; a matrix-vector product a local mul and a row
# sum with the allreduce along x (no GEMM).
set -- $(lowering "$TMP/vecmat_b-3x3-summa" 0)
[ "$1" = dist.gemm ] || fail "vecmat_b: manifest op is '$1'"
ops=$(lowering "$TMP/matvec_b-3x3-summa" ops)
[ "$ops" = mul,reduce_sum ] || fail "matvec_b: manifest ops $ops, want mul, reduce_sum"
set -- $(lowering "$TMP/att-4x4-meshgemm" 2)
[ "$1 $2" = "dist.gemm meshgemm-interleave_x6" ] || fail "att: P.V lowered as '$1 $2'"
set -- $(lowering "$TMP/att_t-4x4-meshgemm" 0)
[ "$1 $2" = "transpose bcast-transpose" ] || fail "att_t: K's transpose lowered as '$1 $2'"

echo "gemm_batched: $n plan(s) match the interpreter (and ONNX's outputs)"
