#pragma once
// A parameter server's bookkeeping, the same in every back-end (model/schedule.hpp, Serve):
// which serve entry a collective is, which merges are ready once pushes have arrived, the
// global versions the merges make and the version each worker trains from. A back-end decides
// when things happen (the order pushes arrive in comes from its clock); the ledger says what
// follows from that order, and records the merges for the Trace.
#include <cstddef>
#include <deque>
#include <vector>

#include "model/schedule.hpp"
#include "model/trace.hpp"

namespace cnnpar {

class ServeLedger {
 public:
  explicit ServeLedger(const Schedule& schedule);

  struct Served {
    int serve = -1;  ///< -1: not a push or reply of any serve
    int entry = -1;
    bool push = false;
  };
  Served served(int collective) const { return collective >= 0 && std::size_t(collective) < served_.size() ? served_[std::size_t(collective)] : Served{}; }
  /** The rank whose serve op runs `serve`. */
  int server(int serve) const { return servers_[std::size_t(serve)]; }
  bool any() const { return !servers_.empty(); }

  /** The push `collective` has arrived at its server. */
  void push_arrived(int collective);
  /** True when `serve` has a merge to run: an arrived push (arrival order) or every push
   *  (together), not yet merged. */
  bool merge_ready(int serve) const;
  /** Takes the next ready merge: the entries it merges (one push, or every push at once). */
  std::vector<int> begin_merge(int serve);
  /** The merge taken last ended: the global version advances (each push's merge makes one
   *  version; a together merge makes one for them all), a MergeRecord per entry is appended to
   *  `records`, the merged workers train from the new version, and the replies to post now
   *  are returned (in the order their pushes arrived, as begin_merge gave the entries). */
  std::vector<int> end_merge(int serve, double start_s, double end_s, std::vector<MergeRecord>& records);
  /** The global version the server's reply `collective` carries (set when its merge ended). */
  int reply_version(int collective) const;
  /** The reply `collective` reached its worker. */
  void reply_done(int collective);
  /** Every reply of `serve` done: its serve op is over. */
  bool finished(int serve) const;

  /** The global version the server's weights are at (0 before any merge). */
  int latest_version(int server) const;
  /** The version `worker` trains from: the one its last reply carries, sent or in flight (0
   *  before any). */
  int base_version(int worker) const { return base_[std::size_t(worker)]; }

 private:
  const Schedule& schedule_;
  std::vector<Served> served_;   ///< per collective
  std::vector<int> servers_;     ///< per serve
  std::vector<int> version_;     ///< per rank: the global version of a server's weights
  std::vector<int> base_;        ///< per rank: the version a worker trains from
  std::vector<int> reply_version_;  ///< per collective: a reply's version, -1 before its merge
  struct ServeState {
    std::deque<int> arrived;     ///< entries whose push arrived, not yet merged
    std::vector<int> merging;    ///< the entries of the merge in progress
    std::size_t pushes = 0, replies = 0;
  };
  std::vector<ServeState> state_;  ///< per serve
};

}  // namespace cnnpar
