#!/usr/bin/env bash
# Sets everything up and runs the test suite (everything except the labels "long",
# "known-failure" and "fuzz-long").
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$here/tools/setup.sh"
cd "$here"
ctest --test-dir build --output-on-failure -j"$(nproc)" -LE "long|known-failure|fuzz-long" "$@"
