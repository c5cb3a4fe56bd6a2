#!/usr/bin/env bash
# Every dist.gemm algorithm (--gemm-algo) on square meshes of even and odd side, including a
# 1x1 mesh, blocks that are not square and sizes the mesh does not divide (zero-padded
# blocks): waferrun's C equals the reference interpreter's.
# Also checks that lower-gemm really produced dist.gemm with the requested algorithm.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
export WAFERC_TARGET_PATH=$SRC/targets
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
NPY="${WAFERC_SOURCE_DIR:?}/tests/tools/npy.py"   # small f32 .npy files without numpy

# gen M K N: a.npy, b.npy (deterministic pseudo-random in [-1, 1)) and g.wir
# (one python3 start-up: npy.py writes both files; printf the .wir)
gen() {
  python3 "$NPY" "$TMP/a.npy" "$1,$2" 1 1.0 "$TMP/b.npy" "$2,$3" 2 1.0
  printf 'module @g {\n  func @main(%%a: f32[%d, %d], %%b: f32[%d, %d]) -> f32[%d, %d] {\n    %%c = matmul(%%a, %%b) : f32[%d, %d]\n    return %%c\n  }\n}\n' \
    "$1" "$2" "$2" "$3" "$1" "$3" "$1" "$3" >"$TMP/g.wir"
}

n=0
for shape in "1 12 24 36" "2 12 24 36" "3 12 24 36" "4 8 16 8" "5 10 15 20" "6 12 6 18" \
             "2 7 5 9" "3 7 5 9" "4 3 10 5"; do
  set -- $shape
  S=$1
  gen "$2" "$3" "$4"
  waferc "$TMP/g.wir" --interpret --input a="$TMP/a.npy" --input b="$TMP/b.npy" --output-dir "$TMP/ref" -q \
    || fail "interpreter failed"
  for algo in meshgemm cannon summa allgather; do
    d="$TMP/$algo-$S"
    waferc "$TMP/g.wir" -o "$d" --target=test8x8 --mesh="${S}x${S}" --gemm-algo=$algo -q \
      || fail "$algo ${S}x${S}: waferc exited $?"
    waferrun "$d" -q --input a="$TMP/a.npy" --input b="$TMP/b.npy" --output-dir "$d/out" \
      || fail "$algo ${S}x${S} ($2x$3x$4): waferrun exited $?"
    wafer-npycmp "$d/out/c.npy" "$TMP/ref/c.npy" --atol 1e-4 --rtol 1e-4 >/dev/null \
      || fail "$algo ${S}x${S} ($2x$3x$4): C differs from the interpreter"
    n=$((n + 1))
  done
done
# Non-square meshes: allgather lowers any W x H (its panels hold the whole K whichever way it
# is split), and so do SUMMA (gemm_rect_summa.sh) and MeshGEMM / Cannon on the lcm grid when
# K allows (gemm_rect_shift.sh); auto takes the lowest prediction.
for shape in "7 5 9" "12 24 36"; do
  set -- $shape
  gen "$1" "$2" "$3"
  waferc "$TMP/g.wir" --interpret --input a="$TMP/a.npy" --input b="$TMP/b.npy" --output-dir "$TMP/ref" -q \
    || fail "interpreter failed"
  for mesh in 2x3 3x2 2x4 4x1; do
    for algo in allgather auto; do
      d="$TMP/ns-$algo-$mesh"
      waferc "$TMP/g.wir" -o "$d" --target=test8x8 --mesh="$mesh" --gemm-algo=$algo -q \
        || fail "$algo $mesh: waferc exited $?"
      want='allgather-broadcast'
      # auto: the lowest prediction of the four (the shift algorithms through the lcm grid)
      [ $algo = auto ] && want='(allgather|summa)-broadcast|meshgemm-interleave-lcm|cannon-ring-lcm'
      grep -Eq "\"($want)\"" "$d/manifest.json" || fail "$algo $mesh: not lowered by $want"
      waferrun "$d" -q --input a="$TMP/a.npy" --input b="$TMP/b.npy" --output-dir "$d/out" \
        || fail "$algo $mesh ($*): waferrun exited $?"
      wafer-npycmp "$d/out/c.npy" "$TMP/ref/c.npy" --atol 1e-4 --rtol 1e-4 >/dev/null \
        || fail "$algo $mesh ($*): C differs from the interpreter"
      n=$((n + 1))
    done
  done
done
# MeshGEMM and Cannon run W x H on the lcm grid (gemm_rect_shift.sh), K cut in lcm(W, H)
# tiles on both operands; K = 4 on 2x3 pads to 4 along x but 6 along y, so graph inputs get
# K padded to 6 (padded_shape) and the product is exact.
gen 3 4 3
rm -rf "$TMP/ref"
waferc "$TMP/g.wir" --interpret --input a="$TMP/a.npy" --input b="$TMP/b.npy" --output-dir "$TMP/ref" -q ||
  fail "interpreter failed"
