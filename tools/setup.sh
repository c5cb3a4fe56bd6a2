#!/usr/bin/env bash
# Installs the Debian packages waferc needs (only those missing), then configures and builds
# into build/. Safe to run again: it only does what is left to do.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

packages=(cmake make gcc flex bison pkg-config llvm-dev llvm-14-tools libprotobuf-c-dev
          protobuf-c-compiler libonnx-dev libonnx-testdata libcjson-dev libpng-dev python3
          libsimgrid-dev clang-14 libopenmpi-dev openmpi-bin)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing missing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

build_type="${WAFERC_BUILD_TYPE:-RelWithDebInfo}"
cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
cmake --build build -j"$(nproc)"
