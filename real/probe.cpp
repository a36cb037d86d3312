#include "real/probe.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "real/kernels.hpp"
#include "workload/strategies/marques.hpp"

namespace cnnpar::real {

namespace {
constexpr double kMinProbeSeconds = 0.5;
}  // namespace

double conv_probe_s(const Network& network, std::int64_t batch, bool real_compute, const Platform& platform, int rank,
                    double slowdown, int repeats) {
  const std::int64_t images = std::min(batch, kProbeImages);
  if (!real_compute) return engine_probe_s(network, platform, images, rank) * slowdown;
  using clock = std::chrono::steady_clock;
  struct ConvBuffers {
    ConvGeometry geo;
    std::int64_t maps = 0;
    std::vector<float> input, weights, columns, output;  // (C, n, H, W), (O, C·KH·KW), columns, (O, n·OH·OW)
  };
  std::vector<ConvBuffers> convs;
  for (const Layer& layer : network.layers) {
    if (layer.spec.kind != LayerKind::conv) continue;
    ConvBuffers b;
    b.geo = ConvGeometry{layer.in.c, images, layer.in.h, layer.in.w, layer.spec.kernel_h, layer.spec.kernel_w,
                         layer.spec.stride, layer.spec.pad};
    b.maps = layer.out.c;
    // Random values: only the time counts (the paper's probe does the same).
    b.input.resize(std::size_t(layer.in.c * images * layer.in.h * layer.in.w));
    for (std::size_t i = 0; i < b.input.size(); ++i) b.input[i] = float((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    b.weights.assign(std::size_t(b.maps * b.geo.column_rows()), 0.01f);
    b.columns.resize(std::size_t(b.geo.column_rows() * b.geo.column_cols()));
    b.output.resize(std::size_t(b.maps * b.geo.column_cols()));
    convs.push_back(std::move(b));
  }
  const auto run_once = [&] {
    const auto start = clock::now();
    for (ConvBuffers& b : convs) {
      im2col(b.geo, b.input.data(), b.columns.data());
      conv_forward_gemm(b.geo, b.maps, b.weights.data(), nullptr, b.columns.data(), b.output.data());
    }
    const double measured_s = std::chrono::duration<double>(clock::now() - start).count();
    if (slowdown > 1) std::this_thread::sleep_for(std::chrono::duration<double>(measured_s * (slowdown - 1)));
    return std::chrono::duration<double>(clock::now() - start).count();
  };
  run_once();  // warm-up: page faults, BLAS buffers
  // The mean over at least `repeats` runs and kMinProbeSeconds: ranks that share cores are
  // scheduled in slices of milliseconds, so a short probe measures the scheduler, not the rank.
  double total_s = 0;
  int runs = 0;
  while (runs < std::max(1, repeats) || total_s < kMinProbeSeconds) {
    total_s += run_once();
    ++runs;
  }
  return total_s / runs;
}

}  // namespace cnnpar::real
