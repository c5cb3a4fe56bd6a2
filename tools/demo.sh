#!/usr/bin/env bash
# Sets everything up, then runs waferc's main job on the bundled example: compile a small model
# (matmul + bias + GELU + softmax) for a 4x4 mesh, simulate it on waferrun, print the outputs and
# the cycles, and check the outputs against the reference interpreter.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$here/tools/setup.sh"
cd "$here"
ex=examples
out=build/demo
rm -rf "$out" && mkdir -p "$out"
set -x
build/bin/waferc $ex/mlp_softmax.wir -o "$out/plan" --target=test4x4
build/bin/waferrun "$out/plan" --input x=$ex/mlp_softmax_x.npy --output-dir "$out/out" --report "$out/report.json" --print-outputs
build/bin/waferc $ex/mlp_softmax.wir --interpret --input x=$ex/mlp_softmax_x.npy --output-dir "$out/ref"
build/bin/wafer-npycmp "$out/out/y.npy" "$out/ref/y.npy" --atol 1e-5 --rtol 1e-4
