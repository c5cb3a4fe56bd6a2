#!/usr/bin/env bash
# A plan directory is untrusted input (issue 22): every corruption below once crashed waferrun
# or was accepted with exit 0. Each must now be refused with exit 1, naming the file and the
# field. The plans are edited by hand, so waferrun runs with --allow-modified-plan to reach
# the checks behind the digests (without it every one is refused as modified, checked once).
set -uo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # TMP, fail, n
E=$SRC/examples
X=$E/mlp_softmax_x.npy

waferc "$E/mlp_softmax.wir" -o "$TMP/good" --target=test4x4 -q || fail "compile failed"
waferrun "$TMP/good" -q --input x="$X" || fail "the good plan does not run"

# refused NAME PATTERN PYTHON: a copy of the good plan, PYTHON run with m = the manifest (saved
# after) and d = the plan directory; waferrun must exit 1 with PATTERN in its message.
refused() { refused_edit "$1" "$2" "$3" "$TMP/good" "" -- --input x="$X"; }

# Shapes: signed overflow multiplying them, a heap overflow from 2^62, an assertion on 10^19.
refused shape_1e19 "inputs\[0\].shape\[0\]/split\[0\]: expected an integer in \[1, 2^40\]" 'm["inputs"][0]["shape"][0] = 1e19'
refused out_2e62 "outputs\[0\].shape\[0\]/split\[0\]: expected an integer" 'm["outputs"][0]["shape"][0] = 2**62'
refused shape_product "inputs\[0\].shape: the tensor (padded to too many elements) exceeds the SRAM of the whole mesh" \
  'm["inputs"][0]["shape"] = [2**40, 2**40]'
refused weight_1e19 "weights.tensors\[0\].shape\[0\]/split\[0\]: expected an integer" \
  'm["weights"]["tensors"][0]["shape"][0] = 1e19; m["weights"]["tensors"][0]["bytes"] = 0'
refused weight_bytes "weights.tensors\[0\]: byte range .* does not match the shape" 'm["weights"]["tensors"][0]["bytes"] -= 4'
refused weight_offset "weights.tensors\[0\].offset: expected an integer in \[0, " 'm["weights"]["tensors"][0]["offset"] = 2**60'
refused weights_path "weights.file '../good/weights.bin' must be a relative path inside the plan" \
  'm["weights"]["file"] = "../good/weights.bin"'
refused mesh_huge "manifest.mesh\[0\]: expected an integer in \[1, 65536\]" 'm["mesh"][0] = 1e12'
refused sram_huge "target.sram_bytes: expected an integer in \[1, 1073741824\]" 'm["target"]["sram_bytes"] = 2**62'
# .sym sizes near INT64_MAX: signed overflow in wf_pe_class_add_sym, heap overflows after.
refused sym_bytes "main.wpe:[0-9]*:1: error: .sym expects NAME OFFSET BYTES" \
  'text("programs/main.wpe", lambda t: t.replace(".sym %x                  0      128", ".sym %x 0 9223372036854775000", 1))'
refused sym_offset "main.wpe:[0-9]*:1: error: .sym expects NAME OFFSET BYTES" \
  'text("programs/main.wpe", lambda t: t.replace(".sym %x                  0      128", ".sym %x 9223372036854775000 128", 1))'
# Found by fuzzing: a guard with nothing after it read an uninitialised mnemonic.
refused guard_alone "main.wpe:[0-9]*:1: error: a guard must be followed by an instruction or .route" \
  'text("programs/main.wpe", lambda t: t.replace(".code\n", ".code\n[x==0]\n", 1))'
# Cross-checks between the manifest and the programs.
refused no_class "regions\[0\] 'mesh': its classes cover 0 of its 4x4 PEs" 'm["regions"][0]["classes"] = []'
refused no_weight "weights.tensors: no weight for symbol '@w' of class 'main'" \
  'm["weights"]["tensors"] = [t for t in m["weights"]["tensors"] if t["symbol"] != "@w"]'
