// per_layer: any assignment of the parameterised layers to data, model or replicated
// parallelism, with the transitions between them inserted automatically (Krizhevsky's "one
// weird trick"; the Intel note's hybrid), and `hybrid`, its preset: data-parallel conv
// layers, model-parallel fc layers.
//
// Regions (model/partition.hpp). Each layer's output is held as
//   (batch slice, all units)   data, and Lee-style replicated layers,
//   (all images, unit slice)   model,
//   (all images, all units)    whole-batch replicated layers, and lrn/softmax after a model layer.
// Layers without parameters hold the region of their input (lrn and softmax need all units).
// A conv/fc layer needs as input: its batch range × all input units.
// Forward transition into layer l, when its predecessor's region does not contain what l
// needs: allgather of the predecessor's output along the axis that predecessor is sliced on,
// posted and waited right before l (model parallelism cannot overlap it, Intel note).
// Backward transition out of l: a model layer's backward-data GEMM gives partial sums of its
// input errors over all images and units, reduce-scattered along the predecessor's sliced
// axis (allreduced when the predecessor holds everything); a data layer after a model or
// whole-batch layer gives its batch slice, allgathered; otherwise the predecessor's share is
// a local slice. Backward transitions are posted after l's backward-data op and waited after
// its weight gradient, so the weight gradient overlaps them.
// Gradients: data layers allreduce theirs (sync end | layerwise | chunks as in dp,
// dp_layerwise and lee); model and whole-batch replicated layers need no gradient exchange;
// Lee-style replicated layers gather activations and errors and compute their gradient over
// the whole batch in the next iteration's forward pass (Lee et al. Algorithm 2).
#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/text.hpp"
#include "workload/emit.hpp"
#include "workload/strategies/data_parallel.hpp"
#include "workload/strategies/lee_chunks.hpp"
#include "workload/strategies/per_layer.hpp"

namespace cnnpar::strategies {

namespace {

void add_entry(const Network& network, const std::string& origin, const std::string& path, const std::string& pattern,
               const std::string& kind_text, std::vector<std::string>& given_by, LayerAssignment& assignment) {
  PartitionKind kind;
  try {
    kind = partition_kind_from_string(kind_text);
  } catch (const std::invalid_argument& error) {
    throw InputError(origin, path, kind_text, error.what());
  }
  if (kind == PartitionKind::none)
    throw InputError(origin, path, kind_text, "expected data, model or replicated (every layer needs a holder)");
  bool matched = false;
  for (std::size_t l = 0; l < network.layers.size(); ++l) {
    const Layer& layer = network.layers[l];
    if (fnmatch(pattern.c_str(), layer.spec.name.c_str(), 0) != 0) continue;
    if (!layer.has_parameters()) {
      if (pattern.find_first_of("*?[") == std::string::npos)
        throw InputError(origin, path, pattern,
                         fmt::format("layer {} has no parameters; layers without parameters follow the layer "
                                     "before them (assign conv and fc layers)", layer.spec.name));
      continue;  // a glob such as "*" may cover relu and pool layers: they follow their input
    }
    matched = true;
    if (!given_by[l].empty())
      throw InputError(origin, path, pattern,
                       fmt::format("layer {} is assigned twice (also by \"{}\")", layer.spec.name, given_by[l]));
    given_by[l] = pattern;
    assignment.kinds[l] = kind;
  }
  if (!matched)
    throw InputError(origin, path, pattern,
                     fmt::format("no conv or fc layer of {} matches this name", network.name));
}

}  // namespace

LayerAssignment parse_assignment(const Network& network, const std::string& text, const std::string& origin) {
  LayerAssignment assignment;
  assignment.kinds.assign(network.layers.size(), PartitionKind::data);
  std::vector<std::string> given_by(network.layers.size());
  const bool is_file = text.ends_with(".json") || (text.find('=') == std::string::npos && std::filesystem::exists(text));
  if (is_file) {
    // {"assign": {"conv*": "data", "fc6": "model", ...}}
    const nlohmann::json document = read_json_file(text);
    const JsonNode root(document, text);
    root.check_keys({"assign", "network", "source"});
    const JsonNode entries = root.at("assign");
    for (const std::string& pattern : entries.keys())
      add_entry(network, text, entries.at(pattern).path(), pattern, entries.at(pattern).as_string(), given_by,
                assignment);
    return assignment;
  }
  if (text.empty()) return assignment;  // every layer data-parallel
  for (const std::string& item : split(text, ',')) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw InputError(origin, fmt::format("/{}", item), item, "expected LAYER=data|model|replicated (LAYER may use * and ?)");
    add_entry(network, origin, fmt::format("/{}", item.substr(0, eq)), item.substr(0, eq), item.substr(eq + 1), given_by, assignment);
  }
  return assignment;
}

