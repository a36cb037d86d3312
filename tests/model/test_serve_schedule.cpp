// The parameter-server vocabulary of the Schedule (model/schedule.hpp Serve, docs/formats.md
// "serves[]"): its JSON form, what the verifier accepts and rejects about serves, and the
// Trace's merges (ranks[].merges[]).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "model/schedule.hpp"
#include "model/trace.hpp"
#include "tests/model/serve_fixture.hpp"

using namespace cnnpar;
using test::entry_of;
using test::serve_schedule;
using test::ServeSetup;

namespace {

bool mentions(const std::vector<VerifyIssue>& issues, const std::string& text) {
  for (const VerifyIssue& issue : issues)
    if (issue.message.find(text) != std::string::npos) return true;
  return false;
}

std::string messages(const std::vector<VerifyIssue>& issues) {
  std::string all;
  for (const VerifyIssue& issue : issues) all += issue.message + "\n";
  return all;
}

Schedule arrival_schedule() { return serve_schedule({.order = ServeOrder::arrival, .rounds = 2}); }
Schedule together_schedule() { return serve_schedule({.order = ServeOrder::together, .rounds = 2}); }

// Removes every op of `rank` that posts or waits for collective `id`.
void drop_ops_of(Schedule& schedule, int rank, int id) {
  std::vector<Op>& ops = schedule.programs[std::size_t(rank)].ops.mutable_vector();
  std::erase_if(ops, [&](const Op& op) { return (op.kind == OpKind::post || op.kind == OpKind::wait) && op.collective == id; });
}

}  // namespace

TEST_CASE("serve schedule JSON: an arrival serve with a fixed gamma round-trips", "[serve][schedule]") {
  const Schedule schedule = serve_schedule({.order = ServeOrder::arrival, .rounds = 2, .gamma = 0.25});
  const nlohmann::json first = to_json(schedule);
  // One serve of 2 workers x 2 rounds; the server's program is the one serve op.
  REQUIRE(first.at("serves").size() == 1);
  CHECK(first.at("serves")[0].at("order") == "arrival");
  CHECK(first.at("serves")[0].at("gamma") == 0.25);
  CHECK(first.at("serves")[0].at("entries").size() == 4);
  CHECK(first.at("programs")[0].at("ops") == nlohmann::json::parse(R"([{"op": "serve", "serve": 0}])"));

  const Schedule again = schedule_from_json(first, "serve.json");
  CHECK(to_json(again) == first);
  REQUIRE(again.serves.size() == 1);
  const Serve& serve = again.serves[0];
  CHECK(serve.order == ServeOrder::arrival);
  CHECK(serve.gamma == 0.25);
  CHECK(serve.merge.kind == OpKind::compute);
  CHECK(serve.merge.kernel == KernelClass::update);
  CHECK(serve.merge.flops == 1e9);
  // Entries worker-major: (w1 r0), (w1 r1), (w2 r0), (w2 r1); each a push and its reply.
  REQUIRE(serve.entries.size() == 4);
  const int workers[] = {1, 1, 2, 2}, rounds[] = {0, 1, 0, 1};
  for (std::size_t e = 0; e < 4; ++e) {
    CHECK(serve.entries[e].worker == workers[e]);
    CHECK(serve.entries[e].round == rounds[e]);
    CHECK(serve.entries[e].push == schedule.serves[0].entries[e].push);
    CHECK(serve.entries[e].reply == schedule.serves[0].entries[e].reply);
  }
  CHECK(again.collectives[std::size_t(serve.entries[0].push)].payload == Payload::increments);
  CHECK(again.programs[0].ops[0].kind == OpKind::serve);
  CHECK(verify(again).empty());
}

TEST_CASE("serve schedule JSON: together serves round-trip, and Eq. 9's gamma is written as no gamma", "[serve][schedule]") {
  const Schedule schedule = together_schedule();
  const nlohmann::json first = to_json(schedule);
  REQUIRE(first.at("serves").size() == 2);  // one per round
  for (const nlohmann::json& serve : first.at("serves")) {
    CHECK(serve.at("order") == "together");
    CHECK_FALSE(serve.contains("gamma"));
    CHECK(serve.at("entries").size() == 2);
  }
  const Schedule again = schedule_from_json(first, "serve.json");
  CHECK(to_json(again) == first);
  REQUIRE(again.serves.size() == 2);
  CHECK(again.serves[1].order == ServeOrder::together);
  CHECK(again.serves[1].gamma == 0);
  CHECK(again.serves[1].entries[0].round == 1);
  CHECK(again.serves[1].entries[1].worker == 2);
  CHECK(again.programs[0].ops.size() == 2);
  CHECK(again.programs[0].ops[1].serve == 1);
  CHECK(verify(again).empty());

  // An arrival serve without gamma reads back as Eq. 9's (0).
  const Schedule eq9 = schedule_from_json(to_json(arrival_schedule()), "serve.json");
  CHECK(eq9.serves.at(0).gamma == 0);
}

