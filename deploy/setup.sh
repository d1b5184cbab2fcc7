#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages only) and builds servelab.
#   deploy/setup.sh [BUILD_DIR]     (default: build)
#   deploy/setup.sh --packages-only  installs what is missing, builds nothing
#                                    (deploy/demo.sh then builds only its targets)
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES_ONLY=""
if [[ "${1:-}" == "--packages-only" ]]; then
  PACKAGES_ONLY=1
  shift
fi
BUILD_DIR="${1:-build}"

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev prometheus-cpp-dev
  libsqlite3-dev libssl-dev libboost-dev libyaml-cpp-dev libcli11-dev
  libgtest-dev libgmock-dev liburing-dev libsimdjson-dev rapidjson-dev curl sqlite3 clang-format git prometheus
  python3-grpcio python3-protobuf systemd
  chromium fonts-liberation zlib1g-dev slurm-wlm munge openssl util-linux
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [[ -n "$PACKAGES_ONLY" ]]; then exit 0; fi

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j2
