// trace_check TRACE.json RANKS [--loss-drop FRACTION] [--weights-identical] [--comm-progress MODE]
//                                [--compute MODE] [--slowed RANK FACTOR]
// Checks a trace written by cnnpar-run: it parses as a cnnpar Trace (model/trace.hpp), comes
// from the real engine with RANKS ranks, every rank has one mark per iteration and
// consistent timestamps (posted <= comm_start <= comm_end <= wait_end, wait_start <=
// wait_end, compute end >= start, marks increasing), and optionally that the mean loss of the
// last three iterations is below (1 - FRACTION) times that of the first three, that the
// final weights were bitwise identical on every rank, the recorded modes, and that rank RANK
// (run with --slowdown RANK:FACTOR) computed FACTOR times as long as the fastest other rank,
// within 15 % (sleeps overshoot by scheduler slack; the ranks' work is the same).
// A parameter server's ranks (metadata server_ranks) have no marks; they must record merges
// whose versions count up from 1 and whose pushes were trained from an older version.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/trace.hpp"

static int failures = 0;
#define EXPECT(condition, ...)                        \
  do {                                                \
    if (!(condition)) {                               \
      std::fprintf(stderr, "trace_check: FAIL: ");    \
      std::fprintf(stderr, __VA_ARGS__);              \
      std::fprintf(stderr, "\n");                     \
      ++failures;                                     \
    }                                                 \
  } while (false)

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: trace_check TRACE.json RANKS [--loss-drop F] [--weights-identical] ...\n");
    return 2;
  }
  const std::string path = argv[1];
  const int ranks = std::atoi(argv[2]);
  double loss_drop = -1;
  bool weights_identical = false;
  std::string progress, compute;
  int slowed_rank = -1;
  double slowed_factor = 0;
  for (int i = 3; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--loss-drop") && i + 1 < argc) loss_drop = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--weights-identical")) weights_identical = true;
    else if (!std::strcmp(argv[i], "--comm-progress") && i + 1 < argc) progress = argv[++i];
    else if (!std::strcmp(argv[i], "--compute") && i + 1 < argc) compute = argv[++i];
    else if (!std::strcmp(argv[i], "--slowed") && i + 2 < argc) {
      slowed_rank = std::atoi(argv[++i]);
      slowed_factor = std::atof(argv[++i]);
    }
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "trace_check: cannot read %s\n", path.c_str());
    return 1;
  }
  const nlohmann::json document = nlohmann::json::parse(in);
  const cnnpar::Trace trace = cnnpar::trace_from_json(document, path);
  const nlohmann::json& m = trace.metadata;
  EXPECT(trace.engine == "real", "engine is '%s'", trace.engine.c_str());
  EXPECT(int(trace.ranks.size()) == ranks, "%zu ranks instead of %d", trace.ranks.size(), ranks);
  const int iterations = m.value("iterations", -1);
  EXPECT(iterations > 0, "metadata has no iterations");
  for (const char* key : {"strategy", "options", "network", "ranks", "batch", "comm_progress", "compute", "threads"})
    EXPECT(m.contains(key), "metadata lacks '%s'", key);
  if (!progress.empty()) EXPECT(m.value("comm_progress", "") == progress, "comm_progress is not %s", progress.c_str());
  if (!compute.empty()) EXPECT(m.value("compute", "") == compute, "compute is not %s", compute.c_str());
  const double slack = 1e-6;  // clock reads within one rank are monotonic; allow rounding
  const auto servers = m.value("server_ranks", std::vector<int>{});
  for (const cnnpar::RankTrace& r : trace.ranks) {
    if (std::find(servers.begin(), servers.end(), r.rank) != servers.end()) {
      EXPECT(r.marks.empty(), "server rank %d has %zu marks", r.rank, r.marks.size());
      EXPECT(!r.merges.empty(), "server rank %d recorded no merges", r.rank);
      int version = 0;
      for (const cnnpar::MergeRecord& merge : r.merges) {
        EXPECT(merge.version == version || merge.version == version + 1, "server rank %d merge version %d after %d",
               r.rank, merge.version, version);
        version = merge.version;
        EXPECT(merge.base_version < merge.version, "server rank %d merge of worker %d has base %d >= version %d",
               r.rank, merge.worker, merge.base_version, merge.version);
      }
      continue;
    }
    EXPECT(int(r.marks.size()) == iterations, "rank %d has %zu marks", r.rank, r.marks.size());
    for (std::size_t i = 1; i < r.marks.size(); ++i)
      EXPECT(r.marks[i].time_s >= r.marks[i - 1].time_s, "rank %d marks go back", r.rank);
    EXPECT(!r.compute.empty(), "rank %d has no compute records", r.rank);
    for (const auto& c : r.compute) EXPECT(c.end_s + slack >= c.start_s && c.start_s >= -0.01, "rank %d op %d times", r.rank, c.op);
    for (const auto& c : r.collectives) {
      EXPECT(c.posted_s <= c.comm_start_s + slack, "rank %d collective %d posted after start", r.rank, c.collective);
      EXPECT(c.comm_start_s <= c.comm_end_s + slack, "rank %d collective %d ends before start", r.rank, c.collective);
      EXPECT(c.comm_end_s <= c.wait_end_s + slack, "rank %d collective %d wait ends before completion", r.rank, c.collective);
      EXPECT(c.wait_start_s <= c.wait_end_s + slack, "rank %d collective %d wait times", r.rank, c.collective);
    }
  }
  if (slowed_rank >= 0 && slowed_rank < int(trace.ranks.size())) {
    double slowed_s = 0, fastest_other_s = 1e300;
    for (const cnnpar::RankTrace& r : trace.ranks) {
      double compute_s = 0;
      for (const auto& c : r.compute) compute_s += c.end_s - c.start_s;
      if (r.rank == slowed_rank) slowed_s = compute_s;
      else fastest_other_s = std::min(fastest_other_s, compute_s);
    }
    const double ratio = slowed_s / fastest_other_s;
    std::printf("trace_check: rank %d computed %.4f s, the fastest other %.4f s: ratio %.3f (asked %.3f)\n",
                slowed_rank, slowed_s, fastest_other_s, ratio, slowed_factor);
    EXPECT(std::fabs(ratio / slowed_factor - 1) <= 0.15, "slowed rank's compute ratio %.3f, not %.3f", ratio,
           slowed_factor);
    EXPECT(m.contains("slowdown") && m.at("slowdown").contains(std::to_string(slowed_rank)),
           "metadata lacks slowdown of rank %d", slowed_rank);
  }
  if (loss_drop >= 0) {
    const auto loss = m.value("loss", std::vector<double>{});
    EXPECT(loss.size() >= 6, "need >= 6 loss values, have %zu", loss.size());
    if (loss.size() >= 6) {
      const std::size_t n = loss.size();
      const double first = (loss[0] + loss[1] + loss[2]) / 3, last = (loss[n - 1] + loss[n - 2] + loss[n - 3]) / 3;
      std::printf("trace_check: loss first-3 mean %.4f, last-3 mean %.4f\n", first, last);
      EXPECT(last < (1 - loss_drop) * first, "loss did not fall by %.0f %% (%.4f -> %.4f)", 100 * loss_drop, first, last);
    }
  }
  if (weights_identical)
    EXPECT(m.value("weights_identical_across_ranks", false), "weights differ between ranks");
  std::printf("trace_check: %s: %d failure(s)\n", path.c_str(), failures);
  return failures == 0 ? 0 : 1;
}