TEST_CASE("serve schedule JSON: bad serves name their path", "[serve][schedule]") {
  const nlohmann::json good = to_json(arrival_schedule());
  const auto path_of = [](const nlohmann::json& document) -> std::string {
    try {
      schedule_from_json(document, "serve.json");
    } catch (const InputError& error) {
      return error.json_path();
    }
    return "(accepted)";
  };
  nlohmann::json document = good;
  document["serves"][0]["order"] = "fifo";
  CHECK(path_of(document) == "/serves/0/order");
  document = good;
  document["serves"][0]["gamma"] = 1.5;  // gamma lies in (0, 1]
  CHECK(path_of(document) == "/serves/0/gamma");
  document = good;
  document["serves"][0]["entries"][1]["worker"] = 3;  // 3 ranks: 0..2
  CHECK(path_of(document) == "/serves/0/entries/1/worker");
  document = good;
  document["serves"][0]["entries"][0]["push"] = 8;  // 8 collectives: 0..7
  CHECK(path_of(document) == "/serves/0/entries/0/push");
  document = good;
  document["programs"][0]["ops"][0]["serve"] = 1;  // one serve
  CHECK(path_of(document) == "/programs/0/ops/0/serve");
  document = good;
  document["serves"][0]["merge"] = {{"op", "mark"}, {"iteration", 0}};
  CHECK(path_of(document) == "/serves/0/merge");
}

TEST_CASE("verify accepts a 1-server 2-worker arrival serve and together serves", "[serve][verify]") {
  const Schedule arrival = arrival_schedule();
  CHECK(messages(verify(arrival)).empty());
  CHECK_NOTHROW(verify_or_throw(arrival));
  const Schedule together = together_schedule();
  CHECK(messages(verify(together)).empty());
  // Worker 2 pushing before worker 1 (or with no compute at all) changes nothing static.
  Schedule unequal = serve_schedule({.order = ServeOrder::together, .rounds = 3, .worker_flops = {1e12, 0}});
  CHECK(messages(verify(unequal)).empty());
}

TEST_CASE("verify rejects a server that is also a worker of its serve", "[serve][verify]") {
  Schedule schedule = arrival_schedule();
  schedule.serves[0].entries[1].worker = 0;  // the server's own rank
  const auto issues = verify(schedule);
  INFO(messages(issues));
  CHECK(mentions(issues, "serve 0: the server is also worker 0"));
}

TEST_CASE("verify rejects a push that is no send between the server and its worker", "[serve][verify]") {
  const ServeEntry entry = entry_of(arrival_schedule(), 2, 1);
  const std::string expected = "must be a send from rank 2 between ranks 0 and 2";
  SECTION("wrong kind") {
    Schedule schedule = arrival_schedule();
    Collective& push = schedule.collectives[std::size_t(entry.push)];
    push.kind = CollectiveKind::bcast;  // same group and root, still a valid bcast
    const auto issues = verify(schedule);
    INFO(messages(issues));
    CHECK(mentions(issues, expected));
  }
  SECTION("wrong group") {
    Schedule schedule = arrival_schedule();
    schedule.collectives[std::size_t(entry.push)].group = {1, 2};  // between the two workers
    const auto issues = verify(schedule);
    INFO(messages(issues));
    CHECK(mentions(issues, expected));
  }
  SECTION("wrong root") {
    Schedule schedule = arrival_schedule();
    schedule.collectives[std::size_t(entry.push)].root = 0;  // sent by the server: a reply's direction
    const auto issues = verify(schedule);
    INFO(messages(issues));
    CHECK(mentions(issues, expected));
  }
  SECTION("a reply sent by the worker") {
    Schedule schedule = arrival_schedule();
    schedule.collectives[std::size_t(entry.reply)].root = 2;
    const auto issues = verify(schedule);
    INFO(messages(issues));
    CHECK(mentions(issues, "must be a send from rank 0 between ranks 0 and 2"));
  }
}

TEST_CASE("verify rejects a collective that two serve entries share", "[serve][verify]") {
  Schedule schedule = arrival_schedule();
  // Worker 1's round-1 entry names its round-0 reply again (its own reply is then served by none).
  const ServeEntry first = entry_of(schedule, 1, 0);
  for (ServeEntry& entry : schedule.serves[0].entries)
    if (entry.worker == 1 && entry.round == 1) entry.reply = first.reply;
  const auto issues = verify(schedule);
  INFO(messages(issues));
  CHECK(mentions(issues, "(pull w1 r0) is served by 2 entries"));
}

TEST_CASE("verify rejects a serve that no serve op runs, and one that two run", "[serve][verify]") {
  Schedule none = arrival_schedule();
  none.programs[0].ops.clear();
  const auto issues = verify(none);
  INFO(messages(issues));
  CHECK(mentions(issues, "serve 0 is run by no serve op"));

  Schedule twice = arrival_schedule();
  twice.programs[0].ops.push_back(Op::serve_op(0));
  const auto twice_issues = verify(twice);
  INFO(messages(twice_issues));
  CHECK(mentions(twice_issues, "serve 0 is run by two serve ops"));
}

