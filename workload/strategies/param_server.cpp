// param_server: BPT-CNN's outer layer (Chen et al., TPDS, Sec. 3.3). One rank is the parameter
// server; the m = P - 1 others are workers that each train on their own partition of the
// batch. A round of a worker: `local_iterations` passes of forward, backward and SGD update over
// its current samples, then it pushes its weight increment (its weights minus the global
// version it started from) to the server and waits for the new global weights.
//
//   partition idpa  Algorithm 3.1: the samples arrive in `increments` equal parts over the first
//                   A rounds, the first split by nominal node speed (Eq. 2), the later ones by
//                   the per-sample time (Eq. 3-5); the rounds become K + ceil(A/2) - 1 (Eq. 6).
//             udpa  every worker N/m samples from the first round.
//   update    sgwu  Eq. 7: the server waits for every worker's push of the round, merges them
//                   weighted by their accuracy Q_j, and replies to all (a `together` serve).
//             agwu  Eq. 9-10, Algorithm 3.2: the server merges each push as it arrives,
//                   attenuated by gamma, and replies at once (an `arrival` serve over every round).
//
// The per-sample time t̄_j (option `per_sample`): `probe` means the engines' modelled time of one
// training step per image (op_time_s), and cnnpar-run's measured one (it resolves the option
// before building, as conv_split's shares); or one time per worker.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/text.hpp"
#include "system/op_time.hpp"
#include "workload/emit.hpp"
#include "workload/registry.hpp"
#include "workload/strategies/bpt_cnn.hpp"
#include "workload/strategies/param_server.hpp"

namespace cnnpar::strategies {
namespace {

// Per parameter: gamma*Q times the increment, added to the global weight (Eq. 10); read the
// global weight and the increment, write the global weight.
constexpr double kMergeFlopsPerParameter = 2.0;
constexpr double kMergeBytesPerParameter = 3.0 * 4.0;

std::vector<int> worker_ranks(const StrategyOptions& options) {
  const int server = int(options.integer("server"));
  std::vector<int> workers;
  for (int r = 0; r < options.ranks; ++r)
    if (r != server) workers.push_back(r);
  return workers;
}

std::vector<double> parse_per_sample_list(const std::string& text, int workers, const std::string& origin) {
  std::vector<double> times;
  for (const std::string& item : split(text, ',')) {
    std::size_t used = 0;
    double value = 0;
    try {
      value = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !std::isfinite(value) || value <= 0)
      throw InputError(origin, fmt::format("/per_sample/{}", times.size()), item,
                       "expected probe or one time per worker in seconds per sample, each > 0 (t1,t2,...)");
    times.push_back(value);
  }
  if (int(times.size()) != workers)
    throw InputError(origin, "/per_sample", text,
                     fmt::format("expected {} times, one per worker (the ranks but the server), got {}", workers,
                                 times.size()));
  return times;
}

/** "eq9", or a fixed gamma in (0, 1]. @throws InputError (origin, "/gamma"). */
double fixed_gamma(const StrategyOptions& options) {
  const std::string text = options.text("gamma");
  if (text == "eq9") return 0;
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(value > 0 && value <= 1))
    throw InputError(options.origin, "/gamma", text, "expected eq9 (Eq. 9's attenuation) or a fixed gamma in (0, 1]");
  return value;
}

void validate_param_server(const Network& network, const StrategyOptions& options) {
  if (options.ranks < 2)
    throw InputError(options.origin, "/nodes", std::to_string(options.ranks),
                     "param_server needs a server and at least one worker: 2 ranks or more");
  const std::int64_t server = options.integer("server");
  if (server >= options.ranks)
    throw InputError(options.origin, "/server", std::to_string(server),
                     fmt::format("the server must be one of the {} ranks (0..{})", options.ranks, options.ranks - 1));
  const int workers = options.ranks - 1;
  const int increments = int(options.integer("increments"));
  bpt::check_partition(options.global_batch, options.text("partition") == "idpa" ? increments : 1, workers);
  if (options.text("partition") == "idpa" && increments >= options.iterations)
    throw InputError(options.origin, "/increments", std::to_string(increments),
                     fmt::format("IDPA spreads the samples over the first A rounds: A must be below the {} iterations "
                                 "(Eq. 6 assumes A < K)",
                                 options.iterations));
  if (options.text("per_sample") != "probe") parse_per_sample_list(options.text("per_sample"), workers, options.origin);
  (void)fixed_gamma(options);
  bool has_parameters = false;
  for (const Layer& layer : network.layers) has_parameters = has_parameters || layer.has_parameters();
  if (!has_parameters)
    throw InputError(options.origin, "/network", network.name, "a parameter server needs layers with weights");
}

}  // namespace

