#!/usr/bin/env python3
"""plan_sweep.py MESH [BIN_DIR]: every in-scope ONNX node test (libonnx-testdata) compiled
to a plan for MESH (target test8x8), run on waferrun and compared with every output_N.pb
(in the manifest's output order). Prints one line per test (PASS, WRONG, RUN-FAIL, or
COMPILE with waferc's first error) and the in-scope totals; CONFORMANCE.md's "As plans on a
mesh" numbers come from it. In scope = tests/onnx/scope.txt's rule (longest matching
prefix; a line whose op starts with '-' is out of scope). Inputs that ONNX uses as shapes
(Reshape's shape, Slice's starts, TopK's K, ...) are frozen into initializers first, as
wafer-onnx-test does (`wafer-onnx-test --freeze`): exporters write them so, and a plan has
static shapes. Not a ctest (minutes per mesh); tests/scripts/onnx_node_plans.sh re-runs the
passing list. No numpy needed."""
import json, os, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.dirname(os.path.dirname(here))
mesh = sys.argv[1] if len(sys.argv) > 1 else "2x2"
bindir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(src, "build", "bin")
node = os.environ.get("WAFERC_ONNX_NODE_DIR", "/usr/share/libonnx-testdata/data/node")
env = dict(os.environ, WAFERC_TARGET_PATH=os.path.join(src, "targets"))

rules = []
for line in open(os.path.join(src, "tests", "onnx", "scope.txt")):
    f = line.split()
    if len(f) >= 2 and not line.startswith("#"):
        rules += [(p, not f[0].startswith("-")) for p in f[1:]]

def in_scope(t):
    best = max((p for p, _ in rules if t.startswith(p)), key=len, default=None)
    return best is not None and dict(rules)[best]

def tool(name, *args):
    return subprocess.run([os.path.join(bindir, name), *args], env=env, capture_output=True,
                          text=True, timeout=300)

counts = {}
for t in sorted(os.listdir(node)):
    if not t.startswith("test_") or not in_scope(t):
        continue
    d = os.path.join(node, t)
    with tempfile.TemporaryDirectory() as w:
        plan, model = os.path.join(w, "plan"), os.path.join(w, "model.onnx")
        fr = tool("wafer-onnx-test", "--freeze", model, d)
        index = {}  # graph input name -> its input_N.pb
        for line in fr.stdout.splitlines():
            kind, i, name = line.split(" ", 2)
            index[name] = int(i)
        if fr.returncode:
            model = os.path.join(d, "model.onnx")
        r = tool("waferc", model, "-o", plan, "--target=test8x8", "--mesh=" + mesh)
        if r.returncode:
            err = next((l for l in r.stderr.splitlines() if "error" in l), r.stderr.strip()[:200])
            status, why = "COMPILE", err.split("error: ", 1)[-1]
        else:
            m = json.load(open(os.path.join(plan, "manifest.json")))
            args = []
            for i, inp in enumerate(m["inputs"]):
                p = os.path.join(w, inp["name"] + ".npy")
                i = index.get(inp["name"], i)
                tool("wafer-pb2npy", os.path.join(d, "test_data_set_0", "input_%d.pb" % i), p)
                args += ["--input", "%s=%s" % (inp["name"], p)]
            r = tool("waferrun", plan, "-q", *args, "--output-dir", os.path.join(w, "out"))
            if r.returncode:
                status, why = "RUN-FAIL", r.stderr.strip()[:200]
            else:
                status, why = "PASS", ""
                for i, o in enumerate(m["outputs"]):
                    want = os.path.join(w, "want%d.npy" % i)
                    tool("wafer-pb2npy", os.path.join(d, "test_data_set_0", "output_%d.pb" % i), want)
                    c = tool("wafer-npycmp", os.path.join(w, "out", o["name"] + ".npy"), want,
                             "--atol", "1e-5", "--rtol", "1e-4")
                    if c.returncode:
                        status, why = "WRONG", "output %s: %s" % (o["name"], c.stdout.strip()[:120])
    counts[status] = counts.get(status, 0) + 1
    print("%s %s%s" % (status, t, ": " + why if why else ""), flush=True)
print("in scope on %s: %s" % (mesh, ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items()))))
