// Engine "analytic": one replay (analytic_replay), or a batch of them on TBB threads. A replay
// holds no state beyond its own, so the threads share nothing but the ledger and the replay
// plans of jobs that share a schedule (EngineJob::memo).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "sim/analytic/analytic_engine.hpp"

namespace cnnpar::analytic {
namespace {

class AnalyticEngine final : public Engine {
 public:
  std::string name() const override { return "analytic"; }

  Trace run(const Schedule& schedule, const Platform& platform) override {
    return analytic_replay(schedule, platform, ReplayMode::automatic);
  }

  std::vector<nlohmann::json> run_all(const std::vector<EngineJob>& jobs, const BatchOptions& options) override {
    BatchLedger ledger(jobs.size(), options);
    const auto run_one = [&](std::size_t j) {
      if (ledger.stopping()) return;
      try {
        const EngineJob& job = jobs[j];
        const std::shared_ptr<const Schedule> held = job.schedule();
        const Schedule& schedule = *held;
        const auto make_plan = [&] { return make_replay_plan(schedule, *job.platform, ReplayMode::automatic); };
        const std::shared_ptr<const ReplayPlan> plan =
            job.memo ? job.memo->get<ReplayPlan>(make_plan) : std::make_shared<const ReplayPlan>(make_plan());
        const TraceDetail detail = job.summarize_classed ? TraceDetail::timing : TraceDetail::full;
        ClassedTrace trace = analytic_replay_classed(schedule, *job.platform, *plan, ReplayMode::automatic, detail);
        ledger.succeeded(j, job.summarize_classed ? job.summarize_classed(trace)
                                                  : job.summarize(std::move(trace).expand(schedule)));
      } catch (...) {
        ledger.failed(j, std::current_exception());
      }
    };
    if (ledger.workers() == 1 || jobs.size() < 2) {
      for (std::size_t j = 0; j < jobs.size(); ++j) run_one(j);
    } else {
      // The last jobs first: sweeps list node counts upwards, and the largest take longest.
      tbb::task_arena arena(ledger.workers());
      arena.execute([&] {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, jobs.size(), 1),
                          [&](const tbb::blocked_range<std::size_t>& range) {
                            for (std::size_t k = range.begin(); k != range.end(); ++k) run_one(jobs.size() - 1 - k);
                          });
      });
    }
    return ledger.finish();
  }
};

}  // namespace
}  // namespace cnnpar::analytic

namespace cnnpar {
std::unique_ptr<Engine> make_analytic_engine() { return std::make_unique<analytic::AnalyticEngine>(); }
}  // namespace cnnpar