d="$TMP/ns-k4"
waferc "$TMP/g.wir" -o "$d" --target=test8x8 --mesh=2x3 --gemm-algo=meshgemm -q || fail "meshgemm on 2x3, K = 4: waferc exited $?"
waferrun "$d" -q --input a="$TMP/a.npy" --input b="$TMP/b.npy" --output-dir "$d/out" || fail "meshgemm on 2x3, K = 4: waferrun exited $?"
wafer-npycmp "$d/out/c.npy" "$TMP/ref/c.npy" --atol 1e-4 --rtol 1e-4 >/dev/null || fail "meshgemm on 2x3, K = 4: C differs from the interpreter"
n=$((n + 1))

# Padding through an MLP: the bias add spreads values into the padded rows, but the padding
# along the second matmul's K stays zero, so the result is exact.
gen 7 5 9
python3 "$NPY" "$TMP/bias.npy" 9 3 1.0 "$TMP/w2.npy" 9,3 4 1.0
cat >"$TMP/mlp.wir" <<'EOF'
module @mlp {
  func @main(%a: f32[7, 5], %b: f32[5, 9], %bias: f32[9], %w2: f32[9, 3]) -> f32[7, 3] {
    %h = matmul(%a, %b) : f32[7, 9]
    %hb = add(%h, %bias) : f32[7, 9]
    %g = gelu(%hb) : f32[7, 9]
    %y = matmul(%g, %w2) : f32[7, 3]
    return %y
  }
}
EOF
ins=(--input a="$TMP/a.npy" --input b="$TMP/b.npy" --input bias="$TMP/bias.npy" --input w2="$TMP/w2.npy")
waferc "$TMP/mlp.wir" --interpret "${ins[@]}" --output-dir "$TMP/mref" -q || fail "mlp: interpreter failed"
# algo_run LABEL WIR MESH ALGO REFDIR CHECK INPUTS...: compiles WIR for MESH with ALGO, runs
# CHECK on the plan's manifest, runs it and compares its y with REFDIR's (the interpreter's)
algo_run() {
  local label=$1 wir=$2 mesh=$3 algo=$4 ref=$5 chk=$6
  shift 6
  d="$TMP/$label-$algo-$mesh"
  waferc "$wir" -o "$d" --target=test8x8 --mesh="$mesh" --gemm-algo="$algo" -q || fail "$label $algo $mesh: waferc exited $?"
  $chk "$d/manifest.json" "$label $algo $mesh"
  waferrun "$d" -q "$@" --output-dir "$d/out" || fail "$label $algo $mesh: waferrun exited $?"
  wafer-npycmp "$d/out/y.npy" "$ref/y.npy" --atol 1e-4 --rtol 1e-4 >/dev/null ||
    fail "$label $algo $mesh: y differs from the interpreter"
  n=$((n + 1))
}
describes_padding() { grep -q '"padded_shape"' "$1" || fail "$2: the manifest does not describe the padding"; }
for algo in meshgemm cannon summa allgather; do
  algo_run mlp "$TMP/mlp.wir" 2x2 $algo "$TMP/mref" describes_padding "${ins[@]}"
done
# Padding that would leak is zeroed first: exp makes A's padding along K 1, a broadcast add
# puts the bias into B's padding rows, and exp on B may overflow there; partition marks each
# matmul zero_k (passes/partition_pad.c) and the lowering zeroes the marked operands' padding
# along K before the GEMM, so y equals the interpreter's (without it, each padded K index
# would add exp(0) times the bias, or 1, into every element). dist.gemm_t's K (the last dim of
# both) too: matmul(A, transpose(B^T)).
python3 "$NPY" "$TMP/bt.npy" 9,5 5 1.0
cat >"$TMP/expz.wir" <<'EOF'
module @expz {
  func @main(%a: f32[7, 5], %b: f32[5, 9], %bias: f32[9], %bt: f32[9, 5]) -> f32[7, 9] {
    %e = exp(%a) : f32[7, 5]
    %f = add(%b, %bias) : f32[5, 9]
    %h1 = matmul(%e, %f) : f32[7, 9]
    %x = exp(%b) : f32[5, 9]
    %h2 = matmul(%e, %x) : f32[7, 9]
    %xt = exp(%bt) : f32[9, 5]
    %t = transpose(%xt) {perm = [1, 0]} : f32[5, 9]
    %h3 = matmul(%e, %t) : f32[7, 9]
    %s = add(%h1, %h2) : f32[7, 9]
    %y = add(%s, %h3) : f32[7, 9]
    return %y
  }
}
EOF
zins=(--input a="$TMP/a.npy" --input b="$TMP/b.npy" --input bias="$TMP/bias.npy" --input bt="$TMP/bt.npy")
waferc "$TMP/expz.wir" --interpret "${zins[@]}" --output-dir "$TMP/zref" -q || fail "expz: interpreter failed"
# the three zeroings explained, and one of them a dist.gemm_t
zeroes_three() {
  [ "$(grep -o 'padding along K zeroed first' "$1" | wc -l)" = 3 ] || fail "$2: the manifest does not explain the three zeroings"
  grep -q '"dist.gemm_t"' "$1" || fail "$2: no dist.gemm_t"
}
for mesh in 2x2 3x3 4x3; do
  for algo in meshgemm cannon summa allgather; do
    algo_run expz "$TMP/expz.wir" $mesh $algo "$TMP/zref" zeroes_three "${zins[@]}"
  done
