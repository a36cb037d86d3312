// The collective exchanges of a Runtime: the buffers of gradient and weight collectives, and
// the transitions that move activations and errors between the ranks' partitions.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "real/kernels.hpp"
#include "real/runtime_impl.hpp"

namespace cnnpar::real {

// Spans [offset, count) of the gradient/weight arrays for the given layers, sorted by offset;
// with `units`, only those rows of the one layer and their biases (conv_split's kernel shares).
std::vector<std::pair<std::int64_t, std::int64_t>> Runtime::Impl::spans(const std::vector<int>& ls,
                                                                         const Range& units) const {
  std::vector<std::pair<std::int64_t, std::int64_t>> s;
  if (units.count > 0) {
    CNNPAR_ASSERT(ls.size() == 1, "a row slice names one layer");
    const LayerState& x = layers.at(std::size_t(ls.front()));
    CNNPAR_ASSERT(units.end() <= x.units_total, "row slice outside the layer");
    s.emplace_back(x.offset + units.begin * x.row_floats, units.count * x.row_floats);
    s.emplace_back(x.offset + x.weights + units.begin, units.count);
    return s;
  }
  for (int l : ls) {
    CNNPAR_ASSERT(l >= 0 && l < int(layers.size()), fmt::format("collective names layer {} out of range", l));
    const LayerState& x = layers[std::size_t(l)];
    if (x.weights + x.biases > 0) s.emplace_back(x.offset, x.weights + x.biases);
  }
  std::sort(s.begin(), s.end());
  return s;
}

// Transitions between partitions. A collective of layer t moves a tensor: `activations` the
// input of t (the output of t − 1, or the network input when t = 0), `errors` the errors of
// t's output. Each rank's source is what it holds of that tensor (the previous layer's output;
// the consumer's input errors, partial sums after a model-parallel layer), its destination
// what it needs (t's input; t's output errors). Blocks are those regions restricted to the
// collective's images, packed in the tensor's layout and padded to the largest member's:
//   allgather       member q's block = its source; everyone unpacks every block it needs;
//   reduce_scatter  block q = q's destination, cut from each member's partial sums;
//   allreduce, reduce  the (common) source region, summed; written back into the source (so
//                   the sums can be sent on) and into the destination;
//   bcast           the root's source; send: the source's part of the destination's need.
Region Runtime::Impl::source_region(int r, const Collective& c) const {
  const int t = c.layers.front();
  if (c.payload == Payload::activations) return t == 0 ? input_region(r, 0) : held_region(r, t - 1);
  CNNPAR_ASSERT(t + 1 < int(layers.size()), "errors transition of the last layer: " + c.label);
  if (partitions[std::size_t(r)][std::size_t(t + 1)].kind == PartitionKind::none) return {};
  return input_region(r, t + 1);
}

Region Runtime::Impl::destination_region(int r, const Collective& c) const {
  const int t = c.layers.front();
  if (partitions[std::size_t(r)][std::size_t(t)].kind == PartitionKind::none) return {};
  if (c.payload == Payload::activations) return input_region(r, t);
  return held_region(r, t);
}

float* Runtime::Impl::source_data(const Collective& c) {
  const int t = c.layers.front();
  if (c.payload == Payload::activations) return t == 0 ? input.data() : layers[std::size_t(t - 1)].out.data();
  LayerState& consumer = layers[std::size_t(t + 1)];
  return consumer.errors != Errors::previous ? consumer.din.data() : layers[std::size_t(t)].err.data();
}

// Null when the rank holds its destination already (a sender, a root that needs no input).
float* Runtime::Impl::destination_data(const Collective& c) {
  const int t = c.layers.front();
  if (c.payload == Payload::errors) return layers[std::size_t(t)].err.data();
  if (t == 0) return input.data();
  LayerState& x = layers[std::size_t(t)];
  return x.input == Input::previous ? nullptr : x.xin.data();  // held already: nothing to deliver
}

CollectiveBuffers Runtime::Impl::prepare_exchange(const Collective& c) {
  const int P = int(c.group.size());
  const auto index_of = [&](int r) { return int(std::find(c.group.begin(), c.group.end(), r) - c.group.begin()); };
  const int me = index_of(rank);
  CNNPAR_ASSERT(me < P, "rank prepares a collective it is not in: " + c.label);
  std::vector<float>& send = staging[c.id];
  std::vector<float>& recv = staging_recv[c.id];
  const Region mine = restrict_images(source_region(rank, c), c.images);
  const auto capacity_of = [&](auto block_of) {
    std::int64_t capacity = 0;
    for (int q : c.group) capacity = std::max(capacity, block_of(q).elements());
    return capacity;
  };
  // The region summed by allreduce/reduce: the members with partial sums agree on it.
  const auto summed_region = [&] {
    for (int q : c.group) {
      const Region region = restrict_images(source_region(q, c), c.images);
      if (region.elements() > 0) return region;
    }
    return Region{};
  };
  CollectiveBuffers b;
  std::int64_t stated = 0;  // elements Collective::bytes must state
  switch (c.kind) {
    case CollectiveKind::allgather: {
      const std::int64_t cap = capacity_of([&](int q) { return restrict_images(source_region(q, c), c.images); });
      send.assign(std::size_t(cap), 0.0f);
      copy_region(source_region(rank, c), source_data(c), mine, send.data());
      recv.assign(std::size_t(cap * P), 0.0f);
      b = {send.data(), recv.data(), cap, cap * P};
      stated = cap;
      break;
    }
    case CollectiveKind::reduce_scatter: {
      const auto block_of = [&](int q) { return restrict_images(destination_region(q, c), c.images); };
      const std::int64_t cap = capacity_of(block_of);
      send.assign(std::size_t(cap * P), 0.0f);
      for (int i = 0; i < P; ++i)
        copy_region(source_region(rank, c), source_data(c), block_of(c.group[std::size_t(i)]), send.data() + i * cap);
      recv.assign(std::size_t(cap), 0.0f);
      b = {send.data(), recv.data(), cap * P, cap};
      stated = cap * P;
      break;
    }
    case CollectiveKind::allreduce:
    case CollectiveKind::reduce: {
      const Region block = summed_region();
      send.assign(std::size_t(block.elements()), 0.0f);
      copy_region(source_region(rank, c), source_data(c), block, send.data());
      if (c.kind == CollectiveKind::allreduce) {
        b = {send.data(), send.data(), block.elements(), block.elements()};
      } else {
        recv.assign(std::size_t(rank == c.root ? block.elements() : 0), 0.0f);
        b = {send.data(), recv.data(), block.elements(), std::int64_t(recv.size())};
      }
      stated = block.elements();
      break;
    }
    case CollectiveKind::bcast: {
      const Region block = restrict_images(source_region(c.root, c), c.images);
      send.assign(std::size_t(block.elements()), 0.0f);
      if (rank == c.root) copy_region(source_region(rank, c), source_data(c), block, send.data());
      b = {send.data(), send.data(), block.elements(), block.elements()};
      stated = block.elements();
      break;
    }
    case CollectiveKind::send: {
      const int destination = c.group[0] == c.root ? c.group[1] : c.group[0];
      const Region block =
          restrict_images(intersect(source_region(c.root, c), destination_region(destination, c)), c.images);
      if (rank == c.root) {
        send.assign(std::size_t(block.elements()), 0.0f);
        copy_region(source_region(rank, c), source_data(c), block, send.data());
        b = {send.data(), nullptr, block.elements(), 0};
      } else {
        recv.assign(std::size_t(block.elements()), 0.0f);
        b = {nullptr, recv.data(), 0, block.elements()};
      }
      stated = block.elements();
      break;
    }
    default:
      CNNPAR_ASSERT(false, "activations/errors move by allgather, reduce_scatter, allreduce, reduce, bcast or send: " +
                               c.label);
  }
  CNNPAR_ASSERT(std::abs(4.0 * double(stated) - c.bytes) < 0.5,
                fmt::format("collective {} states {} bytes, the partitions give {}", c.label, c.bytes, 4 * stated));
  return b;
}

void Runtime::Impl::complete_exchange(const Collective& c) {
  const std::vector<float>& send = staging[c.id];
  const std::vector<float>& recv = staging_recv[c.id];
  const Region destination = destination_region(rank, c);
  float* to = destination.elements() > 0 ? destination_data(c) : nullptr;
  const auto unpack = [&](const Region& block, const float* data) {
    if (to != nullptr) copy_region(block, data, destination, to);
  };
  switch (c.kind) {
    case CollectiveKind::allgather: {
      const std::int64_t cap = std::int64_t(send.size());
      for (std::size_t i = 0; i < c.group.size(); ++i)
        unpack(restrict_images(source_region(c.group[i], c), c.images), recv.data() + std::int64_t(i) * cap);
      break;
    }
    case CollectiveKind::reduce_scatter:
      unpack(restrict_images(destination, c.images), recv.data());
      break;
    case CollectiveKind::allreduce:
    case CollectiveKind::reduce: {
      if (c.kind == CollectiveKind::reduce && rank != c.root) break;
      const std::vector<float>& sums = c.kind == CollectiveKind::allreduce ? send : recv;
      Region block;
      for (int q : c.group) {
        block = restrict_images(source_region(q, c), c.images);
        if (block.elements() > 0) break;
      }
      const Region source = source_region(rank, c);
      if (source.elements() > 0) copy_region(block, sums.data(), source, source_data(c));
      unpack(block, sums.data());
      break;
    }
    case CollectiveKind::bcast:
      unpack(restrict_images(source_region(c.root, c), c.images), send.data());
      break;
    case CollectiveKind::send:
      if (rank != c.root) {
        const Region block = restrict_images(intersect(source_region(c.root, c), destination), c.images);
        unpack(block, recv.data());
      }
      break;
    default:
      break;
  }
  staging.erase(c.id);
  staging_recv.erase(c.id);
}

CollectiveBuffers Runtime::prepare(const Collective& c) {
  Impl& s = *impl_;
  CollectiveBuffers b;
  if (c.payload == Payload::increments) {
    CNNPAR_ASSERT(c.kind == CollectiveKind::send && c.root == s.rank && !s.base_weights.empty(),
                  "an increments push is a worker's send to its server: " + c.label);
    // Weights minus the global weights trained from, then the accuracy (the server's Q_j).
    auto& st = s.staging[c.id];
    st.clear();
    for (auto [off, cnt] : s.spans(c.layers, c.units))
      for (std::int64_t i = off; i < off + cnt; ++i) st.push_back(s.weights[std::size_t(i)] - s.base_weights[std::size_t(i)]);
    st.push_back(float(last_accuracy()));
    b.send = st.data();
    b.send_count = std::int64_t(st.size());
    return b;
  }
  if (c.payload == Payload::weights && s.serves && c.root == s.rank) {
    // A server's reply: a copy, as later merges change the weights while it is in flight.
    auto& st = s.staging[c.id];
    st.clear();
    for (auto [off, cnt] : s.spans(c.layers, c.units)) st.insert(st.end(), s.weights.begin() + off, s.weights.begin() + off + cnt);
    b.send = st.data();
    b.send_count = std::int64_t(st.size());
    return b;
  }
  if (c.payload == Payload::batch_statistics || c.payload == Payload::error_statistics) {
    CNNPAR_ASSERT(c.kind == CollectiveKind::allreduce && c.layers.size() == 1,
                  "a statistics collective is an allreduce of one batchnorm layer: " + c.label);
    auto& x = s.layers.at(std::size_t(c.layers.front()));
    CNNPAR_ASSERT(x.layer->spec.kind == LayerKind::batchnorm, "statistics of a layer that is no batchnorm: " + c.label);
    const std::int64_t units = x.held.units.count, positions = x.n * x.layer->out.h * x.layer->out.w;
    if (c.payload == Payload::batch_statistics)
      batchnorm_sums(units, positions, s.in_of(x.index), x.running_mean.data(), x.bn_sums.data());
    else
      batchnorm_error_sums(units, positions, s.in_of(x.index), x.bn_mean.data(), x.bn_invstd.data(), x.err.data(),
                           x.bn_sums.data());
    b.send = b.recv = x.bn_sums.data();
    b.send_count = b.recv_count = 2 * units;
    return b;
  }
  if (c.payload == Payload::gradients || c.payload == Payload::weights) {
    CNNPAR_ASSERT(c.kind == CollectiveKind::allreduce || c.kind == CollectiveKind::reduce ||
                      c.kind == CollectiveKind::bcast || c.kind == CollectiveKind::send,
                  "gradient/weight collectives must be allreduce, reduce, bcast or send: " + c.label);
    std::vector<float>& arr = c.payload == Payload::gradients ? s.grads : s.weights;
    const auto sp = s.spans(c.layers, c.units);
    std::int64_t total = 0;
    bool contiguous = true;
    for (std::size_t i = 0; i < sp.size(); ++i) {
      total += sp[i].second;
      if (i > 0 && sp[i].first != sp[i - 1].first + sp[i - 1].second) contiguous = false;
    }
    CNNPAR_ASSERT(!sp.empty(), "gradient collective without parameters: " + c.label);
    CNNPAR_ASSERT(c.bytes <= 0 || std::abs(c.bytes - 4.0 * double(total)) < 1.0,
                  fmt::format("collective {} carries {} bytes but its layers hold {} FP32 parameters",
                              c.label, c.bytes, total));
    if (contiguous) {
      b.send = b.recv = arr.data() + sp.front().first;
    } else {
      auto& st = s.staging[c.id];
      st.resize(std::size_t(total));
      std::int64_t o = 0;
      for (auto [off, cnt] : sp) {
        std::memcpy(st.data() + o, arr.data() + off, sizeof(float) * std::size_t(cnt));
        o += cnt;
      }
      b.send = b.recv = st.data();
    }
    b.send_count = b.recv_count = total;
    return b;
  }
  CNNPAR_ASSERT(c.payload == Payload::activations || c.payload == Payload::errors,
                "collective without a payload the runtime knows: " + c.label);
  CNNPAR_ASSERT(c.layers.size() == 1, "activations/errors collectives name one layer: " + c.label);
  auto& x = s.layers.at(std::size_t(c.layers.front()));
  if (!x.replicated || c.kind != CollectiveKind::allgather) return s.prepare_exchange(c);
  // Lee's gathers of a replicated layer's input activations and output errors.
  CNNPAR_ASSERT(c.kind == CollectiveKind::allgather, "expected an allgather: " + c.label);
  const int p = c.iteration & 1;
  const Layer& ly = *x.layer;
  if (c.payload == Payload::activations) {
    const float* in = s.in_of(x.index);
    if (x.in_cm)
      channel_major_to_rows(ly.in.c, x.n, ly.in.h * ly.in.w, in, x.stage_in[p].data());
    else
      std::memcpy(x.stage_in[p].data(), in, sizeof(float) * std::size_t(x.n * ly.in.elements()));
    b.send = x.stage_in[p].data();
    b.recv = x.lee_padded ? x.padded_in[p].data() : x.gathered_in[p].data();
    b.send_count = std::int64_t(x.stage_in[p].size());
    b.recv_count = b.send_count * s.ranks;
    x.in_ready[p] = -1;
  } else {
    std::memcpy(x.stage_err[p].data(), x.err.data(), sizeof(float) * x.err.size());
    b.send = x.stage_err[p].data();
    b.recv = x.lee_padded ? x.padded_err[p].data() : x.gathered_err[p].data();
    b.send_count = std::int64_t(x.stage_err[p].size());
    b.recv_count = b.send_count * s.ranks;
    x.err_ready[p] = -1;
  }
  CNNPAR_ASSERT(std::int64_t(c.group.size()) == s.ranks, "replicated fc allgather must span every rank: " + c.label);
  // With an uneven split the builder states the largest contribution (ceil(N/P) images).
  CNNPAR_ASSERT(c.bytes <= 0 || 4.0 * double(b.send_count) <= c.bytes + 0.5,
                fmt::format("collective {} carries {} bytes, this rank contributes {}", c.label, c.bytes,
                            4 * b.send_count));
  return b;
}

void Runtime::complete(const Collective& c) {
  Impl& s = *impl_;
  if (c.payload == Payload::batch_statistics || c.payload == Payload::error_statistics) return;  // in place
  if (c.payload == Payload::increments || (c.payload == Payload::weights && s.serves && c.root == s.rank)) {
    s.staging.erase(c.id);
    return;
  }
  if (c.payload == Payload::gradients || c.payload == Payload::weights) {
    if (auto it = s.staging.find(c.id); it != s.staging.end()) {  // else it was in place
      std::vector<float>& arr = c.payload == Payload::gradients ? s.grads : s.weights;
      std::int64_t o = 0;
      for (auto [off, cnt] : s.spans(c.layers, c.units)) {
        std::memcpy(arr.data() + off, it->second.data() + o, sizeof(float) * std::size_t(cnt));
        o += cnt;
      }
      s.staging.erase(it);
    }
    // A worker that received the global weights trains from them.
    if (c.payload == Payload::weights && c.kind == CollectiveKind::send && c.root != s.rank && !s.base_weights.empty())
      s.base_weights = s.weights;
    return;
  }
  auto& x = s.layers.at(std::size_t(c.layers.front()));
  if (!x.replicated || c.kind != CollectiveKind::allgather) {
    s.complete_exchange(c);
    return;
  }
  const int p = c.iteration & 1;
  if (x.lee_padded) {  // member r's rows of its padded block go to its images
    const bool acts = c.payload == Payload::activations;
    const std::int64_t width = acts ? x.layer->in.elements() : x.layer->out.elements();
    const std::vector<float>& padded = acts ? x.padded_in[p] : x.padded_err[p];
    std::vector<float>& gathered = acts ? x.gathered_in[p] : x.gathered_err[p];
    for (int r = 0; r < s.ranks; ++r) {
      const Range rows = s.partitions[std::size_t(r)][std::size_t(x.index)].batch;
      std::memcpy(gathered.data() + rows.begin * width, padded.data() + r * x.lee_rows * width,
                  sizeof(float) * std::size_t(rows.count * width));
    }
  }
  if (c.payload == Payload::activations)
    x.in_ready[p] = c.iteration;
  else
    x.err_ready[p] = c.iteration;
}

void Runtime::merge_increments(const Collective& push, const std::vector<std::span<const float>>& increments,
                               const std::vector<double>& factors) {
  Impl& s = *impl_;
  CNNPAR_ASSERT(increments.size() == factors.size(), "one factor per increment");
  std::int64_t o = 0;
  for (auto [off, cnt] : s.spans(push.layers, push.units)) {
    for (std::int64_t i = 0; i < cnt; ++i) {
      double sum = 0;
      for (std::size_t k = 0; k < increments.size(); ++k) {
        CNNPAR_ASSERT(std::int64_t(increments[k].size()) > o + i, "an increment shorter than its push: " + push.label);
        sum += factors[k] * double(increments[k][std::size_t(o + i)]);
      }
      s.weights[std::size_t(off + i)] += float(sum);
    }
    o += cnt;
  }
}

}  // namespace cnnpar::real
