#!/usr/bin/env bash
# tests/scripts/sim_identity.sh with every run under `mpirun -np 2`, then 3 (one band of rows
# per rank, runtime/sim_mpi.c): the same digests an earlier one-process simulator recorded.
# Skipped (77) as tests/scripts/sim_mpi.sh is: without mpirun or a waferrun built with MPI.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${WAFERC_BINARY_DIR:?}
command -v mpirun >/dev/null || { echo "sim_identity_mpi: no mpirun (Debian openmpi-bin): skipped"; exit 77; }
lib=$BIN/lib/libwaferc.so
# (not grep -q: ldd, its output cut short, would die of SIGPIPE, which pipefail counts)
{ [ -e "$lib" ] && ldd "$lib" | grep libmpi >/dev/null; } ||
  { echo "sim_identity_mpi: waferrun was built without MPI (Debian libopenmpi-dev): skipped"; exit 77; }
for r in 2 3; do SIM_IDENTITY_MPI=$r bash "$here/sim_identity.sh"; done
