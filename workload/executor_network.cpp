#include "workload/executor_network.hpp"

#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"

namespace cnnpar {

void check_executor_network(const Network& network, const std::string& file) {
  const int L = int(network.layers.size());
  if (L == 0) throw InputError(file, "/layers", "[]", "the real executor needs at least an fc and a softmax layer");
  // Channel-major (C, n, H, W) tensors up to an fc layer, rows (n, K) after it; per layer.
  std::vector<char> channel_major(std::size_t(L), 0);
  for (int l = 0; l < L; ++l) {
    const Layer& layer = network.layers[std::size_t(l)];
    const LayerSpec& spec = layer.spec;
    const std::string path = fmt::format("/layers/{}", l);
    bool reads_rows = false;
    for (const int read : layer.inputs)  // -1: the network input, channel-major
      reads_rows = reads_rows || (read >= 0 && !channel_major[std::size_t(read)]);
    channel_major[std::size_t(l)] = spec.kind != LayerKind::fc && spec.kind != LayerKind::softmax && !reads_rows;
    switch (spec.kind) {
      case LayerKind::conv:
      case LayerKind::pool:
      case LayerKind::batchnorm:
      case LayerKind::add:
      case LayerKind::concat:
        if (reads_rows)
          throw InputError(file, path, spec.name,
                           fmt::format("the real executor cannot run a {} layer after an fc layer", to_string(spec.kind)));
        if (spec.kind == LayerKind::pool && spec.ceil && spec.pool_mode == PoolMode::avg)
          throw InputError(file, path + "/ceil", spec.name,
                           fmt::format("the real executor's average pooling divides by the whole window, which "
                                       "an overhanging ceil-mode window is not; network {} has a ceil-mode "
                                       "average pool here (the engines predict it, and --compute sleep runs its "
                                       "communication for real)", network.name));
        break;
      case LayerKind::softmax:
        if (l != L - 1)
          throw InputError(file, path, spec.name, "the real executor needs softmax as the last layer only");
        if (!reads_rows)
          throw InputError(file, path, spec.name,
                           "the real executor's loss needs logits from an fc layer before the softmax; the network "
                           "has no fc layer");
        break;
      default:
        break;
    }
  }
  const LayerSpec& last = network.layers.back().spec;
  if (last.kind != LayerKind::softmax)
    throw InputError(file, fmt::format("/layers/{}", L - 1), to_string(last.kind),
                     "the real executor needs a softmax last layer");
}

}  // namespace cnnpar
