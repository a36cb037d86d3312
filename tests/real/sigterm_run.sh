#!/bin/sh
# sigterm_run.sh DIR SIGNAL -- CNNPAR run ARGS...
# Starts `cnnpar run` with TMPDIR=DIR/tmp (emptied first), waits until its cnnpar-run ranks
# run, sends SIGNAL (TERM, INT or KILL) to cnnpar alone, and passes when cnnpar exits with
# 128 + SIGNAL within 10 s, no process of the job (mpiexec, hydra_pmi_proxy, cnnpar-run)
# is left, DIR/tmp is empty (no run-spec, trace or other temporary file), and DIR/out (for
# outputs the command names there) holds no half-written file (.NAME.PID.tmp).
# SIGNAL KILL: cnnpar cannot forward or clean up; its child mpiexec gets SIGTERM from the
# kernel (PR_SET_PDEATHSIG) and ends the ranks. Only the processes are checked then.
dir=$1; sig=$2; shift 2
[ "$1" = "--" ] && shift
fail() { echo "sigterm_run: FAIL: $*"; exit 1; }
# Running, not a zombie: an orphan's exit status waits for PID 1, which may reap it late.
alive() { st=$(ps -o stat= -p "$1" 2>/dev/null); [ -n "$st" ] && [ "${st#Z}" = "$st" ]; }
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
case $sig in TERM) want=143 ;; INT) want=130 ;; KILL) want=137 ;; *) fail "signal $sig: TERM, INT or KILL" ;; esac
[ "$status" -eq "$want" ] || fail "wanted status $want"
awk "BEGIN { exit !($elapsed <= 10) }" || fail "took longer than 10 s"
left=""; polls=0
while :; do  # the job ends asynchronously after a SIGKILL of cnnpar
  left=""
  for p in $job; do alive "$p" && left="$left $p"; done
  polls=$((polls + 1))
  { [ -z "$left" ] || [ "$polls" -gt 100 ]; } && break
  sleep 0.05
done
[ -n "$left" ] && { ps -o pid,args -p $left; kill -KILL $left; fail "processes left:$left"; }
echo "sigterm_run: job gone $(awk "BEGIN { print $(date +%s.%N) - $start }") s after the signal"
[ "$sig" = KILL ] && { echo "sigterm_run: no process left"; exit 0; }
if [ -n "$(ls -A "$dir/tmp")" ]; then ls -la "$dir/tmp"; fail "temporary files left in TMPDIR"; fi
half=$(find "$dir/out" -name '.*')  # temporaries are hidden siblings (.NAME.PID.tmp)
[ -n "$half" ] && fail "half-written outputs left: $half"
echo "sigterm_run: outputs: $(cd "$dir/out" && find . -type f | tr '\n' ' ')"
echo "sigterm_run: no process and no temporary file left"
