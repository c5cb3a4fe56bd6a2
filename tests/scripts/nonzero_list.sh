#!/usr/bin/env bash
# NonZero as a bounded list (frontend/onnx/nonzero_list.c, docs/onnx.md "NonZero"): the
# graphs below are written by tests/tools/onnx_write.py (no onnx package needed). The MoE
# blocks that use the list (examples/models/moe/moe_hf_*, moe_nz_*) are checked against torch
# by moe_plans.sh; here:
#  - a constant input gives the exact list, of the data's length ([[1, 3]] for [0, 2, 0, 3]);
#  - what could see the invalid entries is refused with exit 3 at import, naming the node
#    and the NonZero: the list as a graph output, a sum over its entries, a length used as
#    data, and a scatter into data other than zeros... when the reduction is max;
#  - the valid entries of a computed list, scattered back (reduction add, ScatterND with
#    rows, and none into non-zero data) into the rows they came from, equal numpy's on the
#    interpreter and as plans on 1x1, 2x2 and 3x2;
#  - a slice of a one-hot of top-k indices (Hugging Face's dispatch) gives one entry per token.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n

python3 - "$TMP" "$SRC/tests/tools" <<'PY'
import os, struct, sys
sys.path.insert(0, sys.argv[2])
from onnx_write import attribute, f_bytes, f_int, model, node, value_info, tensor
T = sys.argv[1]
I64 = 7


def ints_attr(name, vals):  # AttributeProto INTS (type 7), field 8 packed
    return f_bytes(1, name) + b"".join(f_int(8, v) for v in vals) + f_int(20, 7)


def str_attr(name, s):  # AttributeProto STRING (type 3), field 4
    return f_bytes(1, name) + f_bytes(4, s) + f_int(20, 3)


def node2(op, ins, outs, raw_attrs=()):
    out = b"".join(f_bytes(1, i) for i in ins) + b"".join(f_bytes(2, o) for o in outs) + f_bytes(4, op)
    return out + b"".join(f_bytes(5, a) for a in raw_attrs)


def i64_tensor(name, dims, vals):
    out = b"".join(f_int(1, d) for d in dims) + f_int(2, I64) + f_bytes(8, name)
    return out + f_bytes(9, struct.pack("<%dq" % len(vals), *vals))


def mdl(nodes, inputs, outputs, inits=(), i64_inits=(), opset=17):
    g = b"".join(f_bytes(1, nd) for nd in nodes) + f_bytes(2, "g")
    g += b"".join(f_bytes(5, tensor(*t)) for t in inits)
    g += b"".join(f_bytes(5, i64_tensor(*t)) for t in i64_inits)
    g += b"".join(f_bytes(11, value_info(n, d, e)) for n, d, e in inputs)
    g += b"".join(f_bytes(12, value_info(n, d, e)) for n, d, e in outputs)
    return f_int(1, 8) + f_bytes(2, "onnx_write.py") + f_bytes(7, g) + f_bytes(8, f_bytes(1, "") + f_int(2, opset))


def write(name, data):
    open(os.path.join(T, name + ".onnx"), "wb").write(data)


F = 1
# the exact list of a constant
write("const", mdl([node2("NonZero", ["c"], ["y"])], [], [("y", [1, 2], I64)], inits=[("c", [4], [0.0, 2.0, 0.0, 3.0])]))
# refused: the list as an output; a sum over its entries; its length as data; a max scatter
write("out", mdl([node2("NonZero", ["x"], ["y"])], [("x", [8], F)], [("y", [1, 8], I64)]))
write("sum", mdl([node2("NonZero", ["x"], ["i"]), node2("Cast", ["i"], ["f"], [attribute("to", 1)]),
                  node2("ReduceSum", ["f"], ["y"], [attribute("keepdims", 0)])],
                 [("x", [8], F)], [("y", [], F)]))
write("len", mdl([node2("NonZero", ["x"], ["i"]), node2("Shape", ["i"], ["s"]), node2("Gather", ["s", "k1"], ["sn"]),
                  node2("Cast", ["sn"], ["sf"], [attribute("to", 1)]), node2("Mul", ["x", "sf"], ["y"])],
                 [("x", [8], F)], [("y", [8], F)], i64_inits=[("k1", [], [1])]))
# x [8, 4], m [8]: rows where m != 0, scaled by 2, scattered back
def rows(scatter, data_zero, red=None, opset=17):
    nodes = [node2("NonZero", ["m"], ["nz"]), node2("Transpose", ["nz"], ["t"], [ints_attr("perm", [1, 0])]),
             node2("Squeeze", ["t", "ax1"], ["r"]), node2("Gather", ["x", "r"], ["g"], [attribute("axis", 0)]),
             node2("Mul", ["g", "two"], ["u"])]
    data = "z" if data_zero else "x"
    attrs = [str_attr("reduction", red)] if red else []
    if scatter == "nd":
        nodes.append(node2("ScatterND", [data, "t", "u"], ["y"], attrs))
    else:
        nodes += [node2("Unsqueeze", ["r", "ax1"], ["ru"]), node2("Expand", ["ru", "shp"], ["re"]),
                  node2("ScatterElements", [data, "re", "u"], ["y"], attrs + [attribute("axis", 0)])]
    inits = [("two", [], [2.0]), ("z", [8, 4], [0.0] * 32)]
    return mdl(nodes, [("x", [8, 4], F), ("m", [8], F)], [("y", [8, 4], F)], inits=inits,
               i64_inits=[("ax1", [1], [1]), ("shp", [2], [8, 4])], opset=opset)
