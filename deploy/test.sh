#!/usr/bin/env bash
# The whole test suite: installs and builds what is missing, checks the
# format and the function sizes, then runs ctest.
#   deploy/test.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
deploy/setup.sh "$BUILD_DIR"
deploy/format.sh
deploy/function_size.sh
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 600
