#include "real/runtime.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include <unistd.h>

#include <fmt/format.h>

#include "base/error.hpp"
#include "system/op_time.hpp"
#include "real/hash.hpp"
#include "real/dataset.hpp"
#include "real/kernels.hpp"

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


// A region of a layer's output tensor (model/partition.hpp) in its memory layout:
// channel-major (units, images, spatial) or row-major (images, units, spatial).
struct Region {
  Range batch, units;
  std::int64_t spatial = 1;
  bool channel_major = false;
  std::int64_t elements() const { return batch.count * units.count * spatial; }
  std::int64_t offset(std::int64_t image, std::int64_t unit) const {
    return channel_major ? ((unit - units.begin) * batch.count + (image - batch.begin)) * spatial
                         : ((image - batch.begin) * units.count + (unit - units.begin)) * spatial;
  }
};

// Copies the elements both regions hold from `src` (laid out as `from`) to `dst` (`to`).
void copy_region(const Region& from, const float* src, const Region& to, float* dst) {
  const Range b = intersect(from.batch, to.batch), u = intersect(from.units, to.units);
  if (b.count == 0 || u.count == 0) return;
  CNNPAR_ASSERT(from.spatial == to.spatial && from.channel_major == to.channel_major, "regions of different tensors");
  const std::size_t row_bytes = sizeof(float) * std::size_t(from.spatial);
  if (from.channel_major) {
    for (std::int64_t unit = u.begin; unit < u.end(); ++unit)
      std::memcpy(dst + to.offset(b.begin, unit), src + from.offset(b.begin, unit), row_bytes * std::size_t(b.count));
  } else {
    for (std::int64_t image = b.begin; image < b.end(); ++image)
      std::memcpy(dst + to.offset(image, u.begin), src + from.offset(image, u.begin), row_bytes * std::size_t(u.count));
  }
}

// Images [first, first + count) of a channel-major (C, n, HW) tensor as rows (count, C·HW), and
// back: the fc layers of one sub-batch (Veeriah & Modi's schemes b and c).
void channel_major_image_rows(std::int64_t c, std::int64_t n, std::int64_t hw, std::int64_t first, std::int64_t count,
                              const float* in, float* rows) {
  for (std::int64_t i = 0; i < count; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch)
      std::memcpy(rows + (i * c + ch) * hw, in + (ch * n + first + i) * hw, sizeof(float) * std::size_t(hw));
}
void image_rows_channel_major(std::int64_t c, std::int64_t n, std::int64_t hw, std::int64_t first, std::int64_t count,
                              const float* rows, float* out) {
  for (std::int64_t i = 0; i < count; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch)
      std::memcpy(out + (ch * n + first + i) * hw, rows + (i * c + ch) * hw, sizeof(float) * std::size_t(hw));
}

// A region restricted to the images of a sub-batch (count 0: no restriction).
Region restrict_images(Region region, const Range& images) {
  if (images.count > 0) region.batch = intersect(region.batch, images);
  if (region.batch.count == 0 || region.units.count == 0) region.batch = region.units = {0, 0};
  return region;
}

Region intersect(const Region& a, const Region& b) {
  Region r = a;
  r.batch = intersect(a.batch, b.batch);
  r.units = intersect(a.units, b.units);
  if (r.batch.count == 0 || r.units.count == 0) r.batch = r.units = {0, 0};
  return r;
}

}  // namespace

// A layer's activations or errors: its own storage, or the buffer of the layer before it
// (in-place relu and dropout). Never copied: a shared buffer points into another layer's.
class LayerBuffer {
 public:
  LayerBuffer() = default;
  LayerBuffer(LayerBuffer&&) noexcept = default;  // moving a vector keeps its storage
  LayerBuffer& operator=(LayerBuffer&&) noexcept = default;
  void allocate(std::size_t count) {
    own_.assign(count, 0.0f);
    data_ = own_.data();
    size_ = count;
  }
  void share(LayerBuffer& other) {
    std::vector<float>().swap(own_);
    data_ = other.data_;
    size_ = other.size_;
  }
  float* data() { return data_; }
  const float* data() const { return data_; }
  std::size_t size() const { return size_; }
  float* begin() { return data_; }
  float* end() { return data_ + size_; }
  const float* begin() const { return data_; }
  const float* end() const { return data_ + size_; }
  float& operator[](std::size_t i) { return data_[i]; }

 private:
  std::vector<float> own_;
  float* data_ = nullptr;
  std::size_t size_ = 0;
};

