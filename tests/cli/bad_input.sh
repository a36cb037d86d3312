#!/usr/bin/env bash
# bad_input.sh CNNPAR CNNPAR_RUN(or -) CASES FIXTURES
# Runs every case of CASES (tests/cli/bad_input_cases.txt) and checks the promise of the
# README's "Failure behaviour": exit status 2, exactly one line on stderr that names the file or
# flag, the JSON path and the value ("FILE: PATH: REASON (value: VALUE)"), nothing on stdout,
# and no file left behind in the case's working folder.
set -u
cnnpar=$(realpath "$1"); cnnpar_run=$2; cases=$3; fixtures=$(realpath "$4")
[ "$cnnpar_run" = "-" ] || cnnpar_run=$(realpath "$cnnpar_run")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
generated=$work/generated; mkdir -p "$generated"

# Inputs too big to keep in the repository, or made by cnnpar itself.
printf '%*s' 100000 '' | tr ' ' '[' >"$generated/deep_array.json"
{ printf '{"name": "deep", "layers": '; printf '%*s' 100000 '' | sed 's/ /{"a": /g'; } >"$generated/deep_object.json"
"$cnnpar" trace --network "$fixtures/../../real/data/tiny-cifar.json" --platform local --strategy dp --nodes 2 \
  --batch 16 --out "$generated/tiny_dp_2.json" -q &&
"$cnnpar" trace --network "$fixtures/../../real/data/tiny-cifar.json" --platform local --strategy dp_layerwise \
  --nodes 2 --batch 16 --out "$generated/tiny_layerwise_2.json" -q &&
"$cnnpar" trace --network vgg-a-32 --platform local --strategy dp --nodes 2 --batch 16 \
  --out "$generated/vgg_dp_2.json" -q &&
"$cnnpar" trace --network "$fixtures/../../real/data/tiny-cifar.json" --platform cori-haswell --strategy dp --nodes 4 \
  --batch 16 --out "$generated/tiny_dp_4.json" -q || { echo "bad_input: cannot make the trace fixtures"; exit 1; }

# `cnnpar fit` exists only in builds with GSL (CNNPAR_WITH_GSL); its cases run when it does.
# Shards of two sweeps for the --merge cases: a 2-shard sweep (a0, a1) and another's shard 1 (b1).
"$cnnpar" sweep --strategy dp --nodes 1,2 --shard 0/2 --csv "$generated/a0.csv" -q &&
"$cnnpar" sweep --strategy dp --nodes 1,2 --shard 1/2 --csv "$generated/a1.csv" -q &&
"$cnnpar" sweep --strategy dp --nodes 1,4 --shard 1/2 --csv "$generated/b1.csv" -q &&
cp "$generated/a1.csv" "$generated/a1_unfinished.csv" || { echo "bad_input: cannot make the shard fixtures"; exit 1; }

have_fit=1; "$cnnpar" fit --help >/dev/null 2>&1 || have_fit=0

total=0; failed=0
while IFS='|' read -r name want_file want_path want_value command; do
  case "$name" in ''|'#'*) continue ;; esac
  total=$((total + 1))
  case_dir=$work/case_$total; mkdir -p "$case_dir"
  command=${command//\{D\}/$fixtures}; command=${command//\{G\}/$generated}; command=${command//\{T\}/$case_dir}
  read -ra args <<<"$command"
  case "${args[0]}" in
    cnnpar) if [ "${args[1]}" = fit ] && [ $have_fit = 0 ]; then total=$((total - 1)); continue; fi; args[0]=$cnnpar ;;
    cnnpar-run) if [ "$cnnpar_run" = "-" ]; then total=$((total - 1)); continue; fi; args[0]=$cnnpar_run ;;
    setpriv)  # cnnpar as another user: needs setpriv and root to switch
      if ! command -v setpriv >/dev/null || [ "$(id -u)" -ne 0 ]; then total=$((total - 1)); continue; fi
      for i in "${!args[@]}"; do [ "${args[$i]}" = cnnpar ] && args[$i]=$cnnpar; done ;;
  esac
  before=$(cd "$case_dir" && find . | sort)
  (cd "$case_dir" && timeout -k 5 120 "${args[@]}" >"$work/out" 2>"$work/err")
  status=$?
  after=$(cd "$case_dir" && find . | sort)
  err_lines=$(grep -c . "$work/err")
  message=$(head -n 1 "$work/err")
  problems=""
  [ "$status" -eq 2 ] || problems+=" status $status (wanted 2);"
  [ "$err_lines" -eq 1 ] || problems+=" $err_lines lines on stderr (wanted 1);"
  [ -s "$work/out" ] && problems+=" output on stdout;"
  for field in want_file want_value; do
    value=${!field}; value=${value//\{D\}/$fixtures}; value=${value//\{G\}/$generated}; value=${value//\{T\}/$case_dir}
    printf -v "$field" '%s' "$value"
  done
  case "$message" in *"$want_file: $want_path: "*) ;; *) problems+=" message does not name '$want_file: $want_path';" ;; esac
  if [ "$want_value" != "*" ]; then
    case "$message" in *"(value: $want_value"*) ;; *) problems+=" message does not show the value '$want_value';" ;; esac
  fi
  [ "$before" = "$after" ] || problems+=" files left behind: $(diff <(echo "$before") <(echo "$after") | grep '^>' | tr '\n' ' ');"
  if [ -n "$problems" ]; then
    failed=$((failed + 1))
    echo "FAIL $name:$problems"
    echo "     command: ${args[*]}"
    sed 's/^/     stderr: /' "$work/err" | head -n 5
  else
    echo "ok   $name: $message"
  fi
done <"$cases"
echo "bad_input: $((total - failed)) of $total cases passed"
[ "$total" -ge 60 ] || { echo "bad_input: fewer than 60 cases"; exit 1; }
[ "$failed" -eq 0 ]
