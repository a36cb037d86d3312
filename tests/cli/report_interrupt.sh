#!/usr/bin/env bash
# report_interrupt.sh CNNPAR STUDY
# Ctrl-C while `cnnpar report` waits for gnuplot: the report exits 130, the
# earlier report stays exactly as it was (no half-new mix, no stale staged folder) and no
# gnuplot is left running. A stand-in gnuplot on PATH marks that it started and then waits.
set -u
cnnpar=$(realpath "$1"); study=$(realpath "$2")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
cat >"$work/bin/gnuplot" <<'STUB'
#!/bin/sh
touch "$CNNPAR_TEST_MARK"
exec sleep 60
STUB
chmod +x "$work/bin/gnuplot"
export CNNPAR_TEST_MARK=$work/gnuplot-started

"$cnnpar" report --study "$study" --out "$work/reports" --no-plot -q || { echo "FAIL: first report"; exit 1; }
echo "an earlier file of this report" >"$work/reports/bad-input-study/earlier.txt"
before=$(cd "$work/reports" && find . -type f -exec md5sum {} + | sort)

PATH=$work/bin:$PATH "$cnnpar" report --study "$study" --out "$work/reports" -q &
pid=$!
for _ in $(seq 1 300); do [ -e "$CNNPAR_TEST_MARK" ] && break; sleep 0.1; done
[ -e "$CNNPAR_TEST_MARK" ] || { echo "FAIL: the stand-in gnuplot never started"; kill $pid; exit 1; }
kill -INT $pid
wait $pid; status=$?
after=$(cd "$work/reports" && find . -type f -exec md5sum {} + | sort)
entries=$(ls -A "$work/reports")
sleep 0.2
left=$(pgrep -f "sleep 60" -P "$(pgrep -d, -f "$work/bin/gnuplot" || echo 1)" 2>/dev/null; pgrep -f "$work/bin/gnuplot")
echo "status $status; entries in --out: $entries"
fail=0
[ "$status" -eq 130 ] || { echo "FAIL: status $status (wanted 130 = 128 + SIGINT)"; fail=1; }
[ "$before" = "$after" ] || { echo "FAIL: the earlier report changed"; diff <(echo "$before") <(echo "$after"); fail=1; }
[ "$entries" = "$(printf 'bad-input-study\nindex.html')" ] || { echo "FAIL: --out holds more than the report and its index: $entries"; fail=1; }
[ -z "$left" ] || { echo "FAIL: gnuplot still running: $left"; fail=1; }
[ "$fail" -eq 0 ] && echo "report_interrupt: ok"
exit "$fail"
