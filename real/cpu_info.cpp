#include "real/cpu_info.hpp"

#include <cblas.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#ifdef CNNPAR_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

extern "C" char* openblas_get_corename(void);

namespace cnnpar::real {
namespace {

constexpr const char* kVectorFlags[] = {"avx",         "avx2",        "fma",         "avx512f",  "avx512bw",
                                        "avx512vl",    "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16"};

std::string onednn_isa() {
#ifdef CNNPAR_HAVE_ONEDNN
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
#else
  return "none";
#endif
}

}  // namespace

nlohmann::json kernel_machine() {
  std::string model = "unknown";
  std::set<std::string> present;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && model == "unknown") model = value;
    if (key == "flags" && present.empty()) {
      std::istringstream words(value);
      for (std::string word; words >> word;) present.insert(word);
    }
  }
  nlohmann::json flags = nlohmann::json::array();
  for (const char* flag : kVectorFlags)
    if (present.count(flag)) flags.push_back(flag);
  const char* core = openblas_get_corename();
  return {{"model", model}, {"flags", flags}, {"openblas_core", core ? core : "unknown"}, {"onednn_isa", onednn_isa()}};
}

}  // namespace cnnpar::real