struct Runtime::Impl {
  // Where a layer's input comes from and where its backward-data output goes.
  enum class Input { previous, extract, gathered };            // previous layer's output / local slice / allgather
  enum class Errors { previous, extract, exchanged };          // into its errors / local slice / a collective
  struct LayerState {
    const Layer* layer = nullptr;
    int index = 0;
    bool in_cm = false, out_cm = false;  // channel-major (C, n, H, W) input / output
    LayerPartition held;                 // this rank's region of the output (and its errors)
    std::int64_t n = 0;                  // images this layer computes (held.batch.count)
    Region out_region, in_region;        // held output; input this layer needs (over the previous output)
    Input input = Input::previous;
    Errors errors = Errors::previous;
    std::vector<float> xin, din;         // input and input errors over in_region (when not the previous layer's)
    ConvGeometry geo;                    // conv/pool, batch = n
    std::int64_t weights = 0, biases = 0;
    std::int64_t offset = 0;             // into weights_/grads_/momentum_ (internal order)
    std::int64_t row_floats = 0;         // weights per output unit (C·KH·KW or K_b)
    LayerBuffer out, err;                // activations and errors over out_region (in-place
                                         // relu/dropout: the previous layer's buffers)
    std::vector<float> cols;             // conv: (C·KH·KW, n·OH·OW) kept for backward_weight
                                         // (empty when the columns are shared, see keep_columns)
    std::vector<float> rows_in;          // fc with channel-major input: (n, K_b)
    std::vector<float> rows_dx;          // fc with channel-major input: (n, K_b) errors
    std::vector<std::int32_t> argmax;    // max pool, like out
    std::vector<float> aux;              // lrn: scale; dropout: mask (like out)
    bool im2col_op = false, bias_op = false, col2im_op = false, softmax_bwd_op = false;
    bool im2col_w_op = false;            // backward_weight im2col op (recomputed columns)
    // Replicated with batch-sliced activations (Lee): gathered (N, K_b) inputs and (N, K_c)
    // errors by iteration parity.
    bool replicated = false;
    std::vector<float> gathered_in[2], gathered_err[2], stage_in[2], stage_err[2];
    // An uneven batch split: every member sends `lee_rows` rows (its own, zero-padded) and the
    // padded blocks land here first, then are compacted into gathered_*.
    std::int64_t lee_rows = 0;
    bool lee_padded = false;
    std::vector<float> padded_in[2], padded_err[2];
    int in_ready[2] = {-1, -1}, err_ready[2] = {-1, -1};  // iteration completed into the slot
    // The units of the weight rows this rank owns: all, or a model-parallel slice.
    float* w(std::vector<float>& a) const { return a.data() + offset + held.units.begin * row_floats; }
    float* b(std::vector<float>& a) const { return a.data() + offset + weights + held.units.begin; }
    bool model() const { return held.kind == PartitionKind::model && layer->has_parameters(); }
    bool none() const { return held.kind == PartitionKind::none; }
    // Weight gradients since the last update: a second backward_weight (another sub-batch of
    // Veeriah & Modi's scheme c) adds to them instead of overwriting.
    bool gradient_pending = false;
    // Rows of the weights this rank owns (the whole model is the sum over ranks of the owned
    // parts): the rows it updates, or none.
    Range owned_rows;
  };

  const Network net;  // own copy: the layers are pointed to below
  int rank = 0, ranks = 1;
  std::int64_t n = 0, N = 0;  // images of the input this rank reads, and the global batch
  std::int64_t first_image = 0;  // index in the global batch of this rank's first input image
  std::vector<std::int64_t> rank_batches;  // input images of every rank
  std::vector<std::vector<LayerPartition>> partitions;  // [rank][layer]
  int schedule_iterations = 0;
  std::uint64_t seed = 0;
  SgdConfig sgd;
  std::int64_t tile_columns = 0;
  std::int64_t iteration_base = 0;

