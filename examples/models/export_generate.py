#!/usr/bin/python3
"""Exports the tiny generation models of examples/models/generate/ (issue 17): token ids to
logits with a dynamic sequence axis, random weights (seed 0), a prompt and torch's own greedy
tokens.

    /usr/bin/python3 examples/models/export_generate.py                    # rewrites the files
    /usr/bin/python3 examples/models/export_generate.py --out /tmp/g --waferc build/bin   # and checks
    /usr/bin/python3 examples/models/export_generate.py --out /tmp/g --waferc build/bin --extra   # 11 more

The models are variants.py's TinyLlama and TinyGPT2 (same classes and knobs). Greedy decoding
here recomputes the whole sequence at every step (no KV cache): the next token is the argmax
(first index on ties) of the last row of the logits, appended to the sequence. That is what
`waferc M.onnx --interpret --input input_ids=M_prompt.npy --generate=N` does too, so the two
are independent of any cache.

--extra adds models that are not committed (EXTRA: other depths, vocabularies, widths, head
layouts and export forms), to try waferc on models the tests have not seen; there a prompt
whose tokens repeat is accepted when no other has clear margins (the tied LLaMA repeats its
last token whatever the prompt).

A prompt is drawn (seeded) until every step's top logit beats the second by at least MARGIN and
the 8 tokens hold at least 4 distinct ids: a near-tie would make the reference depend on summation order
(waferc's interpreter and the wafer add in other orders than torch), and a constant run would not
catch a wrong position or cache. With --waferc, each model is also run through waferc's
interpreter at two other sequence lengths (the axis is dynamic) and with --generate.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from variants import build, variant  # noqa: E402

NEW_TOKENS = 8
MARGIN = 0.05  # logit units: far above f32 summation-order differences (~1e-5 here)

# name -> (variants.py base, knobs, prompt length, token-embedding scale). With the head tied to
# a N(0, 1) embedding, the last token's own embedding dominates its logits and greedy decoding
# repeats it; a smaller embedding lets the blocks (and the positions) decide.
MODELS = {
    "llama_mha_halfrope": ("tiny", dict(embed=32, heads=4, kv_heads=4, rope="half", vocab=96), 6, 1.0),
    "llama_gqa_interleaved": ("tiny", dict(embed=48, heads=6, kv_heads=2, rope="interleaved", vocab=128), 7, 1.0),
    "llama_mqa_halfrope": ("tiny", dict(embed=40, heads=5, kv_heads=1, rope="half", vocab=80, mask="hf"), 9, 1.0),
    "gpt2_tied": ("gpt2m", dict(embed=32, heads=4, vocab=96, tied=True), 8, 0.3),
    "gpt2_untied": ("gpt2m", dict(embed=48, heads=6, vocab=64, tied=False), 5, 1.0),
}
MIN_DISTINCT = 4  # distinct tokens among the 8

# --extra: more shapes and export forms, not committed (for local checks of waferc --generate on
# models the tests have not seen): other depths, vocabularies, widths and head layouts, the GQA
# repeat torch 1.13 writes as a Loop, Hugging Face's RMSNorm and f32 RoPE, cached RoPE tables, a
# tied LLaMA, Conv1D GPT-2 with the new GELU, a computed triu mask, other opsets.
EXTRA = {
    "x_llama_l1_e24h3kv1_v50": ("tiny", dict(embed=24, heads=3, kv_heads=1, vocab=50, layers=1), 5, 1.0),
    "x_llama_l3_e56h7kv7_v200_il": ("tiny", dict(embed=56, heads=7, kv_heads=7, vocab=200, layers=3,
                                                rope="interleaved"), 6, 1.0),
    "x_llama_gqa_loop_e32h4kv2": ("tiny", dict(embed=32, heads=4, kv_heads=2, vocab=101, gqa="repeat_interleave"), 7,
                                  1.0),
    "x_llama_hf_e48h6kv3_o14": ("tiny", dict(embed=48, heads=6, kv_heads=3, vocab=77, rms="hf_cast", rope_fp32=True,
                                             mask="hf", opset=14), 8, 1.0),
    "x_llama_cached_rope_e32h2kv1": ("tiny", dict(embed=32, heads=2, kv_heads=1, vocab=64, rope="cached"), 5, 1.0),
    "x_llama_tied_e32h4kv2_tril": ("tiny", dict(embed=32, heads=4, kv_heads=2, vocab=90, tied=True, mask="tril"), 6,
                                   1.0),
    "x_gpt2_conv1d_newgelu_e40h5_v70": ("gpt2m", dict(embed=40, heads=5, vocab=70, conv1d=True, gelu="new"), 9, 0.3),
    "x_gpt2_l1_e24h2_v120_triu_o15": ("gpt2m", dict(embed=24, heads=2, vocab=120, layers=1, mask="triu", opset=15,
                                                    tied=False), 6, 1.0),
    "x_gpt2_l3_e64h8_v57_buffer_o13": ("gpt2m", dict(embed=64, heads=8, vocab=57, layers=3, mask="buffer", opset=13,
                                                     tied=True), 7, 0.3),
    "x_llama_meta_pairidx_e48h6kv2_v80": ("tiny", dict(embed=48, heads=6, kv_heads=2, vocab=80, layout="bshd",
                                                        rope="pairwise_index"), 6, 1.0),
    "x_gpt2_timm_e40h5_v61": ("gpt2m", dict(embed=40, heads=5, vocab=61, qkv="timm", scale="q"), 7, 0.3),
}


def spec(name):
    return MODELS[name] if name in MODELS else EXTRA[name]


def config(name):
    base, knobs = spec(name)[:2]
    return variant(base, **dict(dict(axes="seq", layers=2, opset=17), **knobs))


def greedy(m, prompt, n):
    """(tokens [1, n], smallest top-1 minus top-2 logit over the steps)."""
    ids = prompt.clone()
    out, margin = [], float("inf")
    with torch.no_grad():
        for _ in range(n):
            last = m(ids)[0, -1]
            top2 = torch.topk(last, 2).values
            margin = min(margin, float(top2[0] - top2[1]))
            nxt = int(torch.argmax(last))
            out.append(nxt)
            ids = torch.cat([ids, torch.tensor([[nxt]], dtype=torch.int64)], dim=1)
    return torch.tensor([out], dtype=torch.int64), margin


def pick_prompt(m, c, length, need_distinct):
    clear = None  # the first prompt with clear margins, if none gives distinct tokens
    for seed in range(200):
        gen = torch.Generator().manual_seed(seed)
        prompt = torch.randint(0, c["vocab"], (1, length), dtype=torch.int64, generator=gen)
        tokens, margin = greedy(m, prompt, NEW_TOKENS)
        if margin < MARGIN:
            continue
        if len(set(tokens[0].tolist())) >= MIN_DISTINCT:
            return prompt, tokens, margin, seed
        clear = clear or (prompt, tokens, margin, seed)
    if clear and not need_distinct:
        return clear
    raise SystemExit("no prompt with margin %g%s for %s" % (MARGIN, " and distinct tokens" if clear else "",
                                                             c["name"]))


def export(name, out):
    c = config(name)
    m = build(c)
    with torch.no_grad():
        emb = m.embed_tokens if c["family"] == "tiny" else m.wte
        emb.weight.mul_(spec(name)[3])
    prompt_len = spec(name)[2]
    path = os.path.join(out, name + ".onnx")
    x = torch.zeros(1, prompt_len, dtype=torch.int64)
    torch.onnx.export(m, (x,), path, input_names=["input_ids"], output_names=["logits"],
                      dynamic_axes={"input_ids": {1: "seq"}, "logits": {1: "seq"}}, opset_version=c["opset"],
                      do_constant_folding=True)
    prompt, tokens, margin, seed = pick_prompt(m, c, prompt_len, name in MODELS)
    np.save(os.path.join(out, name + "_prompt.npy"), prompt.numpy())
    np.save(os.path.join(out, name + "_tokens.npy"), tokens.numpy())
    print("%s: %s, %d bytes, prompt %s (seed %d), tokens %s, smallest margin %.3f" % (
        name, c["name"], os.path.getsize(path), prompt[0].tolist(), seed, tokens[0].tolist(), margin))
    return m, c


def check_waferc(tools, name, out, m, c):
    """waferc's interpreter at two more lengths (the axis really is dynamic) and --generate."""
    fails = []
    model = os.path.join(out, name + ".onnx")
    with tempfile.TemporaryDirectory() as d:
        for s in (5, 13):
            ids = torch.randint(0, c["vocab"], (1, s), dtype=torch.int64, generator=torch.Generator().manual_seed(s))
            with torch.no_grad():
                ref = m(ids).numpy()
            np.save(os.path.join(d, "in.npy"), ids.numpy())
            np.save(os.path.join(d, "ref.npy"), ref)
            r = subprocess.run([os.path.join(tools, "waferc"), model, "-q", "--interpret", "--input-shape",
                                "input_ids=1x%d" % s, "--input", "input_ids=" + os.path.join(d, "in.npy"),
                                "--output-dir", os.path.join(d, "o")], capture_output=True, text=True)
            if r.returncode == 0:
                r = subprocess.run([os.path.join(tools, "wafer-npycmp"), os.path.join(d, "o", "logits.npy"),
                                    os.path.join(d, "ref.npy"), "--atol", "1e-4", "--rtol", "0"],
                                   capture_output=True, text=True)
            if r.returncode != 0:
                fails.append("%s at seq %d: %s" % (name, s, (r.stdout + r.stderr).strip()))
        r = subprocess.run([os.path.join(tools, "waferc"), model, "-q", "--interpret", "--input",
                            "input_ids=" + os.path.join(out, name + "_prompt.npy"), "--generate=%d" % NEW_TOKENS,
                            "--output-dir", os.path.join(d, "g")], capture_output=True, text=True)
        if r.returncode != 0:
            fails.append("%s --generate: %s" % (name, r.stderr.strip()))
        else:
            got = np.load(os.path.join(d, "g", "tokens.npy"))
            want = np.load(os.path.join(out, name + "_tokens.npy"))
            if got.dtype != np.int64 or got.shape != want.shape or (got != want).any():
                fails.append("%s --generate: %s %s %s, torch %s" % (name, got.dtype, got.shape, got.tolist(),
                                                                   want.tolist()))
    return fails


