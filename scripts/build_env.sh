# Sourced by build.sh, sanitize.sh, fuzz.sh and test.sh: the settings every build shares.
#   jobs      the machine's cores (nproc honours OMP_NUM_THREADS, which test.sh sets to 1
#             for the tests, so it is asked with that unset)
#   launcher  cmake arguments that compile through ccache when it is installed; paths are
#             taken relative to the checkout and the precompiled headers are allowed, so a
#             second checkout of the same sources (a CI clone) reuses the cache
#   libfuzzer_available  true when clang++ and libFuzzer's runtime (Debian: clang,
#             libclang-rt-14-dev) are installed
jobs=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
fi
libfuzzer_available() {
  command -v clang++ >/dev/null &&
    compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null
}
