#!/bin/sh
# sigterm_run.sh DIR SIGNAL -- CNNPAR run ARGS...
# Starts `cnnpar run` with TMPDIR=DIR/tmp (emptied first), waits until its cnnpar-run ranks
# run, sends SIGNAL (TERM or INT) to cnnpar alone, and passes when cnnpar exits with
# 128 + SIGNAL within 10 s, no process of the job (mpiexec, hydra_pmi_proxy, cnnpar-run)
# is left, DIR/tmp is empty (no run-spec, trace or other temporary file), and DIR/out (for
# outputs the command names there) holds no half-written file (*.tmp.*).
dir=$1; sig=$2; shift 2
[ "$1" = "--" ] && shift
fail() { echo "sigterm_run: FAIL: $*"; exit 1; }
rm -rf "$dir" && mkdir -p "$dir/tmp" "$dir/out" || exit 1
TMPDIR=$dir/tmp; export TMPDIR
"$@" >"$dir/run.log" 2>&1 &
cnnpar=$!
# The job's processes: cnnpar's child (mpiexec), its children (the proxy), theirs (ranks).
ranks=""; polls=0
while [ "$(echo $ranks | wc -w)" -lt 2 ]; do
  kill -0 "$cnnpar" 2>/dev/null || { cat "$dir/run.log"; fail "cnnpar ended before its ranks started"; }
  polls=$((polls + 1)); [ "$polls" -gt 3000 ] && fail "no ranks after 30 s"
  sleep 0.01
  mpiexec=$(pgrep -P "$cnnpar")
  proxies=$(for p in $mpiexec; do pgrep -P "$p"; done)
  ranks=$(for p in $proxies; do pgrep -P "$p"; done)
done
sleep 0.5  # let the ranks get into the training loop
job="$mpiexec $proxies $ranks"
echo "sigterm_run: cnnpar $cnnpar, mpiexec $mpiexec, proxies $(echo $proxies), ranks $(echo $ranks)"
start=$(date +%s.%N)
kill "-$sig" "$cnnpar"
wait "$cnnpar"
status=$?
elapsed=$(awk "BEGIN { print $(date +%s.%N) - $start }")
cat "$dir/run.log"
echo "sigterm_run: cnnpar exited with status $status after $elapsed s"
case $sig in TERM) want=143 ;; INT) want=130 ;; *) fail "signal $sig: TERM or INT" ;; esac
[ "$status" -eq "$want" ] || fail "wanted status $want"
awk "BEGIN { exit !($elapsed <= 10) }" || fail "took longer than 10 s"
sleep 0.2
left=""
for p in $job; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
[ -n "$left" ] && { ps -o pid,args -p $left; kill -KILL $left; fail "processes left:$left"; }
if [ -n "$(ls -A "$dir/tmp")" ]; then ls -la "$dir/tmp"; fail "temporary files left in TMPDIR"; fi
half=$(find "$dir/out" -name '*.tmp.*')
[ -n "$half" ] && fail "half-written outputs left: $half"
echo "sigterm_run: outputs: $(cd "$dir/out" && find . -type f | tr '\n' ' ')"
echo "sigterm_run: no process and no temporary file left"
