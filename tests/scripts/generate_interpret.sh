#!/usr/bin/env bash
# The reference for generation: `waferc M.onnx --interpret --input input_ids=P.npy --generate=N
# --output-dir D` (tools/waferc/interpret_generate.c) recomputes the whole sequence at every
# step and must give torch's own greedy tokens exactly, for every committed model of
# examples/models/generate/ (LLaMA MHA/GQA/MQA with rotate-half and interleaved RoPE, GPT-2 with
# learned positions and a tied or untied head; README there):
#  - D/tokens.npy is int64 [1, 8] (checked in the file's header: wafer-npycmp ignores dtypes)
#    and equal to M_tokens.npy (atol 0, rtol 0); the printed line holds the same ids;
#  - --generate=3 gives torch's first 3; an int32 prompt gives the same tokens as the int64 one;
#  - the sequence axis is dynamic: --interpret runs at lengths 5 and 13 too;
#  - a model with a fixed-length input (tiny_argmax.onnx, llama_block.onnx) is refused with
#    exit 1, naming the input and the missing dynamic sequence axis, and writes nothing;
#  - a bad prompt (floats, batch 2, a negative or out-of-range id, a missing file) and a bad
#    command line (.wir model, N = 0, no --output-dir, a conflicting --input-shape) give their
#    documented exit codes and no tokens.npy.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # TMP, fail, n
G=$SRC/examples/models/generate

# the header dict of a .npy file, e.g. {'descr': '<i8', 'fortran_order': False, 'shape': (1, 8), }
header() { head -c 256 "$1" | tr -d '\000' | head -1 | grep -a -o "{.*}"; }

# the ids of an int64 [1, L] .npy as a space-separated line (od: the header's length is the
# little-endian u16 at byte 8, the int64 values follow the header; no python3 start-up)
ids() {
  local hl
  hl=$(od -An -tu2 -j8 -N2 "$1") || return 1
  od -An -v -td8 -j$((10 + hl)) "$1" | awk '{for (i = 1; i <= NF; i++) printf "%s%s", (c++ ? " " : ""), $i} END {print ""}'
}