write("add", rows("el", True, "add"))
write("nd", rows("nd", True))
write("none", rows("el", False))
write("max", rows("el", False, "max", 18))
# inputs: x = 0.1 * (0..31), m with rows 1, 2, 5 and 6 set
def npy(path, shape, vals):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<%df" % len(vals), *vals))
xs = [0.1 * i for i in range(32)]
ms = [0, 1, 1, 0, 0, 1, 1, 0]
npy(os.path.join(T, "x.npy"), [8, 4], xs)
npy(os.path.join(T, "m.npy"), [8], [float(v) for v in ms])
want = {"add": [], "nd": [], "none": []}
for r in range(8):
    for c in range(4):
        v = xs[r * 4 + c]
        want["add"].append(2 * v if ms[r] else 0.0)
        want["none"].append(2 * v if ms[r] else v)
want["nd"] = want["add"]
for k, v in want.items():
    npy(os.path.join(T, k + ".want.npy"), [8, 4], v)
PY

# the exact list of a constant
waferc "$TMP/const.onnx" --interpret --output-dir "$TMP/const.out" -q 2>"$TMP/err" ||
  fail "const: waferc --interpret exited $?: $(head -2 "$TMP/err")"
python3 - "$TMP/const.out/y.npy" <<'PY' || fail "const: the list of [0, 2, 0, 3] is not [[1, 3]]"
import struct, sys
b = open(sys.argv[1], "rb").read()
hl = struct.unpack("<H", b[8:10])[0]
assert b"(1, 2)" in b[10:10 + hl], b[10:10 + hl]
assert struct.unpack("<2q", b[10 + hl:]) == (1, 3)
PY
n=$((n + 1))

# refused, exit 3, with the place and the reason
refused() { # NAME WANT-REGEX
  local rc=0
  waferc "$TMP/$1.onnx" --interpret --input "x=$TMP/x8.npy" --output-dir "$TMP/$1.out" 2>"$TMP/err" || rc=$?
  [ $rc = 3 ] || fail "$1: waferc exited $rc, want 3: $(head -2 "$TMP/err")"
  grep -Eq "$2" "$TMP/err" || fail "$1: the message does not say '$2': $(head -2 "$TMP/err")"
  [ ! -e "$TMP/$1.out" ] || fail "$1: an output directory was written"
  n=$((n + 1))
}
python3 "$NPY" "$TMP/x8.npy" 8 3 1.0
refused out "graph output 'y' is computed from the list NonZero"
refused sum "\(ReduceSum, opset 17\): error: ReduceSum of a value, computed from the list NonZero"
refused len "\(Mul, opset 17\): error: a length, computed from the list NonZero"
rc=0
waferc "$TMP/max.onnx" --interpret --input "x=$TMP/x.npy" --input "m=$TMP/m.npy" --output-dir "$TMP/max.out" 2>"$TMP/err" || rc=$?
[ $rc = 3 ] && grep -q "reduction max or min" "$TMP/err" || fail "max: waferc exited $rc: $(head -2 "$TMP/err")"
n=$((n + 1))

# the valid entries scattered back, on the interpreter and as plans
for g in add nd none; do
  ins=(--input "x=$TMP/x.npy" --input "m=$TMP/m.npy")
  waferc "$TMP/$g.onnx" --interpret "${ins[@]}" --output-dir "$TMP/$g.ref" -q 2>"$TMP/err" ||
    fail "$g: waferc --interpret exited $?: $(head -2 "$TMP/err")"
  wafer-npycmp "$TMP/$g.ref/y.npy" "$TMP/$g.want.npy" --atol 1e-6 --rtol 0 >"$TMP/cmp" 2>&1 ||
    fail "$g: the interpreter differs from numpy: $(head -1 "$TMP/cmp")"
  for mesh in 1x1 2x2 3x2; do
    d=$TMP/$g.$mesh
    waferc "$TMP/$g.onnx" -o "$d" --target=test8x8 --mesh=$mesh -q 2>"$TMP/err" ||
      fail "$g $mesh: waferc exited $?: $(grep -m1 error "$TMP/err")"
    waferrun "$d" -q "${ins[@]}" --output-dir "$d/out" 2>"$TMP/err" ||
      fail "$g $mesh: waferrun exited $?: $(head -1 "$TMP/err")"
    wafer-npycmp "$d/out/y.npy" "$TMP/$g.want.npy" --atol 1e-6 --rtol 0 >"$TMP/cmp" 2>&1 ||
      fail "$g $mesh: the plan differs from numpy: $(head -1 "$TMP/cmp")"
    n=$((n + 1))
  done
done
# Hugging Face's dispatch (one expert's slice of a one-hot of top-k indices): one entry per
# token, not per (slot, token): the expert's first matmul takes T = 8 rows of moe_hf_e4_k2
# (top-2), not 16
waferc "$SRC/examples/models/moe/moe_hf_e4_k2.onnx" --emit=ir -o "$TMP/hf.wir" 2>"$TMP/err" ||
  fail "moe_hf_e4_k2: waferc --emit=ir exited $?: $(head -1 "$TMP/err")"
grep -Eq "%_experts\.0_w1_MatMul_output_0 = matmul\(.*\) : f32\[8, 32\]" "$TMP/hf.wir" ||
  fail "moe_hf_e4_k2: the expert does not run on one row per token: $(grep -m1 experts.0_w1_MatMul "$TMP/hf.wir")"
n=$((n + 1))
echo "nonzero_list: $n checks passed"
