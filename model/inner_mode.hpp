#pragma once
// How a node runs a conv layer's forward and weight-gradient GEMM ops: the executor's choice
// (cnnpar-run --inner) and the engines' pricing of it (Platform nodes.inner).
#include <string>

namespace cnnpar {

/** gemm = im2col + one GEMM on the compute threads; dag = BPT-CNN's inner-layer task DAG
 *  (Sec. 4), whose tasks extract their own convolution areas, so the im2col ops' work is
 *  inside the GEMM ops. */
enum class InnerMode { gemm, dag };
const char* to_string(InnerMode mode);
/** "gemm" | "dag". @throws InputError(file, path, text, reason) for another name. */
InnerMode parse_inner_mode(const std::string& text, const std::string& file, const std::string& path);

}  // namespace cnnpar