def check_plans(tools, name, out, meshes, policies, table):
    """waferc --generate and waferrun --generate on each mesh and cache policy: the mesh's tokens
    against torch's. table[(mesh, policy)] counts [equal, compiled, tried]; an exit 4 (the model
    and its cache do not fit the mesh) counts as tried, not compiled."""
    fails = []
    model = os.path.join(out, name + ".onnx")
    prompt = os.path.join(out, name + "_prompt.npy")
    want = np.load(os.path.join(out, name + "_tokens.npy"))
    length = np.load(prompt).shape[1]
    for mesh in meshes:
        for pol in policies:
            cell = table.setdefault((mesh, pol), [0, 0, 0])
            cell[2] += 1
            with tempfile.TemporaryDirectory() as d:
                pre, _, dec = mesh.partition("/")  # PxH/DxH: decode on the prefill region's corner
                r = subprocess.run([os.path.join(tools, "waferc"), model, "-q", "-o", os.path.join(d, "p"),
                                    "--target=wse2", "--mesh=" + pre, "--input-shape", "input_ids=1x%d" % length,
                                    "--generate=%d" % NEW_TOKENS, "--kv-cache=" + pol] +
                                   (["--decode-mesh=" + dec] if dec else []), capture_output=True, text=True)
                if r.returncode == 4:
                    continue
                if r.returncode != 0:
                    fails.append("%s on %s (%s): waferc exited %d: %s" % (name, mesh, pol, r.returncode,
                                                                         r.stderr.strip()[-300:]))
                    continue
                cell[1] += 1
                r = subprocess.run([os.path.join(tools, "waferrun"), os.path.join(d, "p"), "-q", "--input",
                                    "input_ids=" + prompt, "--generate=%d" % NEW_TOKENS, "--output-dir",
                                    os.path.join(d, "o")], capture_output=True, text=True)
                if r.returncode != 0:
                    fails.append("%s on %s (%s): waferrun exited %d: %s" % (name, mesh, pol, r.returncode,
                                                                           r.stderr.strip()[-300:]))
                    continue
                got = np.load(os.path.join(d, "o", "tokens.npy"))
                if got.dtype != np.int64 or got.shape != want.shape or (got != want).any():
                    fails.append("%s on %s (%s): the mesh's tokens %s, torch's %s" % (name, mesh, pol, got.tolist(),
                                                                                    want.tolist()))
                    continue
                cell[0] += 1
    return fails


