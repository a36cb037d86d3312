// conv_split: Marques, Falcao & Alexandre (2018). Only the convolution layers are
// distributed, by kernels, master/worker. Rank 0 is the master and computes a share too (the
// paper's single-device reference is the master alone, and its Eq. 1 shares cover every device).
//
// Per conv layer l and iteration, with W_l = the workers that hold kernels of l:
//   forward   master → w ∈ W_l: the input maps of l (activations of l) and w's kernels
//             (weights of l, its rows); every holder computes its output maps;
//             w → master: its output maps (activations of l + 1);
//   backward  master → w: the errors of w's output maps (errors of l); every holder computes
//             its weight gradient and its partial input errors; the partial sums are reduced to
//             the master (errors of l − 1, unless l is the first parameterised layer);
//             w → master: its weight gradient rows (gradients of l).
// Every other layer (normalisation, pooling, fc, loss) and every update runs on the master,
// which owns all the weights. Messages are sent one after another from the master's link, as
// the paper's sockets do, so a star platform's master link is the bottleneck it measured.
//
// Shares (option `shares`): uniform, Eq. 1 from a timing probe, or given. The probe times one
// forward convolution of every conv layer at the batch on each rank: in the engines from each
// node's speed (op_time_s), in cnnpar-run for real (it resolves `probe` to the measured shares
// before building). A layer's kernels are apportioned by largest remainder.
#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "base/error.hpp"
#include "system/op_time.hpp"
#include "workload/emit.hpp"
#include "workload/registry.hpp"
#include "workload/strategies/marques.hpp"

