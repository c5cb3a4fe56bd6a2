#!/usr/bin/python3
"""Exports the small transformer models in examples/models/ with torch.onnx.export.

Each model is written as NAME.onnx with its input (NAME_input.npy) and torch's own output for
that input (NAME_ref.npy), the reference the ONNX import must reproduce through waferc's
interpreter. Needs Debian's python3-torch, python3-onnx and python3-numpy (run it with
/usr/bin/python3). Everything is seeded, so a rerun with the same torch gives the same files.

    /usr/bin/python3 examples/models/export.py                     # the committed models
    /usr/bin/python3 examples/models/export.py --out /tmp/v1 --embed 96 --heads 6 --kv-heads 3 --seq 11

The size options apply to every model chosen with --only; --static exports without a dynamic
sequence axis, --dynamic with one (defaults: gpt2_block and tiny_llama dynamic, llama_block
static; llama_block_dyn.onnx is llama_block with --dynamic --embed 32: torch 1.13 exports
repeat_interleave over a dynamic sequence axis as a Loop over sequences, with a misaligned
Reshape that waferc repairs, see frontend/onnx/torch_quirks.c).
"""
import argparse
import math
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- GPT-2 style block -----------------------------------------------------------------------

class GPT2Block(nn.Module):
    """Pre-LN block as in GPT-2: LN -> fused QKV -> Split -> causal attention -> proj, LN -> MLP."""

    def __init__(self, embed, heads, gelu, mask_form="tril", max_pos=64):
        super().__init__()
        self.mask_form = mask_form
        if mask_form == "buffer":  # Hugging Face GPT-2: a tril buffer sliced to the length
            self.register_buffer("bias", torch.tril(torch.ones(max_pos, max_pos, dtype=torch.bool)))
        self.heads, self.hd = heads, embed // heads
        self.ln_1 = nn.LayerNorm(embed, eps=1e-5)
        self.c_attn = nn.Linear(embed, 3 * embed)
        self.c_proj = nn.Linear(embed, embed)
        self.ln_2 = nn.LayerNorm(embed, eps=1e-5)
        self.c_fc = nn.Linear(embed, 4 * embed)
        self.mlp_proj = nn.Linear(4 * embed, embed)
        self.gelu = nn.GELU(approximate=gelu)

    def attn(self, x):
        b, s, e = x.shape
        hd = self.hd
        q, k, v = self.c_attn(x).split(e, dim=2)
        q = q.view(b, s, self.heads, hd).transpose(1, 2)
        k = k.view(b, s, self.heads, hd).transpose(1, 2)
        v = v.view(b, s, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        if self.mask_form == "buffer":
            causal = self.bias[:s, :s]
            att = torch.where(causal, att, torch.tensor(torch.finfo(att.dtype).min))
        else:
            causal = torch.tril(torch.ones(s, s, dtype=torch.bool, device=x.device))
            att = att.masked_fill(~causal, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, e)
        return self.c_proj(y)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp_proj(self.gelu(self.c_fc(self.ln_2(x))))


# ---- LLaMA style pieces ------------------------------------------------------------------------

class RMSNorm(nn.Module):
    """As Hugging Face writes it: x * rsqrt(mean(x^2) + eps) * weight."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_interleaved(x):
    """(x0, x1, x2, x3, ...) -> (-x1, x0, -x3, x2, ...): the GPT-J / Meta LLaMA pairing."""
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def rope_cos_sin(seq, head_dim, form="half", freqs_form="broadcast", base=10000.0):
    """cos/sin tables from positions 0..seq-1 (computed in the graph, so they follow seq)."""
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    pos = torch.arange(seq, dtype=torch.float32)
    if freqs_form == "einsum":
        freqs = torch.einsum("i,j->ij", pos, inv_freq)
    elif freqs_form == "matmul":  # recent Hugging Face: inv_freq[:, None] @ pos[None, :]
        freqs = (inv_freq[:, None] @ pos[None, :]).transpose(0, 1)
    else:
        freqs = pos[:, None] * inv_freq[None, :]
    if form == "interleaved":
        emb = torch.stack((freqs, freqs), dim=-1).flatten(-2)
    else:
        emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def repeat_kv(x, n_rep, form):
    """[B, KV, S, D] -> [B, KV*n_rep, S, D], each KV head used by n_rep query heads."""
    if n_rep == 1:
        return x
    if form == "repeat_interleave":
        return torch.repeat_interleave(x, n_rep, dim=1)
    b, kv, s, d = x.shape  # Hugging Face's expand + reshape
    return x[:, :, None, :, :].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


class LlamaAttention(nn.Module):
    def __init__(self, embed, heads, kv_heads, gqa_form, rope=("half", "broadcast")):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, embed // heads
        self.gqa_form = gqa_form
        self.rope_form, self.freqs_form = rope
        self.q_proj = nn.Linear(embed, heads * self.hd, bias=False)
        self.k_proj = nn.Linear(embed, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(embed, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(heads * self.hd, embed, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
        cos, sin = rope_cos_sin(s, self.hd, self.rope_form, self.freqs_form)
        rot = rotate_interleaved if self.rope_form == "interleaved" else rotate_half
        q = q * cos + rot(q) * sin
        k = k * cos + rot(k) * sin
        n_rep = self.heads // self.kv_heads
        k = repeat_kv(k, n_rep, self.gqa_form)
        v = repeat_kv(v, n_rep, self.gqa_form)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        # additive mask as Hugging Face builds it: finfo.min above the diagonal, 0 elsewhere
        mask = torch.full((s, s), torch.finfo(torch.float32).min).triu(1)
        scores = scores + mask
        probs = F.softmax(scores, dim=-1, dtype=torch.float32)
        y = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, self.heads * self.hd)
        return self.o_proj(y)


class LlamaMLP(nn.Module):
    def __init__(self, embed, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(embed, hidden, bias=False)
        self.up_proj = nn.Linear(embed, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, embed, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    def __init__(self, embed, heads, kv_heads, hidden, gqa_form, rope=("half", "broadcast")):
        super().__init__()
        self.input_layernorm = RMSNorm(embed)
        self.self_attn = LlamaAttention(embed, heads, kv_heads, gqa_form, rope)
        self.post_attention_layernorm = RMSNorm(embed)
        self.mlp = LlamaMLP(embed, hidden)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class TinyLlama(nn.Module):
    def __init__(self, vocab, embed, heads, kv_heads, hidden, layers, gqa_form, rope=("half", "broadcast")):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, embed)
        self.layers = nn.ModuleList(
            [LlamaBlock(embed, heads, kv_heads, hidden, gqa_form, rope) for _ in range(layers)])
        self.norm = RMSNorm(embed)
        self.lm_head = nn.Linear(embed, vocab, bias=False)

    def forward(self, input_ids):
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(h)
        return self.lm_head(self.norm(h))


# ---- export ------------------------------------------------------------------------------------

def pick_opset():
    """17 when this torch knows it, else the highest it does."""
    from torch.onnx import _constants
    return min(17, getattr(_constants, "ONNX_MAX_OPSET", getattr(_constants, "onnx_main_opset", 13)))


def export(model, name, inp, in_name, out_name, dynamic, out_dir, opset, inp2=None):
    """inp2: a second input of another sequence length, saved as NAME_s<S>_{input,ref}.npy for a
    model with a dynamic sequence axis (the imported graph must not have baked in inp's length)."""
    model.eval()
    with torch.no_grad():
        ref = model(inp)
        ref2 = model(inp2) if dynamic and inp2 is not None else None
    path = os.path.join(out_dir, name + ".onnx")
    axes = {in_name: {1: "seq"}, out_name: {1: "seq"}} if dynamic else None
    torch.onnx.export(model, (inp,), path, input_names=[in_name], output_names=[out_name],
                      dynamic_axes=axes, opset_version=opset, do_constant_folding=True)
    np.save(os.path.join(out_dir, name + "_input.npy"), inp.numpy())
    np.save(os.path.join(out_dir, name + "_ref.npy"), ref.numpy().astype(np.float32))
    if ref2 is not None:
        tag = f"{name}_s{inp2.shape[1]}"
        np.save(os.path.join(out_dir, tag + "_input.npy"), inp2.numpy())
        np.save(os.path.join(out_dir, tag + "_ref.npy"), ref2.numpy().astype(np.float32))
    size = os.path.getsize(path)
    print(f"{path}: {size} bytes, opset {opset}, {in_name}{list(inp.shape)} -> "
          f"{out_name}{list(ref.shape)}{' (dynamic seq)' if dynamic else ''}")


def main():
    # The tracer warns about Python constants taken from shapes; the exported graphs are checked
    # against torch's output at a second sequence length instead.
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--only", nargs="*", default=["gpt2_block", "llama_block", "tiny_llama"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--embed", type=int, default=None, help="embedding width (default per model)")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8, help="sequence length of the export")
    ap.add_argument("--seq2", type=int, default=13,
                    help="second sequence length checked on dynamic-axis models")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=128)
    ap.add_argument("--gelu", choices=["tanh", "none"], default="tanh", help="none = erf form")
    ap.add_argument("--gqa-form", choices=["repeat_interleave", "expand"], default=None)
    ap.add_argument("--mask-form", choices=["tril", "buffer"], default="tril",
                    help="gpt2_block: tril+masked_fill in forward, or HF's sliced tril buffer + where")
    ap.add_argument("--rope-form", choices=["half", "interleaved"], default="half")
    ap.add_argument("--freqs-form", choices=["broadcast", "einsum", "matmul"], default="broadcast",
                    help="how the RoPE angle table pos x inv_freq is computed")
    ap.add_argument("--opset", type=int, default=None)
    ap.add_argument("--name", default=None,
                    help="file name stem of the (single) model chosen with --only (default: the model's name)")
    dyn = ap.add_mutually_exclusive_group()
    dyn.add_argument("--dynamic", action="store_true")
    dyn.add_argument("--static", action="store_true")
    a = ap.parse_args()
    for name in a.only:  # RoPE rotates pairs of a head's dims: an odd head_dim has no pairing
        e = a.embed or (32 if name == "tiny_llama" else 64)
        if name in ("llama_block", "tiny_llama") and (e % a.heads or (e // a.heads) % 2):
            sys.exit(f"export.py: {name}: --embed {e} over --heads {a.heads} must give an even head_dim "
                     "(RoPE rotates pairs of dims)")
    os.makedirs(a.out, exist_ok=True)
    opset = a.opset or pick_opset()

    def dynamic(default):
        return True if a.dynamic else False if a.static else default

    if a.name and len(a.only) != 1:
        sys.exit("export.py: --name needs exactly one model in --only")
    for name in a.only:
        torch.manual_seed(a.seed)
        stem = a.name or name
        if name == "gpt2_block":
            e = a.embed or 64
            m = GPT2Block(e, a.heads, a.gelu, a.mask_form)
            x = torch.randn(a.batch, a.seq, e)
            x2 = torch.randn(a.batch, a.seq2, e)
            export(m, stem, x, "x", "y", dynamic(True), a.out, opset, x2)
        elif name == "llama_block":
            e = a.embed or 64
            m = LlamaBlock(e, a.heads, a.kv_heads, 2 * e + e // 2, a.gqa_form or "repeat_interleave",
                           (a.rope_form, a.freqs_form))
            x = torch.randn(a.batch, a.seq, e)
            x2 = torch.randn(a.batch, a.seq2, e)
            export(m, stem, x, "x", "y", dynamic(False), a.out, opset, x2)
        elif name == "tiny_llama":
            e = a.embed or 32
            m = TinyLlama(a.vocab, e, a.heads, a.kv_heads, 2 * e, a.layers, a.gqa_form or "expand",
                          (a.rope_form, a.freqs_form))
            ids = torch.randint(0, a.vocab, (a.batch, a.seq), dtype=torch.int64)
            ids2 = torch.randint(0, a.vocab, (a.batch, a.seq2), dtype=torch.int64)
            export(m, stem, ids, "input_ids", "logits", dynamic(True), a.out, opset, ids2)
        else:
            sys.exit(f"export.py: unknown model '{name}'")


if __name__ == "__main__":
    main()
