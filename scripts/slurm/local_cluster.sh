#!/usr/bin/env bash
# A throw-away Slurm on this machine, for trying the batch scripts beside it and for the slurm
# ctest: munged, slurmctld and NODES slurmd daemons (node names n1..nNODES, all on localhost,
# one CPU each), every file in DIR, free ports picked at start. Needs root (the daemons run as
# root) and Debian's slurmctld, slurmd, slurm-client and munge (`scripts/setup.sh --test`).
#
#   local_cluster.sh start DIR [NODES]   # NODES = 2..8, default 4; prints `export SLURM_CONF=...`
#   local_cluster.sh stop DIR            # cancels every job, stops the daemons, removes DIR
#
# Inside: SLURM_CONF=DIR/slurm.conf for sbatch, squeue, srun; munged's socket is DIR/munge.sock.
set -euo pipefail
usage() { echo "usage: local_cluster.sh start DIR [NODES] | stop DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
action=$1 dir=$2

start() {
  local nodes=${1:-4}
  [[ $nodes =~ ^[2-8]$ ]] || { echo "local_cluster.sh: NODES must be 2..8 (given: $nodes)" >&2; exit 2; }
  [ "$(id -u)" -eq 0 ] || { echo "local_cluster.sh: the daemons run as root; run as root" >&2; exit 2; }
  for tool in munged slurmctld slurmd sbatch sinfo; do
    command -v $tool >/dev/null || { echo "local_cluster.sh: $tool is missing (scripts/setup.sh --test)" >&2; exit 2; }
  done
  [ ! -e "$dir" ] || [ -z "$(ls -A "$dir")" ] || { echo "local_cluster.sh: $dir is not empty" >&2; exit 2; }
  mkdir -p "$dir"/state "$dir"/log
  dir=$(realpath "$dir")
  # munged refuses a key others can read; --force lets it run as root.
  head -c 1024 /dev/urandom > "$dir/munge.key" && chmod 400 "$dir/munge.key"
  munged --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" --log-file="$dir/log/munged.log" \
    --pid-file="$dir/munged.pid" --seed-file="$dir/munge.seed"
  # A block of nodes + 1 consecutive free TCP ports: slurmctld's, then one per slurmd.
  local base used
  used=$(ss -Htan | awk '{n = split($4, a, ":"); print a[n]}' | sort -u)
  for _ in $(seq 50); do
    base=$((20000 + RANDOM % 30000))
    local clash=0
    for ((p = base; p <= base + nodes; p++)); do grep -qx "$p" <<<"$used" && clash=1; done
    [ $clash = 0 ] && break
  done
  {
    echo "ClusterName=cnnpar-local"
    echo "SlurmctldHost=localhost"
    echo "SlurmctldPort=$base"
    echo "AuthType=auth/munge"
    echo "AuthInfo=socket=$dir/munge.sock"
    echo "CredType=cred/munge"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd.%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd.%n.log"
    # No cgroups: a container may not delegate them.
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    # One CPU per node whatever the machine has: n nodes on a 2-core machine.
    echo "SlurmdParameters=config_overrides"
    echo "ReturnToService=2"
    echo "MpiDefault=none"
    echo "JobCompType=jobcomp/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    for ((n = 1; n <= nodes; n++)); do
      echo "NodeName=n$n NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=1 RealMemory=1000 Port=$((base + n))"
    done
    echo "PartitionName=local Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP"
  } > "$dir/slurm.conf"
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF" -i
  for ((n = 1; n <= nodes; n++)); do
    mkdir -p "$dir/spool/n$n"
    slurmd -f "$SLURM_CONF" -N "n$n"
  done
  for _ in $(seq 60); do
    [ "$(sinfo -h -t idle -o '%D' 2>/dev/null)" = "$nodes" ] && { echo "export SLURM_CONF=$SLURM_CONF"; return 0; }
    sleep 0.5
  done
  echo "local_cluster.sh: the $nodes nodes did not come up in 30 s; logs in $dir/log" >&2
  sinfo >&2 || true
  exit 1
}

stop() {
  [ -d "$dir" ] || return 0
  dir=$(realpath "$dir")
  if [ -f "$dir/slurm.conf" ]; then
    SLURM_CONF=$dir/slurm.conf scancel --full --quiet --partition=local 2>/dev/null || true
    sleep 1
  fi
  # Every daemon names DIR on its command line; jobs' steps end with their slurmd.
  local pids
  for signal in TERM KILL; do
    pids=$(pgrep -f -- "$dir/" || true)
    [ -z "$pids" ] && break
    kill -s $signal $pids 2>/dev/null || true
    for _ in $(seq 20); do pgrep -f -- "$dir/" >/dev/null || break; sleep 0.25; done
  done
  rm -rf "$dir"
}

case $action in
  start) start "${3:-}" ;;
  stop) stop ;;
  *) usage ;;
esac
