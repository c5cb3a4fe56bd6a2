#!/usr/bin/python3
"""Generates the small ONNX models of waferc's importer tests (tests/onnx/models/).

Run with Debian's python3 (python3-onnx, python3-numpy):  /usr/bin/python3 tests/onnx/gen_models.py
The outputs are committed, so CI needs neither onnx nor numpy. Each model NAME.onnx comes
with its inputs NAME.in.<input>.npy and the expected outputs NAME.ref.<output>.npy, computed
here with numpy straight from the ops' definitions (an oracle independent of waferc).
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "models")
rng = np.random.default_rng(1234)

F32 = TensorProto.FLOAT
I64 = TensorProto.INT64


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def save(name, graph, inputs, refs, opset=17, functions=(), extra_opsets=()):
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets, functions=list(functions), producer_name="waferc-tests")
    model.ir_version = 8
    onnx.save(model, os.path.join(OUT, name + ".onnx"))
    for k, v in inputs.items():
        np.save(os.path.join(OUT, "%s.in.%s.npy" % (name, k)), v)
    for k, v in refs.items():
        np.save(os.path.join(OUT, "%s.ref.%s.npy" % (name, k)), v)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def erf(x):
    # Abramowitz-Stegun would be too coarse; math.erf per element is exact enough
    import math
    return np.vectorize(math.erf)(x.astype(np.float64)).astype(np.float32)


def elementwise():
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = (rng.random((3,)) + 0.5).astype(np.float32)
    nodes = [
        helper.make_node("Add", ["x", "y"], ["add"], name="add"),
        helper.make_node("Sub", ["add", "y"], ["sub"]),
        helper.make_node("Mul", ["sub", "y"], ["mul"]),
        helper.make_node("Div", ["mul", "y"], ["div"]),
        helper.make_node("Pow", ["y", "two"], ["pow"]),          # int64 exponent
        helper.make_node("Relu", ["x"], ["relu"]),
        helper.make_node("Sqrt", ["y"], ["sqrt"]),
        helper.make_node("Reciprocal", ["y"], ["recip"]),
        helper.make_node("Neg", ["x"], ["neg"]),
        helper.make_node("Exp", ["x"], ["exp"]),
        helper.make_node("Log", ["y"], ["log"]),
        helper.make_node("Erf", ["x"], ["erf"]),
        helper.make_node("Tanh", ["x"], ["tanh"]),
        helper.make_node("Sigmoid", ["x"], ["sigmoid"]),
        helper.make_node("Cos", ["x"], ["cos"]),
        helper.make_node("Sin", ["x"], ["sin"]),
        helper.make_node("Greater", ["x", "zero"], ["gt"]),
        helper.make_node("Not", ["gt"], ["le"]),
        helper.make_node("Where", ["le", "neg", "exp"], ["where"]),
        helper.make_node("Equal", ["relu", "zero"], ["eq"]),
        helper.make_node("Cast", ["eq"], ["eqf"], to=F32),
        helper.make_node("Identity", ["eqf"], ["ident"]),
    ]
    outs = ["div", "pow", "sqrt", "recip", "log", "erf", "tanh", "sigmoid", "cos", "sin", "where", "ident"]
    g = helper.make_graph(nodes, "elementwise", [vi("x", F32, [2, 3]), vi("y", F32, [3])],
                          [vi(o, F32, None) for o in outs],
                          [init("two", np.array(2, np.int64)), init("zero", np.array(0, np.float32))])
    refs = {
        "div": ((x + y - y) * y) / y, "pow": y ** 2, "sqrt": np.sqrt(y), "recip": 1 / y, "log": np.log(y),
        "erf": erf(x), "tanh": np.tanh(x), "sigmoid": 1 / (1 + np.exp(-x)), "cos": np.cos(x), "sin": np.sin(x),
        "where": np.where(~(x > 0), -x, np.exp(x)), "ident": (np.maximum(x, 0) == 0).astype(np.float32),
    }
    save("elementwise", g, {"x": x, "y": y}, {k: v.astype(np.float32) for k, v in refs.items()})


def linalg():
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    c = rng.standard_normal((6,)).astype(np.float32)
    q = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    k = rng.standard_normal((1, 2, 5, 4)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["a", "b"], ["mm"]),
        helper.make_node("Reshape", ["a", "shape2d"], ["a2"]),
        helper.make_node("Gemm", ["a2", "w", "c"], ["gemm"], alpha=0.5, beta=2.0, transB=1),
        helper.make_node("Einsum", ["q", "k"], ["scores"], equation="bhqd,bhkd->bhqk"),
        helper.make_node("Einsum", ["a", "b"], ["bmm"], equation="bij,jk->bik"),
    ]
    g = helper.make_graph(nodes, "linalg",
                          [vi("a", F32, [2, 3, 4]), vi("q", F32, [1, 2, 3, 4]), vi("k", F32, [1, 2, 5, 4])],
                          [vi("mm", F32, None), vi("gemm", F32, None), vi("scores", F32, None), vi("bmm", F32, None)],
                          [init("b", b), init("w", w), init("c", c), init("shape2d", np.array([-1, 4], np.int64))])
    a2 = a.reshape(-1, 4).astype(np.float64)
    refs = {"mm": a @ b, "gemm": 0.5 * a2 @ w.T.astype(np.float64) + 2.0 * c,
            "scores": np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)),
            "bmm": np.einsum("bij,jk->bik", a.astype(np.float64), b.astype(np.float64))}
    save("linalg", g, {"a": a, "q": q, "k": k}, {k_: v.astype(np.float32) for k_, v in refs.items()})


def softmax_np(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def reduce_norm():
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    scale = rng.standard_normal((4,)).astype(np.float32)
    bias = rng.standard_normal((4,)).astype(np.float32)
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1], keepdims=1),
        helper.make_node("ReduceSum", ["x", "axes01"], ["sum"], keepdims=0),
        helper.make_node("ReduceMax", ["x"], ["max"], axes=[1], keepdims=0),
        helper.make_node("ReduceSum", ["x"], ["sumall"], keepdims=0),
        helper.make_node("Softmax", ["x"], ["sm"], axis=1),
        helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["ln"], axis=-1, epsilon=1e-5),
    ]
    g = helper.make_graph(nodes, "reduce_norm", [vi("x", F32, [2, 3, 4])],
                          [vi(o, F32, None) for o in ["mean", "sum", "max", "sumall", "sm", "ln"]],
                          [init("scale", scale), init("bias", bias), init("axes01", np.array([0, 1], np.int64))])
    xd = x.astype(np.float64)
    mu = xd.mean(-1, keepdims=True)
    var = ((xd - mu) ** 2).mean(-1, keepdims=True)
    refs = {"mean": xd.mean(-1, keepdims=True), "sum": xd.sum((0, 1)), "max": xd.max(1), "sumall": xd.sum(),
            "sm": softmax_np(xd, 1), "ln": (xd - mu) / np.sqrt(var + 1e-5) * scale + bias}
    save("reduce_norm", g, {"x": x}, {k: np.asarray(v, np.float32) for k, v in refs.items()})

    # opset 11 softmax: coerced to 2-D at axis 1
    g = helper.make_graph([helper.make_node("Softmax", ["x"], ["sm"], axis=1)], "softmax11",
                          [vi("x", F32, [2, 3, 4])], [vi("sm", F32, None)])
    save("softmax11", g, {"x": x}, {"sm": softmax_np(xd.reshape(2, 12), 1).reshape(2, 3, 4).astype(np.float32)}, opset=11)


def movement():
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    idx = np.array([[2, 0], [1, -1]], np.int64)
    upd = rng.standard_normal((1, 3, 2)).astype(np.float32)
    sidx = np.array([[[3, 0], [1, 2], [0, 0]]], np.int64)
    nodes = [
        helper.make_node("Transpose", ["x"], ["tr"], perm=[2, 0, 1]),
        helper.make_node("Reshape", ["x", "shp"], ["rs"]),               # [0, -1]
        helper.make_node("Flatten", ["x"], ["fl"], axis=-1),
        helper.make_node("Unsqueeze", ["x", "ax0"], ["us"]),
        helper.make_node("Squeeze", ["us", "ax0"], ["sq"]),
        helper.make_node("Concat", ["x", "sq"], ["cat"], axis=1),
        helper.make_node("Split", ["x", "sizes"], ["sp0", "sp1"], axis=2),
        helper.make_node("Slice", ["x", "st", "en", "axs", "stp"], ["sl"]),
        helper.make_node("Gather", ["x", "idx"], ["ga"], axis=2),
        helper.make_node("Expand", ["col", "eshape"], ["ex"]),
        helper.make_node("Trilu", ["x", "one"], ["tri"], upper=0),
        helper.make_node("TopK", ["x", "k2"], ["tkv", "tki"], axis=-1),
        helper.make_node("Slice", ["x", "x0st", "x0en", "ax0"], ["x0"]),
        helper.make_node("ScatterElements", ["x0", "sidx", "upd"], ["sc"], axis=2, reduction="add"),
        helper.make_node("Tile", ["x", "reps"], ["ti"]),
    ]
    outs = [vi(o, F32, None) for o in ["tr", "rs", "fl", "cat", "sp0", "sp1", "sl", "ga", "ex", "tri", "tkv", "ti"]]
    outs += [vi("tki", I64, None), vi("sc", F32, None)]
    inits = [init("shp", np.array([0, -1], np.int64)), init("ax0", np.array([0], np.int64)),
             init("sizes", np.array([1, 3], np.int64)), init("st", np.array([-1, 0], np.int64)),
             init("en", np.array([-1000, 3], np.int64)), init("axs", np.array([2, 1], np.int64)),
             init("stp", np.array([-2, 2], np.int64)), init("idx", idx),
             init("col", np.array([[1.0], [2.0], [3.0]], np.float32)), init("eshape", np.array([2, 1, 4], np.int64)),
             init("one", np.array(1, np.int64)), init("k2", np.array([2], np.int64)), init("upd", upd),
             init("sidx", sidx), init("x0st", np.array([0], np.int64)), init("x0en", np.array([1], np.int64)),
             init("reps", np.array([2, 1, 3], np.int64))]
    g = helper.make_graph(nodes, "movement", [vi("x", F32, [2, 3, 4])], outs, inits)
    order = np.argsort(-x, axis=-1, kind="stable")[..., :2]
    sc = x[0:1].copy()
    for j in range(3):
        for l in range(2):
            sc[0, j, sidx[0, j, l]] += upd[0, j, l]
    refs = {
        "tr": x.transpose(2, 0, 1), "rs": x.reshape(2, 12), "fl": x.reshape(6, 4), "cat": np.concatenate([x, x], 1),
        "sp0": x[:, :, :1], "sp1": x[:, :, 1:], "sl": x[:, 0:3:2, -1:-1000:-2], "ga": x[:, :, idx],
        "ex": np.broadcast_to(np.array([[1.0], [2.0], [3.0]], np.float32), (2, 3, 4)), "tri": np.tril(x, 1),
        "tkv": np.take_along_axis(x, order, -1), "tki": order.astype(np.int64), "sc": sc, "ti": np.tile(x, (2, 1, 3)),
    }
    save("movement", g, {"x": x}, {k: np.ascontiguousarray(v) for k, v in refs.items()})


def gpt2_shapes():
    """The shape subgraph GPT-2 exports: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, and a
    causal mask from Range / Trilu / Where, all over dynamic dims fixed by --input-shape."""
    x = rng.standard_normal((1, 4, 8)).astype(np.float32)
    c = lambda name, arr: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name))
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="/attn/Shape"),
        c("i0", np.array(0, np.int64)), c("i1", np.array(1, np.int64)),
        helper.make_node("Gather", ["shp", "i0"], ["b"], axis=0, name="/attn/Gather"),
        helper.make_node("Gather", ["shp", "i1"], ["s"], axis=0, name="/attn/Gather_1"),
        c("ax", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", ["b", "ax"], ["bu"]),
        helper.make_node("Unsqueeze", ["s", "ax"], ["su"]),
        c("heads", np.array([2, 4], np.int64)),
        helper.make_node("Concat", ["bu", "su", "heads"], ["newshape"], axis=0, name="/attn/Concat"),
        helper.make_node("Reshape", ["x", "newshape"], ["xh"], name="/attn/Reshape"),
        helper.make_node("Transpose", ["xh"], ["q"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["xh"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="/attn/MatMul"),
        # mask: ones[s, s] -> Trilu(lower) -> Equal(0) -> Where(-inf)
        helper.make_node("Concat", ["su", "su"], ["ss"], axis=0),
        helper.make_node("ConstantOfShape", ["ss"], ["ones"], value=numpy_helper.from_array(np.array([1.0], np.float32))),
        helper.make_node("Trilu", ["ones"], ["low"], upper=0),
        c("zero", np.array(0.0, np.float32)),
        helper.make_node("Equal", ["low", "zero"], ["masked"]),
        c("ninf", np.array(-1e9, np.float32)),
        helper.make_node("Where", ["masked", "ninf", "scores"], ["ms"]),
        helper.make_node("Softmax", ["ms"], ["p"], axis=-1),
        helper.make_node("Range", ["i0", "s", "i1"], ["pos"]),
        helper.make_node("Cast", ["pos"], ["posf"], to=F32),
        helper.make_node("Add", ["p", "posf"], ["y"]),
        helper.make_node("Cos", ["x"], ["dead"]),   # feeds nothing: removed
    ]
    g = helper.make_graph(nodes, "gpt2_shapes", [vi("x", F32, ["batch", "seq", 8])], [vi("y", F32, None)])
    xh = x.reshape(1, 4, 2, 4).astype(np.float64)
    q = xh.transpose(0, 2, 1, 3)
    scores = q @ xh.transpose(0, 2, 3, 1)
    mask = np.tril(np.ones((4, 4))) == 0
    p = softmax_np(np.where(mask, -1e9, scores), -1)
    save("gpt2_shapes", g, {"x": x}, {"y": (p + np.arange(4)).astype(np.float32)}, opset=14)


def external_data():
    w = rng.standard_normal((4, 3)).astype(np.float32)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    t = numpy_helper.from_array(w, "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    pad = b"waferc!\0" * 2   # the tensor starts at offset 16
    with open(os.path.join(OUT, "external.bin"), "wb") as f:
        f.write(pad + w.tobytes())
    for k, v in (("location", "external.bin"), ("offset", "16"), ("length", str(w.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "external", [vi("x", F32, [2, 4])],
                          [vi("y", F32, None)], [t])
    save("external", g, {"x": x}, {"y": (x.astype(np.float64) @ w).astype(np.float32)})


def constants():
    x = rng.standard_normal((3,)).astype(np.float32)
    nodes = [
        helper.make_node("Constant", [], ["cf"], value_float=2.5),
        helper.make_node("Constant", [], ["cfs"], value_floats=[1.0, 2.0, 3.0]),
        helper.make_node("Constant", [], ["ci"], value_int=3),
        helper.make_node("Constant", [], ["cis"], value_ints=[3]),
        helper.make_node("Constant", [], ["ct"], value=numpy_helper.from_array(np.array([0.5, -1, 4], np.float32))),
        helper.make_node("Mul", ["x", "cf"], ["a"]),
        helper.make_node("Add", ["a", "cfs"], ["b"]),
        helper.make_node("Cast", ["ci"], ["cif"], to=F32),
        helper.make_node("Mul", ["b", "cif"], ["c"]),
        helper.make_node("Reshape", ["ct", "cis"], ["ct3"]),
        helper.make_node("Sub", ["c", "ct3"], ["y"]),
    ]
    # typed-field initializer (float_data, not raw_data) and an int32_data f16 one
    tf = helper.make_tensor("tf", F32, [3], [1.0, 0.0, -1.0])
    th = helper.make_tensor("th", TensorProto.FLOAT16, [3], [1.0, 2.0, 3.0])  # stored in int32_data as f16 bits
    nodes += [helper.make_node("Add", ["y", "tf"], ["z"]), helper.make_node("Cast", ["th"], ["thf"], to=F32),
              helper.make_node("Mul", ["z", "thf"], ["out"])]
    g = helper.make_graph(nodes, "constants", [vi("x", F32, [3])], [vi("out", F32, None)], [tf, th])
    y = (x * 2.5 + np.array([1, 2, 3], np.float32)) * 3 - np.array([0.5, -1, 4], np.float32)
    out = (y + np.array([1, 0, -1], np.float32)) * np.array([1, 2, 3], np.float32)
    save("constants", g, {"x": x}, {"out": out.astype(np.float32)})


def function():
    """A model-local function (domain "custom") with an attribute reference, called twice."""
    x = rng.standard_normal((2, 3)).astype(np.float32)
    fnodes = [
        helper.make_node("Constant", [], ["alpha"], value_float=1.0),
        helper.make_node("Mul", ["X", "X"], ["sq"]),
        helper.make_node("Sigmoid", ["X"], ["sg"]),
        helper.make_node("Mul", ["X", "sg"], ["silu"]),
        helper.make_node("Add", ["silu", "sq"], ["Y"]),
    ]
    # the Constant's value comes from the caller's attribute 'alpha'
    ref = helper.make_attribute("value_float", 1.0)
    ref.ref_attr_name = "alpha"
    ref.ClearField("f")
    fnodes[0].ClearField("attribute")
    fnodes[0].attribute.extend([ref])
    fnodes[4] = helper.make_node("Mul", ["silu", "alpha"], ["scaled"])
    fnodes.append(helper.make_node("Add", ["scaled", "sq"], ["Y"]))
    fn = helper.make_function("custom", "SiluSq", ["X"], ["Y"], fnodes,
                              [helper.make_opsetid("", 17)], ["alpha"])
    nodes = [helper.make_node("SiluSq", ["x"], ["h"], domain="custom", name="call0", alpha=2.0),
             helper.make_node("SiluSq", ["h"], ["y"], domain="custom", name="call1", alpha=0.5)]
    g = helper.make_graph(nodes, "function", [vi("x", F32, [2, 3])], [vi("y", F32, None)])

    def f(v, a):
        v = v.astype(np.float64)
        return v / (1 + np.exp(-v)) * a + v * v
    save("function", g, {"x": x}, {"y": f(f(x, 2.0), 0.5).astype(np.float32)}, functions=[fn],
         extra_opsets=[("custom", 1)])


def errors():
    # two unsupported ops (one twice) and one of an unknown domain: all listed at once
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Foo", ["a"], ["b"], name="foo0"),
             helper.make_node("Bar", ["b"], ["c"], name="bar0"), helper.make_node("Foo", ["c"], ["d"], name="foo1"),
             helper.make_node("Baz", ["d"], ["y"], domain="com.example", name="baz0")]
    g = helper.make_graph(nodes, "unsupported", [vi("x", F32, [2])], [vi("y", F32, None)])
    save("unsupported", g, {}, {}, extra_opsets=[("com.example", 1)])
    # an impossible shape: MatMul of [2,3] and [4,5]
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="/h.0/attn/MatMul")], "badshape",
                          [vi("x", F32, [2, 3])], [vi("y", F32, None)], [init("w", np.zeros((4, 5), np.float32))])
    save("badshape", g, {}, {}, opset=14)
    # a dynamic input whose dim nobody fixes
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="first_user")], "dynamic",
                          [vi("x", F32, ["batch", 4])], [vi("y", F32, None)])
    save("dynamic", g, {}, {})
    # fine at import, too big for one PE later: the SRAM error of the backend names the node
    g = helper.make_graph([helper.make_node("MatMul", ["x", "x"], ["y"], name="/proj/MatMul")], "bigmatmul",
                          [vi("x", F32, [128, 128])], [vi("y", F32, None)])
    save("bigmatmul", g, {}, {})
    # Tile with one repeat too few (bad input), and with a repeat of 0 (an empty tensor)
    for name, reps in (("tile_bad", [2]), ("tile_zero", [2, 0])):
        g = helper.make_graph([helper.make_node("Tile", ["x", "reps"], ["y"], name=name)], name, [vi("x", F32, [2, 3])],
                              [vi("y", F32, None)], [init("reps", np.array(reps, np.int64))])
        save(name, g, {}, {})


def host_bounds():
    # a 181-byte model whose Expand of three numbers would fold to 3.2e9 elements: the importer
    # keeps it an op (its growth is past the import's budget of host-made constants)
    g = helper.make_graph([helper.make_node("Expand", ["col", "eshape"], ["ex"], name="huge_expand"),
                           helper.make_node("Add", ["ex", "x"], ["y"])], "expand_huge", [vi("x", F32, [3, 4])],
                          [vi("y", F32, None)],
                          [init("col", np.array([[1.0], [2.0], [3.0]], np.float32)),
                           init("eshape", np.array([268435458, 1, 4], np.int64))])
    save("expand_huge", g, {}, {})
    # 300 ConstantOfShape of 2^20 f32 each, every one its own fill: past the budget (320 MiB over
    # the import) at the 81st
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["c%d" % i], name="cos%d" % i,
                              value=helper.make_tensor("v", F32, [1], [float(i)])) for i in range(300)]
    g = helper.make_graph(nodes + [helper.make_node("Add", ["x", "c299"], ["y"])], "cos_many",
                          [vi("x", F32, [1024, 1024])], [vi("y", F32, None)],
                          [init("s", np.array([1024, 1024], np.int64))])
    save("cos_many", g, {}, {})
    # 300 "layers" each making the same [1024, 1024] mask (ConstantOfShape of its own shape
    # vector, then Trilu) and adding it: made once (frontend/onnx/host_memo.c), one global, 4 MiB
    # of the budget rather than 2.3 GiB
    nodes, prev = [], "x"
    for i in range(300):
        nodes += [helper.make_node("Concat", ["d", "d"], ["s%d" % i], name="shape%d" % i, axis=0),
                  helper.make_node("ConstantOfShape", ["s%d" % i], ["c%d" % i], name="mask%d" % i,
                                   value=helper.make_tensor("v", F32, [1], [-1e9])),
                  helper.make_node("Trilu", ["c%d" % i, "one"], ["t%d" % i], name="triu%d" % i, upper=1),
                  helper.make_node("Add", [prev, "t%d" % i], ["y%d" % i], name="add%d" % i)]
        prev = "y%d" % i
    g = helper.make_graph(nodes, "mask_per_layer", [vi("x", F32, [1024, 1024])], [vi(prev, F32, None)],
                          [init("d", np.array([1024], np.int64)), init("one", np.array(1, np.int64))])
    save("mask_per_layer", g, {}, {})


def opset11():
    x = rng.standard_normal((1, 3, 4)).astype(np.float32)
    nodes = [
        helper.make_node("Squeeze", ["x"], ["sq"], axes=[0]),
        helper.make_node("Unsqueeze", ["sq"], ["us"], axes=[-1]),
        helper.make_node("Split", ["sq"], ["s0", "s1"], axis=1, split=[3, 1]),
        helper.make_node("ReduceSum", ["s0"], ["rs"], axes=[1], keepdims=1),
        helper.make_node("Slice", ["x", "s_st", "s_en", "s_ax"], ["sl"]),
        helper.make_node("TopK", ["sq", "k"], ["tv", "ti"], axis=1, largest=0),
    ]
    g = helper.make_graph(nodes, "opset11", [vi("x", F32, [1, 3, 4])],
                          [vi("us", F32, None), vi("s1", F32, None), vi("rs", F32, None), vi("sl", F32, None),
                           vi("tv", F32, None)],
                          [init("k", np.array([1], np.int64)), init("s_st", np.array([1], np.int64)),
                           init("s_en", np.array([100], np.int64)), init("s_ax", np.array([2], np.int64))])
    sq = x[0]
    refs = {"us": sq[..., None], "s1": sq[:, 3:], "rs": sq[:, :3].sum(1, keepdims=True), "sl": x[:, :, 1:],
            "tv": np.sort(sq, axis=1)[:, :1]}
    save("opset11", g, {"x": x}, {k: np.ascontiguousarray(v, np.float32) for k, v in refs.items()}, opset=11)


def opset9():
    x = rng.standard_normal((3, 4)).astype(np.float32)
    g = helper.make_graph([helper.make_node("Slice", ["x"], ["sl"], starts=[1, -3], ends=[100, -1], axes=[0, 1])],
                          "opset9", [vi("x", F32, [3, 4])], [vi("sl", F32, None)])
    save("opset9", g, {"x": x}, {"sl": np.ascontiguousarray(x[1:, -3:-1])}, opset=9)


def tensors():
    """Serialized TensorProtos as in ONNX's test data sets, for wf_onnx_read_tensor."""
    t = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5, "raw")
    with open(os.path.join(OUT, "tensor_raw.pb"), "wb") as f:
        f.write(t.SerializeToString())
    t = helper.make_tensor("dbl", TensorProto.DOUBLE, [3], [0.5, -1.25, 1e10])   # double_data
    with open(os.path.join(OUT, "tensor_f64.pb"), "wb") as f:
        f.write(t.SerializeToString())
    t = helper.make_tensor("u8", TensorProto.UINT8, [2], [7, 255])               # int32_data, widened
    with open(os.path.join(OUT, "tensor_u8.pb"), "wb") as f:
        f.write(t.SerializeToString())


