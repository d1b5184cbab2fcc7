#!/usr/bin/env bash
# Lists production functions longer than a limit (default 80 lines, from the
# line with the opening brace to the closing one) and fails when there is one.
# Production code is every .cc outside tests/ and bench/ that is not a test
# or test support (fake_*.cc, testing/).
#   deploy/function_size.sh [--limit N] [--list]   (--list: report, never fail)
# The tree is clang-formatted (deploy/format.sh), so a function starts at
# column 0 and braces inside string literals are the only ones to discount.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=80
list=0
while (($#)); do
  case "$1" in
    --limit) limit="$2"; shift 2 ;;
    --list) list=1; shift ;;
    *) echo "usage: deploy/function_size.sh [--limit N] [--list]" >&2; exit 2 ;;
  esac
done
mapfile -t files < <(git ls-files '*.cc' | grep -v -e '_test\.cc$' -e '^tests/' -e '^bench/' -e '/fake_[^/]*\.cc$' -e '/testing/')
report=$(awk -v limit="$limit" '
  FNR == 1 { depth = 0; start = 0; raw = 0 }
  {
    line = $0
    # Raw string literals (R"sql( ... )sql") span lines: skip their insides.
    if (raw) { if (index(line, ")" delim "\"")) raw = 0; next }
    if (match(line, /R"[a-z]*\(/)) {
      delim = substr(line, RSTART + 2, RLENGTH - 3)
      if (!index(substr(line, RSTART + RLENGTH), ")" delim "\"")) raw = 1
      line = substr(line, 1, RSTART - 1)
    }
    gsub(/\\./, "", line)            # escapes, so \" does not end a string
    gsub(/"[^"]*"/, "\"\"", line)    # string literals
    gsub(/'"'"'[^'"'"']*'"'"'/, "0", line)  # char literals
    sub(/\/\/.*/, "", line)          # line comments
    if (line ~ /^(namespace|extern "C")/) next  # namespace braces are not depth
    if (line ~ /^}  \/\/ namespace/ || $0 ~ /^}  \/\/ namespace/) next
    opens = gsub(/{/, "{", line); closes = gsub(/}/, "}", line)
    if (depth == 0 && opens > closes) {
      start = FNR; kind = ($0 ~ /^(struct|class|enum|union)[ ]/ || line ~ /=[ ]*{/) ? "type" : "fn"
    }
    depth += opens - closes
    if (depth == 0 && start) {
      n = FNR - start + 1
      if (kind == "fn" && n > limit) printf "%s:%d: %d lines\n", FILENAME, start, n
      start = 0
    }
  }' "${files[@]}")
if [[ -n "$report" ]]; then
  echo "$report" | sort -t: -k3 -rn
  count=$(echo "$report" | wc -l)
  echo "function_size: $count function(s) over $limit lines"
  ((list)) && exit 0
  exit 1
fi
echo "function_size: no function over $limit lines in ${#files[@]} files"
