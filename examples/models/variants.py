#!/usr/bin/python3
"""Exports many variants of the three model families with torch.onnx.export and checks that
waferc reproduces torch's output through its reference interpreter (not run in CI: it needs
Debian's python3-torch, python3-onnx and python3-numpy and takes minutes).

    /usr/bin/python3 examples/models/variants.py --waferc build/bin        # all variants
    /usr/bin/python3 examples/models/variants.py --waferc build/bin -k gqa   # names containing 'gqa'
    /usr/bin/python3 examples/models/variants.py --list

Each variant is exported into a temporary directory (--keep DIR keeps them) with its input and
torch's output; then `waferc M.onnx --interpret --input NAME=X.npy --output-dir out/` runs, and
`wafer-npycmp out/OUT.npy ref.npy --atol 1e-4 --rtol 0` compares. A model with dynamic axes is
checked at every shape in its `checks` list, not only the export's. Exports torch 1.13 itself
refuses (tril/triu below opset 14 with a computed mask, LayerNorm without affine at opset 17)
are avoided. The knobs: embedding width,
heads and KV heads (MHA, GQA, MQA), sequence length, batch, static or dynamic axes, opset
13-17, erf or tanh GELU, Linear bias, tied or untied lm_head, Hugging Face's RMSNorm (cast to
f32 and back), RoPE computed in f32 and cast back, causal mask as a buffer, a computed tril, an
additive triu(1) of finfo.min or none, KV repeat by repeat_interleave or expand+reshape; and
other spellings of the same blocks: timm's one-reshape QKV (permute(2, 0, 3, 1, 4), indexed),
chunk, the scale on q, post-LN, torch's nn.MultiheadAttention, Meta's layout (RoPE and the KV
repeat on [B, S, H, D] before the head transpose) and Meta's pairwise RoPE (xe c - xo s,
xe s + xo c, stacked).
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- models --------------------------------------------------------------------------------------

def causal_keep(s, device=None):
    return torch.tril(torch.ones(s, s, dtype=torch.bool, device=device))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        e, self.heads = c["embed"], c["heads"]
        self.hd = e // self.heads
        self.c = c
        self.mask = c["mask"]
        if self.mask == "buffer":
            self.register_buffer("bias", causal_keep(64))
        b = c["bias"]
        lin = Conv1D if c.get("conv1d") else (lambda i, o, bias: nn.Linear(i, o, bias=bias))
        affine = c.get("ln_affine", True)
        self.ln_1 = nn.LayerNorm(e, eps=1e-5, elementwise_affine=affine)
        self.c_attn = lin(e, 3 * e, bias=b)
        self.c_proj = lin(e, e, bias=b)
        if c.get("attn") in ("nn_mha", "nn_mha_sbe"):  # torch's own: batch first, or [S, B, E]
            self.mha = nn.MultiheadAttention(e, self.heads, bias=b, batch_first=c["attn"] == "nn_mha")
        self.ln_2 = nn.LayerNorm(e, eps=1e-5, elementwise_affine=affine)
        self.c_fc = lin(e, 4 * e, bias=b)
        self.mlp_proj = lin(4 * e, e, bias=b)
        self.gelu = gelu_new if c["gelu"] == "new" else nn.GELU(approximate=c["gelu"])

    def heads_of(self, h):
        b, s, e = h.shape
        qkv = self.c.get("qkv", "split")
        if qkv == "timm":  # timm / ViT: one reshape to [B, S, 3, H, D], permute(2, 0, 3, 1, 4), index
            t = self.c_attn(h).reshape(b, s, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
            return t[0], t[1], t[2]
        if qkv == "chunk":  # chunk (Slice in ONNX) and permute
            return [t.reshape(b, s, self.heads, self.hd).permute(0, 2, 1, 3) for t in self.c_attn(h).chunk(3, dim=-1)]
        q, k, v = self.c_attn(h).split(e, dim=2)
        return [t.view(b, s, self.heads, self.hd).transpose(1, 2) for t in (q, k, v)]

    def torch_mha(self, h):
        """nn.MultiheadAttention with a causal float mask (its export: attention over [B·H, S, D])."""
        s = h.shape[1]
        mask = torch.full((s, s), float("-inf")).triu(1)
        if self.c["attn"] == "nn_mha_sbe":
            h = h.transpose(0, 1)
            return self.mha(h, h, h, attn_mask=mask, need_weights=False)[0].transpose(0, 1)
        return self.mha(h, h, h, attn_mask=mask, need_weights=False)[0]

    def forward(self, x):
        b, s, e = x.shape
        post = self.c.get("post_ln")  # post-LN (the original Transformer, BERT): norm after each residual
        if self.c.get("attn"):
            x = x + self.torch_mha(self.ln_1(x))
            return x + self.mlp_proj(self.gelu(self.c_fc(self.ln_2(x))))
        q, k, v = self.heads_of(x if post else self.ln_1(x))
        if self.c.get("scale") == "q":  # the scale on q before the product (timm, nanoGPT variants)
            att = (q * self.hd ** -0.5) @ k.transpose(-2, -1)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hd))
        if self.mask == "buffer":
            att = torch.where(self.bias[:s, :s], att, torch.tensor(torch.finfo(att.dtype).min))
        elif self.mask == "tril":
            att = att.masked_fill(~causal_keep(s, x.device), float("-inf"))
        elif self.mask == "triu":
            att = att + torch.full((s, s), torch.finfo(torch.float32).min).triu(1)
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, e)
        if post:
            x = self.ln_1(x + self.c_proj(y))
            return self.ln_2(x + self.mlp_proj(self.gelu(self.c_fc(x))))
        x = x + self.c_proj(y)
        return x + self.mlp_proj(self.gelu(self.c_fc(self.ln_2(x))))


class Conv1D(nn.Module):
    """Hugging Face GPT-2's Conv1D: addmm(bias, x.view(-1, in), weight) (a Gemm in ONNX)."""

    def __init__(self, nx, nf, bias=True):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(0.02 * torch.randn(nx, nf))
        self.bias = nn.Parameter(0.02 * torch.randn(nf)) if bias else None

    def forward(self, x):
        shape = x.size()[:-1] + (self.nf,)
        if self.bias is None:
            return torch.mm(x.view(-1, x.size(-1)), self.weight).view(shape)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(shape)


