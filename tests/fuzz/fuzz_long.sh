#!/usr/bin/env bash
# fuzz_long.sh TARGET: fuzzes one target (tests/fuzz/fuzz_TARGET.c) with libFuzzer for
# $WAFERC_FUZZ_MINUTES minutes (default 5) in a clang-14 build with ASan and UBSan
# (build-fuzz/ beside build/, configured once with -DWAFERC_FUZZ=ON). It starts from a copy
# of the committed corpus, so the corpus grows only when someone commits new inputs; a crash
# leaves its input in build-fuzz/crashes/TARGET/ and fails. The last line gives exec/s.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
T=${1:?usage: fuzz_long.sh TARGET}
CLANG=${WAFERC_CLANG:-$(command -v clang-14 || true)}
[ -n "$CLANG" ] || { echo "fuzz_long: clang-14 not found (apt-get install clang-14)" >&2; exit 1; }
B=${WAFERC_FUZZ_BUILD:-$SRC/build-fuzz}
MIN=${WAFERC_FUZZ_MINUTES:-5}
if [ ! -f "$B/CMakeCache.txt" ]; then
  CC=$CLANG cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWAFERC_FUZZ=ON >/dev/null
fi
# One build at a time: fuzz-long tests may run in parallel.
flock "$B/.build.lock" nice cmake --build "$B" --target "fuzz_$T" -j"$(nproc)" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$SRC/tests/fuzz/corpus/$T" "$work/corpus"
mkdir -p "$B/crashes/$T"
export WAFERC_TARGET_PATH=$SRC/targets
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
"$B/tests/fuzz/fuzz_$T" "$work/corpus" -max_total_time=$((MIN * 60)) -timeout=20 -rss_limit_mb=2048 \
  -max_len=65536 -artifact_prefix="$B/crashes/$T/" -print_final_stats=1 2>"$work/log" || {
  tail -40 "$work/log" >&2
  echo "fuzz_long: $T crashed; the input is in $B/crashes/$T/" >&2
  exit 1
}
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
secs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log")
echo "fuzz_long: $T: $runs inputs in $MIN min, $secs exec/s, no crash"
