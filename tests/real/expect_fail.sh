#!/bin/sh
# expect_fail.sh MAX_SECONDS STATUS PATTERN COUNT -- COMMAND...
# Passes when COMMAND exits with a status other than 0 (STATUS "nonzero") or exactly STATUS,
# within MAX_SECONDS, and PATTERN (grep -E) appears COUNT times in its output ("any" = >= 1).
# The command runs under `timeout` so a hang fails the test instead of blocking ctest.
max=$1; want=$2; pattern=$3; count=$4; shift 4
[ "$1" = "--" ] && shift
out=$(mktemp)
start=$(date +%s.%N)
timeout -k 5 $((max + 30)) "$@" >"$out" 2>&1
status=$?
elapsed=$(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $start }")
cat "$out"
found=$(grep -E -c -- "$pattern" "$out")
rm -f "$out"
echo "expect_fail: status $status after ${elapsed}s, pattern matched $found line(s)"
if [ "$status" -eq 0 ]; then echo "expect_fail: FAIL: the command succeeded"; exit 1; fi
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then echo "expect_fail: FAIL: the command hung"; exit 1; fi
if [ "$want" != "nonzero" ] && [ "$status" -ne "$want" ]; then echo "expect_fail: FAIL: wanted status $want"; exit 1; fi
if awk "BEGIN { exit !($elapsed > $max) }"; then echo "expect_fail: FAIL: took longer than ${max}s"; exit 1; fi
if [ "$count" = "any" ]; then
  [ "$found" -ge 1 ] || { echo "expect_fail: FAIL: no line matches '$pattern'"; exit 1; }
elif [ "$found" -ne "$count" ]; then
  echo "expect_fail: FAIL: wanted $count line(s) matching '$pattern'"; exit 1
fi
exit 0
