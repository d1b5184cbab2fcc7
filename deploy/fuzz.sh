#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang, ASan and UBSan in
# build-fuzz, and runs one (or each, one after another) for SECONDS.
#   deploy/fuzz.sh TARGET|all [SECONDS]     (default 600 s per target)
# TARGET: spec, sse, prometheus_text, sim_request, record_file, import.
# Each run reads fuzz/corpus/TARGET (the committed seeds, never written) and
# grows a scratch corpus in build-fuzz/corpus/TARGET; a crashing input is
# saved as build-fuzz/crashes/TARGET/crash-* and the run stops there. The last
# lines say the executions, exec/s, coverage (cov, ft) and corpus size. To
# fold new inputs into the committed corpus, minimized:
#   build-fuzz/fuzz/TARGET_fuzzer -merge=1 fuzz/corpus/TARGET build-fuzz/corpus/TARGET
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=(spec sse prometheus_text sim_request record_file import)
WHAT="${1:?usage: deploy/fuzz.sh TARGET|all [SECONDS]; targets: ${TARGETS[*]}}"
SECONDS_EACH="${2:-600}"
if [[ "$WHAT" == all ]]; then
  run=("${TARGETS[@]}")
elif [[ " ${TARGETS[*]} " == *" $WHAT "* ]]; then
  run=("$WHAT")
else
  echo "deploy/fuzz.sh: unknown target '$WHAT'; targets: ${TARGETS[*]}" >&2
  exit 2
fi
BUILD_DIR=build-fuzz
CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSERVELAB_FUZZ=ON >/dev/null
cmake --build "$BUILD_DIR" -j2 --target "${run[@]/%/_fuzzer}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
for target in "${run[@]}"; do
  scratch="$BUILD_DIR/corpus/$target"
  crashes="$BUILD_DIR/crashes/$target"
  log="$BUILD_DIR/logs/$target.log"
  mkdir -p "$scratch" "$crashes" "$(dirname "$log")"
  echo "== $target: ${SECONDS_EACH}s, log $log"
  # The scratch corpus comes first: libFuzzer writes new inputs there only.
  if "$BUILD_DIR/fuzz/${target}_fuzzer" -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
    -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$crashes/" \
    "$scratch" "fuzz/corpus/$target" >"$log" 2>&1; then
    result=ok
  else
    result="CRASH (see $log; input in $crashes/)"
    status=1
  fi
  # The last status line has cov, ft and the corpus; the final stats the totals.
  grep -E '^#[0-9]+' "$log" | tail -1
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" || true
  echo "corpus: $(find "$scratch" "fuzz/corpus/$target" -type f | wc -l) files;" \
    "result: $result"
done
exit "$status"