std::string to_string(const Network& network, const LayerAssignment& assignment) {
  std::vector<std::string> entries;
  for (std::size_t l = 0; l < network.layers.size(); ++l)
    if (network.layers[l].has_parameters())
      entries.push_back(network.layers[l].spec.name + '=' + cnnpar::to_string(assignment.kinds[l]));
  return fmt::format("{}", fmt::join(entries, ","));
}

// ---- the plan: regions and transitions per layer --------------------------------------

namespace {

enum class Holding { batch_slice, unit_slice, whole };

Split split_of(Holding holding) {
  return holding == Holding::batch_slice ? Split::batch : holding == Holding::unit_slice ? Split::units : Split::none;
}

enum class ErrorsOut { none, local, reduce_scatter, allreduce, allgather };

struct LayerPlan {
  PartitionKind kind = PartitionKind::data;
  Holding held = Holding::batch_slice;  // region of the output (and of its errors)
  bool gather_input = false;            // forward transition: allgather of the input
  Split input_split = Split::none;
  ErrorsOut errors_out = ErrorsOut::none;  // backward transition into the predecessor
  Split errors_split = Split::none;
  bool lee = false;  // replicated with batch-sliced activations: gathers, delayed gradient
};

std::vector<LayerPlan> make_plan(const Network& network, const LayerAssignment& assignment, int ranks) {
  const int L = int(network.layers.size());
  std::vector<LayerPlan> plan(static_cast<std::size_t>(L));
  // Next parameterised layer's assignment after l (a Lee-style layer needs a batch-sliced consumer).
  const auto next_param_kind = [&](int l) {
    for (int j = l + 1; j < L; ++j)
      if (network.layers[std::size_t(j)].has_parameters()) return assignment.kinds[std::size_t(j)];
    return PartitionKind::data;
  };
  for (int l = 0; l < L; ++l) {
    const Layer& layer = network.layers[std::size_t(l)];
    LayerPlan& p = plan[std::size_t(l)];
    if (ranks == 1) {
      // One rank holds everything: no transitions (Lee's gathers stay, as lee keeps them).
      p.kind = layer.has_parameters() ? assignment.kinds[std::size_t(l)] : PartitionKind::data;
      p.lee = l > 0 && p.kind == PartitionKind::replicated;
      continue;
    }
    // The network input is read from the dataset in whatever region a layer needs; a layer of
    // a graph reads the output of the (first) layer it names.
    const int producer = layer.inputs.empty() ? l - 1 : layer.inputs.front();
    const Holding in = producer < 0 ? Holding::whole : plan[std::size_t(producer)].held;
    const bool first = l == 0;
    if (layer.has_parameters()) {
      p.kind = assignment.kinds[std::size_t(l)];
      Holding need = Holding::whole;  // the input region the forward GEMM needs
      switch (p.kind) {
        case PartitionKind::data:
          p.held = Holding::batch_slice;
          need = Holding::batch_slice;
          break;
        case PartitionKind::model:
          p.held = Holding::unit_slice;
          need = Holding::whole;
          break;
        case PartitionKind::replicated:
          p.lee = !first && in == Holding::batch_slice && next_param_kind(l) != PartitionKind::model;
          p.held = p.lee ? Holding::batch_slice : Holding::whole;
          need = p.held;
          break;
        case PartitionKind::none:
          CNNPAR_ASSERT(false, "parse_assignment refuses none");
      }
      if (!first && in != need && in != Holding::whole) {
        p.gather_input = true;
        p.input_split = split_of(in);
      }
      if (!first) {
        if (p.kind == PartitionKind::model) {
          // Partial sums of the input errors over everything.
          p.errors_out = in == Holding::whole ? ErrorsOut::allreduce : ErrorsOut::reduce_scatter;
          p.errors_split = split_of(in);
        } else if (need == in) {
          p.errors_out = ErrorsOut::none;
        } else if (need == Holding::whole) {
          p.errors_out = ErrorsOut::local;  // whole errors computed: keep the predecessor's share
        } else {
          p.errors_out = ErrorsOut::allgather;  // batch slice computed; the predecessor holds more
          p.errors_split = Split::batch;
        }
      }
    } else {
      const bool gather = needs_all_units(layer.spec.kind) && in == Holding::unit_slice;
      p.held = gather ? Holding::whole : in;
      p.gather_input = gather;
      p.input_split = gather ? Split::units : Split::none;
      p.errors_out = gather ? ErrorsOut::local : ErrorsOut::none;
      p.kind = p.held == Holding::batch_slice  ? PartitionKind::data
               : p.held == Holding::unit_slice ? PartitionKind::model
                                               : PartitionKind::replicated;
    }
  }
  return plan;
}

// On a graph network the transitions run along chain links only: a layer that joins several
// inputs, reads an output that other layers read too, or reads other than the layer before it
// keeps its input's region (no gather, no errors exchange), and a join's inputs share one
// region; batchnorm layers are data parallel (each normalises its own channels of its images).
void check_graph_plan(const Network& network, const LayerAssignment& assignment, const std::vector<LayerPlan>& plan,
                      const std::string& origin) {
  const std::vector<std::vector<int>> readers = network.readers();
  for (int l = 0; l < int(network.layers.size()); ++l) {
    const Layer& layer = network.layers[std::size_t(l)];
    const LayerPlan& p = plan[std::size_t(l)];
    if (layer.spec.kind == LayerKind::batchnorm && assignment.kinds[std::size_t(l)] != PartitionKind::data)
      throw InputError(origin, fmt::format("/{}", layer.spec.name),
                       fmt::format("{}={}", layer.spec.name, cnnpar::to_string(assignment.kinds[std::size_t(l)])),
                       "a batchnorm layer is data parallel (it follows the partition of the layer it reads)");
    const int producer = layer.inputs.front();
    std::string why;
    if (layer.inputs.size() > 1)
      why = fmt::format("joins {} layers", layer.inputs.size());
    else if (producer >= 0 && readers[std::size_t(producer)].size() > 1)
      why = fmt::format("reads {}, which {} layers read", network.layers[std::size_t(producer)].spec.name,
                        readers[std::size_t(producer)].size());
    else if (producer != l - 1)
      why = fmt::format("reads {}, not the layer before it", network.layers[std::size_t(producer)].spec.name);
    if (why.empty()) continue;
    bool moves = p.gather_input || p.errors_out != ErrorsOut::none;
    for (const int read : layer.inputs) moves = moves || (read >= 0 && plan[std::size_t(read)].held != p.held);
    if (moves)
      throw InputError(origin, fmt::format("/{}", layer.spec.name), layer.spec.name,
                       fmt::format("on a graph network per_layer moves tensors between partitions along chain links "
                                   "only; layer {} {}, so it and the layers it reads need one partition",
                                   layer.spec.name, why));
  }
}

LayerPartition partition_of(const Network& network, const LayerPlan& p, int layer, std::int64_t global_batch,
                            int ranks, int rank) {
  const std::int64_t units = layer_units(network.layers[std::size_t(layer)]);
  LayerPartition partition;
  partition.kind = p.kind;
  partition.batch = {0, global_batch};
  partition.units = {0, units};
  if (p.held == Holding::batch_slice) partition.batch = even_slice(global_batch, ranks, rank);
  if (p.held == Holding::unit_slice) partition.units = even_slice(units, ranks, rank);
  return partition;
}

// One step of the per-iteration program, expanded per rank class with that class's ops.
struct Step {
  enum class Kind { forward, backward_data, backward_weight, backward_weight_full, update, post, wait, mark } kind;
  int value = -1;  // layer, collective id or iteration
};

}  // namespace