def gelu_new(x):
    """Hugging Face's NewGELUActivation, written out."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class RMSNorm(nn.Module):
    def __init__(self, dim, form, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.eps, self.form = eps, form

    def forward(self, x):
        if self.form == "hf_cast":  # Hugging Face LlamaRMSNorm
            dtype = x.dtype
            h = x.to(torch.float32)
            variance = h.pow(2).mean(-1, keepdim=True)
            h = h * torch.rsqrt(variance + self.eps)
            return self.weight * h.to(dtype)
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_interleaved(x):
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


class Rotary(nn.Module):
    def __init__(self, hd, form, fp32, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (base ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)),
                             persistent=False)
        self.form, self.fp32 = form, fp32
        if form == "cached":  # older Hugging Face: tables of max_pos rows, sliced to the length
            t = torch.arange(64, dtype=torch.float32)
            freqs = torch.einsum("i,j->ij", t, self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            self.register_buffer("cos_cached", emb.cos()[None, None], persistent=False)
            self.register_buffer("sin_cached", emb.sin()[None, None], persistent=False)

    def forward(self, x, s):
        if self.form == "cached":
            return self.cos_cached[:, :, :s, ...], self.sin_cached[:, :, :s, ...]
        pos = torch.arange(s, dtype=torch.float32, device=x.device)
        if self.fp32:  # recent Hugging Face: computed in f32 (autocast off), cast to x's dtype
            freqs = (self.inv_freq.float()[:, None] @ pos.float()[None, :]).transpose(0, 1)
        else:
            freqs = pos[:, None] * self.inv_freq[None, :]
        if self.form == "interleaved":
            emb = torch.stack((freqs, freqs), dim=-1).flatten(-2)
        elif self.form.startswith("pairwise"):  # half tables [S, D/2], one angle per pair
            emb = freqs
        else:
            emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        if self.fp32:
            cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        return cos, sin


def rope_pairwise(x, cos, sin, form="pairwise"):
    """Meta's LLaMA rotation written without complex numbers: each pair (x[2i], x[2i+1]) turned
    by its angle, the two results stacked back in place. The pairs by slices with step 2, or
    from the view [..., D/2, 2] indexed (pairwise_index) or unbound (pairwise_unbind)."""
    if form == "pairwise":
        xe, xo = x[..., 0::2], x[..., 1::2]
    else:
        xp = x.reshape(*x.shape[:-1], -1, 2)
        xe, xo = (xp[..., 0], xp[..., 1]) if form == "pairwise_index" else xp.unbind(-1)
    return torch.stack((xe * cos - xo * sin, xe * sin + xo * cos), dim=-1).flatten(-2)


def repeat_kv(x, n_rep, form):
    if n_rep == 1:
        return x
    if form == "repeat_interleave":
        return torch.repeat_interleave(x, n_rep, dim=1)
    b, kv, s, d = x.shape
    return x[:, :, None, :, :].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


class LlamaBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        e, self.heads, self.kv = c["embed"], c["heads"], c["kv_heads"]
        self.hd = e // self.heads
        self.c = c
        b = c["bias"]
        self.input_layernorm = RMSNorm(e, c["rms"])
        self.q_proj = nn.Linear(e, self.heads * self.hd, bias=b)
        self.k_proj = nn.Linear(e, self.kv * self.hd, bias=b)
        self.v_proj = nn.Linear(e, self.kv * self.hd, bias=b)
        self.o_proj = nn.Linear(self.heads * self.hd, e, bias=b)
        self.rotary = Rotary(self.hd, c["rope"], c["rope_fp32"])
        if c["mask"] == "buffer":
            self.register_buffer("causal", torch.full((64, 64), torch.finfo(torch.float32).min).triu(1))
        self.post_attention_layernorm = RMSNorm(e, c["rms"])
        hidden = c.get("hidden", 2 * e + e // 2)
        self.gate_proj = nn.Linear(e, hidden, bias=False)
        self.up_proj = nn.Linear(e, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, e, bias=False)

    def rotate(self, x, cos, sin):
        if self.c["rope"].startswith("pairwise"):
            return rope_pairwise(x, cos, sin, self.c["rope"])
        rot = rotate_interleaved if self.c["rope"] == "interleaved" else rotate_half
        return x * cos + rot(x) * sin

    def qkv_bshd(self, x, b, s):
        """Meta's layout: RoPE and the kv repeat on [B, S, H, D], transposed to heads last."""
        q = self.q_proj(x).view(b, s, self.heads, self.hd)
        k = self.k_proj(x).view(b, s, self.kv, self.hd)
        v = self.v_proj(x).view(b, s, self.kv, self.hd)
        cos, sin = self.rotary(x, s)
        cos, sin = cos.reshape(1, s, 1, -1), sin.reshape(1, s, 1, -1)
        q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
        n = self.heads // self.kv
        if n > 1 and self.c["gqa"] == "repeat_interleave":
            k, v = torch.repeat_interleave(k, n, dim=2), torch.repeat_interleave(v, n, dim=2)
        elif n > 1:
            k = k[:, :, :, None, :].expand(b, s, self.kv, n, self.hd).reshape(b, s, self.heads, self.hd)
            v = v[:, :, :, None, :].expand(b, s, self.kv, n, self.hd).reshape(b, s, self.heads, self.hd)
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

    def attn(self, x):
        b, s, _ = x.shape
        if self.c.get("layout") == "bshd":
            q, k, v = self.qkv_bshd(x, b, s)
        else:
            q = self.q_proj(x).view(b, s, self.heads, self.hd).transpose(1, 2)
            k = self.k_proj(x).view(b, s, self.kv, self.hd).transpose(1, 2)
            v = self.v_proj(x).view(b, s, self.kv, self.hd).transpose(1, 2)
            cos, sin = self.rotary(x, s)
            q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
            k = repeat_kv(k, self.heads // self.kv, self.c["gqa"])
            v = repeat_kv(v, self.heads // self.kv, self.c["gqa"])
        if self.c.get("einsum"):
            scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.hd)
        else:
            scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        m = self.c["mask"]
        if m == "triu":
            scores = scores + torch.full((s, s), torch.finfo(torch.float32).min).triu(1)
        elif m == "buffer":
            scores = scores + self.causal[:s, :s]
        elif m == "tril":
            scores = torch.where(causal_keep(s, x.device), scores, torch.tensor(torch.finfo(scores.dtype).min))
        elif m == "hf":  # Hugging Face's _make_causal_mask: masked_fill of a full min, expanded to [b,1,s,s]
            mask = torch.full((s, s), torch.finfo(torch.float32).min)
            cond = torch.arange(s)
            mask.masked_fill_(cond < (cond + 1).view(s, 1), 0)
            scores = scores + mask[None, None, :, :].expand(b, 1, s, s)
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        y = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, self.heads * self.hd)
        return self.o_proj(y)

    def forward(self, x):
        x = x + self.attn(self.input_layernorm(x))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class TinyLlama(nn.Module):
    def __init__(self, c):
        super().__init__()
        e, vocab = c["embed"], c["vocab"]
        self.embed_tokens = nn.Embedding(vocab, e)
        self.layers = nn.ModuleList([LlamaBlock(dict(c, hidden=2 * e)) for _ in range(c["layers"])])
        self.norm = RMSNorm(e, c["rms"])
        self.lm_head = nn.Linear(e, vocab, bias=False)
        if c["tied"]:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, ids):
        h = self.embed_tokens(ids)
        for layer in self.layers:
            h = layer(h)
        return self.lm_head(self.norm(h))


