// The analytic engine replaying a parameter server (tests/sim/serve_cases.hpp): the order the
// server merges pushes in, when each merge runs and when each worker ends its rounds, all
// derived by hand from t1 = 0.02 s, t2 = 0.01 s (the workers' compute per round), c = 2 ms
// (a push or reply: α + n/β) and g (one merge). The server receives pushes one at a time beside
// its engine, merges on its compute stream and sends replies on its engine, one at a time.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "analysis/metrics.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "tests/sim/serve_cases.hpp"

using namespace cnnpar;
using cnnpar::analytic::analytic_replay;
using cnnpar::analytic::ReplayMode;

namespace {

constexpr double kTol = 1e-9;  // relative: sums of a few exact times
constexpr double c = test::kServeMessage_s;                          // s, a push or a reply
constexpr double t1 = test::kSlowTrain_s, t2 = test::kFastTrain_s;  // s, compute per round

struct ExpectedMerge {
  int worker, round, base, version;
  double start_s, end_s;
};

void check_merges(const Trace& trace, const std::vector<ExpectedMerge>& expected) {
  const auto& merges = trace.ranks.at(0).merges;
  REQUIRE(merges.size() == expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    INFO("merge " << k);
    CHECK(merges[k].worker == expected[k].worker);
    CHECK(merges[k].round == expected[k].round);
    CHECK(merges[k].base_version == expected[k].base);
    CHECK(merges[k].version == expected[k].version);
    CHECK(merges[k].start_s == Approx(expected[k].start_s).epsilon(kTol));
    CHECK(merges[k].end_s == Approx(expected[k].end_s).epsilon(kTol));
  }
}

// marks[w - 1][round]: worker w's mark of that round.
void check_marks(const Trace& trace, const std::vector<std::vector<double>>& marks) {
  CHECK(trace.ranks.at(0).marks.empty());  // a server marks no rounds
  for (int w = 1; w <= 2; ++w) {
    const auto& got = trace.ranks.at(std::size_t(w)).marks;
    REQUIRE(got.size() == marks[std::size_t(w - 1)].size());
    for (std::size_t r = 0; r < got.size(); ++r) {
      INFO("worker " << w << " round " << r);
      CHECK(got[r].iteration == int(r));
      CHECK(got[r].time_s == Approx(marks[std::size_t(w - 1)][r]).epsilon(kTol));
    }
  }
}

}  // namespace

TEST_CASE("analytic serve, AGWU: pushes merged in arrival order, each worker at its own pace", "[analytic][serve]") {
  const double g = 2e-3;  // one merge
  const Schedule schedule = test::serve_schedule(test::serve_case(ServeOrder::arrival, g));
  REQUIRE(verify(schedule).empty());
  // A worker's round: compute t, push c, merge g, reply c; nothing overlaps in this case (the
  // fast worker's second push at 2·t2 + 3c + g = 0.026 s, after the slow one's merge ends at
  // t1 + c + g = 0.024 s), so the server merges w2 r0, w1 r0, w2 r1, w1 r1:
  //   w2 r0: [t2 + c, +g] = [0.012, 0.014], base 0, version 1
  //   w1 r0: [t1 + c, +g] = [0.022, 0.024], base 0, version 2 (missed w2 r0)
  //   w2 r1: [2·t2 + 3c + g, +g] = [0.028, 0.030], base 1 (its r0 reply), version 3
  //   w1 r1: [2·t1 + 3c + g, +g] = [0.048, 0.050], base 2, version 4
  // Worker w's marks: round r ends at (r + 1)·(t_w + 2c + g).
  for (ReplayMode mode : {ReplayMode::automatic, ReplayMode::time_ordered}) {
    const Trace trace = analytic_replay(schedule, test::serve_platform(), mode);
    check_merges(trace, {{2, 0, 0, 1, t2 + c, t2 + c + g},
                         {1, 0, 0, 2, t1 + c, t1 + c + g},
                         {2, 1, 1, 3, 2 * t2 + 3 * c + g, 2 * t2 + 3 * c + 2 * g},
                         {1, 1, 2, 4, 2 * t1 + 3 * c + g, 2 * t1 + 3 * c + 2 * g}});
    check_marks(trace, {{t1 + 2 * c + g, 2 * (t1 + 2 * c + g)}, {t2 + 2 * c + g, 2 * (t2 + 2 * c + g)}});
    CHECK(trace.metadata.at("server_ranks") == nlohmann::json::array({0}));
    // The server's records: a merge op per push (labelled by its worker and round), and its
    // side of every push (in arrival order) and reply.
    const RankTrace& server = trace.ranks[0];
    REQUIRE(server.compute.size() == 4);
    CHECK(server.compute[0].label == "merge w2 r0");
    CHECK(server.compute[1].label == "merge w1 r0");
    CHECK(server.compute[1].end_s - server.compute[1].start_s == Approx(g).epsilon(kTol));
    REQUIRE(server.collectives.size() == 8);
    CHECK(server.collectives[0].label == "push w2 r0");
    CHECK(server.collectives[0].comm_start_s == Approx(t2).epsilon(kTol));
    CHECK(server.collectives[0].comm_end_s == Approx(t2 + c).epsilon(kTol));
  }
}