refused weight_overlap "weights.tensors\[1\] 'b' (bytes 0..64 of weights.bin) overlaps weights.tensors\[0\] 'w'" \
  'm["weights"]["tensors"][1]["offset"] = 0'
refused no_producer "class 'main': its program reads '%hb' (line [0-9]*) but nothing writes it" \
  'text("programs/main.wpe", lambda t: "".join(l for l in t.splitlines(True) if not l.startswith("add %hb")))'
# MoE routes (docs/plan-format.md, moe): an entry must name an integer output [.., k], once.
refused moe_float "moe\[0\]: 'y' is no integer output whose last dim is k = 2" \
  'm["moe"] = [{"output": m["outputs"][0]["name"], "experts": 4, "k": 2}]'
refused moe_none "moe\[0\]: 'nothing' is no integer output" 'm["moe"] = [{"output": "nothing", "experts": 4, "k": 2}]'
refused moe_experts "moe\[0\].experts: expected an integer in \[1, 2147483647\]" \
  'm["moe"] = [{"output": m["outputs"][0]["name"], "experts": 0, "k": 2}]'
refused moe_many "moe: expected an array of at most one entry per output" \
  'm["moe"] = [{"output": "y", "experts": 4, "k": 2}] * 5'
# Pre-skewed weights (docs/plan-format.md, weights[].skew): @w is MeshGEMM's B, written aligned.
# The scatter trusts its tiles to stay inside the block only after the loader held every
# number to what the blocks imply.
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["weights"]["tensors"][0]; assert t["skew"]["k_dim"] == 0, t' \
  "$TMP/good/manifest.json" || fail "premise: mlp_softmax's @w is pre-skewed"
refused skew_output "outputs\[0\].skew: only an f32 weight or input may be pre-skewed" \
  'm["outputs"][0]["skew"] = m["weights"]["tensors"][0]["skew"]'
# an input may be pre-skewed (a switch plan's argument for a pre-skewed prefill weight), with
# the numbers its own blocks imply
refused skew_input "inputs\[0\].skew: blocks of 4 (dim 0) and 8 (dim 1) cut in 1 and 1 tiles need k_tile 4" \
  'm["inputs"][0]["skew"] = m["weights"]["tensors"][0]["skew"]'
# a switch plan's weight moves (docs/plan-format.md, switch_weights): an f32 matrix input and
# output each, once
refused switch_weights_none "switch_weights\[0\]: 'nope' and 'y' must be an f32 matrix input and output" \
  'm["switch_weights"] = [{"prefill": "w", "input": "nope", "output": "y", "decode": "w"}]'
refused switch_weights_many "switch_weights: expected an array of at most one entry per input and output" \
  'm["switch_weights"] = [{"prefill": "w", "input": "x", "output": "y", "decode": "w"}] * 2'
refused skew_ring "weights.tensors\[0\].skew.ring: expected \"interleave\" or \"plain\"" \
  'm["weights"]["tensors"][0]["skew"]["ring"] = "spiral"'
refused skew_dims "weights.tensors\[0\].skew: k_dim 1 and other_dim 1 must be two dims" \
  'm["weights"]["tensors"][0]["skew"]["k_dim"] = 1'
refused skew_rank "weights.tensors\[0\].skew.other_dim: expected an integer in \[0, " \
  'm["weights"]["tensors"][0]["skew"]["other_dim"] = 2**40'
refused skew_tiles "weights.tensors\[0\].skew: dim 0 must be split over more than one PE" \
  'm["weights"]["tensors"][0]["skew"]["tiles"] = 6'
refused skew_k_tile "weights.tensors\[0\].skew: blocks of 8 (dim 0) .* need k_tile 8 and other_tile 4, got 16" \
  'm["weights"]["tensors"][0]["skew"]["k_tile"] = 16'
refused skew_other_tile "need k_tile 8 and other_tile 4, got 8 and 1" \
  'm["weights"]["tensors"][0]["skew"]["other_tile"] = 1'
refused skew_number "weights.tensors\[0\].skew: only an f32 weight or input may be pre-skewed, as an object" \
  'm["weights"]["tensors"][0]["skew"] = 3'