class TinyGPT2(nn.Module):
    """GPT-2 from token ids to logits: token and learned position embeddings, blocks as above,
    final LayerNorm, the lm head tied to the token embedding (as Hugging Face's GPT-2) or not."""

    def __init__(self, c):
        super().__init__()
        e, vocab = c["embed"], c["vocab"]
        self.wte = nn.Embedding(vocab, e)
        self.wpe = nn.Embedding(64, e)
        self.h = nn.ModuleList([GPT2Block(c) for _ in range(c["layers"])])
        self.ln_f = nn.LayerNorm(e, eps=1e-5)
        self.tied = c["tied"]
        if not self.tied:
            self.lm_head = nn.Linear(e, vocab, bias=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], dtype=torch.int64, device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for blk in self.h:
            x = blk(x)
        x = self.ln_f(x)
        return x @ self.wte.weight.t() if self.tied else self.lm_head(x)


# ---- the variants ----------------------------------------------------------------------------

BASE = {
    "gpt2": dict(family="gpt2", embed=64, heads=4, gelu="tanh", mask="tril", bias=True),
    "llama": dict(family="llama", embed=64, heads=4, kv_heads=2, gqa="repeat_interleave", rms="plain",
                  rope="half", rope_fp32=False, mask="triu", bias=False),
    "tiny": dict(family="tiny", embed=32, heads=4, kv_heads=2, gqa="expand", rms="plain", rope="half",
                 rope_fp32=False, mask="triu", bias=False, vocab=128, layers=2, tied=False),
    "gpt2m": dict(family="gpt2m", embed=32, heads=4, gelu="tanh", mask="tril", bias=True, vocab=96, layers=2,
                  tied=True),
}
COMMON = dict(seq=8, batch=1, axes="static", opset=17)