models=("$G"/*.onnx)
[ "${#models[@]}" -ge 5 ] || fail "expected at least 5 models in $G, found ${#models[@]}"

# Every model's prompt as int32 ($TMP/NAME.i32.npy) and the prompts of lengths 5 and 13
# ($TMP/NAME.s5.npy, .s13.npy: tests/tools/npy.py), written by one python3 run.
python3 - "$SRC/tests/tools" "$TMP" "${models[@]}" <<'PY' || fail "could not write the prompts"
import os, struct, sys
sys.path.insert(0, sys.argv[1])
import npy
tmp = sys.argv[2]
for m in sys.argv[3:]:
    name = os.path.basename(m)[:-len(".onnx")]
    # the same prompt as int32
    b = open(os.path.join(os.path.dirname(m), name + "_prompt.npy"), "rb").read()
    hl = struct.unpack("<H", b[8:10])[0]
    vals = struct.unpack("<%dq" % ((len(b) - 10 - hl) // 8), b[10 + hl:])
    h = "{'descr': '<i4', 'fortran_order': False, 'shape': (1, %d), }" % len(vals)
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    open("%s/%s.i32.npy" % (tmp, name), "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<%di" % len(vals), *vals))
    for s in (5, 13):
        npy.write("%s/%s.s%d.npy" % (tmp, name, s), "1,%d" % s, str(s), "i64:64")
PY
for m in "${models[@]}"; do
  name=$(basename "$m" .onnx)
  d=$TMP/$name
  want=$(ids "$G/${name}_tokens.npy")
  [ "$(header "$G/${name}_tokens.npy" | grep -c "'descr': '<i8'.*'shape': (1, 8)")" = 1 ] ||
    fail "$name: torch's tokens file is not int64 [1, 8]"
  out=$(waferc "$m" -q --interpret --input input_ids="$G/${name}_prompt.npy" --generate=8 --output-dir "$d" 2>"$d.err") ||
    fail "$name: waferc --interpret --generate=8 exited $?: $(head -3 "$d.err")"
  h=$(header "$d/tokens.npy")
  case "$h" in *"'descr': '<i8'"*"'shape': (1, 8)"*) ;; *) fail "$name: tokens.npy is not int64 [1, 8]: $h" ;; esac
  wafer-npycmp "$d/tokens.npy" "$G/${name}_tokens.npy" --atol 0 --rtol 0 >"$d.cmp" 2>&1 ||
    fail "$name: tokens $(ids "$d/tokens.npy") differ from torch's $want"
  [ "$out" = "tokens: $want" ] || fail "$name: printed '$out', want 'tokens: $want'"
  n=$((n + 1))

  # a shorter run is a prefix; an int32 prompt gives the same
  waferc "$m" -q --interpret --input input_ids="$G/${name}_prompt.npy" --generate=3 --output-dir "$d.3" >/dev/null
  [ "$(ids "$d.3/tokens.npy")" = "$(echo "$want" | cut -d' ' -f1-3)" ] || fail "$name: --generate=3 is not torch's first 3"
  [ -f "$d.i32.npy" ] || fail "$name: no int32 prompt written"
  waferc "$m" -q --interpret --input input_ids="$d.i32.npy" --generate=8 --output-dir "$d.i32" >/dev/null ||
    fail "$name: an int32 prompt failed"
  [ "$(ids "$d.i32/tokens.npy")" = "$want" ] || fail "$name: an int32 prompt gave other tokens"

  # the sequence axis is dynamic: other lengths import and run
  for s in 5 13; do
    [ -f "$d.s$s.npy" ] || fail "$name: no prompt of length $s written"
    waferc "$m" -q --interpret --input-shape input_ids=1x$s --input input_ids="$d.s$s.npy" --output-dir "$d.o$s" ||
      fail "$name: --interpret at sequence length $s failed"
    header "$d.o$s/logits.npy" | grep -q "'shape': (1, $s, " || fail "$name: logits at length $s: $(header "$d.o$s/logits.npy")"
  done
  n=$((n + 1))
done

# expect_fail WHAT CODE TEXT -- waferc args: exits CODE, stderr holds TEXT, no $TMP/neg/tokens.npy
expect_fail() {
  local what=$1 code=$2 text=$3 rc=0
  shift 4
  rm -rf "$TMP/neg"
  waferc "$@" >"$TMP/neg.out" 2>"$TMP/neg.err" || rc=$?
  [ "$rc" = "$code" ] || fail "$what: exit $rc, want $code: $(head -2 "$TMP/neg.err")"
  grep -q -- "$text" "$TMP/neg.err" || fail "$what: no '$text' in: $(head -2 "$TMP/neg.err")"
  [ ! -e "$TMP/neg/tokens.npy" ] || fail "$what: wrote tokens.npy"
  n=$((n + 1))
}

P=$G/gpt2_tied_prompt.npy
M=$G/gpt2_tied.onnx
python3 "$NPY" "$TMP/p7.npy" 1,7 1 i64:37 "$TMP/b2.npy" 2,4 1 i64:50 "$TMP/big.npy" 1,4 1 i64:100000
expect_fail "static input_ids" 1 "input 'input_ids' has the fixed shape i64\[1, 7\].*needs a dynamic sequence axis" -- \
  "$SRC/examples/models/tiny_argmax.onnx" --interpret --input input_ids="$TMP/p7.npy" --generate=2 --output-dir "$TMP/neg"
expect_fail "static x" 1 "input 'x' has the fixed shape f32\[1, 8, 64\].*needs a dynamic sequence axis" -- \
  "$SRC/examples/models/llama_block.onnx" --interpret --input x="$P" --generate=2 --output-dir "$TMP/neg"
expect_fail "float prompt" 1 "expects token ids, i64 or i32 \[1, L\]" -- \
  "$M" --interpret --input input_ids="$SRC/examples/models/llama_block_input.npy" --generate=2 --output-dir "$TMP/neg"
expect_fail "batch-2 prompt" 1 "holds i64\[2, 4\]" -- "$M" --interpret --input input_ids="$TMP/b2.npy" --generate=2 --output-dir "$TMP/neg"
expect_fail "id out of range" 1 "out of range" -- "$M" --interpret --input input_ids="$TMP/big.npy" --generate=2 --output-dir "$TMP/neg"
expect_fail "missing prompt" 6 "cannot open" -- "$M" --interpret --input input_ids="$TMP/none.npy" --generate=2 --output-dir "$TMP/neg"
expect_fail ".wir model" 2 "needs an ONNX model" -- "$SRC/examples/two_layer.wir" --interpret --input x="$P" --generate=2 --output-dir "$TMP/neg"
expect_fail "N = 0" 2 "expects an integer >= 1" -- "$M" --interpret --input input_ids="$P" --generate=0 --output-dir "$TMP/neg"
expect_fail "no --output-dir" 2 "needs --output-dir" -- "$M" --interpret --input input_ids="$P" --generate=2
expect_fail "two inputs" 2 "exactly one --input" -- "$M" --interpret --input input_ids="$P" --input x="$P" --generate=2 --output-dir "$TMP/neg"
expect_fail "conflicting shape" 2 "comes from the prompt" -- \
  "$M" --interpret --input input_ids="$P" --input-shape input_ids=1x3 --generate=2 --output-dir "$TMP/neg"
echo "generate_interpret: $n checks passed"
