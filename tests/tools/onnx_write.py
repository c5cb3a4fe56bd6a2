"""A small ONNX writer in pure Python (stdlib only), for tests that must run without the onnx
package: it hand-encodes the protobuf messages a MatMul or Gemm model needs.

    onnx_write.py matmul OUT.onnx A_SHAPE B_SHAPE
    onnx_write.py gemm OUT.onnx A_SHAPE B_SHAPE [--trans-a] [--trans-b] [--alpha F] [--beta F]
                  [--bias C_SHAPE [--bias-init SEED]]

Shapes are comma-separated ("2,3,5"; "" is a scalar). Graph inputs are "a" and "b" (and "bias"
unless --bias-init stores it as an initializer with values from tests/tools/npy.py's LCG),
the output is "c". As a module: model(), node(), value_info(), tensor(), matmul_model(),
gemm_model(), matmul_shape().

Field numbers are those of onnx.proto (ONNX 1.x; checked against Debian's libonnx-dev
/usr/include/onnx/onnx.proto): ModelProto ir_version 1, opset_import 8, producer_name 2,
graph 7; OperatorSetIdProto domain 1, version 2; GraphProto node 1, name 2, initializer 5,
input 11, output 12; NodeProto input 1, output 2, name 3, op_type 4, attribute 5;
AttributeProto name 1, f 2, i 3, type 20 (FLOAT = 1, INT = 2); ValueInfoProto name 1, type 2;
TypeProto tensor_type 1; TypeProto.Tensor elem_type 1, shape 2; TensorShapeProto dim 1;
Dimension dim_value 1; TensorProto dims 1, data_type 2, name 8, raw_data 9 (FLOAT = 1).
"""
import struct
import sys

FLOAT = 1  # TensorProto.DataType.FLOAT
ATTR_FLOAT, ATTR_INT = 1, 2  # AttributeProto.AttributeType


# ---- wire format ---------------------------------------------------------------------------
def varint(v):
    """Base-128 varint; negative int64 values take ten bytes (two's complement), as protobuf."""
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def f_int(field, v):  # wire type 0
    return key(field, 0) + varint(v)


def f_bytes(field, data):  # wire type 2: strings, bytes, sub-messages
    if isinstance(data, str):
        data = data.encode()
    return key(field, 2) + varint(len(data)) + data


def f_float(field, v):  # wire type 5
    return key(field, 5) + struct.pack("<f", v)


# ---- messages ------------------------------------------------------------------------------
def attribute(name, value):
    """AttributeProto: an int (INT) or a float (FLOAT); bools are written as INT."""
    if isinstance(value, (bool, int)):
        return f_bytes(1, name) + f_int(3, int(value)) + f_int(20, ATTR_INT)
    if isinstance(value, float):
        return f_bytes(1, name) + f_float(2, value) + f_int(20, ATTR_FLOAT)
    raise TypeError("attribute %s: int or float only" % name)


def node(op_type, inputs, outputs, name="", attrs=None):
    out = b"".join(f_bytes(1, i) for i in inputs) + b"".join(f_bytes(2, o) for o in outputs)
    if name:
        out += f_bytes(3, name)
    out += f_bytes(4, op_type)
    for k in sorted(attrs or {}):
        out += f_bytes(5, attribute(k, attrs[k]))
    return out


def value_info(name, dims, elem_type=FLOAT):
    """ValueInfoProto of a tensor with a fixed shape (a scalar when dims is empty)."""
    shape = b"".join(f_bytes(1, f_int(1, d)) for d in dims)
    tensor_type = f_int(1, elem_type) + f_bytes(2, shape)
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tensor_type))


def tensor(name, dims, values):
    """TensorProto holding f32 values in raw_data (little-endian, row-major)."""
    n = 1
    for d in dims:
        n *= d
    if len(values) != n:
        raise ValueError("tensor %s: %d values for shape %s" % (name, len(values), list(dims)))
    out = b"".join(f_int(1, d) for d in dims) + f_int(2, FLOAT) + f_bytes(8, name)
    return out + f_bytes(9, struct.pack("<%df" % n, *values))


def model(nodes, inputs, outputs, initializers=(), graph_name="g", opset=13, ir_version=8):
    """ModelProto bytes. inputs / outputs: (name, dims) pairs; initializers: (name, dims, values)."""
    g = b"".join(f_bytes(1, nd) for nd in nodes) + f_bytes(2, graph_name)
    g += b"".join(f_bytes(5, tensor(*t)) for t in initializers)
    g += b"".join(f_bytes(11, value_info(n, d)) for n, d in inputs)
    g += b"".join(f_bytes(12, value_info(n, d)) for n, d in outputs)
    opset_id = f_bytes(1, "") + f_int(2, opset)
    return f_int(1, ir_version) + f_bytes(2, "onnx_write.py") + f_bytes(7, g) + f_bytes(8, opset_id)