double nominal_speed(const Platform& platform, int rank) {
  const int kind = platform.kind_of(rank);
  const double peak = kind >= 0 ? platform.nodes.kinds[std::size_t(kind)].host.peak_flops : platform.nodes.peak_flops;
  return peak * platform.speed_factor(rank);
}

double engine_per_sample_s(const Network& network, const Platform& platform, std::int64_t batch, int rank) {
  const LayerOps ops(network, batch, batch);
  double seconds = 0;
  const int layers = int(network.layers.size());
  for (int l = 0; l < layers; ++l) {
    for (const Op& op : ops.forward(l)) seconds += op_time_s(platform, op, rank);
    for (const Op& op : ops.backward_data(l)) seconds += op_time_s(platform, op, rank);
    for (const Op& op : ops.backward_weight(l)) seconds += op_time_s(platform, op, rank);
    for (const Op& op : ops.update(l)) seconds += op_time_s(platform, op, rank);
  }
  return seconds / double(batch);
}

ServerPlan param_server_plan(const Network& network, const Platform& platform, const StrategyOptions& options) {
  validate_param_server(network, options);
  ServerPlan plan;
  plan.server = int(options.integer("server"));
  plan.workers = worker_ranks(options);
  const int m = int(plan.workers.size());
  const std::int64_t N = options.global_batch;
  const bool idpa = options.text("partition") == "idpa";
  const int A = int(options.integer("increments"));
  plan.rounds = idpa ? bpt::idpa_total_iterations(options.iterations, A) : options.iterations;
  if (idpa) {
    std::vector<double> speeds, per_sample_s;
    for (int r : plan.workers) speeds.push_back(nominal_speed(platform, r));
    if (options.text("per_sample") == "probe") {
      const std::int64_t probe_batch = std::max<std::int64_t>(1, std::min<std::int64_t>(kProbeSamples, N / m));
      for (int r : plan.workers) per_sample_s.push_back(engine_per_sample_s(network, platform, probe_batch, r));
    } else {
      per_sample_s = parse_per_sample_list(options.text("per_sample"), m, options.origin);
    }
    plan.samples = bpt::idpa_allocation(N, A, speeds, per_sample_s);
    plan.per_sample_s = per_sample_s;
  } else {
    plan.samples = {bpt::udpa_allocation(N, m)};
  }
  // Eq. 2 and 5 can leave a slow worker nothing when N is small: its data partition would be
  // empty, which no layer partition can hold.
  for (int j = 0; j < m; ++j)
    if (plan.samples.back()[std::size_t(j)] == 0)
      throw InputError(options.origin, "/batch", std::to_string(N),
                       fmt::format("IDPA (Algorithm 3.1) leaves worker rank {} no sample of the {}: every worker "
                                   "needs one (a larger batch, fewer increments or --partition udpa)",
                                   plan.workers[std::size_t(j)], N));
  plan.offsets.assign(std::size_t(m), 0);
  for (int j = 1; j < m; ++j) plan.offsets[std::size_t(j)] = plan.offsets[std::size_t(j - 1)] + plan.samples.back()[std::size_t(j - 1)];
  return plan;
}

std::int64_t ServerPlan::samples_in_round(int worker, int round) const {
  const std::size_t row = std::min<std::size_t>(std::size_t(round), samples.size() - 1);
  return samples[row][std::size_t(worker)];
}

