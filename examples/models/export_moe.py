#!/usr/bin/python3
"""Exports small Mixture-of-Experts blocks into examples/models/moe/, in two styles.

DENSE (moe_e*, moe_b2_*): every expert computes on every token, and the outputs are weighted
by a gate-weight matrix and summed. Each block is

    logits = gate(x)                       # Linear E -> N experts, no bias
    probs  = softmax(logits, -1)
    w, idx = topk(probs, K, -1)            # TopK
    w      = w / w.sum(-1, keepdim=True)   # renormalised (top-2); top-1 gives 1.0
    gates  = zeros_like(probs).scatter(-1, idx, w)   # ScatterElements -> [T, N]
             (or one_hot(idx, N) * w[..., None] summed over k: OneHot)
    y      = sum_e gates[:, e:e+1] * expert_e(x)      # or a stacked [T, N, E] combine

SPARSE (moe_ec_*, moe_cap_*): tokens are dispatched, each expert computes on C tokens only,
its rows gathered by computed ids, and its outputs are added back into their rows
(index_add: ONNX Gather and ScatterElements along the token axis):

    expert choice (ec):   w, idx = topk(probs.t(), C)          # each expert's C best tokens
    capacity (cap):       gates as above (top-k, renormalised, scattered into [T, N]);
                          w_i, idx_i = topk(gates[:, i], C)    # expert i's C heaviest tokens
                          (a token past an expert's capacity is dropped by it; C = T drops none)
    y = sum_i index_add(0, idx_i, expert_i(x[idx_i]) * w_i[:, None])

DYNAMIC (moe_hf_*): Hugging Face's Mixtral / Qwen2-MoE dispatch, whose token lists have a
length the data decides (ONNX NonZero; the importer keeps every entry and drops the invalid
ones at the index_add, docs/onnx.md "NonZero"):

    w, sel = topk(softmax(gate(x), -1), K)    # renormalised when norm (Mixtral), not (Qwen2)
    mask   = one_hot(sel, N).permute(2, 1, 0) # [N, K, T] (or (2, 0, 1): [N, T, K], tok, slot)
    for e: slot, tok = torch.where(mask[e])   # NonZero
           y.index_add_(0, tok, expert_e(x[tok]) * w[tok, slot, None])
    (+ sigmoid(shared_gate(x)) * shared_expert(x) with shared: Qwen2-MoE)

and a top-1 router written with explicit token lists (moe_nz_*): w, sel = probs.max(-1), then
per expert idx = nonzero(sel == e) and y[idx] = ... (index_put_, ONNX ScatterND; "put"),
y.index_put_((idx,), ..., accumulate=True) ("putacc") or y.index_add(0, idx, ...) with
index_select ("select"). torch bakes a list's length into the graph where the traced list
had one entry, so the seeds are ones whose trace gives every expert two tokens or more.

CAPACITY (moe_sw_*): Switch Transformer's top-1 router with a capacity of C tokens per
expert, positions counted by a running sum (ONNX CumSum) and dispatch / combine as einsums:

    gate, sel = probs.max(-1); mask = one_hot(sel, N)             # [T, N]
    pos  = cumsum(mask, 0) * mask - 1                             # place in its expert's queue
    disp = ((pos < C) * mask)[..., None] * one_hot(pos.clamp(0, C - 1).long(), C)  # [T, N, C]
    y    = einsum("tnc,nce->te", disp * gate, experts(einsum("tnc,te->nce", disp, x)))

DeepSeek's moe_infer (moe_ds_*): the (token, slot) pairs sorted by expert (argsort: ONNX TopK
of integers), tokens = x[order // k] (integer division), each expert on its run of the sorted
tokens (run lengths counted at trace time, as torch's tracer bakes tokens_per_expert), the
outputs put back by new[order] = outs (ScatterND), weighted and summed over the slots; a
softmax top-k gate (DeepSeek-V2's greedy one) or DeepSeek-V3's grouped one (sigmoid scores,
a choice bias, the best groups' experts searched: moe_ds_v3_*), and a shared expert.

and GShard's top-2 (moe_gs_*): the second choices queue after every first choice,
pos2 = cumsum(mask2, 0) - 1 + mask1.sum(0), both weights renormalised over the kept ones.

with SwiGLU (w2(silu(w1 x) * w3 x)) or GELU (fc2(gelu(fc1 x))) experts. Files per block M:
M.onnx, M_input.npy (x) and M_ref.npy (torch's y). Seeded: a rerun with the same torch writes
the same files. Needs Debian's python3-torch, python3-onnx and python3-numpy:

    /usr/bin/python3 examples/models/export_moe.py            # writes examples/models/moe/
    /usr/bin/python3 examples/models/export_moe.py --out DIR  # elsewhere
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def __init__(self, e, f):
        super().__init__()
        self.w1 = nn.Linear(e, f, bias=False)
        self.w3 = nn.Linear(e, f, bias=False)
        self.w2 = nn.Linear(f, e, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class GeluMLP(nn.Module):
    def __init__(self, e, f):
        super().__init__()
        self.fc1 = nn.Linear(e, f)
        self.fc2 = nn.Linear(f, e)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class DenseMoE(nn.Module):
    def __init__(self, e, f, n, k, expert="swiglu", combine="slice", renorm=True, weights="topk", flat=False):
        super().__init__()
        self.k, self.combine, self.renorm, self.weights, self.flat = k, combine, renorm, weights, flat
        self.gate = nn.Linear(e, n, bias=False)
        mk = SwiGLU if expert == "swiglu" else GeluMLP
        self.experts = nn.ModuleList([mk(e, f) for _ in range(n)])

    def forward(self, x):
        if self.flat:  # [B, T, E] -> [B*T, E] and back, as Hugging Face's MoE layers do
            return self.moe(x.reshape(-1, x.shape[-1])).reshape(x.shape)
        return self.moe(x)

    def moe(self, x):
        logits = self.gate(x)
        probs = F.softmax(logits, dim=-1)
        if self.weights == "gather":  # experts chosen on the logits, weights read back (GatherElements)
            _, idx = torch.topk(logits, self.k, dim=-1)
            w = probs.gather(-1, idx)
        elif self.weights == "softk":  # Mixtral-like: softmax over the k chosen logits, scatter_add
            v, idx = torch.topk(logits, self.k, dim=-1)
            w = F.softmax(v, dim=-1)
            return self.combine_experts(x, torch.zeros_like(probs).scatter_add(-1, idx, w))
        elif self.weights == "sort":  # top-k by a descending sort sliced to k (TopK of all N, Slice)
            w, idx = torch.sort(probs, dim=-1, descending=True)
            w, idx = w[..., :self.k], idx[..., :self.k]
        else:
            w, idx = torch.topk(probs, self.k, dim=-1)
        if self.renorm:
            w = w / w.sum(dim=-1, keepdim=True)
        if self.weights == "onehot":  # one_hot(idx) [T, K, N] weighted by w, summed over K (OneHot)
            hot = F.one_hot(idx, probs.shape[-1]).to(w.dtype)
            return self.combine_experts(x, (hot * w.unsqueeze(-1)).sum(dim=-2))
        return self.combine_experts(x, torch.zeros_like(probs).scatter(-1, idx, w))

    def combine_experts(self, x, gates):
        if self.combine == "einsum":  # [T, N] . [T, N, E] -> [T, E]
            return torch.einsum("tn,tne->te", gates, torch.stack([ex(x) for ex in self.experts], dim=1))
        if self.combine == "stack":  # [T, N, E] weighted by gates[..., None], summed over N
            outs = torch.stack([ex(x) for ex in self.experts], dim=-2)
            return (outs * gates.unsqueeze(-1)).sum(dim=-2)
        y = None
        for i, ex in enumerate(self.experts):
            t = gates[..., i:i + 1] * ex(x)
            y = t if y is None else y + t
        return y


class SparseMoE(nn.Module):
    def __init__(self, e, f, n, k, c, expert="swiglu", dispatch="ec"):
        super().__init__()
        self.k, self.c, self.dispatch = k, c, dispatch
        self.gate = nn.Linear(e, n, bias=False)
        mk = SwiGLU if expert == "swiglu" else GeluMLP
        self.experts = nn.ModuleList([mk(e, f) for _ in range(n)])

    def forward(self, x):
        probs = F.softmax(self.gate(x), dim=-1)
        if self.dispatch in ("ec", "ecg"):
            w, idx = torch.topk(probs.t(), self.c, dim=-1)  # [N, C]
        else:
            v, top = torch.topk(probs, self.k, dim=-1)
            gates = torch.zeros_like(probs).scatter(-1, top, v / v.sum(dim=-1, keepdim=True))
        y = torch.zeros_like(x)
        for i, ex in enumerate(self.experts):
            if self.dispatch == "ecg":  # rows by gather / scatter_add of the ids expanded over E
                ix = idx[i].unsqueeze(-1).expand(-1, x.shape[-1])
                y = y.scatter_add(0, ix, ex(x.gather(0, ix)) * w[i].unsqueeze(-1))
                continue
            if self.dispatch == "ec":
                wi, ti = w[i], idx[i]
            else:
                wi, ti = torch.topk(gates[:, i], self.c)
            y = y.index_add(0, ti, ex(x[ti]) * wi.unsqueeze(-1))
        return y


class HFMoE(nn.Module):
    """Hugging Face's sparse MoE block (Mixtral; Qwen2-MoE with norm=False and shared)."""

    def __init__(self, e, f, n, k, expert="swiglu", norm=True, shared=False, tokens_first=False):
        super().__init__()
        self.n, self.k, self.norm, self.tokens_first = n, k, norm, tokens_first
        self.gate = nn.Linear(e, n, bias=False)
        mk = SwiGLU if expert == "swiglu" else GeluMLP
        self.experts = nn.ModuleList([mk(e, f) for _ in range(n)])
        self.shared = SwiGLU(e, f) if shared else None
        self.shared_gate = nn.Linear(e, 1, bias=False) if shared else None

    def forward(self, x):
        shape = x.shape
        h = x.view(-1, shape[-1])
        w = F.softmax(self.gate(h), dim=1, dtype=torch.float)
        w, sel = torch.topk(w, self.k, dim=-1)
        if self.norm:
            w = w / w.sum(dim=-1, keepdim=True)
        y = torch.zeros_like(h)
        mask = F.one_hot(sel, num_classes=self.n).permute(*((2, 0, 1) if self.tokens_first else (2, 1, 0)))
        for e in range(self.n):
            if self.tokens_first:  # [N, T, k]: tokens major
                tok, slot = torch.where(mask[e])
            else:
                slot, tok = torch.where(mask[e])
            cur = h[None, tok].reshape(-1, shape[-1])
            y.index_add_(0, tok, self.experts[e](cur) * w[tok, slot, None])
        if self.shared is not None:
            y = y + torch.sigmoid(self.shared_gate(h)) * self.shared(h)
        return y.reshape(shape)