namespace cnnpar::strategies {

namespace {

const std::string kSharesPath = "/shares";

bool is_conv(const Network& network, int l) { return network.layers[std::size_t(l)].spec.kind == LayerKind::conv; }

// Elements of one output unit's weights and its bias.
double parameter_row_elements(const Layer& layer) {
  return double(layer.in.c) * double(layer.spec.kernel_h) * double(layer.spec.kernel_w) + 1.0;
}

std::vector<double> parse_share_list(const std::string& text, int ranks, const std::string& origin) {
  std::vector<double> shares;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    std::size_t used = 0;
    double value = 0;
    try {
      value = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size())
      throw InputError(origin, fmt::format("{}/{}", kSharesPath, shares.size()), item,
                       "expected uniform, probe or one number per rank (w0,w1,...)");
    shares.push_back(value);
  }
  if (int(shares.size()) != ranks)
    throw InputError(origin, kSharesPath, text,
                     fmt::format("expected {} shares, one per rank (the master first), got {}", ranks, shares.size()));
  check_shares(shares, origin, kSharesPath);
  if (shares.front() <= 0)
    throw InputError(origin, kSharesPath + "/0", fmt::format("{}", shares.front()),
                     "the master reads the input and must compute a share of every conv layer (share > 0)");
  return shares;
}

/** conv_split's shares per rank (master first): uniform, Eq. 1 of the engines' probe, or the
 *  option's list. @throws InputError (options.origin, "/shares/I") for a bad list. */
std::vector<double> conv_split_shares(const Network& network, const Platform& platform, const StrategyOptions& options) {
  const std::string text = options.text("shares");
  const int P = options.ranks;
  if (text == "uniform") return std::vector<double>(static_cast<std::size_t>(P), 1.0 / double(P));
  if (text == "probe") {
    std::vector<double> times;
    for (int r = 0; r < P; ++r)
      times.push_back(engine_probe_s(network, platform, std::min(options.global_batch, kProbeImages), r));
    return probe_shares(times, options.origin);
  }
  return parse_share_list(text, P, options.origin);
}

Schedule build_conv_split(const Network& network, const Platform& platform, const StrategyOptions& options) {
  const int P = options.ranks;
  const std::int64_t N = options.global_batch;
  const int L = int(network.layers.size());
  const std::vector<double> shares = conv_split_shares(network, platform, options);

  Schedule schedule = start_schedule(network, options, P);
  schedule.options["resolved_shares"] = shares;

  // Kernel slices per conv layer and rank: contiguous output maps in rank order.
  std::vector<std::vector<Range>> slices(static_cast<std::size_t>(L));
  nlohmann::json kernel_counts = nlohmann::json::object();
  for (int l = 0; l < L; ++l) {
    if (!is_conv(network, l)) continue;
    std::vector<std::int64_t> counts = apportion_kernels(layer_units(network.layers[std::size_t(l)]), shares);
    // The master reads and distributes every layer's input: it keeps at least one map.
    if (counts.front() == 0) {
      --*std::max_element(counts.begin(), counts.end());
      ++counts.front();
    }
    std::int64_t begin = 0;
    for (std::int64_t count : counts) {
      slices[std::size_t(l)].push_back({begin, count});
      begin += count;
    }
    kernel_counts[network.layers[std::size_t(l)].spec.name] = counts;
  }
  schedule.options["kernel_counts"] = kernel_counts;

  // Partitions and per-rank op tables.
  std::vector<LayerOps> rank_ops;
  for (int r = 0; r < P; ++r) {
    Program& program = schedule.programs[std::size_t(r)];
    std::vector<LayerSlice> own(static_cast<std::size_t>(L));
    for (int l = 0; l < L; ++l) {
      const Layer& layer = network.layers[std::size_t(l)];
      if (is_conv(network, l)) {
        const Range units = slices[std::size_t(l)][std::size_t(r)];
        program.partitions.push_back(units.count > 0 ? LayerPartition{PartitionKind::model, {0, N}, units}
                                                     : none_partition());
        own[std::size_t(l)] = {N, units.count};
      } else {
        program.partitions.push_back(r == 0 ? LayerPartition{PartitionKind::data, {0, N}, {0, layer_units(layer)}}
                                            : none_partition());
        own[std::size_t(l)] = {N, 0};
      }
    }
    rank_ops.emplace_back(network, own, N);
  }
  const LayerOps whole_ops(network, N, N);  // the master's updates of whole conv layers
  // Bytes per element on the wire: the platform's (the paper's Matlab sends doubles).
  const double element_bytes = double(platform.network.element_bytes);

  const auto name = [&](int l) { return network.layers[std::size_t(l)].spec.name; };
  const auto add = [&](CollectiveKind kind, double bytes, std::vector<int> group, int root, Payload payload, int layer,
                       int m, std::string label, Range units = {}) {
    return add_layer_collective(schedule, platform, kind, bytes, std::move(group), root, {payload, layer, m, {}, units},
                                std::move(label));
  };
  const auto send = [&](int from, int to, Payload payload, int layer, double bytes, int m, std::string label,
                        Range units = {}) {
    return add(CollectiveKind::send, bytes, {std::min(from, to), std::max(from, to)}, from, payload, layer, m,
               std::move(label), units);
  };
  std::vector<std::vector<Op>*> out;
  for (int r = 0; r < P; ++r) out.push_back(&schedule.programs[std::size_t(r)].ops.mutable_vector());
  const auto emit = [&](int r, std::span<const Op> ops) { append(*out[std::size_t(r)], ops); };
  const auto post = [&](int r, int id) { out[std::size_t(r)]->push_back(Op::post_op(id)); };
  const auto wait = [&](int r, int id) { out[std::size_t(r)]->push_back(Op::wait_op(id)); };

  for (int m = 0; m < options.iterations; ++m) {
    // Forward.
    for (int l = 0; l < L; ++l) {
      const Layer& layer = network.layers[std::size_t(l)];
      if (!is_conv(network, l)) {
        emit(0, rank_ops[0].forward(l));
        continue;
      }
      const double input_bytes = element_bytes * double(N) * double(layer.in.elements());
      const double map_bytes = element_bytes * double(N) * double(layer_spatial(layer));
      std::vector<int> master_ids;
      std::vector<int> outputs;
      for (int w = 1; w < P; ++w) {
        const Range units = slices[std::size_t(l)][std::size_t(w)];
        if (units.count == 0) continue;
        const int in_id = send(0, w, Payload::activations, l, input_bytes, m, fmt::format("send {} input to {}", name(l), w));
        const int k_id = send(0, w, Payload::weights, l, element_bytes * parameter_row_elements(layer) * double(units.count), m,
                              fmt::format("send {} kernels to {}", name(l), w), units);
        post(0, in_id);
        post(0, k_id);
        post(w, in_id);
        post(w, k_id);
        wait(w, in_id);
        wait(w, k_id);
        emit(w, rank_ops[std::size_t(w)].forward(l));
        const int out_id = send(w, 0, Payload::activations, l + 1, map_bytes * double(units.count), m,
                                fmt::format("send {} maps of {} to master", name(l), w));
        post(w, out_id);
        wait(w, out_id);
        master_ids.push_back(in_id);
        master_ids.push_back(k_id);
        outputs.push_back(out_id);
      }
      for (int id : outputs) post(0, id);
      if (slices[std::size_t(l)][0].count > 0) emit(0, rank_ops[0].forward(l));
      for (int id : master_ids) wait(0, id);
      for (int id : outputs) wait(0, id);
    }
    // Backward.
    int first_parameter_layer = L;
    for (int l = 0; l < L; ++l)
      if (network.layers[std::size_t(l)].has_parameters()) { first_parameter_layer = l; break; }
    for (int l = L - 1; l >= 0; --l) {
      const Layer& layer = network.layers[std::size_t(l)];
      if (!is_conv(network, l)) {
        emit(0, rank_ops[0].backward_data(l));
        emit(0, rank_ops[0].backward_weight(l));
        continue;
      }
      const double map_bytes = element_bytes * double(N) * double(layer_spatial(layer));
      const bool input_errors = l > first_parameter_layer;
      std::vector<int> holders = {0};
      std::vector<int> error_sends, gradient_sends;
      for (int w = 1; w < P; ++w) {
        const Range units = slices[std::size_t(l)][std::size_t(w)];
        if (units.count == 0) continue;
        holders.push_back(w);
        error_sends.push_back(send(0, w, Payload::errors, l, map_bytes * double(units.count), m,
                                   fmt::format("send {} errors to {}", name(l), w)));
        gradient_sends.push_back(send(w, 0, Payload::gradients, l, element_bytes * parameter_row_elements(layer) * double(units.count), m,
                                      fmt::format("send {} gradient of {} to master", name(l), w), units));
      }
      // Reduced even when the master holds every kernel: the sum then has one term.
      const int reduce_id =
          input_errors
              ? add(CollectiveKind::reduce, element_bytes * double(N) * double(layer.in.elements()), holders, 0, Payload::errors,
                    l - 1, m, fmt::format("reduce {} input errors", name(l)))
              : -1;
      for (std::size_t i = 0; i < error_sends.size(); ++i) {
        const int w = holders[i + 1];
        post(w, error_sends[i]);
        wait(w, error_sends[i]);
        emit(w, rank_ops[std::size_t(w)].backward_data(l));
        if (reduce_id >= 0) post(w, reduce_id);
        emit(w, rank_ops[std::size_t(w)].backward_weight(l));
        post(w, gradient_sends[i]);
        if (reduce_id >= 0) wait(w, reduce_id);
        wait(w, gradient_sends[i]);
      }
      for (int id : error_sends) post(0, id);
      const bool master_holds = slices[std::size_t(l)][0].count > 0;
      if (master_holds) emit(0, rank_ops[0].backward_data(l));
      if (reduce_id >= 0) post(0, reduce_id);
      if (master_holds) emit(0, rank_ops[0].backward_weight(l));
      for (int id : gradient_sends) post(0, id);
      for (int id : error_sends) wait(0, id);
      if (reduce_id >= 0) wait(0, reduce_id);
      for (int id : gradient_sends) wait(0, id);
    }
    // Updates: the master owns every weight.
    for (int l : parameter_layers_backward(network)) emit(0, (is_conv(network, l) ? whole_ops : rank_ops[0]).update(l));
    for (int r = 0; r < P; ++r) out[std::size_t(r)]->push_back(Op::mark_op(m));
  }
  return schedule;
}

void validate_conv_split(const Network& network, const StrategyOptions& options) {
  bool has_conv = false;
  for (const Layer& layer : network.layers) has_conv = has_conv || layer.spec.kind == LayerKind::conv;
  if (!has_conv)
    throw InputError(options.origin, "/network", network.name, "conv_split distributes conv layers; the network has none");
  const std::string text = options.text("shares");
  if (text != "uniform" && text != "probe") parse_share_list(text, options.ranks, options.origin);
}

// One rank holds every kernel: a list of per-rank shares does not apply.
StrategyOptions conv_split_one_rank(const StrategyOptions& options) {
  StrategyOptions one_rank = options;
  const std::string text = options.text("shares");
  if (text != "uniform" && text != "probe") one_rank.set("shares", "uniform");
  return one_rank;
}

bool conv_split_probes_ranks(const StrategyOptions& options) { return options.text("shares") == "probe"; }

// Eq. 1 from the measured probe: the shares as a list, at full precision.
void conv_split_resolve_probe(StrategyOptions& options, const std::vector<double>& probe_s) {
  std::vector<std::string> shares;
  for (double w : probe_shares(probe_s, "<probe>")) shares.push_back(fmt::format("{:.17g}", w));
  options.set("shares", fmt::format("{}", fmt::join(shares, ",")));
}

}  // namespace

StrategySpec conv_split_strategy() {
  return {.name = "conv_split",
          .summary = "Marques et al.: conv layers split by kernels over master + workers, everything else on the master",
          .options = {{.key = "shares",
                       .type = OptionType::text,
                       .default_text = "probe",
                       .help = "each rank's share of every conv layer's kernels, the master first: probe (Eq. 1 from a "
                               "timing probe: node speeds in the engines, a real convolution in cnnpar-run), uniform, or "
                               "w0,w1,... summing to 1"}},
          .validate = validate_conv_split,
          .build = build_conv_split,
          .splits_batch_over_ranks = false,
          .one_rank_baseline = conv_split_one_rank,
          .probes_ranks = conv_split_probes_ranks,
          .resolve_probe = conv_split_resolve_probe,
          .probe = RankProbe::conv_forward,
          .components = ComponentSplit::master_workers};
}

}  // namespace cnnpar::strategies
