#!/usr/bin/python3
"""Exports examples/models/tiny_argmax.onnx: token ids to the next token, the smallest model
that holds an embedding lookup and an ArgMax over the vocabulary as torch writes them:

    logits = lm_head(embed(ids) * scale)        ids i64 [1, 7], vocab 37, E = 10
    next   = logits.argmax(dim=-1)              i64 [1, 7]

torch exports the embedding as Gather(weight, ids), the scale as Mul, the head as MatMul
(with a transposed constant) and the argmax as ArgMax(axis=-1, keepdims=0). The sizes are
ones that the test meshes (2x2, 3x2, 4x4, 5x3) do not divide. Written with its input
(tiny_argmax_input.npy, int64 ids) and torch's outputs for it (tiny_argmax_logits_ref.npy,
tiny_argmax_next_ref.npy, int64). Seeded: a rerun with the same torch writes the same files.
Needs Debian's python3-torch, python3-onnx and python3-numpy:

    /usr/bin/python3 examples/models/export_tiny_argmax.py
"""
import os

import numpy as np
import torch
import torch.nn as nn

VOCAB, EMBED, SEQ = 37, 10, 7


class TinyArgmax(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.scale = nn.Parameter(torch.randn(EMBED))
        self.lm_head = nn.Linear(EMBED, VOCAB, bias=False)

    def forward(self, ids):
        logits = self.lm_head(self.embed(ids) * self.scale)
        return logits, logits.argmax(dim=-1)


def main():
    torch.manual_seed(16)
    here = os.path.dirname(os.path.abspath(__file__))
    model = TinyArgmax().eval()
    ids = torch.randint(0, VOCAB, (1, SEQ), dtype=torch.int64)
    with torch.no_grad():
        logits, nxt = model(ids)
    torch.onnx.export(model, (ids,), os.path.join(here, "tiny_argmax.onnx"), input_names=["input_ids"],
                      output_names=["logits", "next"], opset_version=17)
    np.save(os.path.join(here, "tiny_argmax_input.npy"), ids.numpy().astype(np.int64))
    np.save(os.path.join(here, "tiny_argmax_logits_ref.npy"), logits.numpy().astype(np.float32))
    np.save(os.path.join(here, "tiny_argmax_next_ref.npy"), nxt.numpy().astype(np.int64))


if __name__ == "__main__":
    main()
