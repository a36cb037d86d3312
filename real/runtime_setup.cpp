// Set-up of a Runtime from the Schedule's partitions: the network check, every tensor's
// region and buffer, the parameter layout, the owned rows and the initial weights.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include "base/error.hpp"
#include "real/hash.hpp"
#include "real/runtime_impl.hpp"
#include "workload/executor_network.hpp"
#include "system/op_time.hpp"

namespace cnnpar::real {
namespace {

// Standard normal value number `index` of stream (seed, layer): Box-Muller on two hashes.
double normal(std::uint64_t seed, std::int64_t layer, std::int64_t index) {
  const std::uint64_t h = mix64(mix64(mix64(seed ^ 0x7765696768747321ull) ^ std::uint64_t(layer)) ^
                                std::uint64_t(index));
  const std::uint64_t h2 = mix64(h);
  const double u1 = (double(h >> 11) + 1.0) * (1.0 / 9007199254740993.0);  // (0, 1]
  const double u2 = double(h2 >> 11) * (1.0 / 9007199254740992.0);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Parameter counts come from the network file: multiply with overflow checks, and refuse
// a model whose weights, gradients and momentum (3 FP32 arrays) exceed this machine's memory
// before anything is allocated.
std::int64_t checked_product(std::int64_t a, std::int64_t b, const Network& net, int layer) {
  std::int64_t product = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &product))
    throw InputError("<network " + net.name + ">", fmt::format("/layers/{}", layer), fmt::format("{} x {}", a, b),
                     "parameter count overflows 64 bits");
  return product;
}

std::int64_t checked_sum(std::int64_t a, std::int64_t b, const Network& net, int layer) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    throw InputError("<network " + net.name + ">", fmt::format("/layers/{}", layer), fmt::format("{} + {}", a, b),
                     "parameter count overflows 64 bits");
  return sum;
}

}  // namespace

void Runtime::Impl::init(const Schedule& schedule) {
  CNNPAR_ASSERT(rank >= 0 && rank < schedule.ranks(), "rank outside the schedule");
  ranks = schedule.ranks();
  N = schedule.global_batch;
  schedule_iterations = schedule.iterations;
  const int L = int(net.layers.size());
  check_executor_network(net, "<network " + net.name + ">");
  CNNPAR_ASSERT(N > 0, "empty batch");
  layers.resize(std::size_t(L));

  read_partitions(schedule);
  bind_layers();
  find_layer_ops(schedule.programs[std::size_t(rank)]);
  set_input(schedule);
  lay_out_parameters();
  std::int64_t max_dcols = 0, total_cols = 0;  // floats of the conv layers' columns: largest, sum
  for (int l = 0; l < L; ++l) {
    const std::int64_t columns = allocate_layer(l);
    max_dcols = std::max(max_dcols, columns);
    total_cols += columns;
  }
  allocate_errors(schedule);
  allocate_columns(max_dcols, total_cols);
  initialise_weights(schedule);
  for (const Collective& c : schedule.collectives)
    if (c.payload == Payload::batch_statistics) layers.at(std::size_t(c.layers.at(0))).synchronised = true;
  // A parameter server stages its replies; its workers keep the global weights they train from.
  const auto& own_ops = schedule.programs[std::size_t(rank)].ops;
  serves = std::any_of(own_ops.begin(), own_ops.end(), [](const Op& op) { return op.kind == OpKind::serve; });
  for (const Collective& c : schedule.collectives)
    if (c.payload == Payload::increments && c.root == rank) {
      base_weights = weights;
      break;
    }
  // Independent learners: a worker's gradients are the mean over its own images; the
  // bulk-synchronous ranks' add up to the mean over the global batch.
  loss_batch = base_weights.empty() ? N : layers.back().held.batch.count;
}

