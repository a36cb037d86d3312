// The parameter server's bookkeeping (system/serve_ledger.hpp) on scripted arrival orders: which
// merge is ready, the global versions merges make, each worker's base version and the records.
// Versions start at 0 and each merge makes one (a together merge one for all its pushes); a
// worker trains from the version its last reply carries from the moment that merge ends.
#include <catch2/catch.hpp>

#include <vector>

#include "base/error.hpp"
#include "system/serve_ledger.hpp"
#include "tests/model/serve_fixture.hpp"

using namespace cnnpar;
using test::entry_of;
using test::serve_schedule;

namespace {

// Index of `entry` among the entries of serve `s`.
int index_of(const Schedule& schedule, int s, const ServeEntry& entry) {
  const auto& entries = schedule.serves[std::size_t(s)].entries;
  for (std::size_t e = 0; e < entries.size(); ++e)
    if (entries[e].push == entry.push) return int(e);
  return -1;
}

}  // namespace

TEST_CASE("serve ledger: an arrival serve merges pushes one at a time in arrival order", "[serve][ledger]") {
  // 2 workers (ranks 1, 2) x 2 rounds, one arrival serve run by rank 0.
  const Schedule schedule = serve_schedule({.order = ServeOrder::arrival, .rounds = 2});
  ServeLedger ledger(schedule);
  REQUIRE(ledger.any());
  CHECK(ledger.server(0) == 0);
  const ServeEntry w1r0 = entry_of(schedule, 1, 0), w1r1 = entry_of(schedule, 1, 1);
  const ServeEntry w2r0 = entry_of(schedule, 2, 0), w2r1 = entry_of(schedule, 2, 1);
  CHECK(ledger.served(w2r0.push).serve == 0);
  CHECK(ledger.served(w2r0.push).push);
  CHECK(ledger.served(w2r0.push).entry == index_of(schedule, 0, w2r0));
  CHECK_FALSE(ledger.served(w2r0.reply).push);
  CHECK(ledger.served(-1).serve == -1);
  CHECK(ledger.served(int(schedule.collectives.size())).serve == -1);
  CHECK_FALSE(ledger.merge_ready(0));
  CHECK(ledger.reply_version(w2r0.reply) == -1);  // no merge yet

  // Scripted arrivals: w2 r0, w1 r0, w2 r1, w1 r1. By hand (staleness = version - 1 - base):
  //   w2 r0: base 0 (no reply yet), version 1, staleness 0
  //   w1 r0: base 0 (no reply yet), version 2, staleness 1 (missed w2 r0)
  //   w2 r1: base 1 (its r0 reply),  version 3, staleness 1 (missed w1 r0)
  //   w1 r1: base 2 (its r0 reply),  version 4, staleness 1 (missed w2 r1)
  struct Step {
    ServeEntry entry;
    int base, version, staleness;
  };
  const Step steps[] = {{w2r0, 0, 1, 0}, {w1r0, 0, 2, 1}, {w2r1, 1, 3, 1}, {w1r1, 2, 4, 1}};
  std::vector<MergeRecord> records;
  double clock_s = 0;
  for (const Step& step : steps) {
    INFO("worker " << step.entry.worker << " round " << step.entry.round);
    CHECK(ledger.base_version(step.entry.worker) == step.base);
    ledger.push_arrived(step.entry.push);
    REQUIRE(ledger.merge_ready(0));
    CHECK(ledger.begin_merge(0) == std::vector<int>{index_of(schedule, 0, step.entry)});
    CHECK_FALSE(ledger.merge_ready(0));  // one merge at a time
    CHECK(ledger.end_merge(0, clock_s, clock_s + 1, records) == std::vector<int>{step.entry.reply});
    REQUIRE(!records.empty());
    const MergeRecord& record = records.back();
    CHECK(record.worker == step.entry.worker);
    CHECK(record.round == step.entry.round);
    CHECK(record.base_version == step.base);
    CHECK(record.version == step.version);
    CHECK(record.staleness() == step.staleness);
    CHECK(record.start_s == clock_s);
    CHECK(record.end_s == clock_s + 1);
    CHECK(ledger.latest_version(0) == step.version);
    CHECK(ledger.reply_version(step.entry.reply) == step.version);
    // The base moves when the merge ends, before the reply lands.
    CHECK(ledger.base_version(step.entry.worker) == step.version);
    CHECK_FALSE(ledger.finished(0));
    ledger.reply_done(step.entry.reply);
    clock_s += 2;
  }
  CHECK(records.size() == 4);
  CHECK(ledger.finished(0));
  CHECK(ledger.latest_version(0) == 4);
}

