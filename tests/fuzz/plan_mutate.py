#!/usr/bin/env python3
"""plan_mutate.py PLAN_DIR WAFERRUN [N] [SEED] [-- waferrun args...]: a sweep of mutated copies of
a plan directory through waferrun (issue 22: a plan directory is untrusted input). Each case
copies PLAN_DIR, applies one to three random mutations to its files (flip, set or insert
bytes, truncate, delete or duplicate a line, delete, empty or swap a file, a huge or negative
number where a number was), and runs `WAFERRUN COPY ARGS --allow-modified-plan` (so that the
digests do not stop every case at the door) and, for one case in four, without the flag.
Every run must end with exit 0, 1, 4, 5, 6 or 7 within the time limit and print no sanitizer
report, and a run without the flag on a copy whose bytes changed (outside ir/, the IR dump no
digest covers) must not exit 0: anything else (a signal, a sanitizer's "ERROR:" or "runtime error:", a hang) is a
finding, kept in FINDINGS_DIR (default /tmp/plan_mutate_findings) with its stderr. Run it with
a sanitizer build's waferrun (tools/sanitize.sh builds one in build-asan/). Prints the exit
codes seen and the findings. Not a ctest (minutes); tests/fuzz/README.md records the runs."""
import os, random, re, shutil, subprocess, sys, tempfile

args = sys.argv[1:]
extra = []
if "--" in args:
    i = args.index("--")
    args, extra = args[:i], args[i + 1:]
plan, waferrun = args[0], args[1]
n = int(args[2]) if len(args) > 2 else 200
rng = random.Random(int(args[3]) if len(args) > 3 else 1)
findings = os.environ.get("FINDINGS_DIR", "/tmp/plan_mutate_findings")
timeout = float(os.environ.get("CASE_TIMEOUT", "30"))
ok_codes = {0, 1, 4, 5, 6, 7}

def files(d):
    out = []
    for root, _, fs in os.walk(d):
        out += [os.path.join(root, f) for f in fs]
    return sorted(out)

NUMS = [b"0", b"-1", b"-9223372036854775808", b"9223372036854775807", b"18446744073709551616",
        b"1e308", b"4611686018427387904", b"2147483648", b"65536", b"1"]

def mutate(d):
    fs = files(d)
    f = rng.choice(fs)
    data = bytearray(open(f, "rb").read())
    kind = rng.choice(["flip", "set", "insert", "truncate", "dupline", "delline", "number",
                       "number", "number", "delete", "empty", "swap"])
    if kind == "delete":
        os.remove(f)
        return "delete " + os.path.relpath(f, d)
    if kind == "swap" and len(fs) > 1:
        g = rng.choice([x for x in fs if x != f])
        a, b = open(f, "rb").read(), open(g, "rb").read()
        open(f, "wb").write(b)
        open(g, "wb").write(a)
        return "swap %s %s" % (os.path.relpath(f, d), os.path.relpath(g, d))
    if kind == "empty" or not data:
        data = bytearray()
    elif kind == "flip":
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == "set":
        p = rng.randrange(len(data))
        data[p:p + 4] = bytes(rng.choice([0x00, 0xff, 0x7f, 0x80]) for _ in range(4))
    elif kind == "insert":
        p = rng.randrange(len(data) + 1)
        data[p:p] = rng.choice([b"\x00" * 8, b"{", b"]", b",", b"\"", b"\n", b"9" * 30])
    elif kind == "truncate":
        data = data[:rng.randrange(len(data))]
    elif kind in ("dupline", "delline"):
        lines = data.split(b"\n")
        i = rng.randrange(len(lines))
        if kind == "dupline":
            lines.insert(i, lines[i])
        else:
            del lines[i]
        data = bytearray(b"\n".join(lines))
    elif kind == "number":
        ms = list(re.finditer(rb"-?\d+", bytes(data)))
        if ms:
            m = rng.choice(ms)
            data[m.start():m.end()] = rng.choice(NUMS)
    open(f, "wb").write(bytes(data))
    return "%s %s" % (kind, os.path.relpath(f, d))

def snapshot(d):
    """The files waferrun reads: ir/ holds the compiler's IR dump for people (docs/plan-format.md),
    which no digest covers."""
    return {os.path.relpath(f, d): open(f, "rb").read() for f in files(d)
            if not os.path.relpath(f, d).split(os.sep)[-2:-1] == ["ir"]}

original = snapshot(plan)
codes, found = {}, []
os.makedirs(findings, exist_ok=True)
tmp = tempfile.mkdtemp(prefix="plan_mutate_")
try:
    for case in range(n):
        d = os.path.join(tmp, "p")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(plan, d)
        what = [mutate(d) for _ in range(rng.randint(1, 3))]
        flag = [] if case % 4 == 3 else ["--allow-modified-plan"]
        cmd = [waferrun, d, *extra, *flag, "--output-dir", os.path.join(tmp, "out"), "-q"]
        try:
            r = subprocess.run(cmd, capture_output=True, timeout=timeout)
            rc, err = r.returncode, r.stderr.decode("latin1")
        except subprocess.TimeoutExpired:
            rc, err = "timeout", ""
        codes[rc] = codes.get(rc, 0) + 1
        bad = rc not in ok_codes or "ERROR: AddressSanitizer" in err or "runtime error:" in err or \
            "LeakSanitizer" in err or "internal error" in err
        # without the flag, a plan whose bytes changed must be refused (its digests)
        bad = bad or (not flag and rc == 0 and snapshot(d) != original)
        if bad:
            keep = os.path.join(findings, "case%d" % case)
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(d, keep)
            open(keep + ".txt", "w").write("exit %s\n%s\n%s\n%s" % (rc, " ".join(cmd), "\n".join(what), err))
            found.append((case, rc, what))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("plan_mutate: %d cases of %s: exit codes %s" % (n, plan, dict(sorted(codes.items(), key=str))))
for case, rc, what in found:
    print("FINDING case %d: exit %s after %s (kept in %s/case%d)" % (case, rc, "; ".join(what), findings, case))
sys.exit(1 if found else 0)