refused skew_version "weights.tensors\[0\].skew: a pre-skewed weight needs format_version 2 (the plan says 1)" \
  'm["format_version"] = 1'
refused memory_map "regions\[0\].classes\[0\].memory: expected an array of the [0-9]* symbols" \
  'c = m["regions"][0]["classes"][0]; c["memory"].append(c["memory"][0])'
refused memory_bytes "regions\[0\].classes\[0\].memory_bytes: expected [0-9]*" \
  'm["regions"][0]["classes"][0]["memory_bytes"] += 16'
refused dup_input "inputs\[1\].name: 'x' is also inputs\[0\]'s name" 'm["inputs"].append(dict(m["inputs"][0]))'
# A duplicated line: JSON with a key twice (json.dump cannot write one; edit the text after).
rm -rf "$TMP/dupkey"; cp -r "$TMP/good" "$TMP/dupkey"
sed -i '0,/"function":/s/"function":/"mesh": [4, 4], "function":/' "$TMP/dupkey/manifest.json"
waferrun "$TMP/dupkey" --allow-modified-plan --input x="$X" -q 2>"$TMP/dupkey.err"; rc=$?
[ "$rc" -eq 1 ] && grep -q "manifest: key 'mesh' is given twice" "$TMP/dupkey.err" ||
  { cat "$TMP/dupkey.err" >&2; fail "dupkey: exit $rc"; }
n=$((n + 1))

# Kernels: a corrupted file once crashed the JIT, and a changed instruction ran with exit 0 and
# a wrong answer. The runtime compiles only the kernels it regenerates from the programs
# (ir/pe/kernel_gen.c): an edited file is refused even when resealed with matching digests, and
# under --allow-modified-plan it is ignored with a warning, the results those of the program.
waferrun "$TMP/good" -q --input x="$X" --output-dir "$TMP/good.out" || fail "the good plan's outputs"
# ignored NAME EDIT: the copy runs under --allow-modified-plan (exit 0), warns that the file
# differs, and gives the good plan's outputs byte for byte.
ignored() {
  local name=$1 edit=$2 d="$TMP/$1"
  rm -rf "$d"; cp -r "$TMP/good" "$d"
  python3 - "$d" <<PY || fail "$name: the edit failed"
import os, sys
p = os.path.join(sys.argv[1], "kernels/main.ll")
t = open(p).read()
open(p, "w").write($edit)
PY
  waferrun "$d" --allow-modified-plan --input x="$X" -q --output-dir "$d.out" 2>"$TMP/$name.err" ||
    { cat "$TMP/$name.err" >&2; fail "$name: exit $?, expected 0 (the regenerated kernels)"; }
  grep -q "kernels/main.ll differs from the kernels of class 'main''s program: running the regenerated kernels" \
    "$TMP/$name.err" || { cat "$TMP/$name.err" >&2; fail "$name: no warning"; }
  diff -r "$TMP/good.out" "$d.out" >/dev/null || fail "$name: other outputs than the program's"
  n=$((n + 1))
}
ignored kernel_cut 't[: len(t) // 2]'
ignored kernel_system 't + "\ndeclare i32 @system(i8*)\n"'
ignored kernel_invalid 't + "\ndefine void @bad() {\nentry:\n  %a = add i32 %b, 1\n  %b = add i32 %a, 1\n  ret void\n}\n"'
ignored kernel_changed 't.replace("fadd", "fsub")'
grep -q fadd "$TMP/good/kernels/main.ll" || fail "kernel_changed: the good kernels have no fadd to change"
refused kernel_name "refusing the plan's kernels: .*kernel function 'system' is not defined by" \
  'm["kernels"][0]["functions"][0]["name"] = "system"'