Schedule build_per_layer_assignment(const Network& network, const Platform& platform, const StrategyOptions& options,
                                    const LayerAssignment& assignment, const std::string& origin) {
  const int P = options.ranks;
  const std::int64_t N = options.global_batch;
  const int L = int(network.layers.size());
  const std::vector<LayerPlan> plan = make_plan(network, assignment, P);
  if (network.first_graph_layer() >= 0) check_graph_plan(network, assignment, plan, origin);

  for (int l = 0; l < L; ++l) {
    const Layer& layer = network.layers[std::size_t(l)];
    if (plan[std::size_t(l)].kind == PartitionKind::model && layer.has_parameters() && layer_units(layer) < P)
      throw InputError(origin, fmt::format("/{}", layer.spec.name), fmt::format("{}=model", layer.spec.name),
                       fmt::format("layer {} has {} output units and cannot be split over {} ranks "
                                   "(assign it data or replicated)", layer.spec.name, layer_units(layer), P));
    if (plan[std::size_t(l)].lee && options.iterations < 2)
      throw InputError(origin, fmt::format("/{}", layer.spec.name), fmt::format("{}=replicated", layer.spec.name),
                       "a replicated layer between batch-sliced layers delays its update into the next "
                       "iteration (Lee et al.): at least 2 iterations are needed");
  }

  Schedule schedule = start_schedule(network, options, 0);
  schedule.options["assignment"] = to_string(network, assignment);

  const auto max_slice = [&](std::int64_t total) { return total / P + (total % P != 0 ? 1 : 0); };
  // Bytes of one member's block of layer `l`'s output cut along `split` (padded to the largest).
  const auto block_bytes = [&](int l, Split split) {
    const Layer& layer = network.layers[std::size_t(l)];
    const double spatial = double(layer_spatial(layer));
    const double units = double(layer_units(layer));
    if (split == Split::batch) return 4.0 * double(max_slice(N)) * units * spatial;
    return 4.0 * double(N) * double(max_slice(layer_units(layer))) * spatial;
  };
  const auto whole_bytes = [&](int l) { return 4.0 * double(N) * double(network.layers[std::size_t(l)].out.elements()); };
  const auto add = [&](CollectiveKind kind, double bytes, Payload payload, int layer, Split split, int m,
                       std::string label) {
    return add_layer_collective(schedule, platform, kind, bytes, all_ranks(P), -1,
                                {payload, layer, m, {}, {}, split}, std::move(label));
  };
  const auto name = [&](int l) { return network.layers[std::size_t(l)].spec.name; };

  // Chunk boundary (sync = chunks), counted as lee counts k.
  int boundary = -1;
  const std::string sync = options.text("sync");
  if (sync == "chunks") {
    const std::vector<int> counted = network.counted_layers();
    boundary = counted[counted.size() - std::size_t(chunk_k(network, options))];
    schedule.options["k"] = chunk_k(network, options);
  }
  std::vector<int> data_layers, chunk1, chunk2, lee_layers, local_update_layers;  // backward order, lee: layer order
  for (int l : parameter_layers_backward(network)) {
    const LayerPlan& p = plan[std::size_t(l)];
    if (p.kind == PartitionKind::data) {
      data_layers.push_back(l);
      (l >= boundary ? chunk1 : chunk2).push_back(l);
    } else if (!p.lee) {
      local_update_layers.push_back(l);
    }
  }
  for (int l = 0; l < L; ++l)
    if (plan[std::size_t(l)].lee) lee_layers.push_back(l);

  std::vector<Step> steps;
  const auto emit = [&](Step::Kind kind, int value) { steps.push_back({kind, value}); };
  std::vector<int> previous_a(std::size_t(L), -1), previous_e(std::size_t(L), -1);
  std::vector<int> current_a(std::size_t(L), -1), current_e(std::size_t(L), -1);
  const auto post_lee_gather = [&](int l, Payload payload, int m) {
    const bool acts = payload == Payload::activations;
    const double bytes = acts ? 4.0 * double(max_slice(N)) * double(network.layers[std::size_t(l)].in.elements())
                              : block_bytes(l, Split::batch);
    const int id = add(CollectiveKind::allgather, bytes, payload, l, Split::batch, m,
                       fmt::format("allgather {} {}", acts ? "A" : "E", name(l)));
    (acts ? current_a : current_e)[std::size_t(l)] = id;
    emit(Step::Kind::post, id);
  };
  // Synchronised batchnorm's statistics, posted and waited for before the layer's ops.
  const auto statistics = [&](int l, Payload payload, int m) {
    const int id = add_statistics_allreduce(schedule, network, platform, options, l, payload, m);
    if (id < 0) return;
    emit(Step::Kind::post, id);
    emit(Step::Kind::wait, id);
  };
  const auto delayed_update = [&](int l) {
    emit(Step::Kind::wait, previous_a[std::size_t(l)]);
    emit(Step::Kind::wait, previous_e[std::size_t(l)]);
    emit(Step::Kind::backward_weight_full, l);
    emit(Step::Kind::update, l);
  };

  for (int m = 0; m < options.iterations; ++m) {
    // Forward.
    for (int l = 0; l < L; ++l) {
      const LayerPlan& p = plan[std::size_t(l)];
      if (p.lee && m > 0) delayed_update(l);
      if (p.gather_input) {
        const int id = add(CollectiveKind::allgather, block_bytes(l - 1, p.input_split), Payload::activations, l,
                           p.input_split, m, fmt::format("allgather {} input ({})", name(l), to_string(p.input_split)));
        emit(Step::Kind::post, id);
        emit(Step::Kind::wait, id);
      }
      statistics(l, Payload::batch_statistics, m);
      emit(Step::Kind::forward, l);
      if (l + 1 < L && plan[std::size_t(l + 1)].lee) post_lee_gather(l + 1, Payload::activations, m);
    }
    // Backward.
    std::vector<std::pair<int, int>> posted;  // (layer, gradient collective), sync layerwise
    int chunk1_id = -1, chunk2_id = -1;
    for (int l = L - 1; l >= 0; --l) {
      const LayerPlan& p = plan[std::size_t(l)];
      const bool has_weights = network.layers[std::size_t(l)].has_parameters() && !p.lee;
      const auto weight_gradient = [&] {
        if (!has_weights) return;
        emit(Step::Kind::backward_weight, l);
        if (p.kind == PartitionKind::data && sync == "layerwise") {
          const int id = schedule.add_collective(gradient_allreduce(network, platform, P, {l}, m, fmt::format("allreduce {}", name(l))));
          emit(Step::Kind::post, id);
          posted.emplace_back(l, id);
        }
      };
      const auto chunk1_post = [&] {
        if (l == boundary && !chunk1.empty()) {
          chunk1_id = schedule.add_collective(gradient_allreduce(network, platform, P, chunk1, m, "allreduce chunk1"));
          emit(Step::Kind::post, chunk1_id);
        }
      };
      int errors_id = -1;
      statistics(l, Payload::error_statistics, m);  // before this layer's backward ops (sync_bn)
      if (p.errors_out == ErrorsOut::reduce_scatter || p.errors_out == ErrorsOut::allreduce ||
          p.errors_out == ErrorsOut::allgather) {
        emit(Step::Kind::backward_data, l);
        const int pred = l - 1;
        if (p.errors_out == ErrorsOut::reduce_scatter)
          errors_id = add(CollectiveKind::reduce_scatter, double(P) * block_bytes(pred, p.errors_split), Payload::errors,
                          pred, p.errors_split, m, fmt::format("reduce_scatter {} errors ({})", name(pred), to_string(p.errors_split)));
        else if (p.errors_out == ErrorsOut::allreduce)
          errors_id = add(CollectiveKind::allreduce, whole_bytes(pred), Payload::errors, pred, Split::none, m,
                          fmt::format("allreduce {} errors", name(pred)));
        else
          errors_id = add(CollectiveKind::allgather, block_bytes(pred, Split::batch), Payload::errors, pred, Split::batch,
                          m, fmt::format("allgather {} errors (batch)", name(pred)));
        emit(Step::Kind::post, errors_id);
        weight_gradient();
        chunk1_post();
        emit(Step::Kind::wait, errors_id);
      } else if (sync == "end") {
        emit(Step::Kind::backward_data, l);  // errors first, as in Lee's Algorithm 1 (dp)
        weight_gradient();
      } else {
        weight_gradient();  // Algorithm 2: ΔW^l before E^{l-1}, so its allreduce starts early
        chunk1_post();
        emit(Step::Kind::backward_data, l);
      }
    }
    // Gradient exchange and updates.
    if (sync == "end") {
      std::vector<int> ids;
      for (int l : data_layers) {
        ids.push_back(schedule.add_collective(gradient_allreduce(network, platform, P, {l}, m, fmt::format("allreduce {}", name(l)))));
        emit(Step::Kind::post, ids.back());
      }
      for (int l : lee_layers) post_lee_gather(l, Payload::errors, m);
      for (int id : ids) emit(Step::Kind::wait, id);
      for (int l : data_layers) emit(Step::Kind::update, l);
    } else if (sync == "layerwise") {
      for (int l : lee_layers) post_lee_gather(l, Payload::errors, m);
      for (const auto& [layer, id] : posted) {
        emit(Step::Kind::wait, id);
        emit(Step::Kind::update, layer);
      }
    } else {
      if (!chunk2.empty()) {
        chunk2_id = schedule.add_collective(gradient_allreduce(network, platform, P, chunk2, m, "allreduce chunk2"));
        emit(Step::Kind::post, chunk2_id);
      }
      if (chunk1_id >= 0) emit(Step::Kind::wait, chunk1_id);
      for (int l : chunk1) emit(Step::Kind::update, l);
      if (chunk2_id >= 0) emit(Step::Kind::wait, chunk2_id);
      for (int l : lee_layers) post_lee_gather(l, Payload::errors, m);
      for (int l : chunk2) emit(Step::Kind::update, l);
    }
    for (int l : local_update_layers) emit(Step::Kind::update, l);
    emit(Step::Kind::mark, m);
    std::swap(previous_a, current_a);
    std::swap(previous_e, current_e);
  }
  for (int l : lee_layers) delayed_update(l);  // flush, outside every measured iteration

  // Expand the steps per class of ranks with the same slice sizes (copy-on-write sharing).
  schedule.programs.resize(std::size_t(P));
  std::map<std::vector<std::int64_t>, OpList> classes;
  for (int r = 0; r < P; ++r) {
    Program& program = schedule.programs[std::size_t(r)];
    program.rank = r;
    std::vector<LayerSlice> slices(static_cast<std::size_t>(L));
    std::vector<std::int64_t> key;
    key.reserve(2 * std::size_t(L));
    program.partitions.reserve(std::size_t(L));
    for (int l = 0; l < L; ++l) {
      const LayerPartition partition = partition_of(network, plan[std::size_t(l)], l, N, P, r);
      program.partitions.push_back(partition);
      const std::int64_t units = layer_units(network.layers[std::size_t(l)]);
      slices[std::size_t(l)] = {partition.batch.count, partition.units.count == units ? 0 : partition.units.count};
      key.push_back(partition.batch.count);
      key.push_back(partition.units.count);
    }
    auto found = classes.find(key);
    if (found != classes.end()) {
      program.ops = found->second;
      continue;
    }
    const LayerOps ops(network, slices, N);
    const auto step_ops = [&](const Step& step) -> std::span<const Op> {
      switch (step.kind) {
        case Step::Kind::forward: return ops.forward(step.value);
        case Step::Kind::backward_data: return ops.backward_data(step.value);
        case Step::Kind::backward_weight: return ops.backward_weight(step.value);
        case Step::Kind::backward_weight_full: return ops.backward_weight_full(step.value);
        case Step::Kind::update: return ops.update(step.value);
        default: return {};
      }
    };
    std::size_t op_count = 0;
    for (const Step& step : steps) op_count += std::max<std::size_t>(1, step_ops(step).size());
    std::vector<Op>& out = program.ops.mutable_vector();
    out.reserve(op_count);
    for (const Step& step : steps) {
      switch (step.kind) {
        case Step::Kind::forward:
        case Step::Kind::backward_data:
        case Step::Kind::backward_weight:
        case Step::Kind::backward_weight_full:
        case Step::Kind::update: append(out, step_ops(step)); break;
        case Step::Kind::post: out.push_back(Op::post_op(step.value)); break;
        case Step::Kind::wait: out.push_back(Op::wait_op(step.value)); break;
        case Step::Kind::mark: out.push_back(Op::mark_op(step.value)); break;
      }
    }
    classes.emplace(std::move(key), program.ops);
  }
  return schedule;
}

