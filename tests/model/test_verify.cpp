#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "model/schedule.hpp"

using namespace cnnpar;

namespace {

Schedule two_ranks() {
  Schedule schedule;
  schedule.iterations = 1;
  schedule.programs.resize(2);
  schedule.programs[1].rank = 1;
  return schedule;
}

int allreduce(Schedule& schedule, std::vector<int> group, const std::string& label) {
  Collective c;
  c.kind = CollectiveKind::allreduce;
  c.bytes = 1024;
  c.group = std::move(group);
  c.label = label;
  return schedule.add_collective(c);
}

void blocking(Schedule& schedule, int rank, int id) {
  schedule.programs[std::size_t(rank)].ops.push_back(Op::post_op(id));
  schedule.programs[std::size_t(rank)].ops.push_back(Op::wait_op(id));
}

bool mentions(const std::vector<VerifyIssue>& issues, const std::string& text) {
  for (const auto& issue : issues)
    if (issue.message.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("a well-formed schedule verifies") {
  Schedule schedule = two_ranks();
  const int a = allreduce(schedule, {0, 1}, "a");
  const int b = allreduce(schedule, {0, 1}, "b");
  for (int r = 0; r < 2; ++r) {
    schedule.programs[std::size_t(r)].ops.push_back(Op::compute_op("x.fwd", 0, Phase::forward, KernelClass::gemm, 1, 1, 1));
    schedule.programs[std::size_t(r)].ops.push_back(Op::post_op(a));
    schedule.programs[std::size_t(r)].ops.push_back(Op::post_op(b));
    schedule.programs[std::size_t(r)].ops.push_back(Op::wait_op(b));
    schedule.programs[std::size_t(r)].ops.push_back(Op::wait_op(a));
    schedule.programs[std::size_t(r)].ops.push_back(Op::mark_op(0));
  }
  CHECK(verify(schedule).empty());
  CHECK_NOTHROW(verify_or_throw(schedule));
}

TEST_CASE("a wait without a post is rejected, naming the rank and op") {
  Schedule schedule = two_ranks();
  const int a = allreduce(schedule, {0, 1}, "a");
  blocking(schedule, 0, a);
  schedule.programs[1].ops.push_back(Op::wait_op(a));
  schedule.programs[1].ops.push_back(Op::post_op(a));
  const auto issues = verify(schedule);
  REQUIRE_FALSE(issues.empty());
  CHECK(issues[0].rank == 1);
  CHECK(issues[0].op == 0);
  CHECK(mentions(issues, "without posting it first"));
  try {
    verify_or_throw(schedule, "s.json");
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(error.file() == "s.json");
    CHECK(error.json_path() == "/programs/1/ops/0");
    CHECK(error.value() == "rank 1 op 0");
  }
}

TEST_CASE("members that reach collectives in different orders deadlock") {
  Schedule schedule = two_ranks();
  const int a = allreduce(schedule, {0, 1}, "first");
  const int b = allreduce(schedule, {0, 1}, "second");
  blocking(schedule, 0, a);
  blocking(schedule, 0, b);
  blocking(schedule, 1, b);  // the classic MPI mismatch
  blocking(schedule, 1, a);
  const auto issues = verify(schedule);
  REQUIRE(issues.size() == 1);
  CHECK(mentions(issues, "deadlock"));
  CHECK(mentions(issues, "same order"));
}

TEST_CASE("non-blocking posts in different orders deadlock on the FIFO engines too") {
  Schedule schedule = two_ranks();
  const int a = allreduce(schedule, {0, 1}, "a");
  const int b = allreduce(schedule, {0, 1}, "b");
  for (int id : {a, b}) schedule.programs[0].ops.push_back(Op::post_op(id));
  for (int id : {b, a}) schedule.programs[1].ops.push_back(Op::post_op(id));
  for (int r = 0; r < 2; ++r)
    for (int id : {a, b}) schedule.programs[std::size_t(r)].ops.push_back(Op::wait_op(id));
  CHECK(mentions(verify(schedule), "deadlock"));
}

TEST_CASE("a wait cycle across three ranks is a deadlock") {
  Schedule schedule;
  schedule.programs.resize(3);
  for (int r = 0; r < 3; ++r) schedule.programs[std::size_t(r)].rank = r;
  const int a = allreduce(schedule, {0, 1}, "a");
  const int b = allreduce(schedule, {0, 2}, "b");
  const int c = allreduce(schedule, {1, 2}, "c");
  blocking(schedule, 0, a);
  blocking(schedule, 0, b);
  blocking(schedule, 1, c);
  blocking(schedule, 1, a);
  blocking(schedule, 2, b);
  blocking(schedule, 2, c);
  CHECK(mentions(verify(schedule), "deadlock"));
}

TEST_CASE("the same collectives on disjoint groups in any order do not deadlock") {
  Schedule schedule;
  schedule.programs.resize(4);
  for (int r = 0; r < 4; ++r) schedule.programs[std::size_t(r)].rank = r;
  const int a = allreduce(schedule, {0, 1}, "a");
  const int b = allreduce(schedule, {2, 3}, "b");
  const int all = allreduce(schedule, {0, 1, 2, 3}, "all");
  for (int r : {0, 1}) blocking(schedule, r, a);
  for (int r : {2, 3}) blocking(schedule, r, b);
  for (int r = 0; r < 4; ++r) blocking(schedule, r, all);
  CHECK(verify(schedule).empty());
}

TEST_CASE("static problems: empty group, outsiders, double posts, missing waits and members") {
  SECTION("empty group") {
    Schedule schedule = two_ranks();
    allreduce(schedule, {}, "nobody");
    CHECK(mentions(verify(schedule), "empty group"));
  }
  SECTION("a rank posts a collective it is not in") {
    Schedule schedule = two_ranks();
    const int a = allreduce(schedule, {0}, "solo");
    blocking(schedule, 0, a);
    blocking(schedule, 1, a);
    const auto issues = verify(schedule);
    CHECK(mentions(issues, "is not in its group"));
    CHECK(issues[0].rank == 1);
  }
  SECTION("posted twice") {
    Schedule schedule = two_ranks();
    const int a = allreduce(schedule, {0, 1}, "a");
    blocking(schedule, 0, a);
    blocking(schedule, 1, a);
    schedule.programs[1].ops.push_back(Op::post_op(a));
    CHECK(mentions(verify(schedule), "twice"));
  }
  SECTION("posted but never waited") {
    Schedule schedule = two_ranks();
    const int a = allreduce(schedule, {0, 1}, "a");
    blocking(schedule, 0, a);
    schedule.programs[1].ops.push_back(Op::post_op(a));
    CHECK(mentions(verify(schedule), "never waits"));
  }
  SECTION("a member never posts") {
    Schedule schedule = two_ranks();
    const int a = allreduce(schedule, {0, 1}, "a");
    blocking(schedule, 0, a);
    const auto issues = verify(schedule);
    CHECK(mentions(issues, "never posts it"));
    CHECK(issues[0].rank == 1);
  }
  SECTION("a send needs two ranks and a root in the group") {
    Schedule schedule = two_ranks();
    Collective send;
    send.kind = CollectiveKind::send;
    send.bytes = 8;
    send.group = {0, 1};
    send.root = 5;
    schedule.add_collective(send);
    CHECK(mentions(verify(schedule), "root 5 is not in its group"));
  }
  SECTION("no ranks") {
    Schedule schedule;
    CHECK(mentions(verify(schedule), "no ranks"));
  }
}