def variant(base, **kw):
    c = dict(COMMON)
    c.update(BASE[base])
    c.update(kw)
    parts = [base] + ["%s=%s" % (k, v) for k, v in sorted(kw.items())]
    c["name"] = "_".join(p.replace("=", "-").replace("_", "") for p in parts)
    return c


def variants():
    v = []
    # every value of every knob at least once, around each family's base
    for e, h in [(32, 1), (32, 2), (48, 3), (48, 6), (96, 8), (128, 2), (96, 6)]:
        v.append(variant("gpt2", embed=e, heads=h))
    for s in (1, 5, 16, 33):
        v.append(variant("gpt2", seq=s))
        v.append(variant("gpt2", seq=s, axes="seq"))
    v += [variant("gpt2", batch=2), variant("gpt2", batch=2, axes="batch_seq"), variant("gpt2", gelu="none"),
          variant("gpt2", bias=False), variant("gpt2", mask="buffer"), variant("gpt2", mask="buffer", axes="seq"),
          variant("gpt2", mask="triu"), variant("gpt2", mask="triu", axes="seq"), variant("gpt2", mask="none")]
    for o in (13, 14, 15, 16):
        v.append(variant("gpt2", opset=o, axes="seq", mask="buffer" if o == 13 else "tril"))
        v.append(variant("gpt2", opset=o, mask="buffer" if o == 13 else "tril"))
    v += [variant("gpt2", conv1d=True), variant("gpt2", conv1d=True, gelu="new", axes="seq"),
          variant("gpt2", conv1d=True, bias=False, batch=2), variant("gpt2", gelu="new"),
          variant("gpt2", ln_affine=False, opset=16), variant("gpt2", ln_affine=False, opset=14, seq=5),
          variant("gpt2", embed=48, heads=3, mask="buffer", gelu="none", axes="batch_seq", batch=2, opset=15)]
    # LLaMA block: MHA, GQA, MQA at several widths, both KV-repeat forms, static and dynamic
    for e, h, kv in [(32, 1, 1), (32, 2, 1), (48, 3, 1), (48, 6, 2), (48, 6, 3), (96, 8, 2), (96, 8, 4),
                     (128, 8, 8), (96, 6, 6), (128, 2, 1)]:
        for gqa in ("repeat_interleave", "expand"):
            v.append(variant("llama", embed=e, heads=h, kv_heads=kv, gqa=gqa))
        v.append(variant("llama", embed=e, heads=h, kv_heads=kv, axes="seq", seq=5))
    for s in (1, 5, 16, 33):
        v.append(variant("llama", seq=s))
        v.append(variant("llama", seq=s, axes="seq"))
        v.append(variant("llama", seq=s, axes="seq", gqa="expand"))
    v += [variant("llama", batch=2), variant("llama", batch=2, axes="batch_seq"),
          variant("llama", batch=2, axes="batch_seq", gqa="expand"), variant("llama", rms="hf_cast"),
          variant("llama", rope_fp32=True), variant("llama", rms="hf_cast", rope_fp32=True, axes="seq"),
          variant("llama", rope="interleaved"), variant("llama", rope="interleaved", axes="seq"),
          variant("llama", mask="buffer"), variant("llama", mask="buffer", axes="seq"), variant("llama", mask="tril"),
          variant("llama", mask="tril", axes="seq"), variant("llama", mask="none"), variant("llama", bias=True)]
    for o in (13, 14, 15, 16):
        v.append(variant("llama", opset=o, axes="seq", mask="buffer" if o == 13 else "triu"))
        v.append(variant("llama", opset=o, mask="buffer" if o == 13 else "triu"))
    v += [variant("llama", rope="cached"), variant("llama", rope="cached", axes="seq"),
          variant("llama", mask="hf"), variant("llama", mask="hf", axes="batch_seq", batch=2),
          variant("llama", einsum=True), variant("llama", einsum=True, axes="seq"),
          variant("llama", embed=96, heads=6, kv_heads=2, rms="hf_cast", rope_fp32=True, mask="hf", gqa="expand",
                  axes="seq", seq=33, opset=14)]
    # tiny LLaMA: embedding + 2 blocks + lm_head
    for e, h, kv in [(32, 2, 1), (48, 6, 2), (48, 3, 3), (96, 8, 2), (128, 8, 1)]:
        v.append(variant("tiny", embed=e, heads=h, kv_heads=kv))
        v.append(variant("tiny", embed=e, heads=h, kv_heads=kv, axes="seq", seq=16))
    for s in (1, 5, 16, 33):
        v.append(variant("tiny", seq=s, axes="seq"))
    v += [variant("tiny", tied=True), variant("tiny", tied=True, axes="seq"), variant("tiny", batch=2),
          variant("tiny", batch=2, axes="batch_seq"), variant("tiny", gqa="repeat_interleave"),
          variant("tiny", gqa="repeat_interleave", axes="seq"), variant("tiny", rms="hf_cast", rope_fp32=True),
          variant("tiny", rms="hf_cast", rope_fp32=True, axes="seq"), variant("tiny", rope="interleaved", axes="seq"),
          variant("tiny", mask="tril", axes="seq"), variant("tiny", mask="buffer", axes="seq"),
          variant("tiny", layers=3, bias=True)]
    for o in (13, 14, 15, 16):
        v.append(variant("tiny", opset=o, axes="seq", mask="buffer" if o == 13 else "triu"))
    v += [variant("tiny", mask="hf", axes="seq"), variant("tiny", rope="cached", axes="seq"),
          variant("tiny", embed=48, heads=6, kv_heads=3, tied=True, rms="hf_cast", rope_fp32=True, mask="hf",
                  axes="batch_seq", batch=2, seq=16, opset=15)]
    # sizes no mesh side divides, committed as plans tests (examples/models/exported/)
    v += [variant("gpt2", embed=48, heads=6, conv1d=True, seq=11),
          variant("llama", embed=48, heads=6, kv_heads=2, rope="interleaved", seq=7),
          variant("llama", embed=40, heads=5, kv_heads=1, seq=9, opset=14),
          variant("llama", embed=16, heads=2, kv_heads=1, seq=5), variant("gpt2", embed=16, heads=2, seq=6)]
    # tiny GPT-2: ids -> logits, learned positions, tied or untied head, fused QKV, Conv1D or Linear
    v += [variant("gpt2m"), variant("gpt2m", tied=False), variant("gpt2m", axes="seq"),
          variant("gpt2m", conv1d=True, gelu="new"), variant("gpt2m", embed=48, heads=6, vocab=100, seq=11),
          variant("gpt2m", embed=40, heads=5, layers=1, opset=14, mask="buffer"), variant("gpt2m", batch=2)]
    # other ways of writing the same blocks: timm's one-reshape QKV, chunk, the scale on q, post-LN;
    # Meta's layout (RoPE and the kv repeat before the head transpose), the pairwise RoPE
    v += [variant("gpt2", qkv="timm"), variant("gpt2", qkv="timm", scale="q", axes="seq", embed=40, heads=5),
          variant("gpt2", qkv="chunk", scale="q", embed=36, heads=3), variant("gpt2", post_ln=True),
          variant("gpt2", qkv="timm", post_ln=True, batch=2, embed=48, heads=6, opset=14),
          variant("gpt2m", qkv="timm", scale="q", embed=40, heads=5, vocab=61)]
    v += [variant("gpt2", attn="nn_mha"), variant("gpt2", attn="nn_mha", embed=40, heads=5, axes="seq", opset=15),
          variant("gpt2", attn="nn_mha_sbe", embed=24, heads=2, bias=False), variant("gpt2m", attn="nn_mha", embed=48, heads=6),
          variant("gpt2", attn="nn_mha", batch=2, embed=32, heads=4), variant("gpt2", attn="nn_mha_sbe", batch=2, axes="batch_seq")]
    for e, h, kv in [(48, 6, 2), (48, 4, 1), (56, 7, 7), (24, 3, 3)]:
        v.append(variant("llama", embed=e, heads=h, kv_heads=kv, layout="bshd", gqa="expand"))
        v.append(variant("llama", embed=e, heads=h, kv_heads=kv, layout="bshd", rope="pairwise", axes="seq", seq=6))
    v += [variant("llama", layout="bshd"), variant("llama", rope="pairwise"), variant("llama", rope="pairwise_index"),
          variant("llama", rope="pairwise_unbind", layout="bshd", embed=32, heads=4, kv_heads=2, axes="seq"),
          variant("llama", rope="pairwise_index", layout="bshd", embed=48, heads=6, kv_heads=2),
          variant("llama", rope="pairwise", gqa="expand", axes="seq", opset=13, mask="buffer"),
          variant("llama", layout="bshd", rope="interleaved", batch=2),
          variant("tiny", layout="bshd", rope="pairwise", tied=True, embed=40, heads=4, kv_heads=2, vocab=70),
          variant("tiny", layout="bshd", embed=32, heads=8, kv_heads=1, vocab=101, axes="seq")]
    names = [c["name"] for c in v]
    assert len(names) == len(set(names)), "duplicate variant names"
    return v


