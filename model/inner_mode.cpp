#include "model/inner_mode.hpp"

#include "base/error.hpp"

namespace cnnpar {

const char* to_string(InnerMode mode) { return mode == InnerMode::dag ? "dag" : "gemm"; }

InnerMode parse_inner_mode(const std::string& text, const std::string& file, const std::string& path) {
  if (text == "gemm") return InnerMode::gemm;
  if (text == "dag") return InnerMode::dag;
  throw InputError(file, path, text, "expected gemm or dag");
}

}  // namespace cnnpar
