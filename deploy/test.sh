#!/usr/bin/env bash
# The whole test suite: installs and builds what is missing, checks the
# format and the function sizes, runs ctest, then runs the unit tests again
# built with ASan+UBSan (build-address).
#   deploy/test.sh [BUILD_DIR]
#   deploy/test.sh --sanitize address|thread [CTEST_ARGS...]
#       the whole suite (or the ctest selection given, e.g. -R Spec) built
#       with ASan+UBSan or TSan in build-address / build-thread; any report
#       fails the test that triggered it
#   deploy/test.sh --sanitize address|thread --units
#       only the unit tests (no daemon, no sims), as the default run does
set -euo pipefail
cd "$(dirname "$0")/.."

# The unit tests: each component alone, with fakes where it needs others.
# Under a sanitizer they build and run in minutes, so every run has them.
UNIT_TESTS=(servelab_spec_test servelab_core_test sim_model_test analysis_test
  sqlite_store_test sqlite_db_test migrations_test request_rows_test regular_file_test
  labels_test crash_point_unit_test loadgen_test import_test client_output_test
  servelab_flag_table_test servelab_engines_test state_dir_lock_test listen_address_test
  receive_stamp_test)

# Prints the sanitizer reports in directory $1, if any: what each is about,
# and the first one whole.
show_reports() {
  local files=("$1"/*)
  [[ -e "${files[0]}" ]] || return 0
  echo "sanitizer reports (${#files[@]} files in $1):"
  grep -h "SUMMARY" "${files[@]}" | sort | uniq -c
  echo "== ${files[0]}"
  head -n 150 "${files[0]}"
}

# Runs the unit-test programs of build dir $1; fails if any fails.
run_units() {
  local build_dir="$1" failed=()
  # Called in an `||` list, where `set -e` does not act: stop on a failed build.
  cmake --build "$build_dir" -j2 --target "${UNIT_TESTS[@]}" || return 1
  for t in "${UNIT_TESTS[@]}"; do
    echo "== $build_dir: $t"
    "$build_dir/tests/$t" --gtest_brief=1 || failed+=("$t")
  done
  if ((${#failed[@]})); then
    echo "unit tests that failed in $build_dir: ${failed[*]}" >&2
    return 1
  fi
  echo "all ${#UNIT_TESTS[@]} unit test programs passed in $build_dir"
}

# Runs `ctest "$@"` (or, with --units, the unit tests) built with sanitizer
# MODE in build-MODE.
sanitized() {
  local mode="$1"
  shift
  local build_dir="build-$mode"
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSERVELAB_SANITIZE="$mode" >/dev/null
  local supp="$PWD/deploy/sanitizers"
  # The binaries the tests start inherit these, so a report in servelabd or
  # servelab-sim fails the test as one in the test binary does. Reports go
  # to files in $reports: a daemon's stderr goes to a log in a temporary
  # directory that its test removes.
  local reports="$PWD/$build_dir/sanitizer-reports"
  rm -rf "$reports"
  mkdir -p "$reports"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:log_path=$reports/asan"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan"
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp:log_path=$reports/tsan"
  local rc=0
  if [[ "${1:-}" == "--units" ]]; then
    run_units "$build_dir" || rc=$?
  else
    cmake --build "$build_dir" -j2
    ctest --test-dir "$build_dir" --output-on-failure -j2 --timeout 900 "$@" || rc=$?
  fi
  show_reports "$reports"
  return "$rc"
}

if [[ "${1:-}" == "--sanitize" ]]; then
  MODE="${2:?--sanitize needs address or thread}"
  shift 2
  deploy/setup.sh --packages-only
  sanitized "$MODE" "$@"
  exit
fi
BUILD_DIR="${1:-build}"
deploy/setup.sh "$BUILD_DIR"
deploy/format.sh
deploy/function_size.sh
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 600
sanitized address --units
