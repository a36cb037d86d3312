#include "analysis/chrome_trace.hpp"

#include <string>

namespace cnnpar {

namespace {
constexpr double kMicroseconds = 1e6;

nlohmann::json span(const std::string& name, const char* category, int pid, int tid, double start_s, double end_s) {
  return {{"name", name},           {"cat", category},
          {"ph", "X"},              {"pid", pid},
          {"tid", tid},             {"ts", start_s * kMicroseconds},
          {"dur", (end_s - start_s) * kMicroseconds}};
}
}  // namespace

nlohmann::json to_chrome_trace(const Trace& trace) {
  nlohmann::json events = nlohmann::json::array();
  for (const RankTrace& rank : trace.ranks) {
    const int pid = rank.rank;
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", "rank " + std::to_string(pid)}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", "compute"}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1}, {"args", {{"name", "communication"}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 2}, {"args", {{"name", "wait"}}}});
    for (const ComputeRecord& op : rank.compute) {
      nlohmann::json event = span(op.label, to_string(op.phase), pid, 0, op.start_s, op.end_s);
      event["args"] = {{"op", op.op}, {"layer", op.layer}, {"kernel", to_string(op.kernel)}, {"flops", op.flops}};
      events.push_back(std::move(event));
    }
    for (const CollectiveRecord& c : rank.collectives) {
      nlohmann::json event = span(c.label, to_string(c.kind), pid, 1, c.comm_start_s, c.comm_end_s);
      event["args"] = {{"collective", c.collective}, {"bytes", c.bytes}, {"iteration", c.iteration},
                       {"posted_s", c.posted_s}};
      events.push_back(std::move(event));
      if (c.wait_end_s > c.wait_start_s)
        events.push_back(span("wait " + c.label, "wait", pid, 2, c.wait_start_s, c.wait_end_s));
    }
    for (const MarkRecord& mark : rank.marks)
      events.push_back({{"name", "end of iteration " + std::to_string(mark.iteration)},
                        {"ph", "i"}, {"s", "p"}, {"pid", pid}, {"tid", 0}, {"ts", mark.time_s * kMicroseconds}});
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"otherData", {{"engine", trace.engine}, {"metadata", trace.metadata}}}};
}

}  // namespace cnnpar