# A changed instruction, resealed (digests are not signatures): refused without the flag.
rm -rf "$TMP/resealed"; cp -r "$TMP/good" "$TMP/resealed"
python3 - "$TMP/resealed" "$SRC/tests/tools" <<'PY' || fail "resealed: the edit failed"
import json, os, sys
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from plan_seal import write_sealed
p = os.path.join(d, "kernels/main.ll")
open(p, "w").write(open(p).read().replace("fadd", "fsub"))
m = json.load(open(os.path.join(d, "manifest.json")))
write_sealed(d, m)
PY
waferrun "$TMP/resealed" --input x="$X" -q 2>"$TMP/resealed.err"; rc=$?
[ "$rc" -eq 1 ] && grep -q "resealed/kernels/main.ll: is not the kernels waferc generates from class 'main''s program" \
  "$TMP/resealed.err" || { cat "$TMP/resealed.err" >&2; fail "resealed: exit $rc, expected 1"; }
n=$((n + 1))

# Without --allow-modified-plan, an edited program is reported as modified (digests).
rm -rf "$TMP/sealed"; cp -r "$TMP/good" "$TMP/sealed"
echo "# a comment" >>"$TMP/sealed/programs/main.wpe"
waferrun "$TMP/sealed" --input x="$X" -q 2>"$TMP/sealed.err"; rc=$?
[ "$rc" -eq 1 ] && grep -q "sealed/programs/main.wpe: error: modified or truncated since waferc wrote the plan" "$TMP/sealed.err" ||
  { cat "$TMP/sealed.err" >&2; fail "sealed: exit $rc"; }
n=$((n + 1))

# Resource limits: a program that loops 2^31 times stops at --time-limit (exit 5), and a run
# whose PEs' memory exceeds --memory-limit is refused before simulating (exit 5).
rm -rf "$TMP/slow"; cp -r "$TMP/good" "$TMP/slow"
sed -i '0,/^op 0 /s//loop q 0 2147483647\nzero %h 1\nendloop\nop 0 /' "$TMP/slow/programs/main.wpe"
t0=$(date +%s)
waferrun "$TMP/slow" --allow-modified-plan --no-jit -q --input x="$X" --time-limit 2 2>"$TMP/slow.err"; rc=$?
t1=$(date +%s)
[ "$rc" -eq 5 ] && grep -q "exceeded --time-limit=2 s of host time" "$TMP/slow.err" && [ $((t1 - t0)) -lt 60 ] ||
  { cat "$TMP/slow.err" >&2; fail "slow: exit $rc after $((t1 - t0)) s, expected 5 within a minute"; }
n=$((n + 1))
# 64 PEs whose memory map ends at 40000 bytes: 2,560,000 bytes of host memory, 3 MiB rounded up.
waferc "$E/mlp_softmax.wir" -o "$TMP/big" --target=test8x8 -q || fail "memory: compile failed"
sed -i 's/^\(\.sym %x *[0-9]* *\)[0-9]*$/\1 40000/' "$TMP/big/programs/main.wpe"
python3 - "$TMP/big/manifest.json" <<'PY' || fail "memory: editing the manifest"
import json, sys
m = json.load(open(sys.argv[1]))
c = m["regions"][0]["classes"][0]
next(e for e in c["memory"] if e["symbol"] == "%x")["bytes"] = 40000
c["memory_bytes"] = max(e["offset"] + e["bytes"] for e in c["memory"])
assert c["memory_bytes"] == 40000 and c["rect"][2] * c["rect"][3] == 64, c["rect"]
json.dump(m, open(sys.argv[1], "w"))
PY
B=(waferrun "$TMP/big" --allow-modified-plan -q --input x="$X")
"${B[@]}" --memory-limit 2 2>"$TMP/mem.err"; rc=$?
[ "$rc" -eq 5 ] && grep -q "big: error: the PEs' memory needs 3 MiB of host memory, over --memory-limit=2" "$TMP/mem.err" ||
  { cat "$TMP/mem.err" >&2; fail "memory: 3 MiB under --memory-limit=2: exit $rc, expected 5"; }