TEST_CASE("serve ledger: pushes that arrive during a merge queue in arrival order", "[serve][ledger]") {
  const Schedule schedule = serve_schedule({.order = ServeOrder::arrival, .rounds = 1});
  ServeLedger ledger(schedule);
  const ServeEntry w1 = entry_of(schedule, 1, 0), w2 = entry_of(schedule, 2, 0);
  // Worker 2's push first, then worker 1's before any merge began: worker 2's is merged first.
  ledger.push_arrived(w2.push);
  ledger.push_arrived(w1.push);
  REQUIRE(ledger.merge_ready(0));
  CHECK(ledger.begin_merge(0) == std::vector<int>{index_of(schedule, 0, w2)});
  std::vector<MergeRecord> records;
  CHECK(ledger.end_merge(0, 0, 1, records) == std::vector<int>{w2.reply});
  REQUIRE(ledger.merge_ready(0));  // worker 1's push waited
  CHECK(ledger.begin_merge(0) == std::vector<int>{index_of(schedule, 0, w1)});
  CHECK(ledger.end_merge(0, 1, 2, records) == std::vector<int>{w1.reply});
  REQUIRE(records.size() == 2);
  // Both trained from version 0: worker 1's increment missed worker 2's merge.
  CHECK(records[0].worker == 2);
  CHECK(records[0].staleness() == 0);
  CHECK(records[1].worker == 1);
  CHECK(records[1].version == 2);
  CHECK(records[1].staleness() == 1);
  CHECK_FALSE(ledger.merge_ready(0));
}

TEST_CASE("serve ledger: a together serve makes one version per round for all its pushes", "[serve][ledger]") {
  // One together serve per round; the versions carry over from round to round on the server.
  const Schedule schedule = serve_schedule({.order = ServeOrder::together, .rounds = 2});
  ServeLedger ledger(schedule);
  REQUIRE(schedule.serves.size() == 2);
  CHECK(ledger.server(1) == 0);
  std::vector<MergeRecord> records;
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    const ServeEntry w1 = entry_of(schedule, 1, round), w2 = entry_of(schedule, 2, round);
    ledger.push_arrived(w2.push);
    CHECK_FALSE(ledger.merge_ready(round));  // 1 of 2 pushes
    ledger.push_arrived(w1.push);
    REQUIRE(ledger.merge_ready(round));
    // The merge takes the pushes, and the replies go out, in the order the pushes arrived.
    CHECK(ledger.begin_merge(round) == std::vector<int>{index_of(schedule, round, w2), index_of(schedule, round, w1)});
    CHECK(ledger.end_merge(round, 0, 1, records) == std::vector<int>{w2.reply, w1.reply});
    // Round r's merge makes version r + 1 for both pushes, each trained from version r.
    CHECK(ledger.latest_version(0) == round + 1);
    for (const ServeEntry& entry : {w1, w2}) {
      CHECK(ledger.reply_version(entry.reply) == round + 1);
      CHECK(ledger.base_version(entry.worker) == round + 1);
    }
    REQUIRE(records.size() == std::size_t(2 * (round + 1)));
    CHECK(records[records.size() - 2].worker == 2);  // in arrival order
    for (std::size_t k = records.size() - 2; k < records.size(); ++k) {
      CHECK(records[k].round == round);
      CHECK(records[k].base_version == round);
      CHECK(records[k].version == round + 1);
      CHECK(records[k].staleness() == 0);  // nobody merged in between
    }
    ledger.reply_done(w1.reply);
    CHECK_FALSE(ledger.finished(round));
    ledger.reply_done(w2.reply);
    CHECK(ledger.finished(round));
  }
  CHECK(ledger.finished(0));
}

TEST_CASE("serve ledger: calls out of order are internal errors", "[serve][ledger]") {
  const Schedule schedule = serve_schedule({.order = ServeOrder::arrival, .rounds = 1});
  ServeLedger ledger(schedule);
  const ServeEntry w1 = entry_of(schedule, 1, 0);
  CHECK_THROWS_AS(ledger.begin_merge(0), InternalError);       // nothing arrived
  CHECK_THROWS_AS(ledger.push_arrived(w1.reply), InternalError);  // a reply is no push
  CHECK_THROWS_AS(ledger.reply_done(w1.reply), InternalError);  // before its merge
  std::vector<MergeRecord> records;
  CHECK_THROWS_AS(ledger.end_merge(0, 0, 1, records), InternalError);  // never began
  CHECK(records.empty());
}