TEST_CASE("analytic serve, AGWU: pushes that arrive during a merge queue on the server", "[analytic][serve]") {
  const double g = 0.015;  // longer than a round of the fast worker minus its push
  const Schedule schedule = test::serve_schedule(test::serve_case(ServeOrder::arrival, g));
  // The merges follow each other on the server's compute stream:
  //   w2 r0: [t2 + c, +g] = [0.012, 0.027]; w2 marks r0 at 0.027 + c = 0.029
  //   w1 r0: pushed by t1 + c = 0.022, merged after w2 r0: [0.027, 0.042]; w1 marks r0 at 0.044
  //   w2 r1: pushed by 0.029 + t2 + c = 0.041, merged after w1 r0: [0.042, 0.057]; mark 0.059
  //   w1 r1: pushed by 0.044 + t1 + c = 0.066, the server idle: [0.066, 0.081]; mark 0.083
  // Versions 1..4; bases 0, 0, 1, 2: every merge but the first missed one other.
  const double m1 = t2 + c, m2 = m1 + g, m3 = m2 + g;
  const double w1_r0 = m2 + g + c, w2_r0 = m1 + g + c;
  const double m4 = w1_r0 + t1 + c;
  const Trace trace = analytic_replay(schedule, test::serve_platform());
  check_merges(trace, {{2, 0, 0, 1, m1, m1 + g}, {1, 0, 0, 2, m2, m2 + g}, {2, 1, 1, 3, m3, m3 + g}, {1, 1, 2, 4, m4, m4 + g}});
  check_marks(trace, {{w1_r0, m4 + g + c}, {w2_r0, m3 + g + c}});
  // The queued push w1 r0 arrived at t1 + c, long before its merge.
  for (const CollectiveRecord& record : trace.ranks[0].collectives)
    if (record.label == "push w1 r0") CHECK(record.comm_end_s == Approx(t1 + c).epsilon(kTol));
}

TEST_CASE("analytic serve, SGWU: a round ends at the slower worker + push + merge + both replies", "[analytic][serve]") {
  const double g = 2e-3;
  const Schedule schedule = test::serve_schedule(test::serve_case(ServeOrder::together, g));
  REQUIRE(verify(schedule).empty());
  // Round 0: the merge waits for the slow push: [t1 + c, t1 + c + g] = [0.022, 0.024], version 1
  // for both. The server's engine sends the replies one after the other, first to worker 2,
  // whose push arrived first: worker 2 marks at t1 + c + g + c = 0.026, worker 1 at
  // t1 + c + g + 2c = 0.028, the round's end R. Round 1 is the same from R (the fast worker's
  // push at 0.026 + t2 + c = 0.038 is before the slow one's): merge [R + t1 + c, +g], version 2,
  // marks R + t1 + 3c + g and 2R.
  const double R = t1 + 3 * c + g;
  const Trace trace = analytic_replay(schedule, test::serve_platform());
  check_merges(trace, {{2, 0, 0, 1, t1 + c, t1 + c + g},
                       {1, 0, 0, 1, t1 + c, t1 + c + g},
                       {2, 1, 1, 2, R + t1 + c, R + t1 + c + g},
                       {1, 1, 1, 2, R + t1 + c, R + t1 + c + g}});
  check_marks(trace, {{R, 2 * R}, {R - c, 2 * R - c}});
  // One merge op per round on the server.
  REQUIRE(trace.ranks[0].compute.size() == 2);
  CHECK(trace.ranks[0].compute[1].label == "merge r1");

  // The metrics are the workers': each round lasts R; Eq. 8 waits t1 - t2 per round (2 rounds).
  const TraceMetrics metrics = compute_metrics(trace);
  CHECK(metrics.ranks == 3);
  CHECK(metrics.iteration_s == Approx(R).epsilon(kTol));
  CHECK(metrics.sync_wait_s == Approx(2 * (t1 - t2)).epsilon(kTol));
}
