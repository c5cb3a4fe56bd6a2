#!/usr/bin/env bash
# Plans written to a full or a read-only disk (issue 22, "Failure injection"), on small tmpfs
# mounts in a private mount namespace (unshare: nothing outside the test sees them):
#  - waferc -o onto a full disk: exit 6 naming the file and the cause, no plan and no stage
#    directory left there, and an older plan in that directory exactly as it was (and still
#    runnable); the same for a pipelined plan (--pipeline=2, its stages in pipeline/);
#  - waferc -o onto a read-only disk: exit 6, said, nothing written;
#  - waferrun --output-dir / --report onto a read-only disk: exit 6 before anything runs;
#    --output-dir onto a full disk: exit 6 naming the output.
# The namespace needs user namespaces (unshare -rm) or root; without either the test is skipped
# (exit 77), saying so.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
M=$SRC/examples/models
if ! unshare -rm true 2>/dev/null; then
  echo "SKIP: no private mount namespace here (unshare -rm): the full and read-only disks need one"
  exit 77
fi
cd "$TMP"
cat >m.wir <<'W'
module @m {
  func @main(%x: f32[6, 8], %w: f32[8, 5]) -> (f32[6, 5]) {
    %y = matmul(%x, %w) : f32[6, 5]
    return %y
  }
}
W
python3 "$SRC/tests/tools/npy.py" x.npy 6,8 1 1.0 w.npy 8,5 2 1.0

# Everything below runs inside the namespace: $TMP/full (96 KiB) and $TMP/ro (read-only).
mkdir full ro
unshare -rm bash -s -- "$SRC" "$M" "$TMP" <<'NS' || fail "$(cat "$TMP/why" 2>/dev/null || echo 'the namespace script failed')"
set -uo pipefail
SRC=$1 M=$2 T=$3
why() { echo "$*" >"$T/why"; exit 1; }
mount -t tmpfs -o size=96k tmpfs "$T/full" || why "cannot mount a tmpfs in the namespace"
mount -t tmpfs -o ro,size=64k tmpfs "$T/ro" || why "cannot mount a read-only tmpfs in the namespace"
cd "$T"

# a small plan that fits, then a model too large for what is left: the old plan survives
waferc m.wir -o full/plan --target=test8x8 --mesh=2x2 -q || why "the small plan does not fit 96 KiB"
sum=$(cksum <full/plan/manifest.json)
LL="$M/tiny_llama.onnx --input-shape input_ids=1x8 --target=wse2 --mesh=4x4"
waferc $LL -o full/plan -q 2>err; rc=$?
[ "$rc" = 6 ] || why "waferc onto a full disk: exit $rc, want 6: $(head -2 err)"
grep -q "No space left on device" err || why "waferc onto a full disk does not say why: $(head -2 err)"
[ "$(cksum <full/plan/manifest.json)" = "$sum" ] || why "the old plan's manifest changed"
ls -a full | grep -q waferc && why "a stage directory was left on the full disk: $(ls -a full)"
waferrun full/plan -q --input x=x.npy --input w=w.npy --output-dir out >/dev/null || why "the old plan no longer runs"
waferc $LL --pipeline=2 -o full/plan -q 2>err; rc=$?
[ "$rc" = 6 ] || why "waferc --pipeline=2 onto a full disk: exit $rc, want 6: $(head -2 err)"
[ "$(cksum <full/plan/manifest.json)" = "$sum" ] || why "the old plan's manifest changed (--pipeline)"
[ -e full/plan/pipeline ] && why "a pipelined compile that failed left full/plan/pipeline"
ls -a full | grep -q waferc && why "a stage directory was left on the full disk (--pipeline)"

# waferrun's outputs onto the full disk: the run's outputs do not fit (a 300 KiB output)
cat >big.wir <<'W'
module @b {
  func @main(%x: f32[256, 300]) -> (f32[256, 300]) {
    %y = relu(%x) : f32[256, 300]
    return %y
  }
}
W
python3 "$SRC/tests/tools/npy.py" bx.npy 256,300 3 1.0
waferc big.wir -o bigplan --target=test8x8 --mesh=8x8 -q || why "the big relu does not compile"
waferrun bigplan -q --input x=bx.npy --output-dir full/out 2>err >/dev/null; rc=$?
[ "$rc" = 6 ] || why "waferrun --output-dir onto a full disk: exit $rc, want 6: $(head -2 err)"
grep -q "full/out" err || why "waferrun onto a full disk does not name the output: $(head -2 err)"

# the read-only disk: nothing written, exit 6 up front
waferc m.wir -o ro/plan --target=test8x8 --mesh=2x2 -q 2>err; rc=$?
[ "$rc" = 6 ] && grep -q "Read-only file system" err || why "waferc onto a read-only disk: exit $rc: $(head -2 err)"
[ -z "$(ls -A ro)" ] || why "waferc wrote onto the read-only disk: $(ls -A ro)"
waferrun full/plan -q --input x=x.npy --input w=w.npy --report ro/r.json 2>err >/dev/null; rc=$?
[ "$rc" = 6 ] || why "waferrun --report onto a read-only disk: exit $rc, want 6: $(head -2 err)"
waferrun full/plan -q --input x=x.npy --input w=w.npy --output-dir ro/out 2>err >/dev/null; rc=$?
[ "$rc" = 6 ] || why "waferrun --output-dir onto a read-only disk: exit $rc, want 6: $(head -2 err)"
exit 0
NS
echo "disk_failure: full and read-only disks refused cleanly"
