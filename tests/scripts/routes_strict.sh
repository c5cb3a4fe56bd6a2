#!/usr/bin/env bash
# Routes a WSE router can hold (docs/cycle-model.md, "The hardware rule"): per color and
# switch position one rx set -> one tx set. `waferrun` refuses at load (exit 1) a program
# whose rules give some PE different tx sets for two rx ports of one color and position,
# naming the PE, the color, the position and the rules at the rule's line. Hand-made bad
# plans are refused (unguarded rules, guards on x and y apart, a guard tying x to y, a
# position other than 0), and the plans of every GEMM algorithm (square, W x H and 1-wide
# meshes) and of every collective load under the check.
set -uo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh" # target path, TMP, fail, n
E=$SRC/examples
X=$E/mlp_softmax_x.npy

# SUMMA: its row-broadcast color is the one the hand-made plans below break (the default
# algorithm takes MeshGEMM now that the weights are pre-skewed, docs/gemm.md)
waferc "$E/mlp_softmax.wir" -o "$TMP/good" --target=test4x4 --gemm-algo=summa -q || fail "compile failed"
waferrun "$TMP/good" -q --input x="$X" || fail "the MLP is refused"

# expect_refused DIR PATTERN: the load fails with exit 1 and PATTERN at a line of main.wpe.
expect_refused() {
  local d=$1 pattern=$2
  waferrun "$d" --allow-modified-plan --disasm >/dev/null 2>"$TMP/err"
  local rc=$?
  [ "$rc" -eq 1 ] || { cat "$TMP/err" >&2; fail "$d: load exited $rc, expected 1"; }
  grep -q -- "main.wpe:[0-9]*:1: error: $pattern" "$TMP/err" || { cat "$TMP/err" >&2; fail "$d: message lacks '$pattern'"; }
  n=$((n + 1))
}

# The row broadcast color, replaced by Cannon's old ring: RAMP -> W, E -> RAMP, W -> E.
bc=$(sed -n 's/^\.color \(c[0-9]*\) row-broadcast.*/\1/p' "$TMP/good/programs/main.wpe")
[ -n "$bc" ] || fail "no row-broadcast color in the program"
variant() { rm -rf "$TMP/$1"; cp -r "$TMP/good" "$TMP/$1"; }
variant ring
sed -i "/^\.route $bc /d; /^\.color $bc /a .route $bc RAMP -> W\n.route $bc E -> RAMP\n.route $bc W -> E" \
  "$TMP/ring/programs/main.wpe"
# PE (0,0) is not named: W leaves the region there, so its RAMP -> W is `none` (no rx port).
expect_refused "$TMP/ring" \
  "PE (1,0) of class 'main': color $bc, switch position p0 has per-input rules E -> RAMP (line [0-9]*), W -> E (line [0-9]*), RAMP -> W (line [0-9]*)"

# One guarded rule on one PE: separable guards (x and y apart) ...
variant one
sed -i "/^\.color $bc /a [x==2, y==3] .route $bc RAMP -> W" "$TMP/one/programs/main.wpe"
expect_refused "$TMP/one" "PE (2,3) of class 'main': color $bc, switch position p0 has per-input rules W -> E RAMP (line [0-9]*), RAMP -> W (line [0-9]*)"
# ... and a guard tying x to y, checked PE by PE (the first PE with a live W port is (1,1)).
variant diag
sed -i "/^\.color $bc /a [x==y] .route $bc RAMP -> W" "$TMP/diag/programs/main.wpe"
expect_refused "$TMP/diag" "PE (1,1) of class 'main': color $bc, switch position p0 has per-input rules W -> E RAMP (line [0-9]*), RAMP -> W"
# The same rules as the launch position's, in another position: p1 is the root's RAMP -> E W.
variant p1
sed -i "/^\.color $bc /a [x==1] .route $bc p1 E -> W" "$TMP/p1/programs/main.wpe"
expect_refused "$TMP/p1" "PE (1,[0-9]*) of class 'main': color $bc, switch position p1 has per-input rules E -> W (line [0-9]*), RAMP -> E W"

# Plans of the lowerings: GEMM algorithms on square and W x H meshes, and the collectives.
loads() { waferrun "$1" --allow-modified-plan --disasm >/dev/null 2>"$TMP/err" || { cat "$TMP/err" >&2; fail "$2: refused"; }; n=$((n + 1)); }
for mesh in 1x1 2x2 3x3 4x4 5x5 7x7 4x6 3x5 2x4 6x4 1x4 4x1; do
  for algo in meshgemm cannon summa allgather; do
    wafer-bench gemm --algo=$algo --mesh=$mesh --m=12 --k=12 --n=12 --keep="$TMP/g" >/dev/null 2>"$TMP/berr" ||
      fail "gemm $algo $mesh"
    loads "$TMP/g" "gemm $algo $mesh"
  done
done
for op in reduce allreduce broadcast; do
  for algo in star chain tree two_phase autogen snake ring; do
    for pes in 4 7; do
      for dims in 1 2; do
        wafer-bench collective --op=$op --algo=$algo --pes=$pes --len=16 --dims=$dims --keep="$TMP/c" \
          >/dev/null 2>&1 || continue # an algorithm the collective has no lowering for
        loads "$TMP/c" "$op $algo $pes d$dims"
      done
    done
  done
done
# Past the color budget waferc relays reduces through the PEs (store-and-forward, two switch
# positions) and serializes broadcasts at free positions, recording both in the class's
# color_fallbacks: such a plan is held to the rule like any other. It loads with no warning,
# and the same plan with a per-input rule added (the old streaming relay's `RAMP -> W` beside
# `E -> RAMP`) is refused although its manifest records the fallbacks.
T=$(sed -e 's/^colors = .*/colors = 5/' -e 's/^reserved_colors = .*/reserved_colors = 2,3,4/' \
  "$SRC/targets/test4x4.target")
printf '%s\n' "$T" >"$TMP/few2.target"
waferc "$SRC/tests/e2e_dist/norms.wir" -o "$TMP/relay" --target="$TMP/few2.target" --mesh=4x4 -q \
  --reduce-algo=star 2>"$TMP/werr" || fail "relay: waferc exited $?"
grep -q "relayed through PEs" "$TMP/werr" || fail "relay: nothing relayed"
grep -q '"color_fallbacks"' "$TMP/relay/manifest.json" || fail "relay: no color_fallbacks in the manifest"
grep -Eq '"how":[[:space:]]*"relayed"' "$TMP/relay/manifest.json" || fail "relay: no relayed fallback in the manifest"
waferrun "$TMP/relay" --allow-modified-plan --disasm >/dev/null 2>"$TMP/err" || { cat "$TMP/err" >&2; fail "relay: refused"; }
[ ! -s "$TMP/err" ] || { cat "$TMP/err" >&2; fail "relay: the load printed something"; }
n=$((n + 1))
sed -i '/^\[x==2\] \.route c0 E -> RAMP/a [x==2] .route c0 RAMP -> W' "$TMP/relay/programs/main.wpe"
expect_refused "$TMP/relay" "PE (2,[0-9]*) of class 'main': color c0, switch position p0 has per-input rules E -> RAMP (line [0-9]*), RAMP -> W (line [0-9]*)"
echo "routes_strict: $n checks passed"