void Runtime::Impl::read_partitions(const Schedule& schedule) {
  const int L = int(net.layers.size());
  // Every tensor is allocated from the partitions (a schedule without them is data parallel
  // over the batch split of its forward ops, as written before partitions existed).
  partitions.assign(std::size_t(ranks), {});
  for (int r = 0; r < ranks; ++r) {
    const Program& program = schedule.programs[std::size_t(r)];
    if (!program.partitions.empty()) {
      CNNPAR_ASSERT(int(program.partitions.size()) == L, "one partition per layer");
      partitions[std::size_t(r)] = program.partitions;
      continue;
    }
    std::int64_t nr = 0;
    for (const Op& op : program.ops)
      if (op.kind == OpKind::compute && op.layer >= 0 && op.phase == Phase::forward) { nr = op.batch; break; }
    if (nr == 0) nr = N / ranks;
    std::int64_t first = 0;
    for (int q = 0; q < r; ++q) first += partitions[std::size_t(q)].empty() ? 0 : partitions[std::size_t(q)].front().batch.count;
    for (int l = 0; l < L; ++l)
      partitions[std::size_t(r)].push_back({PartitionKind::data, {first, nr}, {0, layer_units(net.layers[std::size_t(l)])}});
  }
}

void Runtime::Impl::bind_layers() {
  const int L = int(net.layers.size());
  const std::vector<std::vector<int>> readers = net.readers();  // one entry per input edge
  for (int l = 0; l < L; ++l) {
    const Layer& ly = net.layers[std::size_t(l)];
    LayerState& x = layers[std::size_t(l)];
    x.layer = &ly;
    x.index = l;
    CNNPAR_ASSERT(!ly.inputs.empty(), "a layer without inferred inputs: " + ly.spec.name);
    x.producer = ly.inputs.front();
    CNNPAR_ASSERT(x.producer >= 0 || l == 0, "only the first layer reads the network input: " + ly.spec.name);
    x.reader_edges = int(readers[std::size_t(l)].size());
    x.held = partitions[std::size_t(rank)][std::size_t(l)];
    x.n = x.held.batch.count;
    // Lee's replicated gradient calculation: whole weights, batch-sliced activations (on one
    // rank every region is whole, and a replicated layer after the first gathers from itself).
    x.replicated = x.held.kind == PartitionKind::replicated && ly.has_parameters() &&
                   (x.held.batch.count < N || (ranks == 1 && l > 0));
  }
}

// Which ops the rank's program has per layer and phase (the others are done inside its ops),
// and the images of each iteration's first forward op.
void Runtime::Impl::find_layer_ops(const Program& program) {
  const int L = int(net.layers.size());
  round_batches.clear();
  std::int64_t round_images = -1;  // none until the iteration's first forward op
  for (const Op& op : program.ops) {
    if (op.kind == OpKind::mark) {
      round_batches.push_back(round_images);
      round_images = -1;
    }
    if (op.kind != OpKind::compute || op.layer < 0) continue;
    if (round_images < 0 && op.phase == Phase::forward) round_images = op.images.count;
    CNNPAR_ASSERT(op.layer < L, "compute op names a layer outside the network: " + op.label);
    auto& x = layers[std::size_t(op.layer)];
    const LayerKind kind = net.layers[std::size_t(op.layer)].spec.kind;
    if (op.phase == Phase::forward && op.kernel == KernelClass::im2col) x.im2col_op = true;
    if (op.phase == Phase::backward_weight && op.kernel == KernelClass::im2col) x.im2col_w_op = true;
    if (op.phase == Phase::forward && op.kernel == KernelClass::eltwise &&
        (kind == LayerKind::conv || kind == LayerKind::fc))
      x.bias_op = true;
    if (op.phase == Phase::backward_data && op.kernel == KernelClass::col2im) x.col2im_op = true;
    if (runs_conv_primitive(op.kernel)) x.direct_ops = true;
    if (op.kernel == KernelClass::winograd) x.direct_algorithm = ConvAlgorithm::winograd;
    if (op.phase == Phase::backward_data && kind == LayerKind::softmax) x.softmax_bwd_op = true;
  }
}