# ---- MatMul and Gemm -----------------------------------------------------------------------
def broadcast(s, t):
    """numpy broadcasting of two shapes."""
    n = max(len(s), len(t))
    s, t = [1] * (n - len(s)) + list(s), [1] * (n - len(t)) + list(t)
    out = []
    for a, b in zip(s, t):
        if a != b and a != 1 and b != 1:
            raise ValueError("shapes %s and %s do not broadcast" % (s, t))
        out.append(max(a, b))
    return out


def matmul_shape(sa, sb):
    """numpy.matmul's result shape: 1-D operands get a dimension prepended (A) or appended
    (B) that is dropped again; the batch dimensions broadcast."""
    a, b = list(sa), list(sb)
    if not a or not b:
        raise ValueError("matmul of a scalar")
    a2 = [1] + a if len(a) == 1 else a
    b2 = b + [1] if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError("matmul %s x %s: K differs" % (sa, sb))
    out = broadcast(a2[:-2], b2[:-2]) + [a2[-2], b2[-1]]
    if len(a) == 1:
        del out[-2]
    if len(b) == 1:
        del out[-1]
    return out


def matmul_model(sa, sb, b_init=None):
    """C = A @ B; with b_init (a list of values) B is an initializer rather than an input."""
    sc = matmul_shape(sa, sb)
    ins = [("a", sa)] + ([] if b_init is not None else [("b", sb)])
    inits = [("b", sb, b_init)] if b_init is not None else []
    return model([node("MatMul", ["a", "b"], ["c"], "mm")], ins, [("c", sc)], inits)


def gemm_model(sa, sb, trans_a=0, trans_b=0, alpha=1.0, beta=1.0, bias=None, bias_init=None):
    """Y = alpha * A' B' + beta * C (Gemm: 2-D A and B; C broadcasts to [M, N]).
    bias: C's shape or None; bias_init: C's values (C is then an initializer)."""
    m = sa[1] if trans_a else sa[0]
    n = sb[0] if trans_b else sb[1]
    attrs = {"alpha": float(alpha), "beta": float(beta), "transA": int(trans_a), "transB": int(trans_b)}
    ins, inits, names = [("a", sa), ("b", sb)], [], ["a", "b"]
    if bias is not None:
        names.append("bias")
        if bias_init is not None:
            inits.append(("bias", bias, bias_init))
        else:
            ins.append(("bias", bias))
    return model([node("Gemm", names, ["c"], "gemm", attrs)], ins, [("c", [m, n])], inits)


def lcg_values(n, seed, scale=1.0):
    """tests/tools/npy.py's values: the same seed gives the same numbers."""
    state, vals = seed & 0xFFFFFFFF, []
    for _ in range(n):
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        vals.append(scale * ((state >> 8) / float(1 << 24) * 2.0 - 1.0))
    return vals


def _shape(txt):
    return [int(d) for d in txt.split(",") if d != ""]


def _gemm_opts(rest):
    """gemm_model's keyword arguments from the CLI options; raises ValueError."""
    opts = {"trans_a": 0, "trans_b": 0, "alpha": 1.0, "beta": 1.0, "bias": None, "bias_init": None}
    rest = list(rest)
    while rest:
        o = rest.pop(0)
        if o in ("--trans-a", "--trans-b"):
            opts[o[2:].replace("-", "_")] = 1
        elif o in ("--alpha", "--beta") and rest:
            opts[o[2:]] = float(rest.pop(0))
        elif o == "--bias" and rest:
            opts["bias"] = _shape(rest.pop(0))
        elif o == "--bias-init" and rest:
            opts["bias_init"] = int(rest.pop(0))
        else:
            raise ValueError("bad option %s" % o)
    if opts["bias_init"] is not None:
        if opts["bias"] is None:
            raise ValueError("--bias-init needs --bias")
        n = 1
        for d in opts["bias"]:
            n *= d
        opts["bias_init"] = lcg_values(n, opts["bias_init"])
    return opts


def main(argv):
    usage = __doc__.split("\n\n")[1]
    if len(argv) < 4 or argv[0] not in ("matmul", "gemm") or (argv[0] == "matmul" and len(argv) != 4):
        sys.stderr.write("usage:\n" + usage + "\n")
        return 2
    try:
        sa, sb = _shape(argv[2]), _shape(argv[3])
        if argv[0] == "matmul":
            data = matmul_model(sa, sb)
        else:
            data = gemm_model(sa, sb, **_gemm_opts(argv[4:]))
    except ValueError as e:
        sys.stderr.write("onnx_write.py: %s\n" % e)
        return 2
    with open(argv[1], "wb") as f:
        f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
