#!/usr/bin/env bash
# tests/scripts/sim_identity.sh with every run on 2, then 3 threads (waferrun --threads,
# runtime/sim_threads.c): the same digests an earlier one-thread simulator recorded.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for t in 2 3; do SIM_IDENTITY_THREADS=$t bash "$here/sim_identity.sh"; done
