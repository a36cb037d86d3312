// The Runtime's construction and state: accessors, the loss of the last forward, the weights
// and gradients, checkpoint state and its restore (the parts: runtime_setup.cpp,
// runtime_errors.cpp, runtime_passes.cpp, runtime_exchange.cpp).
#include "real/runtime.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "real/runtime_impl.hpp"

namespace cnnpar::real {

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
void Runtime::set_share_errors(bool share) { impl_->place_errors(share); }
std::int64_t Runtime::error_floats() const { return impl_->error_storage_floats; }
void Runtime::set_inner_mode(InnerMode mode) { impl_->inner = mode; }
InnerMode Runtime::inner_mode() const { return impl_->inner; }

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
double Runtime::last_loss_images() const { return double(impl_->loss_images) / double(impl_->loss_holders); }
std::int64_t Runtime::last_correct() const { return impl_->counts_correct ? impl_->correct : 0; }
double Runtime::last_accuracy() const {
  return impl_->loss_images > 0 ? double(last_correct()) / double(impl_->loss_images) : 0.0;
}
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
  for (const auto& x : impl_->layers) {
    if (x.layer->spec.kind != LayerKind::batchnorm) continue;
    // Channels this rank does not compute keep the initial statistics (mean 0, variance 1).
    std::vector<float> mean(std::size_t(x.units_total), 0.0f), variance(std::size_t(x.units_total), 1.0f);
    std::copy(x.running_mean.begin(), x.running_mean.end(), mean.begin() + x.held.units.begin);
    std::copy(x.running_var.begin(), x.running_var.end(), variance.begin() + x.held.units.begin);
    st.batchnorm_statistics.insert(st.batchnorm_statistics.end(), mean.begin(), mean.end());
    st.batchnorm_statistics.insert(st.batchnorm_statistics.end(), variance.begin(), variance.end());
  }
  return st;
}

bool Runtime::model_parallel() const {
  if (impl_->serves || !impl_->base_weights.empty()) return true;  // the server's are the model
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
  // A channel's running statistics are those of the lowest rank that computes it: under
  // per-rank batch statistics every rank keeps its own, and PyTorch DDP likewise broadcasts
  // rank 0's buffers.
  std::size_t at = 0;
  for (const auto& x : impl_->layers) {
    if (x.layer->spec.kind != LayerKind::batchnorm) continue;
    const auto units = std::size_t(x.units_total);
    for (std::size_t u = 0; u < units; ++u)
      if (impl_->statistics_owner(x.index, std::int64_t(u)) != impl_->rank)
        st.batchnorm_statistics[at + u] = st.batchnorm_statistics[at + units + u] = 0.0f;
    at += 2 * units;
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
  std::int64_t statistics = 0;
  for (const auto& x : s.layers)
    if (x.layer->spec.kind == LayerKind::batchnorm) statistics += 2 * x.units_total;
  if (std::int64_t(st.batchnorm_statistics.size()) != statistics)
    throw InputError("<checkpoint>", "/batchnorm_statistics", std::to_string(st.batchnorm_statistics.size()),
                     fmt::format("expected {} running statistics (mean and variance of every batchnorm channel) "
                                 "for network {}",
                                 statistics, s.net.name));
  std::size_t at = 0;
  for (auto& x : s.layers) {
    if (x.layer->spec.kind != LayerKind::batchnorm) continue;
    const auto units = std::size_t(x.units_total), held = std::size_t(x.held.units.begin);
    std::copy_n(st.batchnorm_statistics.begin() + std::ptrdiff_t(at + held), x.running_mean.size(),
                x.running_mean.begin());
    std::copy_n(st.batchnorm_statistics.begin() + std::ptrdiff_t(at + units + held), x.running_var.size(),
                x.running_var.begin());
    at += 2 * units;
  }
  if (!s.base_weights.empty()) s.base_weights = s.weights;  // a worker starts from the global weights
  s.iteration_base = st.iteration;
}

std::int64_t Runtime::iteration() const { return impl_->iteration_base; }

bool Runtime::delays_updates() const {
  for (const auto& x : impl_->layers)
    if (x.replicated) return true;
  return false;
}

std::vector<float> Runtime::activations(int layer) const {
  if (layer < 0) return impl_->input;
  const LayerBuffer& out = impl_->layers.at(std::size_t(layer)).out;
  return {out.begin(), out.end()};
}

std::vector<float> Runtime::running_statistics(int layer) const {
  const auto& x = impl_->layers.at(std::size_t(layer));
  std::vector<float> both = x.running_mean;
  both.insert(both.end(), x.running_var.begin(), x.running_var.end());
  return both;
}

bool Runtime::channel_major(int layer) const {
  if (layer < 0) return impl_->input_cm;
  return impl_->layers.at(std::size_t(layer)).out_cm;
}

}  // namespace cnnpar::real
