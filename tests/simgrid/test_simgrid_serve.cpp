// The SimGrid engine replaying a parameter server against the analytic engine on the cases of
// tests/sim/serve_cases.hpp (whose times tests/sim/test_analytic_serve.cpp derives by hand). No
// two messages share a link at once there, so SimGrid's CM02 α-β messages take exactly the
// analytic c = α + n/β, and both engines must merge in the same order at the same times.
#include <catch2/catch.hpp>

#include "sim/analytic/analytic_engine.hpp"
#include "sim/simgrid/simgrid_engine.hpp"
#include "tests/sim/serve_cases.hpp"

using namespace cnnpar;

namespace {

// Relative: SimGrid's LMM solver works to ~1e-5 and rounds messages to whole bytes. A missing
// α (1 ms of a 2 ms message) would move the last merge by 2 ms of 0.05-0.08 s: 2.5 % or more.
constexpr double kAgreement = 1e-4;

void check_agreement(const test::ServeSetup& setup) {
  const Schedule schedule = test::serve_schedule(setup);
  const Platform platform = test::serve_platform();
  const Trace expected = make_analytic_engine()->run(schedule, platform);
  const Trace got = make_simgrid_engine()->run(schedule, platform);
  REQUIRE(got.engine == "simgrid");
  CHECK(got.metadata.at("server_ranks") == nlohmann::json::array({0}));
  const auto& want = expected.ranks.at(0).merges;
  const auto& merges = got.ranks.at(0).merges;
  REQUIRE(merges.size() == want.size());
  REQUIRE(!want.empty());
  for (std::size_t k = 0; k < want.size(); ++k) {
    INFO("merge " << k << " of worker " << want[k].worker << " round " << want[k].round);
    CHECK(merges[k].worker == want[k].worker);
    CHECK(merges[k].round == want[k].round);
    CHECK(merges[k].base_version == want[k].base_version);
    CHECK(merges[k].version == want[k].version);
    CHECK(merges[k].start_s == Approx(want[k].start_s).epsilon(kAgreement));
    CHECK(merges[k].end_s == Approx(want[k].end_s).epsilon(kAgreement));
  }
  for (int w = 1; w <= 2; ++w) {
    const auto& marks = got.ranks.at(std::size_t(w)).marks;
    const auto& want_marks = expected.ranks.at(std::size_t(w)).marks;
    REQUIRE(marks.size() == want_marks.size());
    for (std::size_t r = 0; r < marks.size(); ++r) {
      INFO("worker " << w << " round " << r);
      CHECK(marks[r].time_s == Approx(want_marks[r].time_s).epsilon(kAgreement));
    }
  }
  CHECK(got.ranks[0].marks.empty());
}

}  // namespace

TEST_CASE("SimGrid serve agrees with the analytic engine: AGWU, merges in arrival order", "[simgrid][serve]") {
  check_agreement(test::serve_case(ServeOrder::arrival, 2e-3));
}

TEST_CASE("SimGrid serve agrees with the analytic engine: AGWU, pushes queued behind long merges", "[simgrid][serve]") {
  check_agreement(test::serve_case(ServeOrder::arrival, 0.015));
}

TEST_CASE("SimGrid serve agrees with the analytic engine: SGWU, replies one after the other", "[simgrid][serve]") {
  check_agreement(test::serve_case(ServeOrder::together, 2e-3));
}

TEST_CASE("SimGrid serve agrees with the analytic engine: SGWU, a push posted before the server reaches its round",
          "[simgrid][serve]") {
  // The fast worker (0.1 ms a round) pushes round r + 1 while the server still replies to round
  // r. The engines time that push differently (the analytic engine starts it when the server
  // reaches the round's serve op, SimGrid's receiver takes it at once), but the merge waits for
  // the slow worker either way: merges and marks agree.
  test::ServeSetup setup = test::serve_case(ServeOrder::together, 2e-3);
  setup.worker_flops[1] = 1e-4 * test::kServeFlops_s;
  setup.rounds = 3;
  check_agreement(setup);
}