done

# dist.gemm_t: C = A B^T with B [N, K] as stored, written directly and as
# matmul(A, transpose(B)) (lower-gemm rewrites it; no transpose is left), padded or not.
for shape in "7 5 9" "12 8 6"; do
  set -- $shape
  python3 "$NPY" "$TMP/ta.npy" "$1,$2" 6 1.0 "$TMP/tb.npy" "$3,$2" 7 1.0
  hdr=$(printf 'module @t {\n  func @main(%%a: f32[%d, %d], %%b: f32[%d, %d]) -> f32[%d, %d] {' "$1" "$2" "$3" "$2" "$1" "$3")
  printf '%s\n    %%bt = transpose(%%b) {perm = [1, 0]} : f32[%d, %d]\n    %%c = matmul(%%a, %%bt) : f32[%d, %d]\n    return %%c\n  }\n}\n' \
    "$hdr" "$2" "$3" "$1" "$3" >"$TMP/tt.wir"
  printf '%s\n    %%c = dist.gemm_t(%%a, %%b) : f32[%d, %d]\n    return %%c\n  }\n}\n' "$hdr" "$1" "$3" >"$TMP/gt.wir"
  ins=(--input a="$TMP/ta.npy" --input b="$TMP/tb.npy")
  waferc "$TMP/tt.wir" --interpret "${ins[@]}" --output-dir "$TMP/tref" -q || fail "gemm_t: interpreter failed"
  waferc "$TMP/gt.wir" --interpret "${ins[@]}" --output-dir "$TMP/gref" -q || fail "gemm_t: interpreter failed on dist.gemm_t"
  wafer-npycmp "$TMP/gref/c.npy" "$TMP/tref/c.npy" --atol 1e-5 >/dev/null || fail "dist.gemm_t's kernel differs from matmul(A, B^T)"
  for S in 1 2 3 4; do
    for w in tt gt; do
      d="$TMP/gemmt-$w-$S"
      waferc "$TMP/$w.wir" -o "$d" --target=test8x8 --mesh="${S}x${S}" -q || fail "gemm_t $w ${S}x${S}: waferc exited $?"
      grep -q '"dist.gemm_t"' "$d/manifest.json" || fail "gemm_t $w ${S}x${S}: no dist.gemm_t in the plan"
      if grep -q '"op":[[:space:]]*"transpose"' "$d/manifest.json"; then fail "gemm_t $w ${S}x${S}: a transpose was left"; fi
      waferrun "$d" -q "${ins[@]}" --output-dir "$d/out" || fail "gemm_t $w ${S}x${S}: waferrun exited $?"
      wafer-npycmp "$d/out/c.npy" "$TMP/tref/c.npy" --atol 1e-4 --rtol 1e-4 >/dev/null ||
        fail "gemm_t $w ${S}x${S} ($*): C differs from the interpreter"
      n=$((n + 1))
    done
  done
done

# The lowered IR names the algorithm.
waferc "$TMP/g.wir" --pass-pipeline='partition{mesh=3x3},lower-gemm{algo=cannon}' --emit=ir --target=test8x8 \
  | grep -q 'dist.gemm(%a, %b) {algo = cannon}' || fail "lower-gemm did not produce dist.gemm{algo=cannon}"
rc=0
waferc "$TMP/g.wir" -o "$TMP/bad" --target=test8x8 --mesh=3x3 --gemm-algo=bogus -q 2>"$TMP/err" || rc=$?
[ $rc = 2 ] && grep -q "unknown algorithm 'bogus' (valid: meshgemm, cannon, summa, allgather, auto)" "$TMP/err" ||
  fail "a bad --gemm-algo must be rejected at the command line (exit 2, got $rc) listing the valid values"
[ ! -e "$TMP/bad" ] || fail "a rejected --gemm-algo left $TMP/bad behind"
echo "gemm_algos: $n runs match the interpreter"
