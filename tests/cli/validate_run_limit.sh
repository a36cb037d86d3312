#!/usr/bin/env bash
# `cnnpar validate` ends a run that outlives its time limit (--run-allowance-s plus 10 times
# its predicted duration) and runs it again: here the launcher hangs the first run (a sleep
# in its place), and the validation still finishes, with the second run measured.
# Usage: validate_run_limit.sh CNNPAR (needs mpiexec and cnnpar-run beside CNNPAR; about 15 s)
set -euo pipefail
cnnpar=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "validate_run_limit: $*" >&2; exit 1; }

cat > grid.json <<'GRID'
{"name": "run-limit", "networks": ["lenet-5"], "strategies": ["dp"], "batches": [8], "ranks": [2],
 "iterations": 3, "warmup": 1, "calibration": {"repeats": 1}}
GRID
# The first training run (cnnpar-run --spec) never ends; calibrations and later runs are mpiexec's.
cat > launcher <<'LAUNCHER'
#!/usr/bin/env bash
case " $* " in
  *" --spec "*) if mkdir "$(dirname "$0")/hung" 2>/dev/null; then echo $$ > "$(dirname "$0")/hung/pid"; exec sleep 600; fi ;;
esac
exec mpiexec "$@"
LAUNCHER
chmod +x launcher

allowance_s=5
start=$SECONDS
status=0
"$cnnpar" validate grid.json --mpiexec "$work/launcher" --run-allowance-s $allowance_s --out v > out.log 2>&1 || status=$?
[ "$status" -eq 0 ] || { cat out.log; fail "status $status (wanted 0)"; }
took_s=$(( SECONDS - start ))
cat out.log
[ -d hung ] || fail "the launcher never hung a run: nothing was tested"
grep -q "cnnpar-run failed (ended: still running after .* ($allowance_s s + 10 x its predicted" out.log || fail "the hung run was not reported"
[ -f v/runs/*/result.json ] || fail "no result: the second run was not measured"
# The hung run was ended at its limit (5 s + 10 x a predicted lenet-5 run of milliseconds),
# by SIGTERM: the sleep in its place is gone, and the validation did not wait for its 600 s.
hung=$(cat hung/pid)
! kill -0 "$hung" 2>/dev/null || fail "the hung run's process $hung still lives"
[ "$took_s" -lt 300 ] || fail "took $took_s s: the hung run was not ended at its limit"
echo "validate_run_limit: the hung run was ended and run again; $took_s s in all"
