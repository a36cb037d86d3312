// veeriah: Veeriah & Modi, "Combining model and data parallelism for CNNs on multiple GPUs".
// K convolution workers (ranks 0..K-1) and K fully-connected workers (ranks K..2K-1).
//  * Conv workers are data parallel: worker i runs the layers before the first fc layer on its
//    own M = N/K images, then allreduces their gradients among the conv workers (Sec. 3.3).
//  * Fc workers are model parallel: worker j owns 1/K of every fc layer's output units (a layer
//    with fewer units than K is computed whole by each). Before an fc layer they merge the
//    previous layer's activations (allgather of the unit slices, Sec. 3.1); a softmax merges
//    the logits the same way. In backward, each computes partial errors of the previous
//    layer's whole output; they exchange and sum them (allreduce), then each keeps its part
//    (Sec. 3.2).
//  * At the interface, conv worker i sends its pooled activations to every fc worker, and fc
//    worker K+i sends conv worker i the errors of its own images.
// Schemes (option `scheme`):
//  a  the fc workers wait for all K sub-batches and run one batch of K·M images (exact SGD);
//  b  they take the sub-batches in turn, receiving the next while computing on the current,
//     and update their fc layers after each (not exact SGD, as the paper notes);
//  c  as b, but the fc gradients are summed over the K sub-batches and applied once (exact).
// Loss and gradients are normalised by the global batch K·M in every scheme, so scheme b's
// per-sub-batch steps are 1/K of scheme a's.
#include <algorithm>

#include <fmt/format.h>

#include "base/error.hpp"
#include "workload/emit.hpp"
#include "workload/registry.hpp"
#include "workload/strategies/data_parallel.hpp"