# ---- export and check --------------------------------------------------------------------------

def build(c):
    torch.manual_seed(0)
    return {"gpt2": GPT2Block, "llama": LlamaBlock, "tiny": TinyLlama, "gpt2m": TinyGPT2}[c["family"]](c).eval()


def make_input(c, batch, seq, gen):
    if c["family"] in ("tiny", "gpt2m"):
        return torch.randint(0, c["vocab"], (batch, seq), dtype=torch.int64, generator=gen)
    return torch.randn(batch, seq, c["embed"], generator=gen)


def checks(c):
    """(batch, seq) pairs checked: the export's, and for dynamic axes two more."""
    b, s = c["batch"], c["seq"]
    out = [(b, s)]
    if c["axes"] in ("seq", "batch_seq"):
        out += [(b, s2) for s2 in (3, 13) if s2 != s]
    if c["axes"] == "batch_seq":
        out.append((3 - b if b in (1, 2) else 1, 7))
    return out


def export(c, d):
    m = build(c)
    gen = torch.Generator().manual_seed(1)
    in_name, out_name = ("input_ids", "logits") if c["family"] in ("tiny", "gpt2m") else ("x", "y")
    x = make_input(c, c["batch"], c["seq"], gen)
    axes = None
    if c["axes"] == "seq":
        axes = {in_name: {1: "seq"}, out_name: {1: "seq"}}
    elif c["axes"] == "batch_seq":
        axes = {in_name: {0: "batch", 1: "seq"}, out_name: {0: "batch", 1: "seq"}}
    path = os.path.join(d, "model.onnx")
    torch.onnx.export(m, (x,), path, input_names=[in_name], output_names=[out_name], dynamic_axes=axes,
                      opset_version=c["opset"], do_constant_folding=True)
    cases = []
    for i, (b, s) in enumerate(checks(c)):
        xi = x if i == 0 else make_input(c, b, s, gen)
        with torch.no_grad():
            ref = m(xi)
        np.save(os.path.join(d, "in%d.npy" % i), xi.numpy())
        np.save(os.path.join(d, "ref%d.npy" % i), ref.numpy().astype(np.float32))
        cases.append((i, b, s))
    return path, in_name, out_name, cases