  std::vector<LayerState> layers;
  bool input_cm = false;
  std::vector<float> input;   // (C, n, H, W) or (n, C·H·W)
  std::vector<int> labels;    // images of the softmax layer's region
  Range label_range;          // which images `labels` covers
  std::vector<float> dcols;   // shared conv backward-data columns
  // Lee: keep each conv layer's im2col columns for the weight gradient "if memory space is
  // sufficiently large"; above kKeepColumnsLimitBytes one buffer is shared and the
  // backward_weight gemm op redoes the im2col first.
  static constexpr double kKeepColumnsLimitBytes = 2.0 * 1024 * 1024 * 1024;
  bool keep_columns = true;
  std::vector<float> shared_cols;
  std::int64_t max_cols = 0;
  float* columns(LayerState& x) { return keep_columns ? x.cols.data() : shared_cols.data(); }
  void set_keep_columns(bool keep) {
    keep_columns = keep;
    for (LayerState& x : layers) {
      if (x.layer->spec.kind != LayerKind::conv) continue;
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
  std::vector<float> weights, grads, momentum;  // internal order
  std::int64_t params = 0;
  double loss_sum = 0;
  std::int64_t correct = 0;
  int loss_holders = 1;          // ranks that compute the loss over the whole batch (1 if sliced)
  bool counts_correct = true;    // this rank reports its classified images (the lowest holder)
  bool reads_dataset = true;     // false when the input arrives by a collective (a conv_split worker)
  std::vector<float> accumulated;  // scratch: the gradients a pending backward_weight adds to
  std::map<int, std::vector<float>> staging;  // collective id -> packed buffer
  std::map<int, std::vector<float>> staging_recv;

  Impl(const Network& network) : net(network) {}

  const float* in_of(int l) const {
    const LayerState& x = layers[std::size_t(l)];
    if (x.input != Input::previous) return x.xin.data();
    return l == 0 ? input.data() : layers[std::size_t(l - 1)].out.data();
  }
  float* err_in(int l) {
    LayerState& x = layers[std::size_t(l)];
    if (x.errors != Errors::previous) return x.din.data();
    return l == 0 ? nullptr : layers[std::size_t(l - 1)].err.data();
  }
  // Once a layer's input errors are complete: hand the previous layer its share when local.
  void finish_errors(LayerState& x) {
    if (x.errors != Errors::extract) return;
    LayerState& before = layers[std::size_t(x.index - 1)];
    copy_region(x.in_region, x.din.data(), before.out_region, before.err.data());
  }
  // Before a layer's first forward op reads its input: cut the local slice when needed.
  // A gathered input takes the rank's own part from the previous layer too: a point-to-point
  // transition (conv_split's output maps) delivers only the other ranks' parts.
  void prepare_input(LayerState& x) {
    if (x.input == Input::previous) return;
    const LayerState& before = layers[std::size_t(x.index - 1)];
    copy_region(before.out_region, before.out.data(), x.in_region, x.xin.data());
  }
  std::int64_t global_iteration(int it) const { return iteration_base + it; }

  // relu and dropout overwrite their input and its errors when nothing else reads them: same
  // region as the layer before (no transition between) and a layer before whose backward does
  // not read its own output. relu's backward reads its output only by sign, which relu and
  // dropout keep (dropout scales by >= 0, and a dropped unit's errors are 0 anyway), so the
  // bits do not change.
  bool in_place(int l) const {
    if (l == 0) return false;
    const LayerState& x = layers[std::size_t(l)];
    const LayerKind kind = x.layer->spec.kind;
    if (kind != LayerKind::relu && kind != LayerKind::dropout) return false;
    if (x.input != Input::previous || x.errors != Errors::previous) return false;
    switch (net.layers[std::size_t(l - 1)].spec.kind) {
      case LayerKind::conv:
      case LayerKind::fc:
      case LayerKind::pool:
      case LayerKind::relu:
      case LayerKind::dropout:
        return true;
      case LayerKind::lrn:      // its backward reads its output
      case LayerKind::softmax:  // last layer
        return false;
    }
    return false;
  }

  // Region of layer l's output that rank r holds, and the input region layer l needs on rank r.
  Region held_region(int r, int l) const {
    const Layer& ly = net.layers[std::size_t(l)];
    const LayerPartition& p = partitions[std::size_t(r)][std::size_t(l)];
    return {p.batch, p.units, ly.out.h * ly.out.w, layers[std::size_t(l)].out_cm};
  }
  Region input_region(int r, int l) const {
    const Layer& ly = net.layers[std::size_t(l)];
    const LayerPartition& p = partitions[std::size_t(r)][std::size_t(l)];
    const bool all_units = ly.has_parameters() || ly.spec.kind == LayerKind::lrn || ly.spec.kind == LayerKind::softmax;
    return {p.batch, all_units ? Range{0, ly.in.c} : p.units, ly.in.h * ly.in.w, layers[std::size_t(l)].in_cm};
  }

  // Spans [offset, count) of the gradient/weight arrays for the given layers, sorted by offset;
  // with `units`, only those rows of the one layer and their biases (conv_split's kernel shares).
  std::vector<std::pair<std::int64_t, std::int64_t>> spans(const std::vector<int>& ls, const Range& units = {}) const {
    std::vector<std::pair<std::int64_t, std::int64_t>> s;
    if (units.count > 0) {
      CNNPAR_ASSERT(ls.size() == 1, "a row slice names one layer");
      const LayerState& x = layers.at(std::size_t(ls.front()));
      CNNPAR_ASSERT(units.end() <= x.biases, "row slice outside the layer");
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

  void init(const Schedule& schedule);
  // Which rows of each layer this rank owns: the rows its update ops update (a model slice, or
  // every row); rows that several ranks update (data parallelism) belong to the lowest of them.
  // A layer nobody updates in the schedule belongs to its model slices, else to rank 0.
  void set_owned_rows(const Schedule& schedule) {
    const int L = int(layers.size());
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
        x.owned_rows = x.model() ? x.held.units : rank == 0 ? Range{0, x.biases} : Range{};
      else if (mine == 2)
        x.owned_rows = x.held.units;
      else if (mine == 1 && lowest_whole[std::size_t(l)] == rank)
        x.owned_rows = {0, x.biases};
      else
        x.owned_rows = {};
    }
  }
  // A weight gradient while an earlier one is pending (no update between, scheme c's
  // sub-batches) is added to it: begin saves the pending rows, end adds them back.
  bool begin_gradient(LayerState& x) {
    const bool add = x.gradient_pending;
    x.gradient_pending = true;
    if (add) {
      const std::int64_t units = x.held.units.count;
      accumulated.assign(x.w(grads), x.w(grads) + units * x.row_floats);
      accumulated.insert(accumulated.end(), x.b(grads), x.b(grads) + units);
    }
    return add;
  }
  void end_gradient(LayerState& x) {
    const std::int64_t units = x.held.units.count, w = units * x.row_floats;
    float* gw = x.w(grads);
    float* gb = x.b(grads);
    for (std::int64_t i = 0; i < w; ++i) gw[i] += accumulated[std::size_t(i)];
    for (std::int64_t i = 0; i < units; ++i) gb[i] += accumulated[std::size_t(w + i)];
  }
  void forward(LayerState& x, const Op& op, int it, const Tiling& t);
  void backward_data(LayerState& x, const Op& op, const Tiling& t);
  void backward_weight(LayerState& x, const Op& op, const Tiling& t);
  void update(LayerState& x, bool all_rows);
  // The rows [first, first + count) of x's held batch an op computes (a sub-batch, or all).
  Range op_rows(const LayerState& x, const Op& op) const {
    if (op.images.count == 0) return {0, x.n};
    CNNPAR_ASSERT(x.held.batch.contains(op.images), "op images outside the rank's partition: " + op.label);
    return {op.images.begin - x.held.batch.begin, op.images.count};
  }
  // Where a collective's data comes from and goes to on rank r (see prepare_exchange).
  Region source_region(int r, const Collective& c) const;
  Region destination_region(int r, const Collective& c) const;
  float* source_data(const Collective& c);
  float* destination_data(const Collective& c);
  CollectiveBuffers prepare_exchange(const Collective& c);
  void complete_exchange(const Collective& c);
};

namespace {

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
  const Program& prog = schedule.programs[std::size_t(rank)];
  const int L = int(net.layers.size());
  check_trainable(net, "<network " + net.name + ">");
  CNNPAR_ASSERT(N > 0, "empty batch");
  layers.resize(std::size_t(L));

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
  for (int l = 0; l < L; ++l) {
    const Layer& ly = net.layers[std::size_t(l)];
    LayerState& x = layers[std::size_t(l)];
    x.layer = &ly;
    x.index = l;
    x.held = partitions[std::size_t(rank)][std::size_t(l)];
    x.n = x.held.batch.count;
    // Lee's replicated gradient calculation: whole weights, batch-sliced activations (on one
    // rank every region is whole, and a replicated layer after the first gathers from itself).
    x.replicated = x.held.kind == PartitionKind::replicated && ly.has_parameters() &&
                   (x.held.batch.count < N || (ranks == 1 && l > 0));
  }

  for (const Op& op : prog.ops) {
    if (op.kind != OpKind::compute || op.layer < 0) continue;
    CNNPAR_ASSERT(op.layer < L, "compute op names a layer outside the network: " + op.label);
    auto& x = layers[std::size_t(op.layer)];
    const LayerKind kind = net.layers[std::size_t(op.layer)].spec.kind;
    if (op.phase == Phase::forward && op.kernel == KernelClass::im2col) x.im2col_op = true;
    if (op.phase == Phase::backward_weight && op.kernel == KernelClass::im2col) x.im2col_w_op = true;
    if (op.phase == Phase::forward && op.kernel == KernelClass::eltwise &&
        (kind == LayerKind::conv || kind == LayerKind::fc))
      x.bias_op = true;
    if (op.phase == Phase::backward_data && op.kernel == KernelClass::col2im) x.col2im_op = true;
    if (op.phase == Phase::backward_data && kind == LayerKind::softmax) x.softmax_bwd_op = true;
  }
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

  // Parameter offsets: non-replicated layers first, then replicated ones, each in layer order,
  // so gradient chunks of adjacent layers are contiguous (in-place allreduce).
  std::int64_t off = 0;
  std::int64_t max_dcols = 0, total_cols = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (int l = 0; l < L; ++l) {
      const Layer& ly = net.layers[std::size_t(l)];
      LayerState& x = layers[std::size_t(l)];
      if (!ly.has_parameters() || x.replicated != (pass == 1)) continue;
      if (ly.spec.kind == LayerKind::conv) {
        x.row_floats = checked_product(checked_product(ly.in.c, ly.spec.kernel_h, net, l), ly.spec.kernel_w, net, l);
        x.weights = checked_product(ly.out.c, x.row_floats, net, l);
        x.biases = ly.out.c;
      } else {
        x.row_floats = ly.in.elements();
        x.weights = checked_product(ly.out.elements(), x.row_floats, net, l);
        x.biases = ly.out.elements();
      }
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

  for (int l = 0; l < L; ++l) {
    LayerState& x = layers[std::size_t(l)];
    const Layer& ly = net.layers[std::size_t(l)];
    const std::int64_t n_l = x.n;
    const std::int64_t units = x.held.units.count;
    x.in_cm = l == 0 ? input_cm : layers[std::size_t(l - 1)].out_cm;
    switch (ly.spec.kind) {
      case LayerKind::conv:
      case LayerKind::pool:
        CNNPAR_ASSERT(x.in_cm, "check_trainable passed conv/pool after an fc layer: " + ly.spec.name);
        x.out_cm = true;
        // A pool layer works on the maps it holds; a conv layer reads every input map.
        x.geo = ConvGeometry{ly.spec.kind == LayerKind::pool ? units : ly.in.c, n_l, ly.in.h, ly.in.w,
                             ly.spec.kernel_h, ly.spec.kernel_w, ly.spec.stride, ly.spec.pad};
        CNNPAR_ASSERT(x.geo.out_h() == ly.out.h && x.geo.out_w() == ly.out.w,
                      "inferred output shape differs from the kernel geometry: " + ly.spec.name);
        if (ly.spec.kind == LayerKind::conv) {
          total_cols += x.geo.column_rows() * x.geo.column_cols();
          max_dcols = std::max(max_dcols, x.geo.column_rows() * x.geo.column_cols());
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
        CNNPAR_ASSERT(!x.in_cm && l > 0, "check_trainable passed a softmax without an fc layer before it");
        x.out_cm = false;
        break;
      case LayerKind::relu:
      case LayerKind::dropout:
      case LayerKind::lrn:
        x.out_cm = x.in_cm;
        if (ly.spec.kind != LayerKind::relu) x.aux.assign(std::size_t(n_l * units * ly.out.h * ly.out.w), 0.0f);
        break;
    }
    x.out_region = held_region(rank, l);
    x.in_region = input_region(rank, l);
    if (x.none()) {  // takes no part: no buffers
      x.out.allocate(0);
      x.err.allocate(0);
      continue;
    }
    if (l > 0) {
      const LayerState& before = layers[std::size_t(l - 1)];
      const Region& have = before.out_region;
      const Region& need = x.in_region;
      const bool same = have.batch == need.batch && have.units == need.units;
      const bool inside = have.batch.contains(need.batch) && have.units.contains(need.units);
      x.input = same ? Input::previous : inside ? Input::extract : Input::gathered;
      const bool covers = need.batch.contains(have.batch) && need.units.contains(have.units);
      // A model layer's input errors are partial sums over its units (complete on one rank).
      const bool partial = x.model() && ranks > 1;
      x.errors = partial || !covers ? Errors::exchanged : same ? Errors::previous : Errors::extract;
      if (x.input != Input::previous) x.xin.assign(std::size_t(need.elements()), 0.0f);
      if (x.errors != Errors::previous) x.din.assign(std::size_t(need.elements()), 0.0f);
    }
    if (in_place(l)) {
      LayerState& before = layers[std::size_t(l - 1)];
      x.out.share(before.out);
      x.err.share(before.err);
    } else {
      x.out.allocate(std::size_t(x.out_region.elements()));
      x.err.allocate(std::size_t(x.out_region.elements()));
    }
    if (x.replicated)
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
  dcols.assign(std::size_t(max_dcols), 0.0f);
  max_cols = max_dcols;
  // The Schedule says whether the columns are recomputed (`.im2col_w` ops, --columns
  // recomputed); kept columns beyond kKeepColumnsLimitBytes are recomputed inside the
  // backward_weight gemm op instead.
  bool recomputed = false;
  for (const LayerState& x : layers) recomputed = recomputed || x.im2col_w_op;
  set_keep_columns(!recomputed && 4.0 * double(total_cols) <= kKeepColumnsLimitBytes);

  weights.assign(std::size_t(params), 0.0f);
  grads.assign(std::size_t(params), 0.0f);
  momentum.assign(std::size_t(params), 0.0f);
  int classifier = -1;  // the last parameterised layer, feeding the softmax
  for (const LayerState& x : layers)
    if (x.weights > 0) classifier = x.index;
  set_owned_rows(schedule);
  for (LayerState& x : layers) {
    if (x.weights == 0) continue;
    const double fan_in = double(x.weights) / double(x.biases);  // C·KH·KW or K_b
    // He et al. for layers followed by relu; the classifier gets variance 1/fan_in scaled by
    // 1/16 so that the initial logits are small and the first loss is near ln(classes).
    // Every rank draws every weight, so a model-parallel slice equals one process's rows.
    const double stddev = x.index == classifier ? std::sqrt(1.0 / fan_in) / 4.0 : std::sqrt(2.0 / fan_in);
    for (std::int64_t i = 0; i < x.weights; ++i)
      weights[std::size_t(x.offset + i)] = float(stddev * normal(seed, x.index, i));
  }
}

void Runtime::Impl::forward(LayerState& x, const Op& op, int it, const Tiling& t) {
  const Layer& ly = *x.layer;
  const int l = x.index;
  const std::int64_t n = x.n;
  const std::int64_t units = x.held.units.count;
  // The op that first reads the input cuts the local slice (a conv's bias op and the gemm
  // after an im2col op read the columns instead).
  const bool reads_input = !(op.kernel == KernelClass::eltwise && ly.has_parameters()) &&
                           !(ly.spec.kind == LayerKind::conv && op.kernel == KernelClass::gemm && x.im2col_op);
  if (l > 0 && reads_input) prepare_input(x);
  const float* in = in_of(l);
  switch (ly.spec.kind) {
    case LayerKind::conv: {
      float* w = x.w(weights);
      float* b = x.b(weights);
      if (op.kernel == KernelClass::im2col) {
        im2col(x.geo, in, columns(x));
      } else if (op.kernel == KernelClass::gemm) {
        if (!x.im2col_op) im2col(x.geo, in, columns(x));
        conv_forward_gemm(x.geo, units, w, x.bias_op ? nullptr : b, columns(x), x.out.data(), t);
      } else if (op.kernel == KernelClass::eltwise) {
        add_row_bias(units, x.geo.column_cols(), b, x.out.data());
      } else {
        CNNPAR_ASSERT(false, "unexpected conv forward op: " + op.label);
      }
      return;
    }
    case LayerKind::fc: {
      const float* w = x.w(weights);
      const float* b = x.b(weights);
      const std::int64_t kb = ly.in.elements(), kc = units;
      const Range rows = op_rows(x, op);
      if (op.kernel == KernelClass::gemm) {
        if (x.in_cm && rows.count == n)
          channel_major_to_rows(ly.in.c, n, ly.in.h * ly.in.w, in, x.rows_in.data());
        else if (x.in_cm)
          channel_major_image_rows(ly.in.c, n, ly.in.h * ly.in.w, rows.begin, rows.count, in,
                                   x.rows_in.data() + rows.begin * kb);
        fc_forward(rows.count, kb, kc, (x.in_cm ? x.rows_in.data() : in) + rows.begin * kb, w,
                   x.bias_op ? nullptr : b, x.out.data() + rows.begin * kc, t);
      } else if (op.kernel == KernelClass::eltwise) {
        for (std::int64_t i = rows.begin; i < rows.end(); ++i)
          for (std::int64_t o = 0; o < kc; ++o) x.out[std::size_t(i * kc + o)] += b[o];
      } else {
        CNNPAR_ASSERT(false, "unexpected fc forward op: " + op.label);
      }
      return;
    }
    case LayerKind::pool:
      if (ly.spec.pool_mode == PoolMode::max)
        max_pool_forward(x.geo, in, x.out.data(), x.argmax.data());
      else
        avg_pool_forward(x.geo, in, x.out.data());
      return;
    case LayerKind::relu: {
      const std::int64_t row = x.n > 0 ? std::int64_t(x.out.size()) / x.n : 0;
      const Range rows = op_rows(x, op);
      CNNPAR_ASSERT(rows.count == x.n || !x.out_cm, "sub-batch ops need row-major tensors: " + op.label);
      relu_forward(rows.count * row, in + rows.begin * row, x.out.data() + rows.begin * row);
      return;
    }
    case LayerKind::lrn: {
      const LrnParams p{ly.spec.lrn_size, ly.spec.lrn_alpha, ly.spec.lrn_beta, ly.spec.lrn_k};
      const std::int64_t hw = ly.in.h * ly.in.w;
      if (x.in_cm)
        lrn_forward(p, ly.in.c, n * hw, n * hw, 1, in, x.out.data(), x.aux.data());
      else
        lrn_forward(p, ly.in.elements(), n, 1, ly.in.elements(), in, x.out.data(), x.aux.data());
      return;
    }
    case LayerKind::dropout: {
      const std::int64_t hw = x.in_cm ? ly.in.h * ly.in.w : 1;
      const std::int64_t channels = x.in_cm ? units : units * ly.out.h * ly.out.w;
      const DropoutLayout dl{x.in_cm, channels, hw, x.held.units.begin * (x.in_cm ? 1 : ly.out.h * ly.out.w)};
      const Range rows = op_rows(x, op);
      CNNPAR_ASSERT(rows.count == n || !x.in_cm, "sub-batch ops need row-major tensors: " + op.label);
      const std::int64_t row = n > 0 ? std::int64_t(x.out.size()) / n : 0;
      dropout_forward(dl, rows.count, x.held.batch.begin + rows.begin, seed, global_iteration(it), l,
                      ly.spec.dropout_ratio, in + rows.begin * row, x.out.data() + rows.begin * row,
                      x.aux.data() + rows.begin * row);
      return;
    }
    case LayerKind::softmax: {
      const std::int64_t k = ly.in.elements();
      const Range rows = op_rows(x, op);
      // Sub-batches of one iteration add up; the first (or the whole batch) starts the sums.
      std::int64_t right = 0;
      const double sum = softmax_forward(rows.count, k, in + rows.begin * k, labels.data() + rows.begin,
                                         x.out.data() + rows.begin * k, &right);
      loss_sum = rows.begin == 0 ? sum : loss_sum + sum;
      correct = rows.begin == 0 ? right : correct + right;
      if (!x.softmax_bwd_op && l > 0) {
        softmax_cross_entropy_backward(rows.count, k, x.out.data() + rows.begin * k, labels.data() + rows.begin,
                                       double(N), err_in(l) + rows.begin * k);
        finish_errors(x);
      }
      return;
    }
  }
}

void Runtime::Impl::backward_data(LayerState& x, const Op& op, const Tiling& t) {
  const Layer& ly = *x.layer;
  const int l = x.index;
  const std::int64_t n = x.n;
  const std::int64_t units = x.held.units.count;
  CNNPAR_ASSERT(l > 0, "backward_data op on the first layer: " + op.label);
  float* din = err_in(l);
  const float* in = in_of(l);
  switch (ly.spec.kind) {
    case LayerKind::conv: {
      const std::size_t cnt = std::size_t(x.geo.channels * n * x.geo.in_h * x.geo.in_w);
      if (op.kernel == KernelClass::gemm) {
        conv_backward_data_gemm(x.geo, units, x.w(weights), x.err.data(), dcols.data(), t);
        if (!x.col2im_op) {
          std::memset(din, 0, sizeof(float) * cnt);
          col2im_add(x.geo, dcols.data(), din);
          finish_errors(x);
        }
      } else if (op.kernel == KernelClass::col2im) {
        std::memset(din, 0, sizeof(float) * cnt);
        col2im_add(x.geo, dcols.data(), din);
        finish_errors(x);
      } else {
        CNNPAR_ASSERT(false, "unexpected conv backward_data op: " + op.label);
      }
      return;
    }
    case LayerKind::fc: {
      const std::int64_t kb = ly.in.elements(), kc = units;
      const Range rows = op_rows(x, op);
      fc_backward_data(rows.count, kb, kc, x.err.data() + rows.begin * kc, x.w(weights),
                       (x.in_cm ? x.rows_dx.data() : din) + rows.begin * kb, t);
      if (x.in_cm && rows.count == n)
        rows_to_channel_major(ly.in.c, n, ly.in.h * ly.in.w, x.rows_dx.data(), din);
      else if (x.in_cm)
        image_rows_channel_major(ly.in.c, n, ly.in.h * ly.in.w, rows.begin, rows.count,
                                 x.rows_dx.data() + rows.begin * kb, din);
      finish_errors(x);
      return;
    }
    case LayerKind::pool:
      if (ly.spec.pool_mode == PoolMode::max)
        max_pool_backward(x.geo, x.err.data(), x.argmax.data(), din);
      else
        avg_pool_backward(x.geo, x.err.data(), din);
      break;
    case LayerKind::relu: {
      const std::int64_t row = x.n > 0 ? std::int64_t(x.out.size()) / x.n : 0;
      const Range rows = op_rows(x, op);
      relu_backward(rows.count * row, x.out.data() + rows.begin * row, x.err.data() + rows.begin * row,
                    din + rows.begin * row);
      break;
    }
    case LayerKind::lrn: {
      const LrnParams p{ly.spec.lrn_size, ly.spec.lrn_alpha, ly.spec.lrn_beta, ly.spec.lrn_k};
      const std::int64_t hw = ly.in.h * ly.in.w;
      if (x.in_cm)
        lrn_backward(p, ly.in.c, n * hw, n * hw, 1, in, x.out.data(), x.aux.data(), x.err.data(), din);
      else
        lrn_backward(p, ly.in.elements(), n, 1, ly.in.elements(), in, x.out.data(), x.aux.data(),
                     x.err.data(), din);
      break;
    }
    case LayerKind::dropout: {
      const std::int64_t row = x.n > 0 ? std::int64_t(x.out.size()) / x.n : 0;
      const Range rows = op_rows(x, op);
      dropout_backward(rows.count * row, x.aux.data() + rows.begin * row, x.err.data() + rows.begin * row,
                       din + rows.begin * row);
      break;
    }
    case LayerKind::softmax: {
      const std::int64_t k = ly.in.elements();
      const Range rows = op_rows(x, op);
      softmax_cross_entropy_backward(rows.count, k, x.out.data() + rows.begin * k, labels.data() + rows.begin,
                                     double(N), din + rows.begin * k);
      break;
    }
  }
  finish_errors(x);
}

void Runtime::Impl::backward_weight(LayerState& x, const Op& op, const Tiling& t) {
  const Layer& ly = *x.layer;
  float* gw = x.w(grads);
  float* gb = x.b(grads);
  const std::int64_t units = x.held.units.count;
  if (ly.spec.kind == LayerKind::conv) {
    if (op.kernel == KernelClass::im2col) {  // recomputation instead of keeping the columns
      im2col(x.geo, in_of(x.index), columns(x));
      return;
    }
    CNNPAR_ASSERT(op.kernel == KernelClass::gemm, "unexpected conv backward_weight op: " + op.label);
    // The shared buffer holds another layer's columns unless an im2col_w op just refilled it.
    if (!keep_columns && !x.im2col_w_op) im2col(x.geo, in_of(x.index), columns(x));
    const bool add = begin_gradient(x);
    conv_backward_weight_gemm(x.geo, units, x.err.data(), columns(x), gw, gb, t);
    if (add) end_gradient(x);
    return;
  }
  CNNPAR_ASSERT(ly.spec.kind == LayerKind::fc && op.kernel == KernelClass::gemm,
                "backward_weight op on a layer without parameters: " + op.label);
  const std::int64_t kb = ly.in.elements(), kc = units;
  if (!x.replicated) {
    const Range rows = op_rows(x, op);
    const float* xin = (x.in_cm ? x.rows_in.data() : in_of(x.index)) + rows.begin * kb;
    const bool add = begin_gradient(x);
    fc_backward_weight(rows.count, kb, kc, x.err.data() + rows.begin * kc, xin, gw, gb, t);
    if (add) end_gradient(x);
    return;
  }
  // Lee's replicated layer: the full-batch gradient from the oldest complete gathered pair.
  int slot = -1;
  for (int p = 0; p < 2; ++p)
    if (x.in_ready[p] >= 0 && x.in_ready[p] == x.err_ready[p] &&
        (slot < 0 || x.in_ready[p] < x.in_ready[slot]))
      slot = p;
  CNNPAR_ASSERT(slot >= 0, "replicated fc gradient before its activations and errors were gathered: " + op.label);
  const std::int64_t rows = std::int64_t(x.gathered_in[slot].size()) / kb;
  fc_backward_weight(rows, kb, kc, x.gathered_err[slot].data(), x.gathered_in[slot].data(), gw, gb, t);
  x.in_ready[slot] = x.err_ready[slot] = -1;
}

void Runtime::Impl::update(LayerState& x, bool all_rows) {
  CNNPAR_ASSERT(x.weights > 0, "update of a layer without parameters");
  // A master that owns a split layer's weights updates every row (conv_split).
  const std::int64_t first = all_rows ? 0 : x.held.units.begin;
  const std::int64_t units = all_rows ? x.biases : x.held.units.count;
  const auto at = [&](std::vector<float>& a) { return a.data() + x.offset + first * x.row_floats; };
  const auto bias_at = [&](std::vector<float>& a) { return a.data() + x.offset + x.weights + first; };
  sgd_update(units * x.row_floats, sgd.learning_rate, sgd.momentum, sgd.weight_decay, at(grads), at(weights),
             at(momentum));
  sgd_update(units, sgd.learning_rate, sgd.momentum, 0.0f, bias_at(grads), bias_at(weights), bias_at(momentum));
  x.gradient_pending = false;
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

Runtime::Runtime(const Network& network, const Schedule& schedule, int rank, std::uint64_t seed,
                 SgdConfig sgd)
    : impl_(std::make_unique<Impl>(network)) {
  impl_->rank = rank;
  impl_->seed = seed;
  impl_->sgd = sgd;
  impl_->init(schedule);
}

Runtime::~Runtime() = default;

int Runtime::rank() const { return impl_->rank; }
int Runtime::ranks() const { return impl_->ranks; }
std::int64_t Runtime::local_batch() const { return impl_->n; }
std::int64_t Runtime::global_batch() const { return impl_->N; }
std::int64_t Runtime::first_image() const { return impl_->first_image; }
const std::vector<std::int64_t>& Runtime::rank_batches() const { return impl_->rank_batches; }
void Runtime::set_gemm_tile_columns(std::int64_t columns) {
  CNNPAR_ASSERT(columns >= 0, "negative tile width");
  impl_->tile_columns = columns;
}
std::int64_t Runtime::gemm_tile_columns() const { return impl_->tile_columns; }
void Runtime::set_keep_columns(bool keep) { impl_->set_keep_columns(keep); }
bool Runtime::keep_columns() const { return impl_->keep_columns; }

void Runtime::load_batch(int iteration, const Dataset& data) {
  Impl& s = *impl_;
  data.check_matches(s.net);
  for (auto& x : s.layers) x.gradient_pending = false;  // gradients accumulate within one iteration only
  const Shape sh = s.net.input;
  const std::int64_t hw = sh.h * sh.w, e = sh.elements();
  std::vector<float> img(static_cast<std::size_t>(e));
  const std::int64_t batch_start = s.global_iteration(iteration) * s.N;
  for (std::int64_t i = 0; i < (s.reads_dataset ? s.n : 0); ++i) {
    const std::int64_t index = (batch_start + s.first_image + i) % data.size();
    data.image(index, img.data());
    if (s.input_cm) {
      for (std::int64_t c = 0; c < sh.c; ++c)
        std::memcpy(s.input.data() + (c * s.n + i) * hw, img.data() + c * hw, sizeof(float) * std::size_t(hw));
    } else {
      std::memcpy(s.input.data() + i * e, img.data(), sizeof(float) * std::size_t(e));
    }
  }
  // The loss layer's images: the same as the input's unless it holds another region.
  for (std::int64_t i = 0; i < s.label_range.count; ++i)
    s.labels[std::size_t(i)] = data.label((batch_start + s.label_range.begin + i) % data.size());
}

void Runtime::run_compute(const Op& op, int iteration, const std::function<void()>& between_tiles) {
  Impl& s = *impl_;
  CNNPAR_ASSERT(op.kind == OpKind::compute, "run_compute on a non-compute op");
  const Tiling t{s.tile_columns, &between_tiles};
  if (op.phase == Phase::update || op.kernel == KernelClass::update) {
    if (op.layer < 0) {
      for (auto& x : s.layers)
        if (x.weights > 0 && !x.replicated) s.update(x, false);
    } else {
      auto& x = s.layers.at(std::size_t(op.layer));
      s.update(x, op.units == 0);
    }
    return;
  }
  CNNPAR_ASSERT(op.layer >= 0 && op.layer < int(s.layers.size()),
                "compute op without a network layer: " + op.label);
  auto& x = s.layers[std::size_t(op.layer)];
  switch (op.phase) {
    case Phase::forward: s.forward(x, op, iteration, t); break;
    case Phase::backward_data: s.backward_data(x, op, t); break;
    case Phase::backward_weight: s.backward_weight(x, op, t); break;
    case Phase::update: break;
  }
}

CollectiveBuffers Runtime::prepare(const Collective& c) {
  Impl& s = *impl_;
  CollectiveBuffers b;
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
  if (c.payload == Payload::gradients || c.payload == Payload::weights) {
    auto it = s.staging.find(c.id);
    if (it == s.staging.end()) return;  // was in place
    std::vector<float>& arr = c.payload == Payload::gradients ? s.grads : s.weights;
    std::int64_t o = 0;
    for (auto [off, cnt] : s.spans(c.layers, c.units)) {
      std::memcpy(arr.data() + off, it->second.data() + o, sizeof(float) * std::size_t(cnt));
      o += cnt;
    }
    s.staging.erase(it);
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

void Runtime::finish_schedule() {
  Impl& s = *impl_;
  for (const auto& x : s.layers)
    for (int p = 0; p < 2; ++p)
      CNNPAR_ASSERT(x.in_ready[p] < 0 && x.err_ready[p] < 0,
                    "schedule ended with a delayed replicated update pending on " + x.layer->spec.name);
  s.iteration_base += s.schedule_iterations;
}

double Runtime::last_loss() const { return impl_->loss_sum / double(impl_->label_range.count); }
// A loss computed over the whole batch on every rank counts 1/P on each, so that the sum
// over ranks is the loss over the global batch as with data parallelism.
double Runtime::last_loss_sum() const { return impl_->loss_sum / double(impl_->loss_holders); }
std::int64_t Runtime::last_correct() const { return impl_->counts_correct ? impl_->correct : 0; }
std::int64_t Runtime::parameter_count() const { return impl_->params; }

std::vector<float> Runtime::flat_weights() const {
  std::vector<float> out;
  out.reserve(std::size_t(impl_->params));
  for (const auto& x : impl_->layers)
    out.insert(out.end(), impl_->weights.begin() + x.offset, impl_->weights.begin() + x.offset + x.weights + x.biases);
  return out;
}

std::vector<float> Runtime::flat_gradients() const {
  std::vector<float> out;
  out.reserve(std::size_t(impl_->params));
  for (const auto& x : impl_->layers)
    out.insert(out.end(), impl_->grads.begin() + x.offset, impl_->grads.begin() + x.offset + x.weights + x.biases);
  return out;
}

RuntimeState Runtime::state() const {
  RuntimeState st;
  st.iteration = impl_->iteration_base;
  st.weights = flat_weights();
  for (const auto& x : impl_->layers)
    st.momentum.insert(st.momentum.end(), impl_->momentum.begin() + x.offset,
                       impl_->momentum.begin() + x.offset + x.weights + x.biases);
  return st;
}

bool Runtime::model_parallel() const {
  for (const auto& x : impl_->layers)
    if (x.model() || x.none()) return true;
  return false;
}

RuntimeState Runtime::owned_state() const {
  RuntimeState st = state();
  std::int64_t o = 0;
  for (const auto& x : impl_->layers) {
    const std::int64_t cnt = x.weights + x.biases;
    if (cnt == 0) continue;
    for (std::int64_t i = 0; i < cnt; ++i) {
      const std::int64_t unit = i < x.weights ? i / x.row_floats : i - x.weights;
      if (x.owned_rows.count == 0 || unit < x.owned_rows.begin || unit >= x.owned_rows.end())
        st.weights[std::size_t(o + i)] = st.momentum[std::size_t(o + i)] = 0.0f;
    }
    o += cnt;
  }
  return st;
}

void Runtime::restore(const RuntimeState& st) {
  Impl& s = *impl_;
  if (std::int64_t(st.weights.size()) != s.params || std::int64_t(st.momentum.size()) != s.params)
    throw InputError("<checkpoint>", "/weights", std::to_string(st.weights.size()),
                     fmt::format("expected {} parameters for network {}", s.params, s.net.name));
  std::int64_t o = 0;
  for (const auto& x : s.layers) {
    const std::int64_t cnt = x.weights + x.biases;
    std::copy_n(st.weights.begin() + o, cnt, s.weights.begin() + x.offset);
    std::copy_n(st.momentum.begin() + o, cnt, s.momentum.begin() + x.offset);
    o += cnt;
  }
  s.iteration_base = st.iteration;
}

std::int64_t Runtime::iteration() const { return impl_->iteration_base; }

bool Runtime::delays_updates() const {
  for (const auto& x : impl_->layers)
    if (x.replicated) return true;
  return false;
}

void check_trainable(const Network& network, const std::string& file) {
  const int L = int(network.layers.size());
  if (L == 0) throw InputError(file, "/layers", "[]", "the real executor needs at least an fc and a softmax layer");
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

std::vector<float> Runtime::activations(int layer) const {
  if (layer < 0) return impl_->input;
  const LayerBuffer& out = impl_->layers.at(std::size_t(layer)).out;
  return {out.begin(), out.end()};
}

bool Runtime::channel_major(int layer) const {
  if (layer < 0) return impl_->input_cm;
  return impl_->layers.at(std::size_t(layer)).out_cm;
}

}  // namespace cnnpar::real
