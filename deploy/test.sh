#!/usr/bin/env bash
# The whole test suite: installs and builds what is missing, checks the
# format and the function sizes, then runs ctest.
#   deploy/test.sh [BUILD_DIR]
#   deploy/test.sh --sanitize address|thread [CTEST_ARGS...]
#       the suite (or the ctest selection given, e.g. -R Spec) built with
#       ASan+UBSan or TSan in build-address / build-thread; any report fails
#       the test that triggered it
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--sanitize" ]]; then
  MODE="${2:?--sanitize needs address or thread}"
  shift 2
  deploy/setup.sh --packages-only
  BUILD_DIR="build-$MODE"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSERVELAB_SANITIZE="$MODE" >/dev/null
  cmake --build "$BUILD_DIR" -j2
  SUPP="$PWD/deploy/sanitizers"
  # The binaries the tests start inherit these, so a report in servelabd or
  # servelab-sim fails the test as one in the test binary does.
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1"
  export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$SUPP/tsan.supp"
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 900 "$@"
  exit
fi
BUILD_DIR="${1:-build}"
deploy/setup.sh "$BUILD_DIR"
deploy/format.sh
deploy/function_size.sh
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 600
