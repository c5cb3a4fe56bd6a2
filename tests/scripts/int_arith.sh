#!/usr/bin/env bash
# Integer arithmetic on the mesh (ir/rules_index.c wf_int_words_ok; integers are f32 words,
# exact below 2^24): sums, products, max, min and division truncated toward zero
# (backend/ops/lower_elementwise.c, lower_int_div) of i64 inputs, a broadcast divisor and a
# divisor of one element, against the interpreter exactly, on 1x1, 2x2 and 3x2 (4 and 6 do
# not divide 5: padded blocks). The values take every sign, exact and inexact quotients,
# quotients just below an integer, and dividends up to 2^24 - 1 (where f32 holds only
# integers: the floor of a quotient from 2^23 on is the quotient).
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n

python3 - "$TMP" <<'PY'
import struct, sys
T = sys.argv[1]
def npy(path, shape, vals):
    h = "{'descr': '<i8', 'fortran_order': False, 'shape': (%s), }" % (", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<%dq" % len(vals), *vals))
a = [7, -7, 6, -6, 0, 1, -1, 16777215, -16777215, 8388607, 8388609, 12582911, 100, -100, 99, 5,
     16777214, 3, -3, 2, 9, -9, 15, 1 << 23, -(1 << 23), 11, -11, 13, 4, 17]
b = [2, 2, 3, -3, 5, 3, 3, 3, 7, 2, 2, 16777215, 7, 7, -10, 16777215,
     3, -1, 1, 16777215, 4, 4, -4, 3, 7, 6, 6, -5, 4, 8]
npy(T + "/a.npy", [6, 5], a)
npy(T + "/b.npy", [6, 5], b)
npy(T + "/c.npy", [1, 5], [3, -7, 2, 11, -1])
npy(T + "/s.npy", [1], [-4])
open(T + "/ints.wir", "w").write("""module @ints {
  func @main(%a: i64[6, 5], %b: i64[6, 5], %c: i64[1, 5], %s: i64[1]) -> (i64[6, 5], i64[6, 5], i64[6, 5], i64[6, 5], i64[6, 5]) {
    %q = div(%a, %b) : i64[6, 5]
    %qc = div(%a, %c) : i64[6, 5]
    %qs = div(%a, %s) : i64[6, 5]
    %sm = add(%q, %qc) : i64[6, 5]
    %p = mul(%sm, %s) : i64[6, 5]
    %mx = maximum(%p, %qs) : i64[6, 5]
    return %q, %qc, %qs, %p, %mx
  }
}
""")
PY
ins=(--input "a=$TMP/a.npy" --input "b=$TMP/b.npy" --input "c=$TMP/c.npy" --input "s=$TMP/s.npy")
waferc "$TMP/ints.wir" --interpret "${ins[@]}" --output-dir "$TMP/ref" -q 2>"$TMP/err" ||
  fail "the interpreter exited $?: $(head -2 "$TMP/err")"
# the interpreter truncates toward zero (C's division), checked here on a few
python3 - "$TMP/ref/q.npy" <<'PY' || fail "the interpreter's quotients are not truncated toward zero"
import struct, sys
b = open(sys.argv[1], "rb").read()
hl = struct.unpack("<H", b[8:10])[0]
q = struct.unpack("<30q", b[10 + hl:])
assert q[:8] == (3, -3, 2, 2, 0, 0, 0, 5592405), q[:8]
assert q[9:11] == (4194303, 4194304) and q[11] == 0 and q[14] == -9 and q[16] == 5592404, q
PY
for mesh in 1x1 2x2 3x2; do
  d=$TMP/ints.$mesh
  waferc "$TMP/ints.wir" -o "$d" --target=test8x8 --mesh=$mesh -q 2>"$TMP/err" ||
    fail "$mesh: waferc exited $?: $(grep -m1 error "$TMP/err")"
  waferrun "$d" -q "${ins[@]}" --output-dir "$d/out" 2>"$TMP/err" || fail "$mesh: waferrun exited $?: $(head -1 "$TMP/err")"
  for o in q qc qs p mx; do
    wafer-npycmp "$d/out/$o.npy" "$TMP/ref/$o.npy" --atol 0 --rtol 0 >"$TMP/cmp" 2>&1 ||
      fail "$mesh: $o differs from the interpreter: $(head -1 "$TMP/cmp")"
    n=$((n + 1))
  done
done
echo "int_arith: $n checks passed"