def main():
    warnings.filterwarnings("ignore")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "generate"), help="output directory")
    ap.add_argument("--waferc", default=None, help="directory holding waferc and wafer-npycmp: also check")
    ap.add_argument("-k", default=None, help="only models whose name contains this")
    ap.add_argument("--plans", default=None,
                    help="with --waferc: also compile each model with --generate for these meshes (comma-separated "
                         "WxH, or WxH/WxH for a prefill region and the decode region in its corner, the switch "
                         "between them) and both cache policies, run waferrun --generate and compare the tokens "
                         "with torch's")
    ap.add_argument("--extra", action="store_true",
                    help="also the EXTRA models (other sizes and export forms; give --out, they are not committed)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    fails = []
    table = {}
    if a.extra and os.path.abspath(a.out) == os.path.join(here, "generate"):
        ap.error("--extra writes models that are not committed: give --out DIR")
    for name in list(MODELS) + (list(EXTRA) if a.extra else []):
        if a.k and a.k not in name:
            continue
        m, c = export(name, a.out)
        if a.waferc:
            fails += check_waferc(a.waferc, name, a.out, m, c)
            if a.plans:
                fails += check_plans(a.waferc, name, a.out, a.plans.split(","), ("shift", "concat"), table)
    for f in fails:
        print("FAIL " + f)
    if table:  # the table CONFORMANCE.md "Generation on the mesh" holds
        meshes = a.plans.split(",")
        print("| cache | " + " | ".join(meshes) + " |")
        print("|---|" + "---:|" * len(meshes))
        for pol in ("shift", "concat"):
            print("| %s | " % pol + " | ".join("%d/%d (%d fit)" % (table[(ms, pol)][0], table[(ms, pol)][2],
                                                                  table[(ms, pol)][1]) for ms in meshes) + " |")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