// Flag or file that an assignment error names: the study file, or --assign on the command line.
std::string assign_origin(const StrategyOptions& options) {
  return options.origin == "command line" ? "--assign" : options.origin;
}

namespace {

Schedule build_per_layer(const Network& network, const Platform& platform, const StrategyOptions& options) {
  const LayerAssignment assignment = parse_assignment(network, options.text("assign"), assign_origin(options));
  return build_per_layer_assignment(network, platform, options, assignment, assign_origin(options));
}

}  // namespace

OptionSpec sync_option() {
  return {.key = "sync",
          .type = OptionType::choice,
          .default_text = "layerwise",
          .choices = {"end", "layerwise", "chunks"},
          .help = "when data-parallel gradients are allreduced: end (after the whole backward, as dp), "
                  "layerwise (each when ready, as dp_layerwise) or chunks (lee's two chunks, see --k)"};
}

void validate_per_layer(const Network& network, const StrategyOptions& options) {
  if (options.text("sync") == "chunks") check_chunk_k(network, options);
  // The assignment itself is checked when it is built (it needs the rank count).
}

StrategyOptions assignment_options(StrategyOptions options, const std::string& assign) {
  options.name = "per_layer";
  options.values["assign"] = assign;
  return options;
}

bool is_assignment(const StrategyOptions& options) { return options.name == "per_layer"; }

StrategySpec per_layer_strategy() {
  return {.name = "per_layer",
          .summary = "any assignment of conv/fc layers to data, model or replicated; the transitions are inserted",
          .options = {{.key = "assign",
                       .type = OptionType::text,
                       .help = "LAYER=data|model|replicated,... (globs allowed; unnamed layers: data) or a JSON file"},
                      sync_option(),
                      chunk_k_option(),
                      sync_bn_option()},
          .validate = validate_per_layer,
          .build = build_per_layer,
          .graphs = true};
}

}  // namespace cnnpar::strategies
