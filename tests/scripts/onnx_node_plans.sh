#!/usr/bin/env bash
# ONNX node tests (libonnx-testdata) compiled to plans for multi-PE meshes and run on
# waferrun: each listed test must compile, run and match its output_0.pb (and every other
# output_N.pb) within the conformance tolerance. tests/onnx/plan_tests.txt lists the tests
# that run as plans today on the meshes named there; `wafer-onnx-test` covers the whole
# in-scope suite on the interpreter (CONFORMANCE.md). Ops outside the lowering fail at
# compile time with a located error; that is what the list leaves out. Inputs ONNX uses as
# shapes (Reshape's shape, Slice's starts, TopK's K) are frozen into initializers first, as
# `wafer-onnx-test` does (`wafer-onnx-test --freeze`); the others bind by their graph index.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
NODE=${WAFERC_ONNX_NODE_DIR:-/usr/share/libonnx-testdata/data/node}
LIST=$SRC/tests/onnx/plan_tests.txt
export WAFERC_TARGET_PATH=$SRC/targets
if [ ! -d "$NODE/test_add" ]; then
  echo "note: $NODE not found (libonnx-testdata): skipped"
  exit 0
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0 n=0
while read -r mesh t; do
  case $mesh in '#'* | '') continue ;; esac
  dir=$NODE/$t d=$TMP/$t.$mesh
  mkdir -p "$d"
  if ! wafer-onnx-test --freeze "$d/model.onnx" "$dir" >"$d/inputs" 2>"$d/err"; then
    echo "FAIL $t ($mesh): wafer-onnx-test --freeze: $(head -1 "$d/err")"
    fails=$((fails + 1))
    continue
  fi
  if ! waferc "$d/model.onnx" -o "$d/plan" --target=test8x8 --mesh="$mesh" 2>"$d/err"; then
    echo "FAIL $t ($mesh): waferc: $(grep -m1 error "$d/err")"
    fails=$((fails + 1))
    continue
  fi
  # the plan's input and output names, from waferrun --describe (no python start-up per case)
  desc=$(waferrun "$d/plan" --describe)
  names=$(awk '/^inputs /{s=1; next} /^outputs /{s=2; next} /^[^ ]/{s=0} s==1{print $1}' <<<"$desc")
  outs=$(awk '/^inputs /{s=1; next} /^outputs /{s=2; next} /^[^ ]/{s=0} s==2{print $1}' <<<"$desc")
  ins=() k=0
  for a in $names; do
    i=$(awk -v a="$a" '$1 == "live" && $3 == a {print $2}' "$d/inputs")
    wafer-pb2npy "$dir/test_data_set_0/input_${i:-$k}.pb" "$d/$a.npy" >/dev/null
    ins+=(--input "$a=$d/$a.npy")
    k=$((k + 1))
  done
  if ! waferrun "$d/plan" -q "${ins[@]}" --output-dir "$d/out" 2>"$d/rerr"; then
    echo "FAIL $t ($mesh): waferrun: $(head -1 "$d/rerr")"
    fails=$((fails + 1))
    continue
  fi
  i=0 ok=1
  for o in $outs; do
    wafer-pb2npy "$dir/test_data_set_0/output_$i.pb" "$d/want_$i.npy" >/dev/null
    if ! wafer-npycmp "$d/out/$o.npy" "$d/want_$i.npy" --atol 1e-5 --rtol 1e-4 >"$d/cmp" 2>&1; then
      echo "FAIL $t ($mesh): output $o: $(head -1 "$d/cmp")"
      ok=0
    fi
    i=$((i + 1))
  done
  [ $ok = 1 ] || { fails=$((fails + 1)); continue; }
  n=$((n + 1))
done <"$LIST"
echo "onnx_node_plans: $n plan(s) match, $fails failed"
[ "$fails" -eq 0 ]