class NonzeroMoE(nn.Module):
    """Top-1 routing with explicit token lists (torch.nonzero), three ways to write back."""

    def __init__(self, e, f, n, mode):
        super().__init__()
        self.n, self.mode = n, mode
        self.gate = nn.Linear(e, n, bias=False)
        self.experts = nn.ModuleList([SwiGLU(e, f) for _ in range(n)])

    def forward(self, x):
        w, sel = F.softmax(self.gate(x), dim=-1).max(-1)
        y = torch.zeros_like(x)
        for e in range(self.n):
            if self.mode == "put":
                idx = torch.nonzero(sel == e).squeeze(-1)
                y[idx] = self.experts[e](x[idx]) * w[idx, None]
            elif self.mode == "putacc":
                idx = torch.nonzero(sel == e, as_tuple=True)[0]
                y.index_put_((idx,), self.experts[e](x[idx]) * w[idx].unsqueeze(-1), accumulate=True)
            else:
                idx = (sel == e).nonzero().squeeze(-1)
                xs = x.index_select(0, idx)
                y = y.index_add(0, idx, self.experts[e](xs) * w.index_select(0, idx).unsqueeze(-1))
        return y


class SwitchMoE(nn.Module):
    """Switch Transformer: top-1 routing, a capacity of C tokens per expert (cumsum), einsums."""

    def __init__(self, e, f, n, c, expert="gelu"):
        super().__init__()
        self.n, self.c = n, c
        self.gate = nn.Linear(e, n, bias=False)
        mk = SwiGLU if expert == "swiglu" else GeluMLP
        self.experts = nn.ModuleList([mk(e, f) for _ in range(n)])

    def forward(self, x):
        gate, sel = F.softmax(self.gate(x), dim=-1).max(-1)
        mask = F.one_hot(sel, self.n).float()
        pos = torch.cumsum(mask, 0) * mask - 1
        keep = (pos < self.c).float() * mask
        disp = keep.unsqueeze(-1) * F.one_hot(pos.clamp(0, self.c - 1).long(), self.c).float()
        xin = torch.einsum("tnc,te->nce", disp, x)
        out = torch.stack([ex(xin[i]) for i, ex in enumerate(self.experts)])
        return torch.einsum("tnc,nce->te", disp * gate[:, None, None], out)


