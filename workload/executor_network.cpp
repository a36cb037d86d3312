#include "workload/executor_network.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace cnnpar {

void check_executor_network(const Network& network, const std::string& file) {
  const int L = int(network.layers.size());
  if (L == 0) throw InputError(file, "/layers", "[]", "the real executor needs at least an fc and a softmax layer");
  if (const int g = network.first_graph_layer(); g >= 0) {
    const LayerSpec& spec = network.layers[std::size_t(g)].spec;
    throw InputError(file, fmt::format("/layers/{}", g), spec.name,
                     fmt::format("the real executor runs chains of conv (with biases), pool, relu, lrn, dropout, fc "
                                 "and softmax layers; network {} has {} here (the engines predict it, and "
                                 "--compute sleep runs its communication for real)", network.name, network.graph_feature(g)));
  }
  // Channel-major (C, n, H, W) tensors up to the first fc layer, rows (n, K) after it.
  bool channel_major = network.layers.front().spec.kind != LayerKind::fc;
  for (int l = 0; l < L; ++l) {
    const LayerSpec& spec = network.layers[std::size_t(l)].spec;
    const std::string path = fmt::format("/layers/{}", l);
    switch (spec.kind) {
      case LayerKind::conv:
      case LayerKind::pool:
        if (!channel_major)
          throw InputError(file, path, spec.name,
                           fmt::format("the real executor cannot run a {} layer after an fc layer", to_string(spec.kind)));
        break;
      case LayerKind::fc:
        channel_major = false;
        break;
      case LayerKind::softmax:
        if (l != L - 1)
          throw InputError(file, path, spec.name, "the real executor needs softmax as the last layer only");
        if (channel_major)
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
