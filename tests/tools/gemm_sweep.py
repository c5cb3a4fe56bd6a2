#!/usr/bin/env python3
"""gemm_sweep.py [MESHES] [BIN_DIR]: every ONNX MatMul/Gemm node test (test_matmul_*,
test_gemm*, libonnx-testdata) compiled to a plan with every --gemm-algo on each mesh of
MESHES (comma-separated, default 2x3,3x2,4x4,5x2,1x3,3x5; target test8x8), run on waferrun
and compared with output_0.pb (atol 1e-5, rtol 1e-4). Prints one line per failing
combination (COMPILE with waferc's error, RUNFAIL, WRONG) and "ok N of M". Not a ctest
(about two minutes); tests/scripts/gemm_padded_k.sh and transpose_rect.sh run the cases it
found missing. TESTS=prefix,prefix narrows the tests. No numpy needed."""
import json, os, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.dirname(os.path.dirname(here))
meshes = (sys.argv[1] if len(sys.argv) > 1 else "2x3,3x2,4x4,5x2,1x3,3x5").split(",")
bindir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(src, "build", "bin")
node = os.environ.get("WAFERC_ONNX_NODE_DIR", "/usr/share/libonnx-testdata/data/node")
env = dict(os.environ, WAFERC_TARGET_PATH=os.path.join(src, "targets"))
prefixes = tuple(os.environ.get("TESTS", "test_matmul_,test_gemm").split(","))
algos = ["meshgemm", "cannon", "summa", "allgather", "auto"]

def tool(name, *args):
    return subprocess.run([os.path.join(bindir, name), *args], env=env, capture_output=True,
                          text=True, timeout=300)

ok = total = 0
for t in sorted(x for x in os.listdir(node) if x.startswith(prefixes)):
    d = os.path.join(node, t)
    for mesh in meshes:
        for algo in algos:
            total += 1
            with tempfile.TemporaryDirectory() as w:
                plan = os.path.join(w, "plan")
                r = tool("waferc", os.path.join(d, "model.onnx"), "-o", plan, "--target=test8x8",
                         "--mesh=" + mesh, "--gemm-algo=" + algo)
                if r.returncode:
                    err = next((l for l in r.stderr.splitlines() if "error" in l), r.stderr[:200])
                    print("COMPILE", t, mesh, algo, err.split("error: ", 1)[-1][:160])
                    continue
                m = json.load(open(os.path.join(plan, "manifest.json")))
                args = []
                for i, inp in enumerate(m["inputs"]):
                    p = os.path.join(w, inp["name"] + ".npy")
                    tool("wafer-pb2npy", os.path.join(d, "test_data_set_0", "input_%d.pb" % i), p)
                    args += ["--input", "%s=%s" % (inp["name"], p)]
                r = tool("waferrun", plan, "-q", *args, "--output-dir", os.path.join(w, "out"))
                if r.returncode:
                    print("RUNFAIL", t, mesh, algo, r.stderr.strip()[:160])
                    continue
                want = os.path.join(w, "want.npy")
                tool("wafer-pb2npy", os.path.join(d, "test_data_set_0", "output_0.pb"), want)
                got = os.path.join(w, "out", m["outputs"][0]["name"] + ".npy")
                if tool("wafer-npycmp", got, want, "--atol", "1e-5", "--rtol", "1e-4").returncode:
                    print("WRONG", t, mesh, algo)
                    continue
                ok += 1
print("ok %d of %d" % (ok, total))
