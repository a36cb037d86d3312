#include "real/local_executor.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "base/error.hpp"
#include "real/collective_steps.hpp"
#include "real/dataset.hpp"
#include "system/collective_algorithm.hpp"

namespace cnnpar::real {

LocalExecutor::LocalExecutor(const Network& network, const Schedule& schedule, std::uint64_t seed,
                             SgdConfig sgd)
    : schedule_(schedule) {
  for (int r = 0; r < schedule.ranks(); ++r)
    runtimes_.push_back(std::make_unique<Runtime>(network, schedule, r, seed, sgd));
}

namespace {

// Runs the collective's point-to-point steps (system/collective.hpp) on the posted buffers
// once every member has posted, with the algorithm the engines price by default.
void emulate(const Collective& c, std::map<int, CollectiveBuffers>& posted) {
  const Algorithm algorithm = resolve_algorithm(c, Platform{});
  std::vector<StepRunner> members;
  members.reserve(c.group.size());
  for (std::size_t m = 0; m < c.group.size(); ++m) {
    const CollectiveBuffers& b = posted.at(c.group[m]);
    members.emplace_back(c, algorithm, int(m), b.send, b.recv, b.send_count, b.recv_count);
  }
  run_steps_in_process(members);
}

}  // namespace

std::vector<double> LocalExecutor::run(const Dataset& data, std::vector<OpTiming>* timings,
                                       std::vector<double>* mark_s) {
  const auto start = std::chrono::steady_clock::now();
  const int P = ranks();
  std::vector<std::size_t> pc(std::size_t(P), 0);
  std::vector<int> iteration(std::size_t(P), 0), loaded(std::size_t(P), -1);
  std::vector<double> loss(std::size_t(schedule_.iterations), 0.0);
  std::map<int, std::map<int, CollectiveBuffers>> posted;  // collective -> rank -> buffers
  std::vector<char> done(schedule_.collectives.size(), 0);
  const std::function<void()> no_poll;

  bool all_finished = false;
  while (!all_finished) {
    all_finished = true;
    bool progressed = false;
    for (int r = 0; r < P; ++r) {
      Runtime& rt = *runtimes_[std::size_t(r)];
      const auto& ops = schedule_.programs[std::size_t(r)].ops;
      std::size_t& i = pc[std::size_t(r)];
      while (i < ops.size()) {
        const Op& op = ops[i];
        int& it = iteration[std::size_t(r)];
        // The batch is loaded before the iteration's first compute or post op, as the MPI
        // interpreter does (a conv_split master posts the input before computing).
        if ((op.kind == OpKind::compute || op.kind == OpKind::post) && loaded[std::size_t(r)] != it &&
            it < schedule_.iterations) {
          rt.load_batch(it, data);
          loaded[std::size_t(r)] = it;
        }
        if (op.kind == OpKind::compute) {
          if (timings) {
            const auto t0 = std::chrono::steady_clock::now();
            rt.run_compute(op, it, no_poll);
            const auto t1 = std::chrono::steady_clock::now();
            timings->push_back(OpTiming{r, it, op.label, op.kernel, op.flops,
                                        std::chrono::duration<double>(t1 - t0).count()});
          } else {
            rt.run_compute(op, it, no_poll);
          }
        } else if (op.kind == OpKind::mark) {
          if (it < schedule_.iterations) loss[std::size_t(it)] += rt.last_loss_sum();
          if (mark_s && r == 0)
            mark_s->push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
          ++it;
        } else if (op.kind == OpKind::post) {
          const Collective& c = schedule_.collectives.at(std::size_t(op.collective));
          auto& members = posted[c.id];
          members[r] = rt.prepare(c);
          if (members.size() == c.group.size()) {
            emulate(c, members);
            done[std::size_t(c.id)] = 1;
            posted.erase(c.id);
          }
        } else {  // wait
          if (!done[std::size_t(op.collective)]) break;
          rt.complete(schedule_.collectives.at(std::size_t(op.collective)));
        }
        ++i;
        progressed = true;
      }
      if (i < ops.size()) all_finished = false;
    }
    CNNPAR_ASSERT(all_finished || progressed, "local execution deadlocked: every rank waits on a collective");
  }
  for (auto& rt : runtimes_) rt->finish_schedule();
  for (double& l : loss) l /= double(schedule_.global_batch);
  return loss;
}

}  // namespace cnnpar::real