void Runtime::Impl::set_input(const Schedule& schedule) {
  // The input this rank reads: the region of images the first layer needs.
  const Range input_batch = layers.front().held.batch;
  n = input_batch.count;
  first_image = input_batch.begin;
  rank_batches.clear();
  for (int r = 0; r < ranks; ++r) rank_batches.push_back(partitions[std::size_t(r)].front().batch.count);
  CNNPAR_ASSERT(first_image + n <= N, "sub-batches exceed the global batch");

  input_cm = net.layers.front().spec.kind != LayerKind::fc;
  input.assign(std::size_t(n * net.input.elements()), 0.0f);
  label_range = layers.back().held.batch;
  labels.assign(std::size_t(label_range.count), 0);
  // A loss over the whole batch on several ranks counts once: each reports 1/holders of its sum.
  loss_holders = 0;
  int lowest_holder = -1;
  for (int r = 0; r < ranks; ++r)
    if (partitions[std::size_t(r)].back().batch.count == N) {
      ++loss_holders;
      if (lowest_holder < 0) lowest_holder = r;
    }
  if (label_range.count < N) loss_holders = 1;
  counts_correct = label_range.count < N || rank == lowest_holder;
  // The input arrives by a collective instead of the dataset (a conv_split worker).
  reads_dataset = !input_arrives_by_collective(schedule, rank);
}

void Runtime::Impl::lay_out_parameters() {
  const int L = int(net.layers.size());
  // Parameter offsets: non-replicated layers first, then replicated ones, each in layer order,
  // so gradient chunks of adjacent layers are contiguous (in-place allreduce).
  std::int64_t off = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (int l = 0; l < L; ++l) {
      const Layer& ly = net.layers[std::size_t(l)];
      LayerState& x = layers[std::size_t(l)];
      if (!ly.has_parameters() || x.replicated != (pass == 1)) continue;
      if (ly.spec.kind == LayerKind::conv) {
        x.row_floats = checked_product(checked_product(ly.in.c, ly.spec.kernel_h, net, l), ly.spec.kernel_w, net, l);
        x.units_total = ly.out.c;
        x.biases = ly.spec.bias ? ly.out.c : 0;
      } else if (ly.spec.kind == LayerKind::batchnorm) {  // W = per-channel scale, b = shift
        x.row_floats = 1;
        x.units_total = ly.out.c;
        x.biases = ly.out.c;
      } else {
        x.row_floats = ly.in.elements();
        x.units_total = ly.out.elements();
        x.biases = ly.out.elements();
      }
      x.weights = checked_product(x.units_total, x.row_floats, net, l);
      x.offset = off;
      off = checked_sum(off, checked_sum(x.weights, x.biases, net, l), net, l);
    }
  params = off;
  const double memory_bytes = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGESIZE));
  const double state_bytes = 3.0 * sizeof(float) * double(params);  // weights, gradients, momentum
  if (memory_bytes > 0 && state_bytes > memory_bytes)
    throw InputError("<network " + net.name + ">", "/layers", fmt::format("{} parameters", params),
                     fmt::format("weights, gradients and momentum need {:.3g} GB, more than this machine's {:.3g} GB",
                                 state_bytes / 1e9, memory_bytes / 1e9));
}

std::int64_t Runtime::Impl::allocate_layer(int l) {
  LayerState& x = layers[std::size_t(l)];
  const std::int64_t columns = shape_layer(x);
  x.out_region = held_region(rank, l);
  x.in_region = input_region(rank, l);
  if (x.none()) {  // takes no part: no buffers
    x.out.allocate(0);
    return columns;
  }
  if (l > 0) choose_transitions(x);
  if (in_place(l))
    x.out.share(layers[std::size_t(x.producer)].out);
  else
    x.out.allocate(std::size_t(x.out_region.elements()));  // the errors: allocate_errors
  x.image_floats = x.n > 0 ? std::int64_t(x.out.size()) / x.n : 0;
  if (x.replicated) allocate_gathered(x);
  return columns;
}

