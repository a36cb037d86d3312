#include "real/collective_steps.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "base/error.hpp"

namespace cnnpar::real {

namespace {
int wrap(int index, int p) { return ((index % p) + p) % p; }
}  // namespace

StepRunner::StepRunner(const Collective& c, Algorithm algorithm, int member, float* send, float* recv,
                       std::int64_t send_count, std::int64_t recv_count)
    : c_(c), member_(member), plan_(plan_collective(c, algorithm, member)), send_(send), recv_(recv),
      send_count_(send_count), recv_count_(recv_count) {
  const int p = int(c.group.size());
  const auto copy = [](float* to, const float* from, std::int64_t count) {
    if (to != from && count > 0) std::memcpy(to, from, sizeof(float) * std::size_t(count));
  };
  const auto own_work = [&](std::int64_t count) {
    work_storage_.assign(std::size_t(count), 0.0f);
    work_ = work_storage_.data();
    work_count_ = count;
  };
  switch (c.kind) {
    case CollectiveKind::allreduce:
      work_ = recv_;
      work_count_ = recv_count_;
      copy(recv_, send_, recv_count_);
      break;
    case CollectiveKind::bcast:
      work_ = member == critical_member(c) ? send_ : recv_;
      work_count_ = member == critical_member(c) ? send_count_ : recv_count_;
      break;
    case CollectiveKind::reduce:
    case CollectiveKind::reduce_scatter:
      own_work(send_count_);
      copy(work_, send_, send_count_);
      break;
    case CollectiveKind::allgather:
      work_ = recv_;
      work_count_ = recv_count_;
      copy(recv_ + std::int64_t(member) * send_count_, send_, send_count_);
      break;
    case CollectiveKind::gather: {
      root_rel_ = wrap(member - critical_member(c), p);
      own_work(send_count_ * p);  // root-relative order
      copy(work_ + std::int64_t(root_rel_) * send_count_, send_, send_count_);
      break;
    }
    case CollectiveKind::scatter: {
      root_rel_ = wrap(member - critical_member(c), p);
      own_work(recv_count_ * p);
      if (member == critical_member(c))
        for (int g = 0; g < p; ++g)
          copy(work_ + std::int64_t(wrap(g - member, p)) * recv_count_, send_ + std::int64_t(g) * recv_count_,
               recv_count_);
      break;
    }
    case CollectiveKind::alltoall: {
      const std::int64_t block = send_count_ / p;
      copy(recv_ + member * block, send_ + member * block, block);
      break;
    }
    case CollectiveKind::send:
      break;
  }
}

float* StepRunner::buffer(StepBuffer which) const {
  return which == StepBuffer::work ? work_ : which == StepBuffer::send ? send_ : recv_;
}

std::int64_t StepRunner::elements(StepBuffer which) const {
  return which == StepBuffer::work ? work_count_ : which == StepBuffer::send ? send_count_ : recv_count_;
}

Range StepRunner::range(const BlockSpan& span, StepBuffer which) const {
  return span_elements(span, elements(which), c_.kind == CollectiveKind::send ? 1 : plan_.blocks);
}

std::span<const float> StepRunner::outgoing(std::size_t k) const {
  const CollectiveStep& s = plan_.steps.at(k);
  if (s.send_to < 0) return {};
  const Range r = range(s.send_span, s.send_buffer);
  return {buffer(s.send_buffer) + r.begin, std::size_t(r.count)};
}

std::span<float> StepRunner::incoming(std::size_t k) {
  const CollectiveStep& s = plan_.steps.at(k);
  if (s.receive_from < 0) return {};
  scratch_.resize(std::size_t(range(s.receive_span, s.receive_buffer).count));
  return {scratch_.data(), scratch_.size()};
}

void StepRunner::apply(std::size_t k) {
  const CollectiveStep& s = plan_.steps.at(k);
  if (s.receive_from < 0) return;
  const Range r = range(s.receive_span, s.receive_buffer);
  CNNPAR_ASSERT(std::int64_t(scratch_.size()) == r.count, "message size differs from its span: " + c_.label);
  float* to = buffer(s.receive_buffer) + r.begin;
  if (s.reduce) {
    for (std::int64_t i = 0; i < r.count; ++i) to[i] += scratch_[std::size_t(i)];
  } else {
    std::memcpy(to, scratch_.data(), sizeof(float) * scratch_.size());
  }
}

void StepRunner::finish() {
  const int p = int(c_.group.size());
  const bool root = member_ == critical_member(c_);
  switch (c_.kind) {
    case CollectiveKind::reduce:
      if (root) std::memcpy(recv_, work_, sizeof(float) * std::size_t(recv_count_));
      break;
    case CollectiveKind::reduce_scatter: {
      const Range own = span_elements({member_, 1}, work_count_, p);
      CNNPAR_ASSERT(own.count == recv_count_, "reduce_scatter block differs from the receive buffer: " + c_.label);
      std::memcpy(recv_, work_ + own.begin, sizeof(float) * std::size_t(recv_count_));
      break;
    }
    case CollectiveKind::gather:
      if (root)
        for (int g = 0; g < p; ++g)
          std::memcpy(recv_ + std::int64_t(g) * send_count_, work_ + std::int64_t(wrap(g - member_, p)) * send_count_,
                      sizeof(float) * std::size_t(send_count_));
      break;
    case CollectiveKind::scatter:
      std::memcpy(recv_, work_ + std::int64_t(root_rel_) * recv_count_, sizeof(float) * std::size_t(recv_count_));
      break;
    default:
      break;
  }
}

void run_steps_in_process(std::vector<StepRunner>& members) {
  const int p = int(members.size());
  std::vector<std::size_t> at(static_cast<std::size_t>(p), 0);
  std::vector<std::vector<float>> messages(static_cast<std::size_t>(p));
  for (;;) {
    std::vector<int> ready;
    for (int m = 0; m < p; ++m) {
      const StepRunner& runner = members[std::size_t(m)];
      if (at[std::size_t(m)] >= runner.steps()) continue;
      const CollectiveStep& s = runner.plan().steps[at[std::size_t(m)]];
      const auto next_of = [&](int peer) -> const CollectiveStep* {
        const StepRunner& other = members[std::size_t(peer)];
        return at[std::size_t(peer)] < other.steps() ? &other.plan().steps[at[std::size_t(peer)]] : nullptr;
      };
      bool ok = true;
      if (s.send_to >= 0) ok = ok && next_of(s.send_to) && next_of(s.send_to)->receive_from == m;
      if (s.receive_from >= 0) ok = ok && next_of(s.receive_from) && next_of(s.receive_from)->send_to == m;
      if (ok) ready.push_back(m);
    }
    if (ready.empty()) break;
    for (int m : ready) {  // every message of the round is read before any lands
      const auto out = members[std::size_t(m)].outgoing(at[std::size_t(m)]);
      messages[std::size_t(m)].assign(out.begin(), out.end());
    }
    for (int m : ready) {
      StepRunner& runner = members[std::size_t(m)];
      const CollectiveStep& s = runner.plan().steps[at[std::size_t(m)]];
      if (s.receive_from >= 0) {
        const std::vector<float>& message = messages[std::size_t(s.receive_from)];
        const std::span<float> in = runner.incoming(at[std::size_t(m)]);
        CNNPAR_ASSERT(in.size() == message.size(), "a message's size differs from the span it lands in");
        std::copy(message.begin(), message.end(), in.begin());
        runner.apply(at[std::size_t(m)]);
      }
    }
    for (int m : ready) ++at[std::size_t(m)];
  }
  for (int m = 0; m < p; ++m)
    CNNPAR_ASSERT(at[std::size_t(m)] == members[std::size_t(m)].steps(), "collective steps deadlocked in process");
  for (StepRunner& runner : members) runner.finish();
}

}  // namespace cnnpar::real