namespace {

Schedule build_param_server(const Network& network, const Platform& platform, const StrategyOptions& options) {
  const ServerPlan plan = param_server_plan(network, platform, options);
  const int m = int(plan.workers.size());
  const int P = options.ranks;
  const int L = int(network.layers.size());
  const std::int64_t N = options.global_batch;
  const int local_iterations = int(options.integer("local_iterations"));
  const bool sgwu = options.text("update") == "sgwu";

  Schedule schedule = start_schedule(network, options, P);
  schedule.iterations = plan.rounds;
  schedule.options["resolved_samples"] = plan.samples;
  if (!plan.per_sample_s.empty()) schedule.options["resolved_per_sample"] = plan.per_sample_s;

  std::vector<int> parameter_layers;
  for (int l = 0; l < L; ++l)
    if (network.layers[std::size_t(l)].has_parameters()) parameter_layers.push_back(l);
  const double weight_bytes = gradient_bytes(network, parameter_layers);
  const double parameters = weight_bytes / 4.0;

  // The merges (Eq. 10 per push; Eq. 7 over the m pushes of a round).
  Op merge = Op::compute_op("merge", -1, Phase::update, KernelClass::update, kMergeFlopsPerParameter * parameters,
                            kMergeBytesPerParameter * parameters, 0);
  Serve arrival{.order = ServeOrder::arrival, .gamma = fixed_gamma(options), .merge = merge};
  std::vector<Serve> rounds(sgwu ? std::size_t(plan.rounds) : 0);
  for (Serve& round : rounds) {
    round.order = ServeOrder::together;
    round.merge = merge;
    round.merge.flops = kMergeFlopsPerParameter * parameters * m;
    round.merge.bytes = 4.0 * parameters * (m + 2);  // read each increment and the global weights, write them
  }

  for (int j = 0; j < m; ++j) {
    const int rank = plan.workers[std::size_t(j)];
    std::vector<Op>& program = schedule.programs[std::size_t(rank)].ops.mutable_vector();
    const std::int64_t partition = plan.samples.back()[std::size_t(j)];
    for (int r = 0; r < plan.rounds; ++r) {
      const std::int64_t n = plan.samples_in_round(j, r);
      const LayerOps ops(network, std::max<std::int64_t>(n, 1), N);
      const Range images = n < partition ? Range{plan.offsets[std::size_t(j)], n} : Range{};
      const auto add = [&](std::span<const Op> list) {
        for (Op op : list) {
          if (n < partition) op.images = images;
          program.push_back(std::move(op));
        }
      };
      for (int local = 0; local < local_iterations && n > 0; ++local) {
        for (int l = 0; l < L; ++l) add(ops.forward(l));
        for (int l = L - 1; l >= 0; --l) {
          add(ops.backward_data(l));
          add(ops.backward_weight(l));
        }
        for (int l = L - 1; l >= 0; --l) append(program, ops.update(l));
      }
      Collective push{.kind = CollectiveKind::send,
                      .bytes = weight_bytes,
                      .group = {plan.server, rank},
                      .root = rank,
                      .algorithm = Algorithm::direct,
                      .label = fmt::format("push w{} r{}", rank, r),
                      .payload = Payload::increments,
                      .layers = parameter_layers,
                      .iteration = r};
      Collective reply = push;
      reply.root = plan.server;
      reply.label = fmt::format("pull w{} r{}", rank, r);
      reply.payload = Payload::weights;
      const ServeEntry entry{.push = schedule.add_collective(push), .reply = schedule.add_collective(reply),
                             .worker = rank, .round = r};
      (sgwu ? rounds[std::size_t(r)] : arrival).entries.push_back(entry);
      program.push_back(Op::post_op(entry.push));
      program.push_back(Op::wait_op(entry.push));
      program.push_back(Op::post_op(entry.reply));
      program.push_back(Op::wait_op(entry.reply));
      program.push_back(Op::mark_op(r));
    }
  }
  std::vector<Op>& server = schedule.programs[std::size_t(plan.server)].ops.mutable_vector();
  if (sgwu) {
    for (Serve& round : rounds) server.push_back(Op::serve_op(schedule.add_serve(std::move(round))));
  } else {
    server.push_back(Op::serve_op(schedule.add_serve(std::move(arrival))));
  }

  // Partitions: each worker holds every layer over its final samples; the server none (it
  // keeps the global weights only).
  for (int r = 0; r < P; ++r) {
    auto& partitions = schedule.programs[std::size_t(r)].partitions;
    const auto worker = std::find(plan.workers.begin(), plan.workers.end(), r);
    for (int l = 0; l < L; ++l) {
      if (worker == plan.workers.end()) {
        partitions.push_back(none_partition());
        continue;
      }
      const std::size_t j = std::size_t(worker - plan.workers.begin());
      partitions.push_back({PartitionKind::data, {plan.offsets[j], plan.samples.back()[j]},
                            {0, layer_units(network.layers[std::size_t(l)])}});
    }
  }
  return schedule;
}

bool param_server_probes_ranks(const StrategyOptions& options) {
  return options.text("partition") == "idpa" && options.text("per_sample") == "probe";
}

// The workers' measured seconds per sample, in worker order (the server's probe is dropped).
void param_server_resolve_probe(StrategyOptions& options, const std::vector<double>& probe_s) {
  const std::vector<int> workers = worker_ranks(options);
  std::vector<std::string> times;
  for (int r : workers) times.push_back(fmt::format("{:.17g}", probe_s[std::size_t(r)]));
  options.set("per_sample", fmt::format("{}", fmt::join(times, ",")));
}

}  // namespace

