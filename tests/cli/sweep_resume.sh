#!/usr/bin/env bash
# `cnnpar sweep` is resumable: a sweep killed half-way (SIGINT, then SIGTERM) keeps every row it
# finished, whole and unchanged; the rerun computes exactly the missing rows and ends with the
# CSV an uninterrupted sweep writes. A torn last line (a kill while writing) is cut and redone.
# Usage: sweep_resume.sh CNNPAR [NODES]
# NODES (default 16,32,64) are the sweep's three node counts; sanitized builds, about 4x slower,
# pass smaller ones (8,16,32) so that one sweep still takes several seconds, not twenty.
set -euo pipefail
cnnpar=$1
nodes=${2:-16,32,64}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# 6 points × 3 node counts on the SimGrid engine, about 4 s on 2 cores: slow enough to stop
# (one message per ring step, --ring-messages 0, keeps it that slow).
sweep=(sweep --engine simgrid --ring-messages 0 --strategy dp --nodes "$nodes" -j 1
       --axis network.bandwidth=1Gbps,2Gbps,4Gbps,8Gbps,16Gbps,32Gbps)
rows=18
"$cnnpar" "${sweep[@]}" --csv full.csv -q
[ "$(($(wc -l < full.csv) - 1))" -eq $rows ] || { echo "sweep_resume: the full sweep has $(wc -l < full.csv) lines" >&2; exit 1; }

for signal in INT TERM; do
  rm -f part.csv
  "$cnnpar" "${sweep[@]}" --csv part.csv -q &
  pid=$!
  sleep 1.5
  kill -s $signal $pid
  status=0
  wait $pid || status=$?
  expected=$([ $signal = INT ] && echo 130 || echo 143)
  [ $status -eq "$expected" ] || { echo "sweep_resume: SIG$signal gave status $status, not $expected" >&2; exit 1; }
  # Whole rows only: the file ends with a line break, every row has the header's field count.
  [ "$(tail -c 1 part.csv | od -An -c | tr -d ' ')" = '\n' ] || { echo "sweep_resume: a torn row after SIG$signal" >&2; exit 1; }
  fields=$(head -1 part.csv | tr ',' '\n' | wc -l)
  awk -F, -v n="$fields" 'NF != n { exit 1 }' part.csv
  done_rows=$(($(wc -l < part.csv) - 1))
  [ $done_rows -lt $rows ] || { echo "sweep_resume: SIG$signal came after the sweep ended" >&2; exit 1; }
  cp part.csv before.csv
  "$cnnpar" "${sweep[@]}" --csv part.csv --json part.json 2> rerun.txt
  computed=$(grep -o '"rows_computed": [0-9]*' part.json | grep -o '[0-9]*$')
  [ "$computed" -eq $((rows - done_rows)) ] ||
    { echo "sweep_resume: after SIG$signal with $done_rows rows done the rerun computed $computed" >&2; exit 1; }
  if [ $done_rows -gt 0 ]; then
    grep -q "$done_rows of $rows rows already done, computing $((rows - done_rows))" rerun.txt
  fi
  # Every row finished before the signal is in the result byte for byte, and the result is
  # the uninterrupted sweep's CSV.
  tail -n +2 before.csv | while IFS= read -r line; do grep -qxF -- "$line" part.csv; done
  cmp part.csv full.csv
  echo "sweep_resume: SIG$signal after $done_rows of $rows rows; the rerun computed $computed"
done

# A torn last line (killed while writing): cut, recomputed, the same result.
head -c -20 full.csv > torn.csv
"$cnnpar" "${sweep[@]}" --csv torn.csv --json torn.json -q
grep -q '"rows_computed": 1' torn.json
cmp torn.csv full.csv
# A finished sweep run again computes nothing.
"$cnnpar" "${sweep[@]}" --csv torn.csv --json again.json -q
grep -q '"rows_computed": 0' again.json
echo "sweep_resume: torn line redone; a finished sweep recomputes nothing"
