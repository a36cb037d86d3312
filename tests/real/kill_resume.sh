#!/bin/sh
# kill_resume.sh DIR EVERY ITERATIONS -- MPIEXEC -n P CNNPAR-RUN ARGS...
# A run killed (SIGKILL to every process of the job) after its second periodic checkpoint, then
# resumed with --resume, must end with weights equal byte for byte to an uninterrupted run of
# the same ITERATIONS. DIR is emptied first. Fails when the job finished before the kill (the
# test would prove nothing), when a process of the killed job survives, or when the weights differ.
dir=$1; every=$2; iterations=$3; shift 3
[ "$1" = "--" ] && shift
rm -rf "$dir" && mkdir -p "$dir" || exit 1
fail() { echo "kill_resume: FAIL: $*"; exit 1; }
start=$(date +%s.%N)

"$@" --iterations "$iterations" --weights-out "$dir/straight.bin" >"$dir/straight.log" 2>&1 ||
  { cat "$dir/straight.log"; fail "the uninterrupted run failed"; }

# The checkpoint directory is unique to this test: it marks the job's processes.
marker="$dir/ckpt"
"$@" --iterations "$iterations" --checkpoint "$marker" --checkpoint-every "$every" \
  --weights-out "$dir/killed.bin" >"$dir/killed.log" 2>&1 &
job=$!
# The global iteration of a checkpoint is the i64 at byte 8 (real/checkpoint.hpp).
seen=0; polls=0
while [ "$seen" -lt $((2 * every)) ]; do
  kill -0 "$job" 2>/dev/null || break
  [ -f "$marker/checkpoint.bin" ] && seen=$(od -An -t d8 -j 8 -N 8 "$marker/checkpoint.bin" | tr -d ' ')
  seen=${seen:-0}; polls=$((polls + 1))
  [ "$polls" -gt 6000 ] && break  # 60 s
  sleep 0.01
done
pids=$(pgrep -f -- "$marker")
[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
wait "$job" 2>/dev/null
echo "kill_resume: killed the job at checkpoint iteration $seen of $iterations (pids $(echo $pids))"
[ "$seen" -ge $((2 * every)) ] || { cat "$dir/killed.log"; fail "no second checkpoint appeared"; }
[ -f "$dir/killed.bin" ] && fail "the job finished before it was killed; nothing was tested"
sleep 0.2
left=$(pgrep -f -- "$marker")
[ -n "$left" ] && { kill -KILL $left; fail "processes of the killed job survived: $left"; }
saved=$(od -An -t d8 -j 8 -N 8 "$marker/checkpoint.bin" | tr -d ' ')
[ "$saved" -lt "$iterations" ] || fail "the checkpoint is at iteration $saved, the end of the run"

"$@" --iterations "$iterations" --checkpoint "$marker" --resume --weights-out "$dir/resumed.bin" \
  >"$dir/resumed.log" 2>&1 || { cat "$dir/resumed.log"; fail "the resumed run failed"; }
cat "$dir/resumed.log"
cmp "$dir/straight.bin" "$dir/resumed.bin" || fail "resumed weights differ from the uninterrupted run's"
echo "kill_resume: resumed from iteration $saved to $iterations: weights equal the uninterrupted run's byte for byte" \
     "($(wc -c <"$dir/resumed.bin") bytes, $(awk "BEGIN { print $(date +%s.%N) - $start }") s in all)"
