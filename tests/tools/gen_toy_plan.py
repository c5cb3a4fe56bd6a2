"""A toy generation plan pair written by hand, for waferrun --generate's host loop (tests only).

  gen_toy_plan.py write DIR [--policy shift|concat] [--max N] [--decode-plan PATH] [--no-generate]
  gen_toy_plan.py reference N [--policy shift|concat]      prints "tokens: ..." and "occupancy: ..."
  gen_toy_plan.py prompt FILE.npy                           writes the prompt, int64 [1, 3]
  gen_toy_plan.py tokens FILE.npy                           prints an int64 .npy's values
  gen_toy_plan.py check-dump DIR N [--policy P]            checks waferrun --dump-caches DIR
  gen_toy_plan.py batch < LINES                             runs one of the commands above per
                                                            line (one python3 start-up); a line
                                                            ">FILE cmd ..." writes cmd's output
                                                            to FILE; exits 1 after the last line
                                                            if any failed, naming each

It follows the contract of docs/plan-format.md ("Generation") on a 2x2 region: a prompt of
L = 3 tokens, K cache f32 [1, L, 2] split (-, y, x), so every row of PEs holds Lb = 2 prompt
slots, and a decode cache of 2 rows x 4 slots. Column x of the cache holds (x + 1) * token.
  prefill: k = ids (times 2 on column 1); next_ids = 2 * ids.
  decode:  the growing row R appends the fed token at slot C - 1 (a guard on R, an offset in C);
           every PE sums its row's C slots; next_ids = that sum + position, read from the last
           PE (x 1, y 1: replicated outputs are gathered from the last replica).
So each token depends on which row grew at every step and on how many slots each row holds:
a wrong R, a wrong C, a cache that is not carried from step to step or a wrong switch all
change the tokens. The reference below recomputes them from the contract's host loop.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plan_seal import write_sealed  # noqa: E402

ROWS, COLS, CAP, L, LB = 2, 2, 4, 3, 2
PROMPT = [5, 7, 9]

TARGET = {
    "name": "unit", "fabric": [COLS, ROWS], "sram_bytes": 49152, "sram_banks": 8, "clock_hz": 1e9,
    "fmac_per_cycle": 1, "fp16_simd": 4, "wavelet_bits": 32, "hop_cycles": 1, "ramp_cycles": 2,
    "colors": 24, "reserved_colors": [21, 22, 23], "switch_positions": 4, "route_code_bits": 5,
    "queue_depth": 4, "exp_cycles": 8, "div_cycles": 8,
}

PREFILL = """.format 1
.class main
.sym $ids 0 16
.sym $next 16 16
.sym $k 32 16
.code
op 0
copy $k $ids 2
[x==1] add $k $k $ids 1 2 ij
add $next $ids $ids 1 2 ij
"""

DECODE = """.format 1
.class main
.sym $tok 0 16
.sym $pos 16 16
.sym $next 32 16
.sym $t 48 16
.sym $k 64 16
.code
op 0
[y==R] copy $k+C-1 $tok 1
[y==R, x==1] add $k+C-1 $k+C-1 $tok 1 1 ij
rsum $t $k 1 C
add $next $t $pos 1 1 ij
"""


def tensor(name, sym, dtype, shape, split):
    return {"name": name, "symbol": sym, "dtype": dtype, "shape": shape, "split": split, "region": "mesh"}


def manifest(inputs, outputs, extra=None):
    m = {
        "format_version": 1, "target": TARGET, "mesh": [COLS, ROWS], "colors": [{"color": 0}],
        "regions": [{"name": "mesh", "rect": [0, 0, COLS, ROWS],
                     "classes": [{"name": "main", "rect": [0, 0, COLS, ROWS], "program": "programs/main.wpe"}]}],
        "weights": {"file": "weights.bin", "bytes": 0, "tensors": []},
        "inputs": inputs, "outputs": outputs, "ops": [{"op": "test", "predicted_cycles": 0}],
    }
    if extra:
        m.update(extra)
    return m


def write_plan(d, program, m):
    os.makedirs(os.path.join(d, "programs"), exist_ok=True)
    with open(os.path.join(d, "programs", "main.wpe"), "w") as f:
        f.write(program)
    write_sealed(d, m)


def write(d, policy, max_new, decode_plan, with_generate):
    gen = {
        "decode_plan": decode_plan, "prompt_input": "input_ids", "prompt_length": L, "max_new_tokens": max_new,
        "kv_cache": policy, "prefill_next": "next_ids", "decode_ids": "input_ids", "decode_position": "position",
        "decode_next": "next_ids", "rows": ROWS, "slots_per_row": CAP,
        "caches": [{"prefill": "k_cache_0", "decode": "k_cache_0"}],
    }
    write_plan(d, PREFILL, manifest(
        [tensor("input_ids", "$ids", "i64", [1, L], ["-", "y"])],
        [tensor("next_ids", "$next", "i64", [1, L], ["-", "y"]),
         tensor("k_cache_0", "$k", "f32", [1, L, COLS], ["-", "y", "x"])],
        {"generate": gen} if with_generate else None))
    cache = tensor("k_cache_0", "$k", "f32", [1, ROWS * CAP, COLS], ["-", "y", "x"])
    write_plan(os.path.join(d, "decode"), DECODE, manifest(
        [tensor("input_ids", "$tok", "i64", [1, 1], ["-", "-"]),
         tensor("position", "$pos", "i64", [1, 1], ["-", "-"]), cache],
        [tensor("next_ids", "$next", "i64", [1, 1], ["-", "-"]), cache]))


def reference(n, policy):
    """The contract's host loop on the toy model: tokens and the rows' counts."""
    cnt = [max(0, min(L - y * LB, LB)) for y in range(ROWS)]
    rows = [PROMPT[y * LB:y * LB + cnt[y]] for y in range(ROWS)]
    tokens = [2 * PROMPT[L - 1]]
    for s in range(1, n):
        if policy == "concat":
            r = ROWS - 1
        else:
            r = max(y for y in range(ROWS) if cnt[y] == min(cnt))
        if cnt[r] == CAP:
            raise SystemExit("step %d: row %d is full" % (s, r))
        cnt[r] += 1
        rows[r].append(tokens[s - 1])
        tokens.append(2 * sum(rows[ROWS - 1]) + (L + s - 1))
    return tokens, cnt


def reference_caches(n, policy):
    """The decode cache after the switch and after each step: per phase, the rows' counts and
    the f32 [1, ROWS * CAP, COLS] cache flattened (column x holds (x + 1) * token)."""
    cnt = [max(0, min(L - y * LB, LB)) for y in range(ROWS)]
    rows = [PROMPT[y * LB:y * LB + cnt[y]] for y in range(ROWS)]
    tokens, _ = reference(n, policy)

    def flat():
        out = []
        for y in range(ROWS):
            for j in range(CAP):
                out += [float((x + 1) * rows[y][j]) if j < len(rows[y]) else 0.0 for x in range(COLS)]
        return list(cnt), out

    phases = {"switch": flat()}
    for s in range(1, n):
        r = ROWS - 1 if policy == "concat" else max(y for y in range(ROWS) if cnt[y] == min(cnt))
        cnt[r] += 1
        rows[r].append(tokens[s - 1])
        phases["step_%d" % s] = flat()
    return phases


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    hlen = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + hlen].decode()
    body = data[10 + hlen:]
    kind = "q" if "'<i8'" in header else "f"
    return header, list(struct.unpack("<%d%s" % (len(body) // (8 if kind == "q" else 4), kind), body))


def check_dump(d, n, policy):
    """--dump-caches DIR against the reference: every phase, its counts and its cache."""
    for phase, (cnt, cache) in reference_caches(n, policy).items():
        _, got_cnt = read_npy(os.path.join(d, phase, "row_counts.npy"))
        header, got = read_npy(os.path.join(d, phase, "k_cache_0.npy"))
        if got_cnt != cnt:
            raise SystemExit("%s: row counts %s, want %s" % (phase, got_cnt, cnt))
        if "(1, %d, %d)" % (ROWS * CAP, COLS) not in header or got != cache:
            raise SystemExit("%s: cache %s %s, want %s" % (phase, header.strip(), got, cache))
    extra = sorted(set(os.listdir(d)) - set(reference_caches(n, policy)))
    if extra:
        raise SystemExit("unexpected phases %s" % extra)


def write_npy_i64(path, shape, vals):
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%s), }" % ", ".join(str(d) for d in shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%dq" % len(vals), *vals))


def read_npy_i64(path):
    with open(path, "rb") as f:
        data = f.read()
    hlen = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + hlen].decode()
    assert "'<i8'" in header, header
    body = data[10 + hlen:]
    return header, list(struct.unpack("<%dq" % (len(body) // 8), body))


def main(argv):
    opt = {"--policy": "shift", "--max": "6", "--decode-plan": "decode"}
    args, i = [], 0
    flags = set()
    while i < len(argv):
        if argv[i] in opt:
            opt[argv[i]] = argv[i + 1]
            i += 2
        elif argv[i].startswith("--"):
            flags.add(argv[i])
            i += 1
        else:
            args.append(argv[i])
            i += 1
    cmd = args[0]
    if cmd == "write":
        write(args[1], opt["--policy"], int(opt["--max"]), opt["--decode-plan"], "--no-generate" not in flags)
    elif cmd == "reference":
        tokens, cnt = reference(int(args[1]), opt["--policy"])
        print("tokens: " + " ".join(str(t) for t in tokens))
        print("occupancy: " + " ".join(str(c) for c in cnt))
    elif cmd == "prompt":
        write_npy_i64(args[1], [1, L], PROMPT)
    elif cmd == "check-dump":
        check_dump(args[1], int(args[2]), opt["--policy"])
    elif cmd == "tokens":
        header, vals = read_npy_i64(args[1])
        print(header.strip())
        print(" ".join(str(v) for v in vals))


def batch(lines):
    import contextlib
    import shlex
    bad = 0
    for line in lines:
        words = shlex.split(line)
        if not words:
            continue
        out = None
        if words[0].startswith(">"):
            out, words = words[0][1:], words[1:]
        try:
            if out is None:
                main(words)
            else:
                with open(out, "w") as f, contextlib.redirect_stdout(f):
                    main(words)
        except SystemExit as e:
            if e.code not in (None, 0):
                print("FAIL: %s: %s" % (line.strip(), e.code), file=sys.stderr)
                bad += 1
        except Exception as e:
            print("FAIL: %s: %r" % (line.strip(), e), file=sys.stderr)
            bad += 1
        sys.stdout.flush()
    return bad


if __name__ == "__main__":
    if sys.argv[1:2] == ["batch"]:
        sys.exit(1 if batch(sys.stdin) else 0)
    main(sys.argv[1:])