// Layouts, kernel geometry and the per-kind buffers of a layer.
std::int64_t Runtime::Impl::shape_layer(LayerState& x) {
  const int l = x.index;
  const Layer& ly = *x.layer;
  const std::int64_t n_l = x.n;
  const std::int64_t units = x.held.units.count;
  std::int64_t columns = 0;
  x.in_cm = x.producer < 0 ? input_cm : layers[std::size_t(x.producer)].out_cm;
  switch (ly.spec.kind) {
    case LayerKind::conv:
    case LayerKind::pool:
      CNNPAR_ASSERT(x.in_cm, "check_executor_network passed conv/pool after an fc layer: " + ly.spec.name);
      x.out_cm = true;
      // A pool layer works on the maps it holds; a conv layer reads every input map.
      x.geo = ConvGeometry{ly.spec.kind == LayerKind::pool ? units : ly.in.c, n_l, ly.in.h, ly.in.w,
                           ly.spec.kernel_h, ly.spec.kernel_w, ly.spec.stride, ly.spec.pad, ly.spec.ceil};
      CNNPAR_ASSERT(x.geo.out_h() == ly.out.h && x.geo.out_w() == ly.out.w,
                    "inferred output shape differs from the kernel geometry: " + ly.spec.name);
      if (ly.spec.kind == LayerKind::conv && x.direct_ops) {
        CNNPAR_ASSERT(!x.im2col_op && !x.col2im_op && !x.im2col_w_op, "a conv layer with direct and column ops: " + ly.spec.name);
        if (!x.none()) x.direct = std::make_unique<DirectConv>(x.geo, units, x.direct_algorithm);
      } else if (ly.spec.kind == LayerKind::conv) {
        columns = x.geo.column_rows() * x.geo.column_cols();
      } else if (ly.spec.pool_mode == PoolMode::max) {
        x.argmax.assign(std::size_t(n_l * units * ly.out.h * ly.out.w), 0);
      }
      break;
    case LayerKind::fc:
      x.out_cm = false;
      if (x.in_cm) {
        x.rows_in.assign(std::size_t(n_l * ly.in.elements()), 0.0f);
        x.rows_dx.assign(std::size_t(n_l * ly.in.elements()), 0.0f);
      }
      break;
    case LayerKind::softmax:
      CNNPAR_ASSERT(!x.in_cm && l > 0, "check_executor_network passed a softmax without an fc layer before it");
      x.out_cm = false;
      break;
    case LayerKind::relu:
    case LayerKind::dropout:
    case LayerKind::lrn:
      x.out_cm = x.in_cm;
      if (ly.spec.kind != LayerKind::relu) x.aux.assign(std::size_t(n_l * units * ly.out.h * ly.out.w), 0.0f);
      break;
    case LayerKind::batchnorm:
      CNNPAR_ASSERT(x.in_cm, "check_executor_network passed a batchnorm after an fc layer: " + ly.spec.name);
      x.out_cm = true;
      x.bn_mean.assign(std::size_t(units), 0.0f);
      x.bn_invstd.assign(std::size_t(units), 0.0f);
      x.running_mean.assign(std::size_t(units), 0.0f);  // PyTorch's initial running statistics
      x.running_var.assign(std::size_t(units), 1.0f);
      x.bn_sums.assign(std::size_t(2 * units), 0.0f);
      break;
    case LayerKind::add:
    case LayerKind::concat:
      for (const int read : ly.inputs)
        CNNPAR_ASSERT(read >= 0 && layers[std::size_t(read)].out_cm,
                      "check_executor_network passed an add or concat of row tensors: " + ly.spec.name);
      x.out_cm = true;
      break;
  }
  return columns;
}

// Where a layer's input comes from and where its input errors go, from the region the layer it
// reads holds and the one this layer needs.
void Runtime::Impl::choose_transitions(LayerState& x) {
  const LayerState& before = layers[std::size_t(x.producer)];
  const Region& have = before.out_region;
  const Region& need = x.in_region;
  // An add or a concat reads every input over its own region (a join keeps its inputs'
  // partition: per_layer refuses other assignments on graphs).
  for (const int read : x.layer->inputs) {
    const Region& other = layers[std::size_t(read)].out_region;
    CNNPAR_ASSERT(x.layer->inputs.size() == 1 || (other.batch == x.out_region.batch &&
                                                    other.units.count == layer_units(net.layers[std::size_t(read)])),
                  "a layer with several inputs needs their whole regions: " + x.layer->spec.name);
  }
  const bool same = have.batch == need.batch && have.units == need.units;
  const bool inside = have.batch.contains(need.batch) && have.units.contains(need.units);
  x.input = same ? Input::previous : inside ? Input::extract : Input::gathered;
  const bool covers = need.batch.contains(have.batch) && need.units.contains(have.units);
  // A model layer's input errors are partial sums over its units (complete on one rank).
  const bool partial = x.model() && ranks > 1;
  x.errors = partial || !covers ? Errors::exchanged : same ? Errors::previous : Errors::extract;
  // Errors of a tensor several layers read add up; a layer with several inputs contributes
  // its errors' parts itself (runtime_passes.cpp).
  if (x.errors == Errors::previous && before.reader_edges > 1 && x.layer->inputs.size() <= 1) x.errors = Errors::summed;
  if (x.input != Input::previous) x.xin.assign(std::size_t(need.elements()), 0.0f);
  // A conv layer adds its summed input errors into the errors of the layer it reads.
  const bool adds_in_place = x.errors == Errors::summed && x.layer->spec.kind == LayerKind::conv;
  if (x.errors != Errors::previous && !adds_in_place) x.din.assign(std::size_t(need.elements()), 0.0f);
}