def run_tool(cmd, what, timeout=600):
    """None when cmd exits 0, else why (its first error lines)."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode == 0:
        return None
    errs = [l for l in r.stderr.splitlines() if "error" in l] or r.stderr.splitlines()[-3:]
    return "%s exited %d: %s" % (what, r.returncode, " | ".join(errs[:3]))


def compare(tools, out, ref, what):
    cmp = subprocess.run([os.path.join(tools, "wafer-npycmp"), out, ref, "--atol", "1e-4", "--rtol", "0"],
                         capture_output=True, text=True)
    return None if cmp.returncode == 0 else what + ": " + (cmp.stdout + cmp.stderr).strip().splitlines()[-1]


def run_waferc(tools, path, in_name, out_name, d, i):
    out = os.path.join(d, "out%d" % i)
    why = run_tool([os.path.join(tools, "waferc"), path, "--interpret", "--input",
                    "%s=%s" % (in_name, os.path.join(d, "in%d.npy" % i)), "--output-dir", out], "waferc")
    return why or compare(tools, os.path.join(out, out_name + ".npy"), os.path.join(d, "ref%d.npy" % i), "mismatch")


def run_plan(tools, path, in_name, out_name, d, i, mesh, target):
    """Compiles the model for `mesh` (token/activation shape from the input; WxH/N: with
    --pipeline=N), runs the plan on waferrun and compares with torch's reference; also requires
    no fabric transpose (in any stage)."""
    x = np.load(os.path.join(d, "in%d.npy" % i))
    tag = mesh.replace("/", "p")
    plan = os.path.join(d, "plan%d_%s" % (i, tag))
    out = os.path.join(d, "pout%d_%s" % (i, tag))
    shape = "x".join(str(n) for n in x.shape)
    mesh, _, stages = mesh.partition("/")
    why = run_tool([os.path.join(tools, "waferc"), path, "-q", "-o", plan, "--target=" + target, "--mesh=" + mesh,
                    "--input-shape", "%s=%s" % (in_name, shape)] + (["--pipeline=" + stages] if stages else []),
                   "waferc -o")
    why = why or run_tool([os.path.join(tools, "waferrun"), plan, "--input",
                           "%s=%s" % (in_name, os.path.join(d, "in%d.npy" % i)), "--output-dir", out], "waferrun", 1200)
    why = why or compare(tools, os.path.join(out, out_name + ".npy"), os.path.join(d, "ref%d.npy" % i), "plan mismatch")
    if why:
        return why
    try:
        import json
        with open(os.path.join(plan, "manifest.json")) as f:
            man = json.load(f)
        n_tr = man.get("fabric_transposes", 0)
        for st in man.get("pipeline", {}).get("stages", [])[1:]:
            with open(os.path.join(plan, st["plan"], "manifest.json")) as f:
                n_tr += json.load(f).get("fabric_transposes", 0)
        if n_tr:
            return "plan has %d fabric transposes" % n_tr
    except (OSError, ValueError) as ex:
        return "manifest: %s" % ex
    return None


# ---- export.py's own options (the committed models' generator) ---------------------------------

def export_py_variants():
    """Option sets of export.py, run as it is run by hand; (name, model, args)."""
    out = []
    sizes = [("--embed 96 --heads 6 --kv-heads 3 --seq 11", "e96h6kv3s11"), ("--embed 48 --heads 3 --kv-heads 1 --seq 5", "e48h3kv1s5"),
             ("--embed 128 --heads 8 --kv-heads 2 --seq 16", "e128h8kv2s16"), ("--embed 32 --heads 2 --kv-heads 2 --seq 1", "e32h2kv2s1"),
             ("--embed 48 --heads 6 --kv-heads 6 --seq 33 --batch 2", "e48h6kv6s33b2")]
    forms = {
        "gpt2_block": [("", "tril"), ("--gelu none", "erf"), ("--mask-form buffer", "buf"), ("--static", "static"),
                       ("--opset 14", "o14"), ("--mask-form buffer --opset 13", "o13")],
        "llama_block": [("", "ri"), ("--gqa-form expand", "exp"), ("--dynamic", "dyn"), ("--dynamic --gqa-form expand", "dynexp"),
                        ("--rope-form interleaved", "il"), ("--freqs-form einsum --dynamic", "ein"),
                        ("--freqs-form matmul --rope-form interleaved --dynamic", "mm"), ("--opset 15", "o15")],
        "tiny_llama": [("", "exp"), ("--gqa-form repeat_interleave", "ri"), ("--static", "static"),
                       ("--rope-form interleaved --freqs-form einsum", "ilein"), ("--layers 3 --vocab 200 --opset 16", "l3")],
    }
    for model, fs in forms.items():
        for i, (sz, sname) in enumerate(sizes):
            for j, (f, fname) in enumerate(fs):
                if (i + j) % 2 and sz != sizes[0][0]:  # every form at the first size, a checkerboard beyond
                    continue
                extra = " --seq2 7" if "--seq 1 " in sz + " " else ""
                out.append(("exportpy_%s_%s_%s" % (model, sname, fname), model, "%s %s%s" % (sz, f, extra)))
    return out


def run_export_py(tools, name, model, args, root):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, os.path.join(here, "export.py"), "--out", d, "--only", model] + args.split(),
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, "EXPORT-FAIL %s: %s" % (name, (r.stderr.strip().splitlines() or ["?"])[-1])
    in_name, out_name = ("input_ids", "logits") if model == "tiny_llama" else ("x", "y")
    results = []
    for f in sorted(os.listdir(d)):
        if not f.endswith("_input.npy"):
            continue
        tag = f[:-len("_input.npy")]
        os.replace(os.path.join(d, f), os.path.join(d, "in_%s.npy" % tag))
        os.replace(os.path.join(d, tag + "_ref.npy"), os.path.join(d, "ref_%s.npy" % tag))
        results.append(tag)
    fails = []
    for tag in results:
        out = os.path.join(d, "out_" + tag)
        cmd = [os.path.join(tools, "waferc"), os.path.join(d, model + ".onnx"), "--interpret", "--input",
               "%s=%s" % (in_name, os.path.join(d, "in_%s.npy" % tag)), "--output-dir", out]
        w = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        why = None
        if w.returncode != 0:
            errs = [l for l in w.stderr.splitlines() if "error" in l] or w.stderr.splitlines()[-3:]
            why = "waferc exited %d: %s" % (w.returncode, " | ".join(errs[:3]))
        else:
            c = subprocess.run([os.path.join(tools, "wafer-npycmp"), os.path.join(out, out_name + ".npy"),
                                os.path.join(d, "ref_%s.npy" % tag), "--atol", "1e-4", "--rtol", "0"],
                               capture_output=True, text=True)
            if c.returncode != 0:
                why = "mismatch: " + (c.stdout + c.stderr).strip().splitlines()[-1]
        fails.append(("%s [%s]" % (name, tag), why))
    return fails, None


def main():
    warnings.filterwarnings("ignore")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--waferc", default="build/bin", help="directory holding waferc and wafer-npycmp")
    ap.add_argument("-k", default=None, help="only variants whose name contains this")
    ap.add_argument("--keep", default=None, help="export into this directory and keep the files")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--plans", default=None,
                    help="also compile each case for these meshes (comma-separated WxH, or WxH/N for "
                         "--pipeline=N), run the plans on waferrun and compare with torch (the export.py option "
                         "sets are not compiled)")
    ap.add_argument("--target", default="wse2", help="target preset of --plans (default wse2)")
    ap.add_argument("--interpret", action="store_true", default=None,
                    help="with --plans, also run the reference interpreter (default: only without --plans)")
    a = ap.parse_args()
    meshes = a.plans.split(",") if a.plans else []
    interpret = a.interpret or not meshes
    vs = [c for c in variants() if not a.k or a.k in c["name"]]
    eps = [e for e in export_py_variants() if not a.k or a.k in e[0]]
    if a.list:
        for c in vs:
            print(c["name"], checks(c))
        for name, model, args in eps:
            print(name, "export.py --only", model, args)
        return 0
    root = a.keep or tempfile.mkdtemp(prefix="waferc-variants-")
    plan_runs = []
    failed, n_cases = [], 0
    for c in vs:
        d = os.path.join(root, c["name"])
        os.makedirs(d, exist_ok=True)
        try:
            path, in_name, out_name, cases = export(c, d)
        except Exception as ex:  # an export torch refuses is not waferc's failure: reported apart
            print("EXPORT-FAIL %s: %s" % (c["name"], str(ex).splitlines()[0] if str(ex) else type(ex).__name__))
            continue
        for i, b, s in cases:
            runs = ([("interpret", lambda: run_waferc(a.waferc, path, in_name, out_name, d, i))] if interpret else [])
            runs += [("mesh " + m, lambda m=m: run_plan(a.waferc, path, in_name, out_name, d, i, m, a.target))
                     for m in meshes]
            for how, fn in runs:
                n_cases += 1
                why = fn()
                if how.startswith("mesh "):
                    plan_runs.append((c["family"], how[5:], why is None))
                tag = "%s [batch %d, seq %d, %s]" % (c["name"], b, s, how)
                if why:
                    failed.append((tag, why))
                    print("FAIL %s: %s" % (tag, why), flush=True)
                else:
                    print("PASS %s" % tag, flush=True)
    for name, model, args in (eps if interpret else []):
        res, export_fail = run_export_py(a.waferc, name, model, args, root)
        if export_fail:
            print(export_fail)
            continue
        for tag, why in res:
            n_cases += 1
            if why:
                failed.append((tag, why))
                print("FAIL %s: %s" % (tag, why), flush=True)
            else:
                print("PASS %s" % tag, flush=True)
    if meshes:
        # per mesh and family: the table CONFORMANCE.md "Exported models as plans" holds
        fams = {"gpt2": "GPT-2 blocks", "llama": "LLaMA blocks", "tiny": "tiny LLaMA (ids to logits)",
                "gpt2m": "tiny GPT-2 (ids to logits)"}
        print("\n| family | " + " | ".join(meshes) + " |")
        print("|---|" + "---:|" * len(meshes))
        for fam, label in fams.items():
            cells = []
            for m in meshes:
                tags = [t for t in plan_runs if t[0] == fam and t[1] == m]
                cells.append("%d/%d" % (sum(1 for t in tags if t[2]), len(tags)))
            print("| %s | %s |" % (label, " | ".join(cells)))
    print("\n%d/%d checks pass (%d variants, %d export.py option sets)%s" % (n_cases - len(failed), n_cases, len(vs), len(eps),
                                                 "; files kept in " + root if a.keep else ""))
    if not a.keep:
        subprocess.run(["rm", "-rf", root])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
