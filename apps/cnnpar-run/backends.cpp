// The GEMM back-end and the compute threads of every kernel of this process (--gemm,
// --threads, OPENBLAS_NUM_THREADS).
#include "apps/cnnpar-run/backends.hpp"

#include <cstdlib>

#include "base/error.hpp"
#include "real/kernels.hpp"

namespace cnnpar::executor {

void configure_compute(const Options& o) {
  int threads = o.threads;
  if (threads == 0) {
    threads = 1;
    if (const char* env = std::getenv("OPENBLAS_NUM_THREADS"); env && *env) {
      char* end = nullptr;
      const long value = std::strtol(env, &end, 10);
      if (*end != '\0' || value < 1 || value > 1024)
        throw InputError("environment", "/OPENBLAS_NUM_THREADS", env, "must be an integer in [1, 1024]");
      threads = int(value);
    }
  }
  set_gemm_backend(parse_gemm_backend(o.gemm, "command line", "/gemm"));
  set_compute_threads(threads);
}

}  // namespace cnnpar::executor
