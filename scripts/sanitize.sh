#!/usr/bin/env bash
# Sanitizer runs (CI calls both after the release tests). Extra arguments go to ctest.
#   bash scripts/sanitize.sh asan   ASan+UBSan build in build-asan; the whole unit and
#                                   integration suite, MPI tests included. Built with clang
#                                   and the libFuzzer targets when clang is installed, so
#                                   `fuzz.sh --build build-asan` needs no build of its own.
#   bash scripts/sanitize.sh tsan   TSan build in build-tsan of cnnpar-run and the MPI tests;
#                                   runs the executor's communication-thread mode (--progress
#                                   thread) and the MPI interpreter tests on 2 ranks.
# Every sanitizer report of every process, children whose output a test swallows included,
# goes to a file under <build>/sanitizer-logs; any such file fails the run even when the
# test itself passed (a test expecting a non-zero status would hide an abort otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mode=${1:-asan}
[ $# -gt 0 ] && shift
source scripts/build_env.sh
compiler=()
supp=$root/scripts/sanitizers

case $mode in
  asan)
    build=build-asan
    sanitize=address,undefined
    targets=(all)
    if libfuzzer_available; then
      compiler=(-DCMAKE_CXX_COMPILER=clang++ -DCNNPAR_FUZZ=ON)
    fi
    ;;
  tsan)
    build=build-tsan
    sanitize=thread
    targets=(cnnpar-run test_real_interpreter_mpi cnnpar_trace_check cnnpar_weights_compare)
    # The tiny-network runs (plain dp and the communication thread, whose weights must agree)
    # and the interpreter's own tests of every collective kind in both progress modes.
    tests='^(real_run_tiny_dp_np1|real_run_tiny_thread_np2|real_trace_tiny_thread|real_weights_tiny|real_interpreter_mpi_np2)$'
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan [ctest arguments]" >&2
    exit 2
    ;;
esac

# Benchmarks are programs, not tests: left out of the sanitized build.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCNNPAR_SANITIZE=$sanitize -DCNNPAR_BUILD_BENCH=OFF \
      "${compiler[@]}" "${launcher[@]}" >/dev/null
start=$(date +%s)
cmake --build "$build" -j"$jobs" --target "${targets[@]}"
echo "sanitize.sh $mode: build took $(( $(date +%s) - start )) s"

logs=$root/$build/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=1:check_initialization_order=1:strict_init_order=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="log_path=$logs/ubsan:print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="log_path=$logs/tsan:suppressions=$supp/tsan.supp:print_suppressions=0:second_deadlock_stack=1"
if [ "$mode" = tsan ]; then
  # UCX (MPICH's ch4:ucx transport) hooks madvise; a thread that exits after TSan tore down
  # its state then crashes in TSan's rwlock interceptor (SIGSEGV even for --version).
  # Without the memory-event hooks UCX only gives up caching memory registrations (speed, not
  # correctness); nothing in MPICH or cnnpar is suppressed.
  export UCX_MEM_EVENTS=no
fi

start=$(date +%s)
status=0
(
  cd "$build"
  if [ "$mode" = tsan ]; then
    ctest --output-on-failure -j"$jobs" --timeout 900 -R "$tests" "$@"
  else
    ctest --output-on-failure -j"$jobs" --timeout 900 "$@"
  fi
) || status=$?
echo "sanitize.sh $mode: tests took $(( $(date +%s) - start )) s"

# One warning is not a finding, and is dropped here (only when nothing else is in the file):
# clang (unlike gcc) calls __asan_handle_no_return before every [[noreturn]] call, and in the
# SimGrid engine's forked children (sim/simgrid/simgrid_engine.cpp: start_child -> run_child,
# which ends in _exit) ASan takes the stack to span ~78 GB, declines to unpoison it and warns
# "False positive error reports may follow". It reports no error itself; an error that
# followed would be a report of its own and still fail the run.
ignored=0
for f in $(find "$logs" -type f); do
  if ! grep -qv -e '^==[0-9]*==WARNING: ASan is ignoring requested __asan_handle_no_return: ' \
                -e '^False positive error reports may follow$' \
                -e '^For details see https://github.com/google/sanitizers/issues/189$' "$f"; then
    rm -f "$f"
    ignored=$((ignored + 1))
  fi
done
[ "$ignored" -eq 0 ] || echo "sanitize.sh $mode: $ignored process(es) logged only the __asan_handle_no_return warning (not a finding: scripts/sanitize.sh says why)"
reports=$(find "$logs" -type f | sort)
if [ -n "$reports" ]; then
  for f in $reports; do
    echo "==== $f"
    cat "$f"
  done
  echo "sanitize.sh $mode: FAIL: $(echo "$reports" | wc -l) sanitizer report file(s) above" >&2
  exit 1
fi
[ "$status" -eq 0 ] || { echo "sanitize.sh $mode: FAIL: ctest status $status" >&2; exit "$status"; }
echo "sanitize.sh $mode: clean"
