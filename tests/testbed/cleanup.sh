#!/usr/bin/env bash
# cleanup.sh CNNPAR CNNPAR_RUN NETWORK CASE
# `cnnpar testbed run` leaves nothing behind: after CASE, no namespace of the testbed
# (`ip netns list`; its veths and qdiscs live in them), no process of the run (`pgrep -f` on
# the program's unique arguments and on the testbed's launcher) and no state folder.
#   normal   a 2-rank cnnpar-run finishes: status 0, its trace written
#   failing  `-- false`, then cnnpar-run with a bad flag: the program's non-zero status
#   sigint   SIGINT to cnnpar while cnnpar-run trains: status 130
#   sigkill  SIGKILL to cnnpar while cnnpar-run trains: status 137, then `testbed destroy --name`
# Each case has its own testbed name (tba-c-CASE). Exits 77 (skipped) when not root.
set -u
cnnpar=$(realpath "$1"); cnnpar_run=$(realpath "$2"); network=$(realpath "$3"); case=$4
[ "$(id -u)" -eq 0 ] || { echo "cleanup: skipped, the testbed needs root"; exit 77; }
name=tba-c-$case
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "cleanup $case: FAIL: $*"; "$cnnpar" testbed destroy --name "$name" -q; exit 1; }
# The processes of this run: the ranks carry $work in their arguments, mpiexec and the proxies
# the testbed's launcher script.
run_processes() { pgrep -f "$work|/run/cnnpar-testbed/$name/" | grep -v "^$$\$"; }
ranks_running() { [ "$(pgrep -fc "cnnpar-run.*$work")" -ge 2 ]; }
train=("$cnnpar_run" --network "$network" --batch 16 --compute sleep --trace "$work/trace.json")
spec=(--name "$name" --nodes 2 --bandwidth 1Gbps)

start_long_run() {  # cnnpar testbed run of a long training, in the background; waits for the ranks
  "$cnnpar" testbed run "${spec[@]}" -- "${train[@]}" --iterations 100000 >"$work/run.log" 2>&1 &
  pid=$!
  # Seen once is started: a second pgrep can miss them while the launcher's processes exec.
  local started=0
  for _ in $(seq 1 300); do ranks_running && { started=1; break; }; sleep 0.1; done
  [ "$started" -eq 1 ] || { cat "$work/run.log"; fail "the ranks never started"; }
  sleep 1  # into the training loop
}

case $case in
  normal)
    "$cnnpar" testbed run "${spec[@]}" -- "${train[@]}" --iterations 3 >"$work/run.log" 2>&1
    status=$?
    [ "$status" -eq 0 ] || { cat "$work/run.log"; fail "status $status (wanted 0)"; }
    [ -s "$work/trace.json" ] || fail "no trace written"
    ;;
  failing)
    "$cnnpar" testbed run "${spec[@]}" -q -- false
    status=$?
    [ "$status" -ne 0 ] || fail "status 0 for \`false\`"
    "$cnnpar" testbed run "${spec[@]}" -q -- "${train[@]}" --no-such-flag >"$work/run.log" 2>&1
    status=$?
    [ "$status" -ne 0 ] || { cat "$work/run.log"; fail "status 0 for a bad flag"; }
    ;;
  sigint)
    start_long_run
    kill -INT "$pid"
    wait "$pid"; status=$?
    [ "$status" -eq 130 ] || { cat "$work/run.log"; fail "status $status (wanted 130 = 128 + SIGINT)"; }
    ;;
  sigkill)
    start_long_run
    kill -KILL "$pid"
    wait "$pid"; status=$?
    [ "$status" -eq 137 ] || fail "status $status (wanted 137 = 128 + SIGKILL)"
    "$cnnpar" testbed destroy --name "$name" || fail "destroy after SIGKILL failed"
    ;;
  *) echo "cleanup: unknown case $case"; exit 2 ;;
esac

# Processes may take a moment to be reaped after the namespaces went.
for _ in $(seq 1 50); do [ -z "$(run_processes)" ] && break; sleep 0.1; done
left_ns=$(ip netns list | grep -E "^$name-(sw|n[0-9]+)( |$)")
[ -z "$left_ns" ] || fail "namespaces left: $left_ns"
[ ! -e "/run/cnnpar-testbed/$name" ] || fail "state folder /run/cnnpar-testbed/$name left"
left=$(run_processes)
[ -z "$left" ] || { ps -o pid,args -p "$(echo $left | tr ' ' ,)"; fail "processes left: $left"; }
echo "cleanup $case: ok (status $status; no namespace, process or state folder left)"
