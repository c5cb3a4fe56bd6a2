#!/usr/bin/python3
"""Writes tests/onnx/large/large_external.onnx: a MatMul whose weight lives in an external data
file at a byte offset past 3 GiB, the layout a model over 2 GiB has (protobuf itself caps at
2 GiB, so big models keep their weights outside). The test (tests/scripts/onnx_large_external.sh)
makes the 3 GiB file sparse, so it costs no disk. Run with Debian's python3 (onnx, numpy);
CI needs only the committed outputs."""
import os
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "large")  # not models/: onnx_import.sh imports every model there
OFFSET = 3 * 1024 ** 3 + 64  # past 2^31 and 2^32-1 bytes: needs 64-bit offsets throughout

rng = np.random.default_rng(7)
w = rng.standard_normal((4, 3)).astype(np.float32)
x = rng.standard_normal((2, 4)).astype(np.float32)
y = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)

t = onnx.TensorProto()
t.name = "w"
t.data_type = TensorProto.FLOAT
t.dims.extend(w.shape)
t.data_location = TensorProto.EXTERNAL
for k, v in (("location", "large_external.bin"), ("offset", str(OFFSET)), ("length", str(w.nbytes))):
    e = t.external_data.add()
    e.key, e.value = k, v
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="big_matmul")], "large_external",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], initializer=[t])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="waferc-tests")
onnx.save(m, os.path.join(OUT, "large_external.onnx"))
w.tofile(os.path.join(OUT, "large_external.w.raw"))  # the 48 bytes the test places at OFFSET
np.save(os.path.join(OUT, "large_external.in.x.npy"), x)
np.save(os.path.join(OUT, "large_external.ref.y.npy"), y)
print("offset", OFFSET)
