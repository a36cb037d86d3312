#!/usr/bin/env bash
# `cnnpar sweep --shard I/N` and `--merge`: the shards are disjoint, cover the sweep, and merged
# in any order give the unsharded sweep's CSV byte for byte (`cmp`); a shard cut short (its
# manifest gone, rows lost, a torn last line) resumes and computes only its missing rows; a
# shard with more shards than rows is empty; an edited shard is refused by the fingerprint.
# Usage: sweep_shards.sh CNNPAR
set -euo pipefail
cnnpar=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "sweep_shards: $*" >&2; exit 1; }

# 3 bandwidths × 2 strategies × 7 node counts = 42 rows, analytic (well under a second).
sweep=(sweep --axis network.bandwidth=1Gbps,10Gbps,100Gbps --axis strategy=dp,lee --nodes 1-13:2 --uneven-batch)
rows=42
"$cnnpar" "${sweep[@]}" --csv full.csv -q
[ "$(($(wc -l < full.csv) - 1))" -eq $rows ] || fail "the unsharded sweep has $(wc -l < full.csv) lines"

for n in 1 4 5; do
  shards=()
  for ((i = n - 1; i >= 0; i--)); do  # last first: the merge orders them
    "$cnnpar" "${sweep[@]}" --shard "$i/$n" --csv "s${n}_$i.csv" --json "s${n}_$i.json" -q
    [ -s "s${n}_$i.csv.shard.json" ] || fail "shard $i/$n wrote no manifest"
    # Shard i holds rows t with t mod n = i: ceil((rows - i) / n) of them.
    want=$(((rows - i + n - 1) / n))
    got=$(($(wc -l < "s${n}_$i.csv") - 1))
    [ "$got" -eq "$want" ] || fail "shard $i/$n has $got rows, expected $want"
    shards+=("s${n}_$i.csv")
  done
  # Disjoint and covering: the shards' rows, sorted, are the full sweep's.
  cmp <(tail -q -n +2 "${shards[@]}" | sort) <(tail -n +2 full.csv | sort) || fail "the $n shards' rows are not the sweep's"
  "$cnnpar" sweep --merge "merged_$n.csv" "${shards[@]}" -q
  cmp full.csv "merged_$n.csv" || fail "$n shards merged differ from the unsharded sweep"
done
grep -q '"count": 4' s4_2.json || fail "a shard's --json does not name its shard"

# A shard cut short: its manifest gone, two rows lost and a torn line; the rerun completes it.
cp s4_1.csv cut.csv
head -n 8 cut.csv > cut_rows.csv && printf 'vgg-a,cori-hasw' >> cut_rows.csv && mv cut_rows.csv s4_1.csv
rm s4_1.csv.shard.json
if "$cnnpar" sweep --merge merged_cut.csv s4_0.csv s4_1.csv s4_2.csv s4_3.csv -q 2>err.txt; then
  fail "an unfinished shard was merged"
fi
grep -q "did not finish" err.txt || fail "the merge of an unfinished shard says: $(cat err.txt)"
[ ! -e merged_cut.csv ] || fail "a refused merge left merged_cut.csv"
"$cnnpar" "${sweep[@]}" --shard 1/4 --csv s4_1.csv 2>resume.txt
cmp cut.csv s4_1.csv || fail "the resumed shard differs from the uninterrupted one"
grep -q "7 of 11 rows already done, computing 4" resume.txt || fail "the resumed shard says: $(cat resume.txt)"
"$cnnpar" sweep --merge merged_resumed.csv s4_3.csv s4_1.csv s4_0.csv s4_2.csv -q
cmp full.csv merged_resumed.csv || fail "the merge after a resumed shard differs"

# More shards than rows: the last ones are empty and still merge.
small=(sweep --axis strategy=dp,lee --nodes 2 -q)
"$cnnpar" "${small[@]}" --csv small.csv
for i in 0 1 2; do "$cnnpar" "${small[@]}" --shard "$i/3" --csv "small_$i.csv"; done
[ "$(wc -l < small_2.csv)" -eq 1 ] || fail "shard 2/3 of a 2-row sweep is not empty"
"$cnnpar" sweep --merge small_merged.csv small_0.csv small_1.csv small_2.csv -q
cmp small.csv small_merged.csv || fail "the merge with an empty shard differs"

# An edited row: same count, other values in a key column.
sed -i '2s/,dp,/,dp_layerwise,/' s4_0.csv
if "$cnnpar" sweep --merge merged_edit.csv s4_0.csv s4_1.csv s4_2.csv s4_3.csv -q 2>err.txt; then
  fail "a shard with an edited row was merged"
fi
grep -q "fingerprint" err.txt || fail "the merge of an edited shard says: $(cat err.txt)"
echo "sweep_shards: 1, 4 and 5 shards merge to the unsharded CSV; a cut shard resumes; edits are refused"
