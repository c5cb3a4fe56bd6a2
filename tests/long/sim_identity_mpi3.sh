#!/usr/bin/env bash
# tests/scripts/sim_identity.sh with every run under `mpirun -np 3` (an odd band split; the
# default suite's e2e/sim_identity_mpi runs 2 ranks, and e2e/sim_mpi checks 2 and 3 ranks on
# its own plans). About 2 minutes on 2 cores, oversubscribed: label "long".
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../scripts" && pwd)
SIM_IDENTITY_MPI_RANKS=3 exec bash "$here/sim_identity_mpi.sh"