"${B[@]}" --memory-limit 2 --mode=timing >/dev/null 2>&1 || fail "memory: --mode=timing holds no PE memory, refused"
"${B[@]}" --memory-limit 3 --max-cycles 1 2>"$TMP/mem3.err"; rc=$? # past the check: stopped by --max-cycles
[ "$rc" -eq 5 ] && grep -q "exceeded --max-cycles=1" "$TMP/mem3.err" ||
  { cat "$TMP/mem3.err" >&2; fail "memory: 3 MiB under --memory-limit=3: exit $rc"; }
n=$((n + 1))

# Without --memory-limit the ceiling is the machine's memory: 64 PEs of 1 GiB of SRAM each
# (the target's sram_bytes raised to 2^30, %x grown to fill it) need 64 GiB.
mem_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
if [ "$mem_kib" -lt $((60 * 1024 * 1024)) ]; then
  rm -rf "$TMP/huge"; cp -r "$TMP/big" "$TMP/huge"
  python3 - "$TMP/huge" <<'PY' || fail "huge: editing the plan"
import json, os, re, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
m["target"]["sram_bytes"] = 2**30
c = m["regions"][0]["classes"][0]
x = next(e for e in c["memory"] if e["symbol"] == "%x")
x["bytes"] = 2**30 - x["offset"]
c["memory_bytes"] = 2**30
json.dump(m, open(os.path.join(d, "manifest.json"), "w"))
p = os.path.join(d, "programs/main.wpe")
t = re.sub(r"^(\.sym %x *[0-9]* *)[0-9]*$", lambda g: g.group(1) + str(x["bytes"]), open(p).read(), flags=re.M)
open(p, "w").write(t)
PY
  waferrun "$TMP/huge" --allow-modified-plan -q --input x="$X" 2>"$TMP/huge.err"; rc=$?
  [ "$rc" -eq 5 ] && grep -q "huge: error: the PEs' memory needs 65536 MiB of host memory, more than this machine's" \
    "$TMP/huge.err" || { cat "$TMP/huge.err" >&2; fail "huge: 64 GiB on this machine: exit $rc, expected 5"; }
  n=$((n + 1))
fi

# waferc: a missing constant is exit 6, found before the plan directory is touched.
cp "$E/mlp_softmax.wir" "$E"/mlp_softmax_*.npy "$TMP/"
rm "$TMP/mlp_softmax_w.npy"
cp -r "$TMP/good" "$TMP/kept"
waferc "$TMP/mlp_softmax.wir" -o "$TMP/kept" --target=test4x4 -q 2>"$TMP/noconst.err"; rc=$?
[ "$rc" -eq 6 ] && grep -q "mlp_softmax_w.npy" "$TMP/noconst.err" || { cat "$TMP/noconst.err" >&2; fail "noconst: exit $rc, expected 6"; }
diff -r "$TMP/good" "$TMP/kept" >/dev/null || fail "noconst: the old plan was changed"
n=$((n + 1))
# A plan directory whose parent is a file: exit 6, nothing written.
touch "$TMP/afile"
waferc "$E/mlp_softmax.wir" -o "$TMP/afile/plan" --target=test4x4 -q 2>"$TMP/afile.err"; rc=$?
[ "$rc" -eq 6 ] && grep -q "afile: error: cannot create directory" "$TMP/afile.err" ||
  { cat "$TMP/afile.err" >&2; fail "afile: exit $rc, expected 6"; }
n=$((n + 1))
# A plan directory in a read-only directory: exit 6, naming it (not as root, which may write anywhere).
if [ "$(id -u)" -ne 0 ]; then
  mkdir "$TMP/ro" && chmod 555 "$TMP/ro"
  waferc "$E/mlp_softmax.wir" -o "$TMP/ro/plan" --target=test4x4 -q 2>"$TMP/ro.err"; rc=$?
  chmod 755 "$TMP/ro"
  [ "$rc" -eq 6 ] && grep -q "ro: error: cannot write the plan" "$TMP/ro.err" || { cat "$TMP/ro.err" >&2; fail "ro: exit $rc, expected 6"; }
  n=$((n + 1))
fi
echo "plan_untrusted: $n corrupted plans and failed writes handled"
