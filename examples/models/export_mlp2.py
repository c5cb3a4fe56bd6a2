#!/usr/bin/python3
"""Exports examples/models/mlp2.onnx: a 2-layer MLP, y = fc2(gelu(fc1(x))), x [16, 32],
fc1 32 -> 64, fc2 64 -> 16, with its input (mlp2_input.npy) and torch's output for it
(mlp2_ref.npy). torch exports each Linear of a 2-D input as Gemm(x, W, b, transB=1).
Sized so that every dim divides a 4x4 (and 2x2, 1x1) mesh. Seeded: a rerun with the same
torch writes the same files. Needs Debian's python3-torch and python3-numpy:

    /usr/bin/python3 examples/models/export_mlp2.py
"""
import os

import numpy as np
import torch
import torch.nn as nn


class MLP2(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 16)

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x)))


def main():
    torch.manual_seed(5)
    here = os.path.dirname(os.path.abspath(__file__))
    model = MLP2().eval()
    x = torch.randn(16, 32)
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(model, (x,), os.path.join(here, "mlp2.onnx"), input_names=["x"],
                      output_names=["y"], opset_version=14)
    np.save(os.path.join(here, "mlp2_input.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(here, "mlp2_ref.npy"), y.numpy().astype(np.float32))


if __name__ == "__main__":
    main()
