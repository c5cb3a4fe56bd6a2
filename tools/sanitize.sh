#!/usr/bin/env bash
# The sanitizer stage of CI: an AddressSanitizer + UndefinedBehaviorSanitizer build
# (-DWAFERC_SANITIZE=ON, gcc, build-asan/) of the tools and tests, running the tests that
# cover every parser and the runtime's loader: unit, lit, the fuzz corpora's replay, the
# broken-plan scripts, and generation across two regions (the prefill, the decode step and the
# switch that moves caches and weights between them: generate_regions, about 40 s here).
# Any sanitizer report fails its test (UBSan does not recover; LeakSanitizer is on). Prints
# the stage's time. Usage: tools/sanitize.sh [ctest args...]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
start=$(date +%s)
B=${WAFERC_ASAN_BUILD:-build-asan}
if [ ! -f "$B/CMakeCache.txt" ]; then
  cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWAFERC_SANITIZE=ON >/dev/null
fi
cmake --build "$B" -j"$(nproc)" >/dev/null
built=$(date +%s)
# LLVM's JIT keeps allocations of its own for the process's life; only waferc's code is judged.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$here/tools/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# LeakSanitizer's own stop-the-world tracer sometimes crashes at a multi-threaded process's
# exit ("Tracer caught signal 11 ... LeakSanitizer has encountered a fatal error", seen once in
# CI on e2e/generate_regions, not reproduced in 60 local runs; google/sanitizers#1353). That is
# no finding about waferc: a stage whose only failures carry that signature, and no sanitizer
# report, runs its failed tests once more; a leak, an ASan or a UBSan report still fails it.
stage() {
  local log="$B/sanitize-stage.log" r=0
  ctest --test-dir "$B" --output-on-failure -j"$(nproc)" "$@" 2>&1 | tee "$log" || r=$?
  if [ "$r" != 0 ] && grep -q "LeakSanitizer has encountered a fatal error" "$log" &&
    ! grep -Eq "ERROR: (LeakSanitizer|AddressSanitizer)|runtime error:" "$log"; then
    echo "sanitize: LeakSanitizer's tracer crashed (no report); running the failed tests once more"
    ctest --test-dir "$B" --output-on-failure --rerun-failed || return $?
    return 0
  fi
  return "$r"
}
rc=0
stage -L "^(unit|lit|fuzz)$" "$@" || rc=$?
stage -R "e2e/(e2e_bad_plan|plan_untrusted|pipeline|generate_regions)$" "$@" || rc=$?
end=$(date +%s)
echo "sanitize: build $((built - start)) s, tests $((end - built)) s, total $((end - start)) s"
exit $rc