namespace cnnpar::strategies {

namespace {

struct FcLayerPlan {
  bool unit_slice = false;     // output held as a slice of the units (else whole)
  bool gather_input = false;   // allgather of the previous layer's unit slices before it
  bool partial_errors = false; // its input errors are partial sums (a model-parallel fc layer)
};

int first_fc_layer(const Network& network) {
  const std::vector<int> fcs = network.fc_layers();
  return fcs.empty() ? -1 : fcs.front();
}

std::vector<FcLayerPlan> plan_fc_part(const Network& network, int first_fc, int K) {
  const int L = int(network.layers.size());
  std::vector<FcLayerPlan> plan(static_cast<std::size_t>(L));
  for (int l = first_fc; l < L; ++l) {
    const Layer& layer = network.layers[std::size_t(l)];
    FcLayerPlan& p = plan[std::size_t(l)];
    const bool input_sliced = l > first_fc && plan[std::size_t(l - 1)].unit_slice;
    if (layer.has_parameters()) {
      p.unit_slice = K > 1 && layer.out.c >= K;
      p.gather_input = input_sliced;
      p.partial_errors = p.unit_slice;
    } else if (needs_all_units(layer.spec.kind)) {
      p.unit_slice = false;
      p.gather_input = input_sliced;
    } else {
      p.unit_slice = input_sliced;
    }
  }
  return plan;
}

std::int64_t conv_workers(const StrategyOptions& options) {
  const std::int64_t given = options.integer("conv_workers");
  return given > 0 ? given : options.ranks / 2;
}

Schedule build_veeriah(const Network& network, const Platform& platform, const StrategyOptions& options) {
  const int K = int(conv_workers(options));
  const int P = options.ranks;
  const std::int64_t N = options.global_batch;
  const std::int64_t M = N / K;
  const int L = int(network.layers.size());
  const int F = first_fc_layer(network);
  const std::string scheme = options.text("scheme");
  const bool pipelined = scheme != "a";
  const std::vector<FcLayerPlan> plan = plan_fc_part(network, F, K);

  Schedule schedule = start_schedule(network, options, P);
  schedule.options["conv_workers"] = K;

  std::vector<int> conv_group, fc_group;
  for (int r = 0; r < K; ++r) conv_group.push_back(r);
  for (int r = K; r < P; ++r) fc_group.push_back(r);
  const auto conv_slice = [&](int i) { return even_slice(N, K, i); };

  // Partitions and op tables.
  std::vector<LayerOps> rank_ops;
  for (int r = 0; r < P; ++r) {
    Program& program = schedule.programs[std::size_t(r)];
    const bool conv_worker = r < K;
    std::vector<LayerSlice> own(static_cast<std::size_t>(L));
    for (int l = 0; l < L; ++l) {
      const Layer& layer = network.layers[std::size_t(l)];
      const std::int64_t U = layer_units(layer);
      const FcLayerPlan& p = plan[std::size_t(l)];
      if (l < F) {
        program.partitions.push_back(conv_worker ? LayerPartition{PartitionKind::data, conv_slice(r), {0, U}}
                                                 : none_partition());
        own[std::size_t(l)] = {M, 0};
      } else if (conv_worker) {
        program.partitions.push_back(none_partition());
        own[std::size_t(l)] = {M, 0};
      } else {
        const Range units = p.unit_slice ? even_slice(U, K, r - K) : Range{0, U};
        program.partitions.push_back({p.unit_slice ? PartitionKind::model : PartitionKind::replicated, {0, N}, units});
        own[std::size_t(l)] = {pipelined ? M : N, units.count == U ? 0 : units.count};
      }
    }
    rank_ops.emplace_back(network, own, N);
  }

  const auto name = [&](int l) { return network.layers[std::size_t(l)].spec.name; };
  const auto add = [&](CollectiveKind kind, double bytes, std::vector<int> group, int root, Payload payload,
                       int layer, int m, std::string label, Range images = {}, Split split = Split::none) {
    return add_layer_collective(schedule, platform, kind, bytes, std::move(group), root,
                                {payload, layer, m, images, {}, split}, std::move(label));
  };
  std::vector<std::vector<Op>*> out;
  for (int r = 0; r < P; ++r) out.push_back(&schedule.programs[std::size_t(r)].ops.mutable_vector());
  const auto post = [&](int r, int id) { out[std::size_t(r)]->push_back(Op::post_op(id)); };
  const auto wait = [&](int r, int id) { out[std::size_t(r)]->push_back(Op::wait_op(id)); };
  // Ops of a pipelined sub-batch carry its images.
  const auto emit = [&](int r, std::span<const Op> ops, Range images = {}) {
    for (Op op : ops) {
      if (op.phase != Phase::update) op.images = images;
      out[std::size_t(r)]->push_back(std::move(op));
    }
  };

  const double interface_bytes = 4.0 * double(M) * double(network.layers[std::size_t(F)].in.elements());
  const auto max_slice = [&](std::int64_t total) { return total / K + (total % K != 0 ? 1 : 0); };
  std::vector<int> fc_parameter_layers;
  for (int l = L - 1; l >= F; --l)
    if (network.layers[std::size_t(l)].has_parameters()) fc_parameter_layers.push_back(l);

  for (int m = 0; m < options.iterations; ++m) {
    // Interface messages: activations conv i → fc j, errors fc K+i → conv i.
    std::vector<std::vector<int>> acts(static_cast<std::size_t>(K));
    std::vector<int> errs;
    for (int i = 0; i < K; ++i) {
      for (int j = 0; j < K; ++j)
        acts[std::size_t(i)].push_back(add(CollectiveKind::send, interface_bytes, {i, K + j}, i, Payload::activations, F,
                                           m, fmt::format("send {} input {}→{}", name(F), i, K + j), conv_slice(i)));
      errs.push_back(add(CollectiveKind::send, interface_bytes, {i, K + i}, K + i, Payload::errors, F - 1, m,
                         fmt::format("send {} errors {}→{}", name(F - 1), K + i, i), conv_slice(i)));
    }

    // Conv workers: their gradients are allreduced after the whole backward pass (Sec. 3.3).
    std::vector<int> conv_gradient_ids, conv_gradient_layers;
    for (int l = F - 1; l >= 0; --l) {
      if (!network.layers[std::size_t(l)].has_parameters()) continue;
      Collective c = gradient_allreduce(network, platform, K, {l}, m, fmt::format("allreduce {} (conv workers)", name(l)));
      c.group = conv_group;
      conv_gradient_ids.push_back(schedule.add_collective(std::move(c)));
      conv_gradient_layers.push_back(l);
    }
    for (int i = 0; i < K; ++i) {
      const LayerOps& ops = rank_ops[std::size_t(i)];
      for (int l = 0; l < F; ++l) emit(i, ops.forward(l));
      for (int id : acts[std::size_t(i)]) post(i, id);
      post(i, errs[std::size_t(i)]);
      for (int id : acts[std::size_t(i)]) wait(i, id);
      wait(i, errs[std::size_t(i)]);
      for (int l = F - 1; l >= 0; --l) {
        emit(i, ops.backward_data(l));
        emit(i, ops.backward_weight(l));
      }
      for (int id : conv_gradient_ids) post(i, id);
      for (int id : conv_gradient_ids) wait(i, id);
      for (int l : conv_gradient_layers) emit(i, ops.update(l));
    }

    // Fc workers: one pass over all K·M images (a) or one pass per conv worker's M images (b, c).
    // A collective of the fc group is added once and posted by every fc worker.
    const int passes = pipelined ? K : 1;
    const auto fc_rank = [&](int j) { return K + j; };
    for (int j = 0; j < K; ++j) {
      if (pipelined) {
        post(fc_rank(j), acts[0][std::size_t(j)]);
      } else {
        for (int i = 0; i < K; ++i) post(fc_rank(j), acts[std::size_t(i)][std::size_t(j)]);
        for (int i = 0; i < K; ++i) wait(fc_rank(j), acts[std::size_t(i)][std::size_t(j)]);
      }
    }
    for (int pass = 0; pass < passes; ++pass) {
      const Range images = pipelined ? conv_slice(pass) : Range{};
      const std::int64_t pass_images = pipelined ? M : N;  // images of one fc pass
      if (pipelined)
        for (int j = 0; j < K; ++j) {
          wait(fc_rank(j), acts[std::size_t(pass)][std::size_t(j)]);
          if (pass + 1 < K) post(fc_rank(j), acts[std::size_t(pass + 1)][std::size_t(j)]);
        }
      for (int l = F; l < L; ++l) {
        if (plan[std::size_t(l)].gather_input) {
          const Layer& before = network.layers[std::size_t(l - 1)];
          const int id = add(CollectiveKind::allgather,
                             4.0 * double(pass_images) * double(max_slice(layer_units(before))) * double(layer_spatial(before)),
                             fc_group, -1, Payload::activations, l, m,
                             fmt::format("allgather {} input (fc workers)", name(l)), images, Split::units);
          for (int j = 0; j < K; ++j) {
            post(fc_rank(j), id);
            wait(fc_rank(j), id);
          }
        }
        for (int j = 0; j < K; ++j) emit(fc_rank(j), rank_ops[std::size_t(fc_rank(j))].forward(l), images);
      }
      for (int l = L - 1; l >= F; --l) {
        for (int j = 0; j < K; ++j) emit(fc_rank(j), rank_ops[std::size_t(fc_rank(j))].backward_data(l), images);
        int errors_id = -1;
        if (plan[std::size_t(l)].partial_errors) {
          const Layer& before = network.layers[std::size_t(l - 1)];
          errors_id = add(CollectiveKind::allreduce, 4.0 * double(pass_images) * double(before.out.elements()), fc_group, -1,
                          Payload::errors, l - 1, m, fmt::format("allreduce {} errors (fc workers)", name(l - 1)),
                          images);
          for (int j = 0; j < K; ++j) post(fc_rank(j), errors_id);
        }
        for (int j = 0; j < K; ++j) {
          emit(fc_rank(j), rank_ops[std::size_t(fc_rank(j))].backward_weight(l), images);
          if (errors_id >= 0) wait(fc_rank(j), errors_id);
        }
      }
      // Fc worker K+i hands conv worker i the errors of its images.
      for (int i = 0; i < K; ++i)
        if (!pipelined || pass == i) post(fc_rank(i), errs[std::size_t(i)]);
      if (scheme == "b")
        for (int j = 0; j < K; ++j)
          for (int l : fc_parameter_layers) emit(fc_rank(j), rank_ops[std::size_t(fc_rank(j))].update(l));
    }
    for (int j = 0; j < K; ++j) {
      wait(fc_rank(j), errs[std::size_t(j)]);
      if (scheme != "b")
        for (int l : fc_parameter_layers) emit(fc_rank(j), rank_ops[std::size_t(fc_rank(j))].update(l));
    }
    for (int r = 0; r < P; ++r) out[std::size_t(r)]->push_back(Op::mark_op(m));
  }
  return schedule;
}

void validate_veeriah(const Network& network, const StrategyOptions& options) {
  const int F = first_fc_layer(network);
  if (F <= 0)
    throw InputError(options.origin, "/network", network.name,
                     "veeriah needs layers before the first fc layer (conv workers) and an fc layer (fc workers)");
  const std::int64_t given = options.integer("conv_workers");
  if (given > 0 && options.ranks != 2 * given)
    throw InputError(options.origin, "/conv_workers", std::to_string(given),
                     fmt::format("K conv workers and K fc workers need 2K = {} ranks, the run has {}", 2 * given,
                                 options.ranks));
  if (given == 0 && (options.ranks < 2 || options.ranks % 2 != 0))
    throw InputError(options.origin, "/nodes", std::to_string(options.ranks),
                     "veeriah runs K conv workers and K fc workers: the rank count must be even (2K)");
  const std::int64_t K = conv_workers(options);
  if (options.global_batch % K != 0)
    throw InputError(options.origin, "/batch", std::to_string(options.global_batch),
                     fmt::format("the batch must split into K = {} equal conv-worker sub-batches", K));
}

}  // namespace

StrategySpec veeriah_strategy() {
  return {.name = "veeriah",
          .summary = "Veeriah & Modi: K data-parallel conv workers feed K model-parallel fc workers (2K ranks), "
                     "schemes a/b/c",
          .options = {{.key = "scheme",
                       .type = OptionType::choice,
                       .default_text = "a",
                       .choices = {"a", "b", "c"},
                       .help = "a: fc workers wait for all K sub-batches; b: they take them in turn and update after "
                               "each; c: in turn, one update summed over all K"},
                      {.key = "conv_workers",
                       .type = OptionType::integer,
                       .default_text = "0",
                       .unit = "ranks",
                       .help = "K, the conv workers (and fc workers); 0 = half the ranks. The run needs exactly 2K "
                               "ranks"}},
          .validate = validate_veeriah,
          .build = build_veeriah,
          .min_ranks = 2,
          .splits_batch_over_ranks = false,
          // Separate worker groups have no one-rank form: the same network and batch on one device.
          .one_rank_baseline = plain_data_parallel,
          .components = ComponentSplit::worker_groups};
}

}  // namespace cnnpar::strategies