class GShardMoE(SwitchMoE):
    """GShard: top-2, second choices queued after all first choices, C tokens per expert."""

    def forward(self, x):
        p = F.softmax(self.gate(x), dim=-1)
        m1 = F.one_hot(p.argmax(-1), self.n).float()
        m2 = F.one_hot((p * (1 - m1)).argmax(-1), self.n).float()
        pos1 = torch.cumsum(m1, 0) * m1 - 1
        pos2 = (torch.cumsum(m2, 0) - 1 + m1.sum(0, keepdim=True)) * m2
        m1 = m1 * (pos1 < self.c).float()
        m2 = m2 * (pos2 < self.c).float()
        g1, g2 = (p * m1).sum(-1), (p * m2).sum(-1)
        den = (g1 + g2).clamp(min=1e-9)
        g1, g2 = g1 / den, g2 / den
        c1 = F.one_hot((pos1 * m1).sum(-1).long(), self.c).float()
        c2 = F.one_hot((pos2 * m2).sum(-1).long(), self.c).float()
        comb = g1[:, None, None] * m1[:, :, None] * c1[:, None, :] + g2[:, None, None] * m2[:, :, None] * c2[:, None, :]
        xin = torch.einsum("tnc,te->nce", (comb > 0).float(), x)
        out = torch.stack([ex(xin[i]) for i, ex in enumerate(self.experts)])
        return torch.einsum("tnc,nce->te", comb, out)