// Lee's gathered inputs and errors of a replicated layer, by iteration parity.
void Runtime::Impl::allocate_gathered(LayerState& x) {
  const int l = x.index;
  const Layer& ly = *x.layer;
  for (int p = 0; p < 2; ++p) {
    x.gathered_in[p].assign(std::size_t(N * ly.in.elements()), 0.0f);
    x.gathered_err[p].assign(std::size_t(N * ly.out.elements()), 0.0f);
    x.lee_rows = 0;
    for (int r = 0; r < ranks; ++r) x.lee_rows = std::max(x.lee_rows, partitions[std::size_t(r)][std::size_t(l)].batch.count);
    x.lee_padded = x.lee_rows * ranks != N;
    x.stage_in[p].assign(std::size_t(x.lee_rows * ly.in.elements()), 0.0f);
    x.stage_err[p].assign(std::size_t(x.lee_rows * ly.out.elements()), 0.0f);
    if (x.lee_padded) {
      x.padded_in[p].assign(std::size_t(ranks * x.lee_rows * ly.in.elements()), 0.0f);
      x.padded_err[p].assign(std::size_t(ranks * x.lee_rows * ly.out.elements()), 0.0f);
    }
  }
}

void Runtime::Impl::allocate_columns(std::int64_t max_dcols, std::int64_t total_cols) {
  dcols.assign(std::size_t(max_dcols), 0.0f);
  max_cols = max_dcols;
  // The Schedule says whether the columns are recomputed (`.im2col_w` ops, --columns
  // recomputed); kept columns beyond kKeepColumnsLimitBytes are recomputed inside the
  // backward_weight gemm op instead.
  bool recomputed = false;
  for (const LayerState& x : layers) recomputed = recomputed || x.im2col_w_op;
  set_keep_columns(!recomputed && 4.0 * double(total_cols) <= kKeepColumnsLimitBytes);
}

void Runtime::Impl::initialise_weights(const Schedule& schedule) {
  weights.assign(std::size_t(params), 0.0f);
  grads.assign(std::size_t(params), 0.0f);
  momentum.assign(std::size_t(params), 0.0f);
  int classifier = -1;  // the last parameterised layer, feeding the softmax
  for (const LayerState& x : layers)
    if (x.weights > 0) classifier = x.index;
  set_owned_rows(schedule);
  for (LayerState& x : layers) {
    if (x.weights == 0) continue;
    if (x.layer->spec.kind == LayerKind::batchnorm) {  // scale 1, shift 0 (PyTorch's BatchNorm2d)
      std::fill_n(weights.begin() + x.offset, x.weights, 1.0f);
      continue;
    }
    const double fan_in = double(x.weights) / double(x.units_total);  // C·KH·KW or K_b
    // He et al. for layers followed by relu; the classifier gets variance 1/fan_in scaled by
    // 1/16 so that the initial logits are small and the first loss is near ln(classes).
    // Every rank draws every weight, so a model-parallel slice equals one process's rows.
    const double stddev = x.index == classifier ? std::sqrt(1.0 / fan_in) / 4.0 : std::sqrt(2.0 / fan_in);
    for (std::int64_t i = 0; i < x.weights; ++i)
      weights[std::size_t(x.offset + i)] = float(stddev * normal(seed, x.index, i));
  }
}

