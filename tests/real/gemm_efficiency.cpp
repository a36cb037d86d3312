// cnnpar_gemm_efficiency TRACE.json CALIBRATED_PLATFORM.json [RANK [OUT.json]]
// Compute efficiency of the real executor's GEMM ops: rebuilds the Schedule the trace ran
// (strategy options from its metadata), then over the measured iterations of RANK (default 0)
// sums the FLOPs of the GEMM compute ops and the seconds they took, and compares the
// achieved rate with the GEMM grid `cnnpar-run --calibrate` measured (interpolated for the shapes
// between its points; calibrate with the trace's GEMM back-end and threads):
//   efficiency = Σ (flops_i / calibrated_rate(shape_i)) / Σ measured_seconds_i.
// Also the share of an iteration spent in non-GEMM compute ops (analysis/'s
// TraceMetrics::non_gemm_compute_s over iteration_s).
// Prints one line per shape and the totals (and writes them to OUT.json). Exit 1 when a
// shape has no calibrated rate.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/metrics.hpp"
#include "model/platform.hpp"
#include "model/scenarios.hpp"
#include "model/trace.hpp"
#include "system/gemm_rate.hpp"
#include "workload/registry.hpp"
#include "workload/strategy.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: cnnpar_gemm_efficiency TRACE.json CALIBRATED_PLATFORM.json [RANK]\n");
    return 2;
  }
  try {
    std::ifstream trace_in(argv[1]), platform_in(argv[2]);
    if (!trace_in || !platform_in) {
      std::fprintf(stderr, "cnnpar_gemm_efficiency: cannot read the inputs\n");
      return 2;
    }
    const cnnpar::Trace trace = cnnpar::trace_from_json(nlohmann::json::parse(trace_in), argv[1]);
    const cnnpar::Platform calibrated = cnnpar::parse_platform(nlohmann::json::parse(platform_in), argv[2]);
    const int rank = argc > 3 ? std::atoi(argv[3]) : 0;
    const nlohmann::json& m = trace.metadata;
    const nlohmann::json& o = m.at("options");
    cnnpar::StrategyOptions options;
    options.name = o.at("strategy").get<std::string>();
    options.global_batch = o.at("batch").get<std::int64_t>();
    options.ranks = o.at("ranks").get<int>();
    options.iterations = o.at("iterations").get<int>();
    options.warmup_iterations = o.at("warmup").get<int>();
    for (const cnnpar::OptionSpec& option : cnnpar::strategy_spec(options.name).options)
      if (o.contains(option.key)) options.set(option.key, o.at(option.key));
    options.uneven_batch = o.value("uneven_batch", false);
    options.recompute_columns = o.value("columns", "kept") == "recomputed";
    const cnnpar::Network network = cnnpar::load_network(m.at("network").get<std::string>());
    const cnnpar::Schedule schedule = cnnpar::build_schedule(network, calibrated, options);
    const auto& ops = schedule.programs.at(std::size_t(rank)).ops;
    const cnnpar::RankTrace& r = trace.ranks.at(std::size_t(rank));
    const double measured_from_s = trace.warmup_iterations > 0 ? r.marks.at(std::size_t(trace.warmup_iterations - 1)).time_s : 0.0;
    struct Sum { double flops = 0, seconds = 0, ideal_s = 0; int ops = 0; };
    std::map<std::string, Sum> per_shape;
    Sum total;
    int missing = 0;
    for (const cnnpar::ComputeRecord& c : r.compute) {
      if (c.kernel != cnnpar::KernelClass::gemm || c.start_s < measured_from_s) continue;
      const cnnpar::Op& op = ops[std::size_t(c.op)];
      const std::string shape = cnnpar::gemm_key(op.gemm, op.phase);
      const std::optional<cnnpar::GemmRate> rate =
          calibrated.gemm_grid() ? cnnpar::gemm_rate(*calibrated.gemm_grid(), op.gemm, op.phase) : std::nullopt;
      if (!rate) {
        ++missing;
        continue;
      }
      for (Sum* s : {&per_shape[shape], &total}) {
        s->flops += c.flops;
        s->seconds += c.end_s - c.start_s;
        s->ideal_s += c.flops / rate->rate_flops;
        ++s->ops;
      }
    }
    std::printf("%-26s %5s %12s %12s %12s %8s\n", "shape", "ops", "GFLOP", "achieved", "sgemm", "eff");
    for (const auto& [shape, s] : per_shape)
      std::printf("%-26s %5d %12.3f %10.1f/s %10.1f/s %7.1f%%\n", shape.c_str(), s.ops, s.flops / 1e9,
                  s.flops / s.seconds / 1e9, s.flops / s.ideal_s / 1e9, 100 * s.ideal_s / s.seconds);
    std::printf("%-26s %5d %12.3f %10.1f/s %10.1f/s %7.1f%%\n", "total (GFLOP/s)", total.ops, total.flops / 1e9,
                total.flops / total.seconds / 1e9, total.flops / total.ideal_s / 1e9, 100 * total.ideal_s / total.seconds);
    const cnnpar::TraceMetrics metrics = cnnpar::compute_metrics(trace);
    const double non_gemm_share = metrics.non_gemm_compute_s / metrics.iteration_s;
    std::printf("non-GEMM compute: %.4f s of a %.4f s iteration (%.1f %%; medians, max over ranks)\n",
                metrics.non_gemm_compute_s, metrics.iteration_s, 100 * non_gemm_share);
    if (argc > 4) {
      std::ofstream out(argv[4]);
      out << nlohmann::json{{"gemm_efficiency", total.ideal_s / total.seconds},
                            {"gemm_flops_per_s", total.flops / total.seconds},
                            {"calibrated_flops_per_s", total.flops / total.ideal_s},
                            {"non_gemm_compute_s", metrics.non_gemm_compute_s},
                            {"iteration_s", metrics.iteration_s},
                            {"non_gemm_share_of_iterations", non_gemm_share},
                            {"gemm_backend", m.value("gemm_backend", "openblas")}}
                 .dump(1)
          << "\n";
    }
    if (missing) std::fprintf(stderr, "cnnpar_gemm_efficiency: %d GEMM ops had no calibrated rate\n", missing);
    return missing ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnnpar_gemm_efficiency: %s\n", e.what());
    return 2;
  }
}
