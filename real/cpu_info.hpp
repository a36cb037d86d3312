#pragma once
// What the executor's kernels run on, for traces and benchmarks: a measurement of speed means
// little without the CPU, its vector extensions and the kernels each library picked for it.
#include <nlohmann/json.hpp>

namespace cnnpar::real {

/** {"model": /proc/cpuinfo's model name, "flags": its vector extensions (avx2, avx512f, ...,
 *  amx_bf16), "openblas_core": openblas_get_corename(), "onednn_isa": the ISA oneDNN's kernels
 *  use (dnnl_get_effective_cpu_isa; "none" without oneDNN)}. */
nlohmann::json kernel_machine();

}  // namespace cnnpar::real