StrategySpec param_server_strategy() {
  return {.name = "param_server",
          .summary = "BPT-CNN: a parameter server and P-1 workers on their own data partitions (IDPA or UDPA), "
                     "global updates synchronous (SGWU) or asynchronous (AGWU)",
          .options = {{.key = "partition",
                       .type = OptionType::choice,
                       .default_text = "idpa",
                       .choices = {"idpa", "udpa"},
                       .help = "idpa: the samples arrive in --increments parts, split by node speed, then by the "
                               "per-sample time (Algorithm 3.1); udpa: N/m each from the start"},
                      {.key = "update",
                       .type = OptionType::choice,
                       .default_text = "agwu",
                       .choices = {"sgwu", "agwu"},
                       .help = "sgwu: the server merges every worker's push of a round (Eq. 7); agwu: each push as "
                               "it arrives, attenuated by gamma (Eq. 9-10)"},
                      {.key = "increments",
                       .type = OptionType::integer,
                       .default_text = "2",
                       .min = 1,
                       .unit = "increments",
                       .help = "A, the parts IDPA allocates the samples in over the first A rounds (A < iterations)"},
                      {.key = "local_iterations",
                       .type = OptionType::integer,
                       .default_text = "1",
                       .min = 1,
                       .unit = "passes",
                       .help = "training passes over its samples a worker makes before each push"},
                      {.key = "per_sample",
                       .type = OptionType::text,
                       .default_text = "probe",
                       .help = "IDPA's per-sample times t1,t2,... in seconds (one per worker), or probe (modelled in "
                               "the engines, measured in cnnpar-run)"},
                      {.key = "gamma",
                       .type = OptionType::text,
                       .default_text = "eq9",
                       .help = "AGWU's attenuation: eq9 (Eq. 9, from the versions the pushes were trained from) or a "
                               "fixed gamma in (0, 1]"},
                      {.key = "server",
                       .type = OptionType::integer,
                       .default_text = "0",
                       .unit = "rank",
                       .help = "the rank of the parameter server; every other rank is a worker"}},
          .validate = validate_param_server,
          .build = build_param_server,
          .min_ranks = 2,
          .splits_batch_over_ranks = false,
          // A server and its workers have no one-rank form: the same network and batch on one device.
          .one_rank_baseline = plain_data_parallel,
          .probes_ranks = param_server_probes_ranks,
          .resolve_probe = param_server_resolve_probe,
          .probe = RankProbe::training_step,
          .components = ComponentSplit::parameter_server};
}

}  // namespace cnnpar::strategies
