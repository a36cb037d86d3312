// The layer passes of a Runtime: loading a batch, and each compute op's forward,
// backward-data, backward-weight or update work (the table in real/runtime.hpp).
#include <cstddef>
#include <cstring>
#include <functional>
#include <vector>

#include "base/error.hpp"
#include "real/dataset.hpp"
#include "real/inner_dag.hpp"
#include "real/kernels.hpp"
#include "real/runtime_impl.hpp"

namespace cnnpar::real {
namespace {

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

}  // namespace

float* Runtime::Impl::err_in(int l) {
  LayerState& x = layers[std::size_t(l)];
  if (x.errors != Errors::previous) return x.din.data();
  return x.producer < 0 ? nullptr : layers[std::size_t(x.producer)].err.data();
}

// Once a layer's input errors are complete: hand the previous layer its share when local, or
// add them to the errors of a layer that several read.
void Runtime::Impl::finish_errors(LayerState& x) {
  if (x.errors == Errors::summed) contribute_errors(x.producer, x.din.data());
  if (x.errors != Errors::extract) return;
  LayerState& before = layers[std::size_t(x.producer)];
  copy_region(x.in_region, x.din.data(), before.out_region, before.err.data());
}

// Where a conv layer's backward adds its input errors (`count` floats): its own errors, zeroed,
// or, when several layers read its input, that input's errors themselves, zeroed by the first
// contribution of a backward pass. The sum is the one contribute_errors forms (a + b either
// way), without a buffer of the input's size per reader.
float* Runtime::Impl::begin_added_errors(LayerState& x, std::size_t count) {
  if (x.errors != Errors::summed) {
    float* din = err_in(x.index);
    std::memset(din, 0, sizeof(float) * count);
    return din;
  }
  LayerState& to = layers[std::size_t(x.producer)];
  CNNPAR_ASSERT(std::int64_t(count) == to.n * to.image_floats,
                "summed errors over another region: " + x.layer->spec.name);
  if (to.errors_received == 0) std::memset(to.err.data(), 0, sizeof(float) * count);
  return to.err.data();
}

void Runtime::Impl::finish_added_errors(LayerState& x) {
  if (x.errors != Errors::summed) return finish_errors(x);
  LayerState& to = layers[std::size_t(x.producer)];
  if (++to.errors_received == to.reader_edges) to.errors_received = 0;
}

// The errors of layer `producer` are the sum over the inputs that read it: the first
// contribution of a backward pass is copied, the others are added (backward runs the reverse
// of a topological order, so all of them arrive before the producer's own backward).
void Runtime::Impl::contribute_errors(int producer, const float* errors) {
  if (producer < 0) return;  // the network input has no errors
  LayerState& to = layers[std::size_t(producer)];
  const std::int64_t count = to.n * to.image_floats;
  if (to.errors_received == 0)
    std::memcpy(to.err.data(), errors, sizeof(float) * std::size_t(count));
  else
    accumulate(count, errors, to.err.data());
  if (++to.errors_received == to.reader_edges) to.errors_received = 0;
}

// Before a layer's first forward op reads its input: cut the local slice when needed.
// A gathered input takes the rank's own part from the previous layer too: a point-to-point
// transition (conv_split's output maps) delivers only the other ranks' parts.
void Runtime::Impl::prepare_input(LayerState& x) {
  if (x.input == Input::previous) return;
  const LayerState& before = layers[std::size_t(x.producer)];
  copy_region(before.out_region, before.out.data(), x.in_region, x.xin.data());
}

// The rows [first, first + count) of x's held batch an op computes (a sub-batch, or all).
Range Runtime::Impl::op_rows(const LayerState& x, const Op& op) const {
  if (op.images.count == 0) return {0, x.n};
  CNNPAR_ASSERT(x.held.batch.contains(op.images), "op images outside the rank's partition: " + op.label);
  return {op.images.begin - x.held.batch.begin, op.images.count};
}

// A weight gradient while an earlier one is pending (no update between, scheme c's
// sub-batches) is added to it: begin saves the pending rows, end adds them back.
bool Runtime::Impl::begin_gradient(LayerState& x) {
  const bool add = x.gradient_pending;
  x.gradient_pending = true;
  if (add) {
    const std::int64_t units = x.held.units.count;
    accumulated.assign(x.w(grads), x.w(grads) + units * x.row_floats);
    if (x.biases > 0) accumulated.insert(accumulated.end(), x.b(grads), x.b(grads) + units);
  }
  return add;
}

void Runtime::Impl::end_gradient(LayerState& x) {
  const std::int64_t units = x.held.units.count, w = units * x.row_floats;
  float* gw = x.w(grads);
  float* gb = x.bias_of(grads);
  for (std::int64_t i = 0; i < w; ++i) gw[i] += accumulated[std::size_t(i)];
  if (gb)
    for (std::int64_t i = 0; i < units; ++i) gb[i] += accumulated[std::size_t(w + i)];
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
      float* b = x.bias_of(weights);
      if (runs_conv_primitive(op.kernel)) {
        x.direct->forward(in, w, x.bias_op ? nullptr : b, x.out.data());
      } else if (op.kernel == KernelClass::im2col) {
        // The DAG's tasks extract their own areas in the gemm op (Algorithm 4.1).
        if (inner != InnerMode::dag) im2col(x.geo, in, columns(x));
      } else if (op.kernel == KernelClass::gemm) {
        if (inner == InnerMode::dag) {
          conv_forward_dag(x.geo, units, w, x.bias_op ? nullptr : b, in, columns(x), x.out.data(), t);
          return;
        }
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
      const std::int64_t row = x.image_floats;
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
      const std::int64_t row = x.image_floats;
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
      loss_images = rows.begin == 0 ? rows.count : loss_images + rows.count;
      if (!x.softmax_bwd_op && l > 0) {
        softmax_cross_entropy_backward(rows.count, k, x.out.data() + rows.begin * k, labels.data() + rows.begin,
                                       double(loss_batch), err_in(l) + rows.begin * k);
        finish_errors(x);
      }
      return;
    }
    case LayerKind::batchnorm: {
      const BatchNormRunning running{
          .momentum = ly.spec.bn_momentum, .mean = x.running_mean.data(), .variance = x.running_var.data()};
      const std::int64_t positions = n * ly.out.h * ly.out.w;
      if (!x.synchronised) {
        batchnorm_forward(units, positions, ly.spec.bn_epsilon, in, x.w(weights), x.b(weights), x.out.data(),
                          x.bn_mean.data(), x.bn_invstd.data(), running);
        return;
      }
      // The statistics allreduce summed every rank's sums, shifted by the running mean.
      batchnorm_statistics(units, double(N) * double(ly.out.h * ly.out.w), x.running_mean.data(), x.bn_sums.data(),
                           ly.spec.bn_epsilon, x.bn_mean.data(), x.bn_invstd.data(), running);
      batchnorm_normalise(units, positions, in, x.bn_mean.data(), x.bn_invstd.data(), x.w(weights), x.b(weights),
                          x.out.data());
      return;
    }
    case LayerKind::add: {
      std::vector<const float*> inputs;
      for (const int read : ly.inputs) inputs.push_back(layers[std::size_t(read)].out.data());
      sum_forward(n * x.image_floats, inputs, x.out.data());
      return;
    }
    case LayerKind::concat: {  // channel-major: each input's (C_i, n, H, W) block after the other
      float* to = x.out.data();
      for (const int read : ly.inputs) {
        const LayerState& from = layers[std::size_t(read)];
        const std::int64_t count = from.n * from.image_floats;
        std::memcpy(to, from.out.data(), sizeof(float) * std::size_t(count));
        to += count;
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
      if (runs_conv_primitive(op.kernel)) {
        x.direct->backward_data_add(x.w(weights), x.err.data(), begin_added_errors(x, cnt));
        finish_added_errors(x);
      } else if (op.kernel == KernelClass::gemm) {
        conv_backward_data_gemm(x.geo, units, x.w(weights), x.err.data(), dcols.data(), t);
        if (!x.col2im_op) {
          col2im_add(x.geo, dcols.data(), begin_added_errors(x, cnt));
          finish_added_errors(x);
        }
      } else if (op.kernel == KernelClass::col2im) {
        col2im_add(x.geo, dcols.data(), begin_added_errors(x, cnt));
        finish_added_errors(x);
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
      const std::int64_t row = x.image_floats;
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
      const std::int64_t row = x.image_floats;
      const Range rows = op_rows(x, op);
      dropout_backward(rows.count * row, x.aux.data() + rows.begin * row, x.err.data() + rows.begin * row,
                       din + rows.begin * row);
      break;
    }
    case LayerKind::softmax: {
      const std::int64_t k = ly.in.elements();
      const Range rows = op_rows(x, op);
      softmax_cross_entropy_backward(rows.count, k, x.out.data() + rows.begin * k, labels.data() + rows.begin,
                                     double(loss_batch), din + rows.begin * k);
      break;
    }
    case LayerKind::batchnorm:
      if (x.synchronised)  // the error sums of every rank, from the statistics allreduce
        batchnorm_input_errors(units, n * ly.out.h * ly.out.w, double(N) * double(ly.out.h * ly.out.w), in,
                               x.bn_mean.data(), x.bn_invstd.data(), x.w(weights), x.err.data(), x.bn_sums.data(), din);
      else
        batchnorm_backward(units, n * ly.out.h * ly.out.w, in, x.bn_mean.data(), x.bn_invstd.data(), x.w(weights),
                           x.err.data(), din, nullptr, nullptr);
      break;
    case LayerKind::add:  // every input receives the errors whole
      for (const int read : ly.inputs) contribute_errors(read, x.err.data());
      return;
    case LayerKind::concat: {  // and each input its channels' block
      const float* from = x.err.data();
      for (const int read : ly.inputs) {
        contribute_errors(read, from);
        const LayerState& to = layers[std::size_t(read)];
        from += to.n * to.image_floats;
      }
      return;
    }
  }
  finish_errors(x);
}

void Runtime::Impl::backward_weight(LayerState& x, const Op& op, const Tiling& t) {
  const Layer& ly = *x.layer;
  float* gw = x.w(grads);
  float* gb = x.bias_of(grads);
  const std::int64_t units = x.held.units.count;
  if (ly.spec.kind == LayerKind::batchnorm) {
    const bool add = begin_gradient(x);
    batchnorm_backward(units, x.n * ly.out.h * ly.out.w, in_of(x.index), x.bn_mean.data(), x.bn_invstd.data(),
                       x.w(weights), x.err.data(), nullptr, gw, gb);
    if (add) end_gradient(x);
    return;
  }
  if (ly.spec.kind == LayerKind::conv) {
    if (op.kernel == KernelClass::im2col) {  // recomputation instead of keeping the columns
      if (inner != InnerMode::dag) im2col(x.geo, in_of(x.index), columns(x));  // dag: in the gemm op's tasks
      return;
    }
    if (runs_conv_primitive(op.kernel)) {
      const bool add = begin_gradient(x);
      x.direct->backward_weights(in_of(x.index), x.err.data(), gw, gb);
      if (add) end_gradient(x);
      return;
    }
    CNNPAR_ASSERT(op.kernel == KernelClass::gemm, "unexpected conv backward_weight op: " + op.label);
    // The shared buffer holds another layer's columns unless an im2col_w op just refilled it.
    const bool refill = !keep_columns && !x.im2col_w_op;
    const bool add = begin_gradient(x);
    if (inner == InnerMode::dag) {  // kept columns were filled by the forward tasks
      conv_backward_weight_dag(x.geo, units, x.err.data(), keep_columns ? nullptr : in_of(x.index), columns(x), gw,
                               gb, t);
    } else {
      if (refill) im2col(x.geo, in_of(x.index), columns(x));
      conv_backward_weight_gemm(x.geo, units, x.err.data(), columns(x), gw, gb, t);
    }
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
  const std::int64_t units = all_rows ? x.units_total : x.held.units.count;
  const auto at = [&](std::vector<float>& a) { return a.data() + x.offset + first * x.row_floats; };
  const auto bias_at = [&](std::vector<float>& a) { return a.data() + x.offset + x.weights + first; };
  sgd_update(units * x.row_floats, sgd.learning_rate, sgd.momentum, sgd.weight_decay, at(grads), at(weights),
             at(momentum));
  if (x.biases > 0)
    sgd_update(units, sgd.learning_rate, sgd.momentum, 0.0f, bias_at(grads), bias_at(weights), bias_at(momentum));
  x.gradient_pending = false;
}

// Every tensor of a worker over `images` of the images it holds (its first ones), laid out as
// if it held only those: the buffers are sized for all of them.
void Runtime::Impl::set_active_batch(std::int64_t images) {
  const std::int64_t held = layers.back().held.batch.count;
  CNNPAR_ASSERT(images > 0 && images <= held, "a round's images outside the worker's partition");
  for (LayerState& x : layers) {
    const bool changed = x.geo.batch != images;
    x.n = images;
    x.geo.batch = images;
    if (x.direct && changed)  // primitives are per shape
      x.direct = std::make_unique<DirectConv>(x.geo, x.held.units.count, x.direct_algorithm);
  }
  n = images;
  label_range.count = images;
  loss_batch = images;
}

void Runtime::load_batch(int iteration, const Dataset& data) {
  Impl& s = *impl_;
  data.check_matches(s.net);
  if (!s.base_weights.empty() && iteration < int(s.round_batches.size())) {
    const std::int64_t images = s.round_batches[std::size_t(iteration)];
    if (images < 0) return;  // an empty round: nothing reads the batch
    s.set_active_batch(images > 0 ? images : s.layers.back().held.batch.count);
  }
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

}  // namespace cnnpar::real
