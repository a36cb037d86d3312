#include "sim/simgrid/sg_trace.hpp"

#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace cnnpar::simgrid_engine {

Trace trace_skeleton(const Schedule& schedule, const Platform& platform) {
  Trace trace = make_empty_trace(schedule, "simgrid");
  trace.metadata["platform"] = platform.name;
  trace.warmup_iterations = schedule.warmup_iterations;
  trace.ranks.resize(schedule.programs.size());
  for (std::size_t r = 0; r < schedule.programs.size(); ++r) {
    RankTrace& rank = trace.ranks[r];
    rank.rank = int(r);
    rank.compute.clear();
    rank.collectives.clear();
    rank.marks.clear();
    const auto& ops = schedule.programs[r].ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      switch (op.kind) {
        case OpKind::compute: {
          rank.compute.push_back(describe_compute(op, int(i)));
          break;
        }
        case OpKind::post: {
          CNNPAR_ASSERT(op.collective >= 0 && op.collective < int(schedule.collectives.size()),
                        "post of a collective that is not in the schedule's table");
          const Collective& collective = schedule.collectives[std::size_t(op.collective)];
          rank.collectives.push_back(describe_collective(collective));
          break;
        }
        case OpKind::wait:
          break;
        case OpKind::mark:
          rank.marks.push_back(MarkRecord{op.iteration, 0.0});
          break;
        case OpKind::serve:
          // The server's side of every push and reply, in entry order (sorted by time at the end).
          for (const ServeEntry& e : schedule.serves[std::size_t(op.serve)].entries)
            for (int c : {e.push, e.reply}) rank.collectives.push_back(describe_collective(schedule.collectives[std::size_t(c)]));
          break;
      }
    }
  }
  return trace;
}

std::vector<double> flatten_times(const Trace& trace) {
  std::vector<double> times;
  for (const RankTrace& rank : trace.ranks) {
    for (const ComputeRecord& c : rank.compute) times.insert(times.end(), {c.start_s, c.end_s});
    for (const CollectiveRecord& c : rank.collectives)
      times.insert(times.end(), {c.posted_s, c.comm_start_s, c.comm_end_s, c.wait_start_s, c.wait_end_s});
    for (const MarkRecord& m : rank.marks) times.push_back(m.time_s);
  }
  return times;
}

bool unflatten_times(const std::vector<double>& times, Trace& trace) {
  std::size_t needed = 0;
  for (const RankTrace& rank : trace.ranks)
    needed += 2 * rank.compute.size() + 5 * rank.collectives.size() + rank.marks.size();
  if (needed != times.size()) return false;
  std::size_t k = 0;
  for (RankTrace& rank : trace.ranks) {
    for (ComputeRecord& c : rank.compute) {
      c.start_s = times[k++];
      c.end_s = times[k++];
    }
    for (CollectiveRecord& c : rank.collectives) {
      c.posted_s = times[k++];
      c.comm_start_s = times[k++];
      c.comm_end_s = times[k++];
      c.wait_start_s = times[k++];
      c.wait_end_s = times[k++];
    }
    for (MarkRecord& m : rank.marks) m.time_s = times[k++];
  }
  return true;
}

void annotate(Trace& trace, const SimgridOptions& options) {
  nlohmann::json settings = {{"network_model", options.network_model},
                             {"ring_step_batch", options.ring_step_batch},
                             {"ring_messages", options.ring_messages},
                             {"extra_cfg", options.extra_cfg}};
  if (!options.platform_xml.empty()) settings["platform_xml"] = options.platform_xml;
  trace.metadata["simgrid"] = std::move(settings);
}

}  // namespace cnnpar::simgrid_engine
