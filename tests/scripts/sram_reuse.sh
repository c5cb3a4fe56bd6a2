#!/usr/bin/env bash
# Liveness-based SRAM planning (backend/resources/lower_memory.c): a chain of six ops over a 1 KiB
# block needs 7 KiB if every value keeps its own block but only 2 KiB when dead values'
# memory is reused, so it fits a 4 KiB PE only thanks to reuse; on a 1.5 KiB PE it does
# not fit at all and the error names the tensor, the class, the bytes missing and a fix, and a
# note what is live where the most is (by kind: weights, values, scratch). A
# LLaMA block's attention and GEMM buffers (async streams, joined by a wait) share bytes.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, NODE, NPY, TMP, fail, n

cat > "$TMP/chain.wir" <<'EOF2'
module @chain {
  func @main(%x: f32[16, 16]) -> f32[16, 16] {
    %a = exp(%x) : f32[16, 16]
    %b = neg(%a) : f32[16, 16]
    %c = tanh(%b) : f32[16, 16]
    %d = relu(%c) : f32[16, 16]
    %e = sigmoid(%d) : f32[16, 16]
    %y = sqrt(%e) : f32[16, 16]
    return %y
  }
}
EOF2
for kb in 4096 1536; do
  sed "s/^sram_bytes = .*/sram_bytes = $kb/; s/^name = .*/name = small$kb/" \
    "$SRC/targets/test4x4.target" > "$TMP/small$kb.target"
done
# x = 0.01 * i, written without numpy.
python3 - "$TMP/x.npy" <<'PY'
import struct, sys
vals = [0.01 * i for i in range(256)]
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (16, 16), }"
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<256f", *vals))
PY

waferc "$TMP/chain.wir" -o "$TMP/plan" --target="$TMP/small4096.target" --mesh=1x1 ||
  fail "the chain must fit 4 KiB with reuse (exit $?)"
python3 - "$TMP/plan/manifest.json" <<'PY' || fail "memory map check"
import json, sys
cls = json.load(open(sys.argv[1]))["regions"][0]["classes"][0]
used = cls["memory_bytes"]
total = sum(s["bytes"] for s in cls["memory"])
assert total == 7 * 1024, "seven 1 KiB values expected, got %d bytes" % total
assert used <= 4096 < total, "memory_bytes %d: reuse must bring 7 KiB under 4 KiB" % used
# No two values live at the same time may overlap: x and y are both live only with
# their neighbours, so check the pairs used by one instruction.
off = {s["symbol"]: (s["offset"], s["bytes"]) for s in cls["memory"]}
pairs = [("%x", "%a"), ("%a", "%b"), ("%b", "%c"), ("%c", "%d"), ("%d", "%e"), ("%e", "%y")]
for p, q in pairs:
    (o1, b1), (o2, b2) = off[p], off[q]
    assert o1 + b1 <= o2 or o2 + b2 <= o1, "%s and %s overlap" % (p, q)
PY
waferrun "$TMP/plan" -q --input x="$TMP/x.npy" --output-dir "$TMP/out" || fail "waferrun exited $?"
waferc "$TMP/chain.wir" --interpret --input x="$TMP/x.npy" --output-dir "$TMP/ref"
wafer-npycmp "$TMP/out/y.npy" "$TMP/ref/y.npy" --atol 1e-5 --rtol 1e-4 >/dev/null ||
  fail "reused memory corrupted the result"

set +e
waferc "$TMP/chain.wir" -o "$TMP/plan2" --target="$TMP/small1536.target" --mesh=1x1 2>"$TMP/err"
rc=$?
set -e
[ "$rc" -eq 4 ] || fail "over budget: exit $rc, want 4 (does not fit)"
grep -Eq "chain.wir:[0-9]+:[0-9]+: error: tensor '%[a-z]' \(1024 bytes per PE\) of class 'main' does not fit the 1536-byte SRAM of a 'small1536' PE: 512 bytes missing .*use a larger mesh" "$TMP/err" ||
  fail "over budget: unexpected message: $(cat "$TMP/err")"
# The location is the line that defines the tensor (its op, or the function for an argument).
line=$(sed -nE "s/.*chain.wir:([0-9]+):[0-9]+: error: tensor '(%[a-z])'.*/\1/p" "$TMP/err")
name=$(sed -nE "s/.*chain.wir:([0-9]+):[0-9]+: error: tensor '(%[a-z])'.*/\2/p" "$TMP/err")
sed -n "${line}p" "$TMP/chain.wir" | grep -Eq "(^|[ (])$name( =|:)" ||
  fail "over budget: line $line of chain.wir does not define $name: $(sed -n "${line}p" "$TMP/chain.wir")"
[ ! -f "$TMP/plan2/manifest.json" ] || fail "a failed compile left a manifest"
# What the PE holds where the most is live: two neighbours of the chain, both values.
grep -q "note: at its fullest, class 'main' holds 2048 bytes live per PE: values 2048 bytes in 2 (the largest '%[a-z]', 1024)$" "$TMP/err" ||
  fail "over budget: no breakdown of the fullest point: $(cat "$TMP/err")"
echo "sram_reuse: fits with reuse, over-budget error names the tensor"

# Ops' scratch shares bytes across ops: an async stream's buffers are live until the wait that
# joins it, so the attention's buffers may sit on the GEMMs' shift buffers (both streamed).
# The plan must still equal torch's output.
M=$SRC/examples/models
waferc "$M/llama_block.onnx" -o "$TMP/blk" --target=test8x8 --mesh=4x4 -q
cat "$TMP"/blk/programs/*.wpe | awk '
  $1 == ".sym" && $2 ~ /^\$(att|gemm)_/ { name[n] = $2; lo[n] = $3; hi[n] = $3 + $4; n++ }
  END {
    for (i = 0; i < n; i++) for (j = 0; j < n; j++)
      if (name[i] ~ /^\$att_/ && name[j] ~ /^\$gemm_/ && lo[i] < hi[j] && lo[j] < hi[i]) shared++
    if (!shared) { print "no $att_ buffer shares bytes with a $gemm_ buffer"; exit 1 }
  }' || fail "llama block on 4x4: scratch of different ops never shares SRAM"
waferrun "$TMP/blk" --input x="$M/llama_block_input.npy" --output-dir "$TMP/blk-out" -q
wafer-npycmp "$TMP"/blk-out/*.npy "$M/llama_block_ref.npy" --atol 1e-4 --rtol 0 >/dev/null ||
  fail "llama block on 4x4 with shared scratch: output differs from torch"
echo "sram_reuse: streamed scratch of different ops shares SRAM, output equals torch"
