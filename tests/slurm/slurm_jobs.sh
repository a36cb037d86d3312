#!/usr/bin/env bash
# Against a real Slurm (Debian's slurmctld, slurmd, munge) started on this machine by
# scripts/slurm/local_cluster.sh with 4 nodes, and stopped at the end, leaving no daemon or file:
#   - scripts/slurm/sweep.sbatch as a 4-task array plus the merge job it submits: the merged CSV
#     equals an unsharded sweep's under `cmp`;
#   - scripts/slurm/run.sbatch on 2 nodes, once through MPICH's mpiexec (which reads the
#     allocation) and once through `srun --mpi=pmi2`: each trace has 2 ranks with identical
#     weights.
# Exits 77 (skipped) when not root or Slurm is not installed.
# Usage: slurm_jobs.sh CNNPAR SOURCE_DIR
set -euo pipefail
cnnpar=$(realpath "$1")
source_dir=$(realpath "$2")
if [ "$(id -u)" -ne 0 ]; then echo "slurm_jobs: skipped: the Slurm daemons need root"; exit 77; fi
for tool in munged slurmctld slurmd sbatch squeue; do
  command -v $tool >/dev/null || { echo "slurm_jobs: skipped: $tool is missing (scripts/setup.sh --test)"; exit 77; }
done
work=$(mktemp -d)
cluster=$work/cluster
cleanup() {
  bash "$source_dir/scripts/slurm/local_cluster.sh" stop "$cluster"
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "slurm_jobs: $*" >&2
  for f in "$work"/*.out "$cluster"/log/slurmctld.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
  exit 1
}
eval "$(bash "$source_dir/scripts/slurm/local_cluster.sh" start "$cluster" 4)"
export CNNPAR=$cnnpar
cd "$work"

# Waits until none of the given jobs (nor the jobs they submitted) is queued or running.
wait_idle() {
  local limit_s=$1
  for ((i = 0; i < limit_s * 2; i++)); do
    [ -z "$(squeue -h -o %i)" ] && return 0
    sleep 0.5
  done
  squeue >&2
  fail "jobs still queued after $limit_s s"
}

# The sweep: 2 bandwidths × 2 strategies × 9 node counts = 36 rows, 9 per shard.
sweep=(--axis network.bandwidth=1Gbps,10Gbps --axis strategy=dp,lee --nodes 1-9 --uneven-batch)
"$cnnpar" sweep "${sweep[@]}" --csv unsharded.csv -q
sbatch --parsable --array=0-3 --output="$work/sweep_%a.out" "$source_dir/scripts/slurm/sweep.sbatch" \
  "$work/merged.csv" "${sweep[@]}" -q >/dev/null
wait_idle 180
[ -f merged.csv ] || fail "the merge job wrote no merged.csv ($(cat merged.csv.shards/merge.out 2>/dev/null))"
cmp unsharded.csv merged.csv || fail "the merged CSV of 4 Slurm array tasks differs from the unsharded sweep"
for i in 0 1 2 3; do
  [ -f "merged.csv.shards/shard-$i.csv.shard.json" ] || fail "array task $i left no shard manifest"
done

# A 2-rank run, launched by MPICH's mpiexec inside the allocation, then by srun.
run=(--network "$source_dir/tests/real/data/tiny-cifar.json" --strategy dp --batch 16 --iterations 3 --platform local)
sbatch --parsable -N 2 --output="$work/run_mpiexec.out" "$source_dir/scripts/slurm/run.sbatch" "${run[@]}" \
  --trace "$work/run_mpiexec.json" >/dev/null
CNNPAR_MPIEXEC="srun --mpi=pmi2" sbatch --parsable -N 2 --output="$work/run_srun.out" \
  "$source_dir/scripts/slurm/run.sbatch" "${run[@]}" --trace "$work/run_srun.json" >/dev/null
wait_idle 180
for launcher in mpiexec srun; do
  trace=run_$launcher.json
  [ -f "$trace" ] || fail "the run through $launcher wrote no trace"
  # The trace says how many ranks ran and that their weights ended identical.
  grep -q '"ranks": 2' "$trace" || grep -q '"ranks":2' "$trace" || fail "$trace does not have 2 ranks"
  grep -Eq '"weights_identical_across_ranks": ?true' "$trace" || fail "$trace: the ranks' weights differ"
done
echo "slurm_jobs: 4-task sweep array merged = unsharded (cmp); 2-rank runs through mpiexec and srun --mpi=pmi2"