class Llama4MoE(nn.Module):
    """Llama 4's MoE: the sigmoid of each token's top-k logits scales its copy of the input, one
    copy per expert (Tile), the experts' weights stacked and applied by batched matmuls (a
    fused gate/up projection chunked in two), the copies summed, a shared expert added."""

    def __init__(self, e, f, n, k):
        super().__init__()
        self.n, self.k = n, k
        self.router = nn.Linear(e, n, bias=False)
        self.gate_up = nn.Parameter(torch.randn(n, e, 2 * f) * 0.2)
        self.down = nn.Parameter(torch.randn(n, f, e) * 0.2)
        self.shared = SwiGLU(e, f)

    def forward(self, x):
        h = x.reshape(-1, x.shape[-1])
        logits = self.router(h)
        top, idx = torch.topk(logits, self.k, dim=1)
        scores = torch.full_like(logits, float("-inf")).scatter_(1, idx, top).transpose(0, 1).sigmoid()
        routed = h.repeat(self.n, 1) * scores.reshape(-1, 1)
        g, u = torch.bmm(routed.view(self.n, -1, h.shape[-1]), self.gate_up).chunk(2, dim=-1)
        out = torch.bmm(u * F.silu(g), self.down)
        return (out.sum(0) + self.shared(h)).reshape(x.shape)


