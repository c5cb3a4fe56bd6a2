#!/usr/bin/env bash
# plan_corpus.sh BIN_DIR OUT: compiles a fixed corpus of plans with BIN_DIR's tools, runs the
# small ones (timing mode) and a set of wafer-bench cells, and writes everything under OUT with
# the source and output paths normalised, so that two builds can be compared file by file:
#
#   tests/tools/plan_corpus.sh /tmp/before/build/bin /tmp/c1
#   tests/tools/plan_corpus.sh build/bin /tmp/c2
#   diff -r /tmp/c1 /tmp/c2          # empty when a change moves no plan, cycle or report
#
# Not a ctest (minutes). The corpus: every ONNX node test of tests/onnx/plan_tests.txt on 2x2
# and 3x2; examples/*.wir, tests/e2e_dist/*.wir and bench/*.wir on six meshes with each
# --gemm-algo and each --reduce-algo; wafer-bench gemm (four algorithms), gemv (three
# allreduces) and collective (every algorithm) cells. Exit codes are recorded, not judged.
set -uo pipefail
bin=$(cd "$1" && pwd); out=$2
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
node=${WAFERC_ONNX_NODE_DIR:-/usr/share/libonnx-testdata/data/node}
export WAFERC_TARGET_PATH="$src/targets"
rm -rf "$out"; mkdir -p "$out/plans" "$out/run" "$out/bench"
raw=$(mktemp -d); trap 'rm -rf "$raw"' EXIT

compile() { # name args...
  local n=$1; shift
  "$bin/waferc" "$@" -o "$raw/$n" -q >/dev/null 2>&1
  echo "$n rc=$?" >>"$out/compile_rc.txt"
}
while read -r t _; do
  case "$t" in ''|'#'*) continue ;; esac
  [ -f "$node/$t/model.onnx" ] || continue
  for mesh in 2x2 3x2; do compile "$t.$mesh" "$node/$t/model.onnx" --target=test8x8 --mesh=$mesh; done
done <"$src/tests/onnx/plan_tests.txt"
for f in "$src"/examples/*.wir "$src"/tests/e2e_dist/*.wir "$src"/bench/*.wir; do
  b=$(basename "$f" .wir)
  for mesh in 1x1 2x2 4x4 3x2 2x4 4x2; do
    for opt in "" --gemm-algo={meshgemm,cannon,summa,allgather} --reduce-algo={star,chain,tree,two_phase,autogen,ring}; do
      n="$b.$mesh${opt:+.${opt#--}}"
      compile "$n" "$f" --target=test8x8 --mesh=$mesh $opt
      [ -f "$raw/$n/manifest.json" ] || continue
      "$bin/waferrun" "$raw/$n" --mode=timing --report "$out/run/$n.json" >/dev/null 2>&1
      echo "$n rc=$?" >>"$out/run_rc.txt"
    done
  done
done
bench() { # name args...
  local n=$1; shift
  "$bin/wafer-bench" "$@" >"$out/bench/$n.json" 2>/dev/null
  echo "$n rc=$?" >>"$out/bench_rc.txt"
}
for a in meshgemm cannon summa allgather; do
  for mesh in 4 8x4 5x3; do bench "gemm.$a.$mesh" gemm --algo=$a --mesh=$mesh --m=48 --k=40 --n=24; done
done
for a in ktree pipeline ring; do bench "gemv.$a" gemv --allreduce=$a --mesh=8x4 --k=64 --n=32; done
for a in star chain tree two_phase autogen ring; do
  for p in 7 16 33; do bench "coll.$a.$p" collective --algo=$a --pes=$p --len=24; done
done
for a in star chain tree two_phase autogen; do bench "coll2d.$a" collective --algo=$a --pes=36 --len=8 --dims=2; done

# copy the plans with paths normalised (manifests name their source file)
(cd "$raw" && find . -type f) | while read -r f; do
  mkdir -p "$out/plans/$(dirname "$f")"
  sed -e "s#$bin#BIN#g" -e "s#$src#SRC#g" -e "s#$raw#OUT#g" "$raw/$f" >"$out/plans/$f"
done
for f in "$out"/run/*.json; do [ -f "$f" ] && sed -i -e "s#$bin#BIN#g" -e "s#$src#SRC#g" -e "s#$raw#OUT#g" "$f"; done
echo "plan_corpus: $(wc -l <"$out/compile_rc.txt") compiles, $(wc -l <"$out/run_rc.txt") runs, $(wc -l <"$out/bench_rc.txt") bench cells in $out"
