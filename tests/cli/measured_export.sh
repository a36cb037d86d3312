#!/bin/sh
# A measured trace (cnnpar-run's, from the test real_cli_run_np2) exports like a predicted one:
# `trace --from` writes its Chrome trace and per-layer CSV, and `compare --per-layer` sets a
# prediction of the same configuration beside it, layer by layer.
# Usage: measured_export.sh CNNPAR MEASURED.json
set -eu
cnnpar=$1
measured=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
cd "$work"
"$cnnpar" trace --from "$measured" --chrome chrome.json --layers-csv layers.csv --per-layer > export.txt
# Every compute op of the trace is one complete ("X") event on its rank's thread 0.
ops=$(grep -o '"op":' "$measured" | wc -l)
events=$(grep -o '"ph":"X"' chrome.json | wc -l)
[ "$events" -ge "$ops" ] || { echo "measured_export: $events X events for $ops compute ops" >&2; exit 1; }
head -1 layers.csv | grep -q '^network,platform,engine,strategy,options,batch,nodes,layer,name,phase,compute_s,comm_s,exposed_comm_s,bytes$'
# Every row is the real engine's, and the conv layers carry gradient bytes.
[ "$(tail -n +2 layers.csv | cut -d, -f3 | sort -u)" = real ] || { echo "measured_export: rows of another engine" >&2; exit 1; }
grep -q ',conv1,backward_weight,' layers.csv
grep -q '^per layer, per iteration' export.txt
"$cnnpar" trace --like "$measured" --columns recomputed --out predicted.json -q
"$cnnpar" compare predicted.json "$measured" --per-layer > compare.txt
grep -q 'pred/meas' compare.txt
grep -q '^conv1 ' compare.txt
echo "measured_export: $events events, $(($(wc -l < layers.csv) - 1)) layer rows"
