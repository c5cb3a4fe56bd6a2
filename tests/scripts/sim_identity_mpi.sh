#!/usr/bin/env bash
# tests/scripts/sim_identity.sh with every run under `mpirun -np 2` (one band of rows per rank,
# runtime/sim_mpi.c): the same digests an earlier one-process simulator recorded.
# SIM_IDENTITY_MPI_RANKS="2 3" runs each rank count (tests/long/sim_identity_mpi3.sh: 3 ranks,
# label "long": oversubscribed on 2 cores it took 2 of the default suite's 19 minutes).
# Skipped (77) as tests/scripts/sim_mpi.sh is: without mpirun or a waferrun built with MPI.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${WAFERC_BINARY_DIR:?}
command -v mpirun >/dev/null || { echo "sim_identity_mpi: no mpirun (Debian openmpi-bin): skipped"; exit 77; }
lib=$BIN/lib/libwaferc.so
# (not grep -q: ldd, its output cut short, would die of SIGPIPE, which pipefail counts)
{ [ -e "$lib" ] && ldd "$lib" | grep libmpi >/dev/null; } ||
  { echo "sim_identity_mpi: waferrun was built without MPI (Debian libopenmpi-dev): skipped"; exit 77; }
for r in ${SIM_IDENTITY_MPI_RANKS:-2}; do SIM_IDENTITY_MPI=$r bash "$here/sim_identity.sh"; done
