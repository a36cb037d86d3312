#!/usr/bin/env bash
# run_flag.sh CNNPAR NETWORK
# `cnnpar run --testbed NAME` and `cnnpar calibrate --testbed NAME` launch through an existing
# testbed: the ranks run on its nodes (the trace's metadata.hosts are the node hostnames), and
# the testbed is left as it was. Exits 77 (skipped) when not root.
set -u
cnnpar=$(realpath "$1"); network=$(realpath "$2")
[ "$(id -u)" -eq 0 ] || { echo "run_flag: skipped, the testbed needs root"; exit 77; }
name=tba-runflag
work=$(mktemp -d); trap 'rm -rf "$work"; "$cnnpar" testbed destroy --name "$name" -q' EXIT
fail() { echo "run_flag: FAIL: $*"; exit 1; }
"$cnnpar" testbed create --name "$name" --nodes 3 --bandwidth 1Gbps -q || fail "create"
"$cnnpar" run --network "$network" --nodes 2 --batch 16 --iterations 2 --compute sleep --testbed "$name" \
  --trace "$work/trace.json" --no-predict -q || fail "cnnpar run --testbed"
hosts=$(python3 -c 'import json, sys; print(",".join(json.load(open(sys.argv[1]))["metadata"]["hosts"]))' "$work/trace.json")
[ "$hosts" = "$name-n0,$name-n1" ] || fail "ranks ran on '$hosts', not on $name-n0,$name-n1"
"$cnnpar" calibrate --network "$network" --nodes 2 --batch 2 --repeats 1 --max-message 65536 --testbed "$name" \
  --out "$work/platform.json" >"$work/calibrate.log" 2>&1 || { cat "$work/calibrate.log"; fail "cnnpar calibrate --testbed"; }
grep -q "(measured)" "$work/calibrate.log" || fail "calibrate measured no network between the nodes"
[ "$(ip netns list | grep -cE "^$name-(sw|n[0-9]+)( |$)")" -eq 4 ] || fail "the testbed did not stay as it was"
echo "run_flag: ok (ranks on $hosts; calibrate ran across the testbed; testbed kept)"
