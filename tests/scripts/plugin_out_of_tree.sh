#!/usr/bin/env bash
# A pass plugin builds out of tree against an INSTALLED waferc (headers + pkg-config only),
# and the installed wafer-opt loads and runs it; a plugin built for another API version is
# refused before any of its code runs.
set -euo pipefail
: "${WAFERC_SOURCE_DIR:?set by ctest}" "${WAFERC_BINARY_DIR:?set by ctest}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

prefix=$tmp/prefix
cmake --install "$WAFERC_BINARY_DIR" --prefix "$prefix" > "$tmp/install.log" \
  || { cat "$tmp/install.log" >&2; fail "cmake --install"; }

# The library directory is lib/ or lib/<multiarch>/ depending on the platform.
pc=$(find "$prefix" -name waferc.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || fail "waferc.pc was not installed under $prefix"
[ -f "$prefix/include/waferc/pass.h" ] || fail "waferc/pass.h was not installed"
opt=$prefix/bin/wafer-opt
[ -x "$opt" ] || fail "wafer-opt was not installed"

# waferc.pc locates its prefix relative to itself (${pcfiledir}); the prefix is also passed
# explicitly so the check below can find the installed include path by its literal name.
PKG_CONFIG_PATH=$(dirname "$pc") cmake -S "$WAFERC_SOURCE_DIR/examples/plugins" -B "$tmp/build" \
  -DPKG_CONFIG_ARGN="--define-variable=prefix=$prefix" > "$tmp/configure.log" 2>&1 \
  || { cat "$tmp/configure.log" >&2; fail "configuring the plugins out of tree"; }
cmake --build "$tmp/build" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log" >&2; fail "building the plugins"; }
grep -q -- "$prefix/include" "$tmp/build/CMakeFiles/fold_identity_arith.dir/flags.make" \
  || fail "the plugin was not compiled against the installed headers"
plugin=$tmp/build/fold_identity_arith.so
[ -f "$plugin" ] || fail "no fold_identity_arith.so"

export WAFERC_TARGET_PATH=$prefix/share/waferc/targets
example=$WAFERC_SOURCE_DIR/examples/plugins/example.wir

# The plugin's pass is listed, with where it came from.
"$opt" --load-pass-plugin="$plugin" --list-passes > "$tmp/list.txt"
grep -q '^fold-identity-arith .*\[plugin fold-identity-arith 1.0' "$tmp/list.txt" \
  || { cat "$tmp/list.txt" >&2; fail "--list-passes does not show the plugin's pass"; }

# It runs in a pipeline: x*1 and 0+x disappear, x*0.5 stays, and the statistics say so.
"$opt" "$example" --load-pass-plugin="$plugin" --pass-pipeline='fold-identity-arith{max-elements=16},dce' \
  --statistics -o "$tmp/out.wir" 2> "$tmp/stats.txt" \
  || { cat "$tmp/stats.txt" >&2; fail "wafer-opt with the plugin failed"; }
grep -q 'mul(%x, @one)' "$tmp/out.wir" && fail "mul by one was not folded"
grep -q 'add(' "$tmp/out.wir" && fail "add of zero was not folded"
grep -q 'mul(%x, @half)' "$tmp/out.wir" || { cat "$tmp/out.wir" >&2; fail "expected mul(%x, @half) to remain"; }
grep -q 'mul-by-one: 1' "$tmp/stats.txt" || { cat "$tmp/stats.txt" >&2; fail "statistic mul-by-one"; }
grep -q 'add-zero: 1' "$tmp/stats.txt" || fail "statistic add-zero"
# The result parses back and verifies.
"$opt" "$tmp/out.wir" > /dev/null || fail "the plugin's output does not parse back"

# With max-elements below the 8-element zero constant, only the splat mul folds.
"$opt" "$example" --load-pass-plugin="$plugin" --pass-pipeline='fold-identity-arith{max-elements=4}' \
  > "$tmp/out2.wir"
grep -q 'add(' "$tmp/out2.wir" || fail "max-elements=4 should leave the 8-element add alone"

# A plugin built against API version 2 is refused, and its register function never runs.
set +e
"$opt" "$example" --load-pass-plugin="$tmp/build/bad_version.so" > /dev/null 2> "$tmp/bad.txt"
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "the bad-version plugin was accepted"
[ "$rc" -lt 128 ] || { cat "$tmp/bad.txt" >&2; fail "wafer-opt crashed on the bad-version plugin (rc $rc)"; }
grep -q "plugin '$tmp/build/bad_version.so': API version mismatch: got 2, supported 1" "$tmp/bad.txt" \
  || { cat "$tmp/bad.txt" >&2; fail "expected the API version mismatch message"; }
grep -q "register_fn was called" "$tmp/bad.txt" && fail "register_fn ran despite the mismatch"

echo "plugin_out_of_tree: ok"