def control_flow():
    """Loop (for, while, nested, with scan outputs), If and the sequence ops, all resolved at
    import time: torch exports repeat_interleave over a dynamic axis this way."""
    x = rng.standard_normal((2, 3)).astype(np.float32)
    B = TensorProto.BOOL

    def body(name, nodes, ins, outs):
        return helper.make_graph(nodes, name, ins, outs)

    # for-loop over the columns: acc += i * col_i, each step pushed to the front of a sequence
    fbody = body("fbody", [
        helper.make_node("SequenceAt", ["cols", "i"], ["t"]),                 # an outer sequence
        helper.make_node("Cast", ["i"], ["fi"], to=F32),
        helper.make_node("Mul", ["t", "fi"], ["t2"]),
        helper.make_node("Add", ["acc", "t2"], ["acc2"]),
        helper.make_node("SequenceInsert", ["s", "t2", "zero"], ["s2"]),
        helper.make_node("Identity", ["c"], ["c2"]),
        helper.make_node("Identity", ["acc2"], ["scan"]),
    ], [vi("i", I64, []), vi("c", B, []), vi("acc", F32, [2]), helper.make_tensor_sequence_value_info("s", F32, None)],
        [vi("c2", B, []), vi("acc2", F32, [2]), helper.make_tensor_sequence_value_info("s2", F32, None),
         vi("scan", F32, [2])])
    # while-loop: halves v until the iteration number reaches 2 (runs 3 times)
    wbody = body("wbody", [
        helper.make_node("Mul", ["v", "half"], ["v2"]),
        helper.make_node("Less", ["j", "two"], ["c3"]),
    ], [vi("j", I64, []), vi("cw", B, []), vi("v", F32, [2, 3])], [vi("c3", B, []), vi("v2", F32, [2, 3])])
    # nested: the inner body adds a value the outer body defines
    ibody = body("ibody", [helper.make_node("Add", ["u", "fo"], ["u2"])],
                 [vi("ii", I64, []), vi("ci", B, []), vi("u", F32, [2, 3])], [vi("ci", B, []), vi("u2", F32, [2, 3])])
    obody = body("obody", [
        helper.make_node("Cast", ["io"], ["fo"], to=F32),
        helper.make_node("Loop", ["two", "", "w"], ["w2"], body=ibody),
    ], [vi("io", I64, []), vi("co", B, []), vi("w", F32, [2, 3])], [vi("co", B, []), vi("w2", F32, [2, 3])])
    then_g = body("then", [helper.make_node("Mul", ["acc_f", "twof"], ["tv"])], [], [vi("tv", F32, [2])])
    else_g = body("else", [helper.make_node("Neg", ["acc_f"], ["ev"])], [], [vi("ev", F32, [2])])
    nodes = [
        helper.make_node("SplitToSequence", ["x"], ["cols"], axis=1, keepdims=0),
        helper.make_node("SequenceLength", ["cols"], ["ncols"]),
        helper.make_node("SequenceEmpty", [], ["empty"]),
        helper.make_node("Loop", ["ncols", "", "zeros2", "empty"], ["acc_f", "seq_f", "scan_f"], body=fbody, name="for"),
        helper.make_node("ConcatFromSequence", ["seq_f"], ["cat"], axis=0, new_axis=1),
        helper.make_node("Identity", ["scan_f"], ["scan"]),
        helper.make_node("Identity", ["acc_f"], ["acc"]),
        helper.make_node("Greater", ["ncols", "two"], ["gt"]),
        helper.make_node("If", ["gt"], ["ifout"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["", "true", "x"], ["wh"], body=wbody, name="while"),
        helper.make_node("Loop", ["two", "true", "x"], ["nest"], body=obody, name="outer"),
        helper.make_node("SplitToSequence", ["x", "two"], ["pieces"], axis=1),
        helper.make_node("ConcatFromSequence", ["pieces"], ["back"], axis=-1),
        helper.make_node("Neg", ["x"], ["negx"]),
        helper.make_node("SequenceConstruct", ["negx", "back"], ["pair"]),
        helper.make_node("SequenceErase", ["pair", "minus1"], ["one"]),
        helper.make_node("SequenceLength", ["one"], ["slen"]),
        helper.make_node("SequenceAt", ["one", "minus1"], ["first"]),
    ]
    g = helper.make_graph(nodes, "control_flow", [vi("x", F32, [2, 3])],
                          [vi(n, F32, None) for n in ("acc", "scan", "cat", "ifout", "wh", "nest", "back", "first")]
                          + [vi("slen", I64, None)],
                          [init("zeros2", np.zeros(2, np.float32)), init("zero", np.array(0, np.int64)),
                           init("two", np.array(2, np.int64)), init("minus1", np.array(-1, np.int64)),
                           init("half", np.array(0.5, np.float32)), init("twof", np.array(2.0, np.float32)),
                           init("true", np.array(True))])
    cols = [x[:, i] for i in range(3)]
    steps = [cols[i] * np.float32(i) for i in range(3)]
    acc = steps[0] + steps[1] + steps[2]
    refs = {"acc": acc, "scan": np.stack([steps[0], steps[0] + steps[1], acc]), "cat": np.stack(steps[::-1]),
            "ifout": acc * 2, "wh": x * np.float32(0.125), "nest": x + np.float32(2), "back": x, "first": -x}
    refs = {k: np.ascontiguousarray(v) for k, v in refs.items()}
    refs["slen"] = np.array(1, np.int64)  # ascontiguousarray would make it 1-D
    save("control_flow", g, {"x": x}, refs)
    # a trip count that is a graph input (not known at import time): unsupported
    lbody = body("lbody", [helper.make_node("Identity", ["v"], ["v2"])],
                 [vi("j", I64, []), vi("c", B, []), vi("v", F32, [2])], [vi("c", B, []), vi("v2", F32, [2])])
    g = helper.make_graph([helper.make_node("Loop", ["m", "", "x"], ["y"], body=lbody, name="runtime_trips")],
                          "loop_runtime", [vi("x", F32, [2]), vi("m", I64, [])], [vi("y", F32, None)])
    save("loop_runtime", g, {}, {})
    # malformed control flow, one model per error, each with a node named after its fault
    seqin = helper.make_tensor_sequence_value_info
    bad = {
        # a body with one input too few for its loop-carried value
        "loop_arity": [helper.make_node("Loop", ["two", "", "x"], ["y"], name="arity", body=body(
            "b", [helper.make_node("Identity", ["c"], ["c2"])], [vi("i", I64, []), vi("c", B, [])],
            [vi("c2", B, []), vi("c", B, [])]))],
        # an op waferc lacks, inside the body: listed by the scan before anything is imported
        "loop_unknown": [helper.make_node("Loop", ["two", "", "x"], ["y"], name="outer", body=body(
            "b", [helper.make_node("Foo", ["v"], ["v2"], name="foo_in_body")],
            [vi("i", I64, []), vi("c", B, []), vi("v", F32, [2])], [vi("c", B, []), vi("v2", F32, [2])]))],
        # no body attribute
        "loop_nobody": [helper.make_node("Loop", ["two", "", "x"], ["y"], name="nobody")],
        # a sequence into a tensor op
        "seq_into_add": [helper.make_node("SequenceConstruct", ["x"], ["s"]),
                         helper.make_node("Add", ["s", "x"], ["y"], name="addseq")],
        # a position past the end
        "seq_at_range": [helper.make_node("SequenceConstruct", ["x"], ["s"]),
                         helper.make_node("SequenceAt", ["s", "two"], ["y"], name="at2")],
        # a sequence as the graph's output
        "seq_output": [helper.make_node("SequenceConstruct", ["x"], ["y"], name="construct")],
    }
    for name, nodes in bad.items():
        out = seqin("y", F32, None) if name == "seq_output" else vi("y", F32, None)
        g = helper.make_graph(nodes, name, [vi("x", F32, [2])], [out], [init("two", np.array(2, np.int64))])
        save(name, g, {}, {})


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for fn in (elementwise, linalg, reduce_norm, movement, gpt2_shapes, external_data, constants, function, errors,
               host_bounds, opset11, opset9, tensors, control_flow):
        fn()
    print("wrote", OUT)
