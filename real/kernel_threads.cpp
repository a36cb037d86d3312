// The kernels' threads: the GEMM back-ends' thread counts and the arena of the own loops.
#include "real/kernels.hpp"

#include <cblas.h>
#ifdef CNNPAR_HAVE_ONEDNN
// The OpenMP API function (libgomp, linked by real/CMakeLists.txt); omp.h would need -fopenmp
// with some compilers.
extern "C" void omp_set_num_threads(int threads);
extern "C" int omp_get_max_threads();
#endif
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <cstddef>
#include <memory>

#include "base/error.hpp"
#include "real/kernel_loops.hpp"

namespace cnnpar::real {
namespace kernel_loops {

int g_threads = 1;
// The own loops' workers: an arena of g_threads (the calling thread joins it), so the loops
// never take more cores than the GEMMs were given.
std::unique_ptr<tbb::task_arena> g_arena;

}  // namespace kernel_loops

namespace {

// oneTBB caps its workers at the cores by default; --threads above that is the user's choice.
std::unique_ptr<tbb::global_control> g_parallelism;

}  // namespace

using kernel_loops::g_arena;
using kernel_loops::g_threads;

void set_compute_threads(int blas_threads, int loop_threads) {
  CNNPAR_ASSERT(blas_threads >= 1 && loop_threads >= 1, "thread counts must be positive");
  openblas_set_num_threads(blas_threads);
#ifdef CNNPAR_HAVE_ONEDNN
  omp_set_num_threads(blas_threads);  // dnnl_sgemm's threads (Debian builds oneDNN on OpenMP)
#endif
  if (loop_threads != g_threads || (loop_threads > 1 && !g_arena)) {
    g_arena.reset();
    g_parallelism.reset();
    if (loop_threads > 1) {
      g_parallelism = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                            std::size_t(loop_threads));
      g_arena = std::make_unique<tbb::task_arena>(loop_threads);
    }
  }
  g_threads = loop_threads;
}

void set_compute_threads(int threads) { set_compute_threads(threads, threads); }

int compute_threads() { return g_threads; }

SerialGemmScope::SerialGemmScope() : openblas_threads_(openblas_get_num_threads()) {
#ifdef CNNPAR_HAVE_ONEDNN
  openmp_threads_ = omp_get_max_threads();
#endif
  openblas_set_num_threads(1);
  serial_gemm_on_this_thread();
}

SerialGemmScope::~SerialGemmScope() {
  openblas_set_num_threads(openblas_threads_);
#ifdef CNNPAR_HAVE_ONEDNN
  omp_set_num_threads(openmp_threads_);
#endif
}

void serial_gemm_on_this_thread() {
#ifdef CNNPAR_HAVE_ONEDNN
  if (gemm_backend() == GemmBackend::onednn) omp_set_num_threads(1);
#endif
}

}  // namespace cnnpar::real
