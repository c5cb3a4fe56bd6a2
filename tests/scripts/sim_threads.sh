#!/usr/bin/env bash
# waferrun --threads=N (runtime/sim_threads.c) gives the same bytes as one thread: a few
# plans on odd mesh sizes (shift and broadcast GEMMs, whose shifts fill buffers across the
# band edges, the 2D allreduce and the Reduce paper's tree, an MLP through the compiler) run
# with 1, 2, 3 and 7 threads; stdout, stderr, the report, the trace and every output must be
# byte-identical, and so must a run stopped by --max-cycles half way (its error, its trace).
# The 3-thread runs look every cycle for where to cut the bands (WF_SIM_SPLIT_EVERY=1), so
# rows move between bands many times in a run (runtime/sim_split.c).
# tests/scripts/sim_identity.sh (with SIM_IDENTITY_THREADS, sim_identity_threads.sh) checks
# 2 and 3 threads against digests an earlier simulator recorded.
set -euo pipefail
SRC=${WAFERC_SOURCE_DIR:?}
. "$SRC/tests/tools/plan_run.sh"      # target path, TMP, fail, n
. "$SRC/tests/tools/identity_cases.sh" # G, settle, same_as_first, identity_cases
cd "$TMP" # the report names the plan directory: keep it relative
mkdir plans r

# the runs check (identity_cases.sh) compares: 1, 2, 3 and 7 threads, outputs for `data`
COUNTS="1 2 3 7"
WHAT="--threads=%s differs from --threads=1"
launch() {
  local k=$1 r=$2 tag=$3 out=()
  shift 3
  [ "$tag" = data ] && out=(--output-dir "$r/out")
  if [ "$k" = 3 ]; then
    WF_SIM_SPLIT_EVERY=1 waferrun "$@" "${out[@]}" --threads="$k"
  else
    waferrun "$@" "${out[@]}" --threads="$k"
  fi
}

identity_cases

echo "sim_threads: $n runs byte-identical with 1, 2, 3 and 7 threads"