TEST_CASE("verify rejects a worker whose push is never posted", "[serve][verify]") {
  Schedule schedule = together_schedule();
  const ServeEntry entry = entry_of(schedule, 2, 1);
  drop_ops_of(schedule, 2, entry.push);
  const auto issues = verify(schedule);
  INFO(messages(issues));
  REQUIRE_FALSE(issues.empty());
  CHECK(mentions(issues, "is in the group of collective " + std::to_string(entry.push) + " (push w2 r1) but never posts it"));
  CHECK(std::any_of(issues.begin(), issues.end(), [](const VerifyIssue& issue) { return issue.rank == 2; }));
}

TEST_CASE("verify's replay: a worker waiting for its reply before it pushes deadlocks", "[serve][verify]") {
  // Worker 1 waits for its round-0 reply, which needs its round-0 push merged first.
  Schedule schedule = arrival_schedule();
  std::vector<Op>& ops = schedule.programs[1].ops.mutable_vector();
  // Round 0 of worker 1: compute, post push, wait push, post reply, wait reply, mark.
  REQUIRE(ops[1].kind == OpKind::post);
  std::rotate(ops.begin() + 1, ops.begin() + 3, ops.begin() + 5);  // reply first, then the push
  const auto issues = verify(schedule);
  INFO(messages(issues));
  CHECK(mentions(issues, "deadlock"));
}

TEST_CASE("verify's replay: a together serve needs every push first, an arrival serve does not", "[serve][verify]") {
  // Worker 2 pushes only after a message from worker 1 that worker 1 sends once it has its
  // reply. Arrival: worker 1's push is merged and answered alone, so this runs. Together: the
  // reply waits for worker 2's push, which waits for the reply: a deadlock.
  for (ServeOrder order : {ServeOrder::arrival, ServeOrder::together}) {
    Schedule schedule = serve_schedule({.order = order, .rounds = 1});
    const int hint = schedule.add_collective({.kind = CollectiveKind::send, .bytes = 8, .group = {1, 2}, .root = 1, .label = "hint"});
    std::vector<Op>& w1 = schedule.programs[1].ops.mutable_vector();
    w1.insert(w1.end() - 1, {Op::post_op(hint), Op::wait_op(hint)});  // after the reply, before the mark
    std::vector<Op>& w2 = schedule.programs[2].ops.mutable_vector();
    w2.insert(w2.begin(), {Op::post_op(hint), Op::wait_op(hint)});
    const auto issues = verify(schedule);
    INFO(to_string(order) << ": " << messages(issues));
    if (order == ServeOrder::arrival)
      CHECK(issues.empty());
    else
      CHECK(mentions(issues, "deadlock"));
  }
}

TEST_CASE("a server's merges round-trip through the Trace JSON, and a merge older than its base is refused", "[serve][trace]") {
  Trace trace;
  trace.engine = "analytic";
  trace.metadata = {{"server_ranks", nlohmann::json::array({0})}};
  trace.ranks.resize(2);
  trace.ranks[1].rank = 1;
  trace.ranks[0].merges = {{.worker = 1, .round = 0, .base_version = 0, .version = 1, .start_s = 0.5, .end_s = 0.75},
                           {.worker = 1, .round = 1, .base_version = 1, .version = 3, .start_s = 1.0, .end_s = 1.25}};
  const nlohmann::json first = to_json(trace);
  CHECK(first.at("ranks")[0].at("merges").size() == 2);
  CHECK_FALSE(first.at("ranks")[1].contains("merges"));  // only a server writes them
  const Trace again = trace_from_json(first, "t.json");
  CHECK(to_json(again) == first);
  REQUIRE(again.ranks[0].merges.size() == 2);
  CHECK(again.ranks[0].merges[1].base_version == 1);
  CHECK(again.ranks[0].merges[1].end_s == 1.25);
  CHECK(again.ranks[0].merges[1].staleness() == 1);  // 3 - 1 - 1: one other merge in between

  const auto path_of = [](const nlohmann::json& document) -> std::string {
    try {
      trace_from_json(document, "t.json");
    } catch (const InputError& error) {
      return error.json_path();
    }
    return "(accepted)";
  };
  nlohmann::json broken = first;
  broken["ranks"][0]["merges"][1]["base_version"] = 3;  // a merge makes a version newer than its base
  CHECK(path_of(broken) == "/ranks/0/merges/1/base_version");
  broken = first;
  broken["ranks"][0]["merges"][0]["end"] = 0.25;  // before its start
  CHECK(path_of(broken) == "/ranks/0/merges/0/end");
  broken = first;
  broken["ranks"][0]["merges"][0]["gamma"] = 0.5;  // not a merge field
  CHECK(path_of(broken) != "(accepted)");
}