// Which rows of each layer this rank owns: the rows its update ops update (a model slice, or
// every row); rows that several ranks update (data parallelism) belong to the lowest of them.
// A layer nobody updates in the schedule belongs to its model slices, else to rank 0.
void Runtime::Impl::set_owned_rows(const Schedule& schedule) {
  const int L = int(layers.size());
  // Under a parameter server the model is the server's global weights (its workers' are local
  // copies between merges).
  for (int r = 0; r < ranks; ++r) {
    const auto& ops = schedule.programs[std::size_t(r)].ops;
    if (std::none_of(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::serve; })) continue;
    for (LayerState& x : layers) x.owned_rows = r == rank ? Range{0, x.units_total} : Range{};
    return;
  }
  std::vector<int> lowest_whole(static_cast<std::size_t>(L), -1);
  std::vector<std::vector<char>> updates(static_cast<std::size_t>(ranks), std::vector<char>(std::size_t(L), 0));
  for (int r = 0; r < ranks; ++r)
    for (const Op& op : schedule.programs[std::size_t(r)].ops) {
      if (op.kind != OpKind::compute || !(op.phase == Phase::update || op.kernel == KernelClass::update)) continue;
      for (int l = 0; l < L; ++l) {
        if (op.layer >= 0 && op.layer != l) continue;
        const LayerPartition& p = partitions[std::size_t(r)][std::size_t(l)];
        const bool slice = p.kind == PartitionKind::model && op.units > 0;
        updates[std::size_t(r)][std::size_t(l)] = slice ? 2 : 1;
        if (!slice && lowest_whole[std::size_t(l)] < 0) lowest_whole[std::size_t(l)] = r;
      }
    }
  for (int l = 0; l < L; ++l) {
    LayerState& x = layers[std::size_t(l)];
    if (x.weights == 0) continue;
    const char mine = updates[std::size_t(rank)][std::size_t(l)];
    bool anyone = false;
    for (int r = 0; r < ranks; ++r) anyone = anyone || updates[std::size_t(r)][std::size_t(l)] != 0;
    if (!anyone)
      x.owned_rows = x.model() ? x.held.units : rank == 0 ? Range{0, x.units_total} : Range{};
    else if (mine == 2)
      x.owned_rows = x.held.units;
    else if (mine == 1 && lowest_whole[std::size_t(l)] == rank)
      x.owned_rows = {0, x.units_total};
    else
      x.owned_rows = {};
  }
}

int Runtime::Impl::statistics_owner(int l, std::int64_t unit) const {
  for (int r = 0; r < ranks; ++r) {
    const LayerPartition& p = partitions[std::size_t(r)][std::size_t(l)];
    if (p.kind != PartitionKind::none && p.batch.count > 0 && unit >= p.units.begin && unit < p.units.end())
      return r;
  }
  return 0;
}

void Runtime::Impl::set_keep_columns(bool keep) {
  keep_columns = keep;
  for (LayerState& x : layers) {
    if (x.layer->spec.kind != LayerKind::conv || x.direct_ops) continue;
    if (keep)
      x.cols.assign(std::size_t(x.geo.column_rows() * x.geo.column_cols()), 0.0f);
    else
      std::vector<float>().swap(x.cols);
  }
  if (keep)
    std::vector<float>().swap(shared_cols);
  else
    shared_cols.assign(std::size_t(max_cols), 0.0f);
}

// relu and dropout overwrite their input and its errors when nothing else reads them: same
// region as the layer before (no transition between), no other reader of that layer, and a
// layer before whose backward does not read its own output. relu's backward reads its output only by sign, which relu and
// dropout keep (dropout scales by >= 0, and a dropped unit's errors are 0 anyway), so the
// bits do not change.
bool Runtime::Impl::in_place(int l) const {
  if (l == 0) return false;
  const LayerState& x = layers[std::size_t(l)];
  const LayerKind kind = x.layer->spec.kind;
  if (kind != LayerKind::relu && kind != LayerKind::dropout) return false;
  if (x.input != Input::previous || x.errors != Errors::previous) return false;
  if (x.producer < 0 || layers[std::size_t(x.producer)].reader_edges != 1) return false;
  switch (net.layers[std::size_t(x.producer)].spec.kind) {
    case LayerKind::conv:
    case LayerKind::fc:
    case LayerKind::pool:
    case LayerKind::relu:
    case LayerKind::dropout:
    case LayerKind::batchnorm:  // its backward reads its input, not its output
    case LayerKind::add:
    case LayerKind::concat:
      return true;
    case LayerKind::lrn:      // its backward reads its output
    case LayerKind::softmax:  // last layer
      return false;
  }
  return false;
}

}  // namespace cnnpar::real
