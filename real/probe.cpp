#include "real/probe.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "base/statistics.hpp"
#include "real/dataset.hpp"
#include "real/kernels.hpp"
#include "real/kernels_conv_direct.hpp"
#include "real/local_executor.hpp"
#include "workload/registry.hpp"
#include "workload/strategies/marques.hpp"
#include "workload/strategies/param_server.hpp"

namespace cnnpar::real {

namespace {

constexpr double kMinProbeSeconds = 0.5;

// The mean seconds of run_once() over at least `repeats` runs and kMinProbeSeconds, after one
// warm-up run (page faults, BLAS buffers). Ranks that share cores are scheduled in slices of
// milliseconds, so a short probe measures the scheduler, not the rank. A slowed rank waits
// (slowdown - 1) times each run.
template <typename Run>
double mean_probe_s(Run run_once, double slowdown, int repeats) {
  using clock = std::chrono::steady_clock;
  const auto timed = [&] {
    const auto start = clock::now();
    run_once();
    const double measured_s = std::chrono::duration<double>(clock::now() - start).count();
    if (slowdown > 1) std::this_thread::sleep_for(std::chrono::duration<double>(measured_s * (slowdown - 1)));
    return std::chrono::duration<double>(clock::now() - start).count();
  };
  timed();
  double total_s = 0;
  int runs = 0;
  while (runs < std::max(1, repeats) || total_s < kMinProbeSeconds) {
    total_s += timed();
    ++runs;
  }
  return total_s / runs;
}

}  // namespace

double conv_probe_s(const Network& network, std::int64_t batch, bool real_compute, const Platform& platform, int rank,
                    double slowdown, int repeats) {
  const std::int64_t images = std::min(batch, kProbeImages);
  if (!real_compute) return engine_probe_s(network, platform, images, rank) * slowdown;
  struct ConvBuffers {
    ConvGeometry geo;
    std::int64_t maps = 0;
    std::vector<float> input, weights, columns, output;  // (C, n, H, W), (O, C·KH·KW), columns, (O, n·OH·OW)
  };
  std::vector<ConvBuffers> convs;
  for (const Layer& layer : network.layers) {
    if (layer.spec.kind != LayerKind::conv) continue;
    ConvBuffers b;
    b.geo = conv_layer_geometry(layer, images);
    b.maps = layer.out.c;
    // Random values: only the time counts (the paper's probe does the same).
    b.input.resize(std::size_t(layer.in.c * images * layer.in.h * layer.in.w));
    for (std::size_t i = 0; i < b.input.size(); ++i) b.input[i] = float((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    b.weights.assign(std::size_t(b.maps * b.geo.column_rows()), 0.01f);
    b.columns.resize(std::size_t(b.geo.column_rows() * b.geo.column_cols()));
    b.output.resize(std::size_t(b.maps * b.geo.column_cols()));
    convs.push_back(std::move(b));
  }
  return mean_probe_s(
      [&] {
        for (ConvBuffers& b : convs) {
          im2col(b.geo, b.input.data(), b.columns.data());
          conv_forward_gemm(b.geo, b.maps, b.weights.data(), nullptr, b.columns.data(), b.output.data());
        }
      },
      slowdown, repeats);
}

double training_probe_s(const Network& network, std::int64_t batch, bool real_compute, const Platform& platform,
                        int rank, double slowdown, int repeats) {
  const std::int64_t images = std::max<std::int64_t>(1, std::min(batch, strategies::kProbeSamples));
  if (!real_compute) return strategies::engine_per_sample_s(network, platform, images, rank) * slowdown;
  // One rank's training step over `images`: the steps a worker takes, without its exchanges.
  StrategyOptions one_rank;
  one_rank.global_batch = images;
  one_rank.ranks = 1;
  one_rank.iterations = 1;
  one_rank.warmup_iterations = 0;
  const Schedule step = build_schedule(network, platform, plain_data_parallel(one_rank));
  LocalExecutor executor(network, step, 1);
  const SyntheticDataset data(network.input, network.classes(), images, 1);
  return mean_probe_s([&] { executor.run(data); }, slowdown, repeats) / double(images);
}

ConvGeometry conv_layer_geometry(const Layer& layer, std::int64_t images) {
  return ConvGeometry{.channels = layer.in.c,
                      .batch = images,
                      .in_h = layer.in.h,
                      .in_w = layer.in.w,
                      .kernel_h = layer.spec.kernel_h,
                      .kernel_w = layer.spec.kernel_w,
                      .stride = layer.spec.stride,
                      .pad = layer.spec.pad};
}

std::string winograd_layer_without_kernel(const Network& network, const ConvPaths& paths) {
  for (const Layer& layer : network.layers)
    if (layer.spec.kind == LayerKind::conv && paths.path(layer.spec) == ConvPath::winograd &&
        !winograd_convolution_available(conv_layer_geometry(layer, 1), layer.out.c))
      return layer.spec.name;
  return "";
}

ConvPathSeconds conv_path_seconds(const ConvGeometry& g, std::int64_t out_maps, bool backward_data, int repeats) {
  const std::size_t input_floats = std::size_t(g.channels * g.batch * g.in_h * g.in_w);
  const std::size_t output_floats = std::size_t(out_maps * g.column_cols());
  // Values only for the time (as conv_probe_s): (C, n, H, W) input, (O, C·KH·KW) weights.
  std::vector<float> input(input_floats), weights(std::size_t(out_maps * g.column_rows()), 0.01f);
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = float((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
  std::vector<float> output(output_floats), errors(output_floats, 1e-3f), input_errors(input_floats);
  std::vector<float> weight_grad(weights.size()), bias(std::size_t(out_maps), 0.0f), bias_grad(bias.size());
  std::vector<float> columns(std::size_t(g.column_rows() * g.column_cols()));
  DirectConv direct(g, out_maps);
  std::unique_ptr<DirectConv> winograd;
  if (winograd_convolution_available(g, out_maps))
    winograd = std::make_unique<DirectConv>(g, out_maps, ConvAlgorithm::winograd);
  const auto im2col_step = [&] {
    im2col(g, input.data(), columns.data());
    conv_forward_gemm(g, out_maps, weights.data(), bias.data(), columns.data(), output.data());
    if (backward_data) {
      conv_backward_data_gemm(g, out_maps, weights.data(), errors.data(), columns.data());
      std::fill(input_errors.begin(), input_errors.end(), 0.0f);
      col2im_add(g, columns.data(), input_errors.data());
    }
    im2col(g, input.data(), columns.data());
    conv_backward_weight_gemm(g, out_maps, errors.data(), columns.data(), weight_grad.data(), bias_grad.data());
  };
  const auto primitive_step = [&](DirectConv& conv) {
    conv.forward(input.data(), weights.data(), bias.data(), output.data());
    if (backward_data) {
      std::fill(input_errors.begin(), input_errors.end(), 0.0f);
      conv.backward_data_add(weights.data(), errors.data(), input_errors.data());
    }
    conv.backward_weights(input.data(), errors.data(), weight_grad.data(), bias_grad.data());
  };
  using clock = std::chrono::steady_clock;
  const auto seconds = [](const auto& step) {
    const auto start = clock::now();
    step();
    return std::chrono::duration<double>(clock::now() - start).count();
  };
  const auto direct_step = [&] { primitive_step(direct); };
  const auto winograd_step = [&] { primitive_step(*winograd); };
  seconds(im2col_step);
  seconds(direct_step);
  if (winograd) seconds(winograd_step);
  std::vector<double> im2col_s, direct_s, winograd_s;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    im2col_s.push_back(seconds(im2col_step));
    direct_s.push_back(seconds(direct_step));
    if (winograd) winograd_s.push_back(seconds(winograd_step));
  }
  return {.im2col_s = median(im2col_s),
          .direct_s = median(direct_s),
          .winograd_s = winograd ? median(winograd_s) : std::numeric_limits<double>::infinity()};
}

}  // namespace cnnpar::real