class TokenWeightsMoE(nn.Module):
    """Top-1 with each token's expert weights gathered from the stacked parameters (`w1[sel]`,
    a Gather of a [N, E, F] constant by computed ids) and applied by batched matmuls, one
    [1, E] x [E, F] product per token."""

    def __init__(self, e, f, n):
        super().__init__()
        self.gate = nn.Linear(e, n, bias=False)
        self.w1 = nn.Parameter(torch.randn(n, e, f) * 0.2)
        self.w2 = nn.Parameter(torch.randn(n, f, e) * 0.2)

    def forward(self, x):
        w, sel = F.softmax(self.gate(x), dim=-1).max(-1)
        h = F.relu(torch.bmm(x.unsqueeze(1), self.w1[sel]))
        return torch.bmm(h, self.w2[sel]).squeeze(1) * w.unsqueeze(-1)


class GroupGate(nn.Module):
    """DeepSeek-V3's gate (noaux_tc): sigmoid scores, a bias that only steers the choice, the
    experts in groups of which the best `top_groups` (by the sum of their two best biased
    scores) are searched; weights renormalised."""

    def __init__(self, e, n, k, groups, top_groups):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, e) * 0.3)
        self.bias = nn.Parameter(torch.randn(n) * 0.1)
        self.n, self.k, self.groups, self.top_groups = n, k, groups, top_groups

    def forward(self, h):
        scores = torch.sigmoid(F.linear(h, self.weight))
        biased = scores + self.bias.unsqueeze(0)
        group = biased.view(h.shape[0], self.groups, -1).topk(2, dim=-1)[0].sum(dim=-1)
        best = torch.topk(group, k=self.top_groups, dim=-1, sorted=False)[1]
        mask = torch.zeros_like(group).scatter_(1, best, 1)
        mask = mask.unsqueeze(-1).expand(h.shape[0], self.groups, self.n // self.groups).reshape(h.shape[0], -1)
        ids = torch.topk(biased.masked_fill(~mask.bool(), 0.0), k=self.k, dim=-1, sorted=False)[1]
        w = scores.gather(1, ids)
        return w / (w.sum(dim=-1, keepdim=True) + 1e-20), ids


class DeepSeekMoE(nn.Module):
    """DeepSeek's moe_infer: argsort dispatch, a shared expert; the counts baked at trace time."""

    def __init__(self, e, f, n, k, groups=0, top_groups=0):
        super().__init__()
        self.k = k
        self.gate = GroupGate(e, n, k, groups, top_groups) if groups else nn.Linear(e, n, bias=False)
        self.grouped = bool(groups)
        self.experts = nn.ModuleList([SwiGLU(e, f) for _ in range(n)])
        self.shared = SwiGLU(e, f)

    def forward(self, x):
        shape = x.shape
        h = x.view(-1, shape[-1])
        if self.grouped:
            w, ids = self.gate(h)
        else:
            w, ids = torch.topk(F.softmax(self.gate(h), dim=-1), self.k, dim=-1)
        cnts = ids.new_zeros((ids.shape[0], len(self.experts)))
        cnts.scatter_(1, ids, 1)
        per_expert = cnts.sum(dim=0).tolist()
        order = ids.view(-1).argsort()
        tokens = h[order // ids.shape[1]]
        outs, start = [], 0
        for i, num in enumerate(per_expert):
            if num:
                outs.append(self.experts[i](tokens[start:start + num]))
            start += num
        o = torch.cat(outs, dim=0)
        back = torch.empty_like(o)
        back[order] = o
        y = (back.view(*ids.shape, -1) * w.unsqueeze(-1)).sum(dim=1)
        return (y + self.shared(h)).view(shape)


# name: torch seed, tokens, embed E, expert hidden F, experts N, top-k, expert kind, combine,
# where the gate weights come from (topk of probs, gather of probs, softmax of the top-k logits)
BLOCKS = {
    "moe_e4_k1": dict(seed=101, t=8, e=16, f=32, n=4, k=1, expert="swiglu", combine="slice"),
    "moe_e4_k2": dict(seed=102, t=8, e=16, f=32, n=4, k=2, expert="swiglu", combine="slice"),
    "moe_e8_k2": dict(seed=105, t=8, e=32, f=48, n=8, k=2, expert="swiglu", combine="slice"),
    "moe_e8_k1_gelu": dict(seed=104, t=12, e=24, f=40, n=8, k=1, expert="gelu", combine="slice"),
    "moe_e16_k2": dict(seed=100, t=8, e=16, f=16, n=16, k=2, expert="swiglu", combine="slice"),
    "moe_e6_k2_stack": dict(seed=103, t=8, e=16, f=24, n=6, k=2, expert="swiglu", combine="stack"),
    "moe_e8_k2_gather": dict(seed=106, t=8, e=16, f=24, n=8, k=2, expert="swiglu", combine="slice", weights="gather"),
    "moe_b2_e4_k2": dict(seed=108, t=(2, 6), e=16, f=24, n=4, k=2, expert="swiglu", combine="slice"),
    "moe_b2_e8_k2_flat": dict(seed=109, t=(2, 6), e=16, f=16, n=8, k=2, expert="swiglu", combine="stack", flat=True),
    "moe_e5_k2_einsum": dict(seed=110, t=8, e=16, f=16, n=5, k=2, expert="swiglu", combine="einsum"),
    "moe_e6_k2_softk": dict(seed=107, t=10, e=16, f=24, n=6, k=2, expert="gelu", combine="slice", weights="softk"),
    "moe_e4_k2_onehot": dict(seed=111, t=8, e=16, f=24, n=4, k=2, expert="swiglu", combine="slice", weights="onehot"),
    # expert counts that share no factor with most meshes' rows (uneven bands, tests/scripts/expert_bands.sh)
    "moe_e3_k1": dict(seed=112, t=8, e=16, f=24, n=3, k=1, expert="swiglu", combine="slice"),
    "moe_e5_k2": dict(seed=113, t=8, e=16, f=24, n=5, k=2, expert="swiglu", combine="slice"),
    "moe_e4_k2_sort": dict(seed=114, t=8, e=16, f=16, n=4, k=2, expert="swiglu", combine="slice", weights="sort"),
}
# sparse blocks: C tokens per expert, dispatch "ec" (expert choice) or "cap" (top-k with capacity)
SPARSE = {
    "moe_ec_e4_c4": dict(seed=120, t=8, e=16, f=24, n=4, k=0, c=4, expert="swiglu", dispatch="ec"),
    "moe_ec_e8_c3_gelu": dict(seed=121, t=12, e=24, f=32, n=8, k=0, c=3, expert="gelu", dispatch="ec"),
    "moe_cap_e4_k2_c8": dict(seed=122, t=8, e=16, f=24, n=4, k=2, c=8, expert="swiglu", dispatch="cap"),
    "moe_cap_e6_k1_c3": dict(seed=123, t=10, e=20, f=16, n=6, k=1, c=3, expert="swiglu", dispatch="cap"),
    "moe_cap_e16_k2_c2": dict(seed=124, t=8, e=16, f=16, n=16, k=2, c=2, expert="swiglu", dispatch="cap"),
    "moe_cap_e3_k2_c6": dict(seed=125, t=8, e=16, f=16, n=3, k=2, c=6, expert="swiglu", dispatch="cap"),
    "moe_cap_e5_k1_c3": dict(seed=127, t=10, e=16, f=16, n=5, k=1, c=3, expert="swiglu", dispatch="cap"),
    # expert choice written with torch.gather / scatter_add along the token axis
    "moe_ecg_e4_c4": dict(seed=126, t=8, e=16, f=16, n=4, k=0, c=4, expert="swiglu", dispatch="ecg"),
    "moe_ecg_e6_c3_gelu": dict(seed=128, t=9, e=16, f=24, n=6, k=0, c=3, expert="gelu", dispatch="ecg"),
}

# dynamic dispatch (Hugging Face): norm = renormalise the top-k weights, shared = Qwen2's
# shared expert
DYNAMIC = {
    "moe_hf_e4_k2": dict(seed=130, t=8, e=16, f=32, n=4, k=2, expert="swiglu", norm=True),
    "moe_hf_b2_e8_k2": dict(seed=131, t=(2, 6), e=16, f=24, n=8, k=2, expert="swiglu", norm=True),
    "moe_hf_e6_k1_gelu": dict(seed=132, t=10, e=20, f=24, n=6, k=1, expert="gelu", norm=False),
    "moe_hf_e4_k2_shared": dict(seed=133, t=8, e=16, f=16, n=4, k=2, expert="swiglu", norm=False, shared=True),
    "moe_hf_b3_e8_k4_tok": dict(seed=134, t=(3, 5), e=16, f=16, n=8, k=4, expert="swiglu", norm=True, tokens_first=True),
    "moe_hf_t128_e4_k2": dict(seed=135, t=128, e=16, f=16, n=4, k=2, expert="swiglu", norm=True),
    "moe_nz_e4_put": dict(seed=140, t=12, e=16, f=16, n=4, mode="put"),
    "moe_nz_e4_putacc": dict(seed=145, t=12, e=16, f=16, n=4, mode="putacc"),
    "moe_nz_e4_select": dict(seed=150, t=12, e=16, f=16, n=4, mode="select"),
}
# Switch Transformer: top-1, C tokens per expert counted by cumsum, einsum dispatch / combine
CAPACITY = {
    "moe_sw_e4_c3": dict(seed=160, t=8, e=16, f=24, n=4, c=3, expert="gelu"),
    "moe_sw_e6_c2_swiglu": dict(seed=161, t=10, e=16, f=16, n=6, c=2, expert="swiglu"),
    "moe_gs_e4_c4": dict(seed=162, t=8, e=16, f=16, n=4, c=4, expert="swiglu"),
    # a capacity of one token: each expert's slice of the dispatch is one row (expert-bands)
    "moe_sw_e5_c1": dict(seed=163, t=6, e=8, f=40, n=5, c=1, expert="gelu"),
    # 64 tokens: on 8x8 auto mixes MeshGEMM's and Cannon's rings past test8x8's colors
    # (waferc's one-ring fallback, tests/scripts/gemm_one_ring.sh)
    "moe_sw_e8_c8_t64": dict(seed=164, t=64, e=32, f=32, n=8, c=8, expert="gelu"),
}
# Llama 4's tiled tokens and batched expert matmuls; stacked expert weights gathered per token
TILED = {
    "moe_l4_e4_k1": dict(seed=180, t=8, e=16, f=16, n=4, k=1),
    "moe_l4_b2_e6_k2": dict(seed=181, t=(2, 5), e=16, f=24, n=6, k=2),
    # each token's expert weights gathered from the stacked parameters (TokenWeightsMoE)
    "moe_tw_e4_k1": dict(seed=182, t=8, e=16, f=16, n=4, k=1),
}
# DeepSeek's argsort dispatch
SORTED = {
    "moe_ds_e8_k2": dict(seed=170, t=8, e=16, f=16, n=8, k=2),
    "moe_ds_b2_e6_k3": dict(seed=171, t=(2, 5), e=16, f=16, n=6, k=3),
    "moe_ds_v3_e8_k2_g4": dict(seed=172, t=8, e=16, f=16, n=8, k=2, groups=4, top_groups=2),
}


def export(name, c, out, seed):
    torch.manual_seed(seed)
    if name.startswith("moe_tw_"):
        model = TokenWeightsMoE(c["e"], c["f"], c["n"]).eval()
    elif name in TILED:
        model = Llama4MoE(c["e"], c["f"], c["n"], c["k"]).eval()
    elif name in SORTED:
        model = DeepSeekMoE(c["e"], c["f"], c["n"], c["k"], c.get("groups", 0), c.get("top_groups", 0)).eval()
    elif name in CAPACITY:
        kind = GShardMoE if name.startswith("moe_gs_") or c.get("top2") else SwitchMoE
        model = kind(c["e"], c["f"], c["n"], c["c"], c["expert"]).eval()
    elif "mode" in c:
        model = NonzeroMoE(c["e"], c["f"], c["n"], c["mode"]).eval()
    elif name in DYNAMIC:
        model = HFMoE(c["e"], c["f"], c["n"], c["k"], c["expert"], c["norm"], c.get("shared", False),
                      c.get("tokens_first", False)).eval()
    elif "dispatch" in c:
        model = SparseMoE(c["e"], c["f"], c["n"], c["k"], c["c"], c["expert"], c["dispatch"]).eval()
    else:
        model = DenseMoE(c["e"], c["f"], c["n"], c["k"], c["expert"], c["combine"], weights=c.get("weights", "topk"),
                         flat=c.get("flat", False)).eval()
    t = c["t"] if isinstance(c["t"], tuple) else (c["t"],)
    x = torch.randn(*t, c["e"])
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(model, (x,), os.path.join(out, name + ".onnx"), input_names=["x"], output_names=["y"],
                      opset_version=17, do_constant_folding=True)
    np.save(os.path.join(out, name + "_input.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(out, name + "_ref.npy"), y.numpy().astype(np.float32))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "moe"))
    ap.add_argument("-k", default="", help="only blocks whose name contains this")
    ap.add_argument("--dense", default="", metavar="T:E:F:N:K",
                    help="only one dense SwiGLU block of T tokens, embedding E, hidden F, N experts, top-K, "
                         "named moe_dense_T_E_F_N_K (bench/expert_bands.sh)")
    ap.add_argument("--cap", default="", metavar="T:E:F:N:K",
                    help="only one top-K block with a capacity of T K / N tokens per expert, gathered and "
                         "added back (index_add), named moe_cap_T_E_F_N_K (bench/expert_bands.sh)")
    ap.add_argument("--hf", default="", metavar="T:E:F:N:K",
                    help="only one Hugging Face (Mixtral) style block, tokens dispatched by torch.where, "
                         "named moe_hf_T_E_F_N_K (bench/expert_bands.sh)")
    ap.add_argument("--switch", default="", metavar="T:E:F:N:K",
                    help="only one capacity-einsum block, Switch's (K = 1) or GShard's (K = 2), with a capacity "
                         "of T K / N tokens per expert, named moe_switch_T_E_F_N_K (bench/expert_bands.sh)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.dense or a.hf or a.cap or a.switch:
        t, e, f, n, k = (int(v) for v in (a.dense or a.hf or a.cap or a.switch).split(":"))
        if a.switch:
            if k not in (1, 2):
                ap.error("--switch: K is 1 (Switch) or 2 (GShard)")
            name = "moe_switch_%d_%d_%d_%d_%d" % (t, e, f, n, k)
            CAPACITY[name] = dict(seed=203, t=t, e=e, f=f, n=n, c=max(1, t * k // n), expert="swiglu", top2=k == 2)
            export(name, CAPACITY[name], a.out, 203)
        elif a.cap:
            name = "moe_cap_%d_%d_%d_%d_%d" % (t, e, f, n, k)
            SPARSE[name] = dict(seed=202, t=t, e=e, f=f, n=n, k=k, c=max(1, t * k // n), expert="swiglu",
                                dispatch="cap")
            export(name, SPARSE[name], a.out, 202)
        elif a.dense:
            name = "moe_dense_%d_%d_%d_%d_%d" % (t, e, f, n, k)
            export(name, dict(seed=200, t=t, e=e, f=f, n=n, k=k, expert="swiglu", combine="slice"), a.out, 200)
        else:
            name = "moe_hf_%d_%d_%d_%d_%d" % (t, e, f, n, k)
            DYNAMIC[name] = dict(seed=201, t=t, e=e, f=f, n=n, k=k, expert="swiglu", norm=True)
            export(name, DYNAMIC[name], a.out, 201)
        print(name)
        return
    for name, c in sorted(list(BLOCKS.items()) + list(SPARSE.items()) + list(DYNAMIC.items()) + list(CAPACITY.items())
                          + list(SORTED.items()) + list(TILED.items())):
        if a.k in name:
            export(name, c, a.out, c["seed"])
            print(name)


if __name__ == "__main__":
    main()
