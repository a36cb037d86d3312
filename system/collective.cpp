#include "system/collective.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"

namespace cnnpar {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

int wrap(int index, int p) { return ((index % p) + p) % p; }

}  // namespace

CollectiveCounts collective_counts(const Collective& c, int world_rank) {
  const std::int64_t n = std::int64_t(std::ceil(c.bytes / 4.0));
  const std::int64_t p = std::int64_t(c.group.size());
  const bool root = world_rank == c.root;
  switch (c.kind) {
    case CollectiveKind::allreduce:
    case CollectiveKind::bcast:
      return {n, n};
    case CollectiveKind::reduce:
      return {n, root ? n : 0};
    case CollectiveKind::allgather:
      return {n, n * p};
    case CollectiveKind::gather:
      return {n, root ? n * p : 0};
    case CollectiveKind::reduce_scatter: {
      const std::int64_t block = ceil_div(n, p);
      return {block * p, block};
    }
    case CollectiveKind::scatter:
      return {root ? n * p : 0, n};
    case CollectiveKind::alltoall: {
      const std::int64_t block = ceil_div(n, p);
      return {block * p, block * p};
    }
    case CollectiveKind::send:
      return {root ? n : 0, root ? 0 : n};
  }
  CNNPAR_ASSERT(false, "unknown collective kind");
  return {};
}

int critical_member(const Collective& c) {
  switch (c.kind) {
    case CollectiveKind::bcast:
    case CollectiveKind::reduce:
    case CollectiveKind::gather:
    case CollectiveKind::scatter:
    case CollectiveKind::send: {
      const auto it = std::lower_bound(c.group.begin(), c.group.end(), c.root);
      CNNPAR_ASSERT(it != c.group.end() && *it == c.root, "root not in the group: " + c.label);
      return int(it - c.group.begin());
    }
    default:
      return 0;
  }
}

Range span_elements(const BlockSpan& span, std::int64_t elements, int blocks) {
  if (span.count <= 0) return {0, 0};
  const Range first = even_slice(elements, blocks, span.first);
  const Range last = even_slice(elements, blocks, span.first + span.count - 1);
  return {first.begin, last.end() - first.begin};
}

CollectivePlan plan_collective(const Collective& c, Algorithm algorithm, int i) {
  const int p = int(c.group.size());
  CNNPAR_ASSERT(i >= 0 && i < p, fmt::format("member {} outside the group of {} ({})", i, p, c.label));
  CollectivePlan plan;
  plan.algorithm = algorithm;
  const double n = c.bytes;
  const auto add = [&](CollectiveStep step) {
    plan.bytes_sent += step.send_to >= 0 ? step.send_bytes : 0.0;
    plan.bytes_received += step.receive_from >= 0 ? step.receive_bytes : 0.0;
    plan.steps.push_back(step);
  };
  // A ring round: send `send_block` to the next member, receive `receive_block` from the previous.
  const auto ring_round = [&](int send_block, int receive_block, bool reduce, double bytes) {
    CollectiveStep s;
    s.send_to = wrap(i + 1, p);
    s.receive_from = wrap(i - 1, p);
    s.send_span = {wrap(send_block, p), 1};
    s.receive_span = {wrap(receive_block, p), 1};
    s.reduce = reduce;
    s.send_bytes = s.receive_bytes = bytes;
    add(s);
  };
  if (p <= 1) return plan;
  plan.steps.reserve(2 * std::size_t(p));  // a ring allreduce's 2(p - 1) rounds, the most of any algorithm

  // An exchange with `partner`: send `give`, receive `take` (summed in when `reduce`).
  const auto exchange = [&](int partner, BlockSpan give, BlockSpan take, bool reduce, double block_bytes) {
    CollectiveStep s;
    s.send_to = s.receive_from = partner;
    s.send_span = give;
    s.receive_span = take;
    s.reduce = reduce;
    s.send_bytes = block_bytes * give.count;
    s.receive_bytes = block_bytes * take.count;
    add(s);
  };
  // Recursive halving over P blocks, partners i ^ mask for the masks in `masks` order (MPICH's
  // order: allreduce from 1 up, reduce_scatter from P/2 down): each round the pair splits the
  // blocks both still hold, the lower member keeps the lower half. Returns the spans held
  // before each round (the allgather that follows retraces them).
  const auto recursive_halving = [&](const std::vector<int>& masks, double block_bytes) {
    std::vector<BlockSpan> held;
    BlockSpan mine{0, p};
    for (int mask : masks) {
      const int partner = i ^ mask;
      const int half = mine.count / 2;
      const BlockSpan lower{mine.first, half}, upper{mine.first + half, half};
      held.push_back(mine);
      mine = i < partner ? lower : upper;
      exchange(partner, i < partner ? upper : lower, mine, true, block_bytes);
    }
    held.push_back(mine);
    return held;
  };
  // 1, 2, 4, ... < P, built only by the algorithms that pair members by XOR (plans are hot).
  const auto masks_up = [p] {
    std::vector<int> masks;
    for (int mask = 1; mask < p; mask <<= 1) masks.push_back(mask);
    return masks;
  };
  const bool power_of_two = (p & (p - 1)) == 0;

  switch (c.kind) {
    case CollectiveKind::allreduce:
      if (algorithm == Algorithm::reduce_scatter_allgather) {
        CNNPAR_ASSERT(power_of_two, "reduce_scatter_allgather needs a power-of-two group: " + c.label);
        plan.blocks = p;
        const std::vector<int> masks = masks_up();
        const std::vector<BlockSpan> held = recursive_halving(masks, n / p);
        // The allgather retraces the halving: each round the pair swaps the halves of the span
        // they held before it.
        for (std::size_t k = masks.size(); k-- > 0;) {
          const BlockSpan mine = held[k + 1], parent = held[k];
          const BlockSpan theirs{mine.first == parent.first ? parent.first + mine.count : parent.first, mine.count};
          exchange(i ^ masks[k], mine, theirs, false, n / p);
        }
        return plan;
      }
      if (algorithm == Algorithm::recursive_doubling) {
        CNNPAR_ASSERT(power_of_two, "recursive doubling needs a power-of-two group: " + c.label);
        for (int mask = 1; mask < p; mask <<= 1) {
          CollectiveStep s;
          s.send_to = s.receive_from = i ^ mask;
          s.send_span = s.receive_span = {0, 1};
          s.reduce = true;
          s.send_bytes = s.receive_bytes = n;
          add(s);
        }
        return plan;
      }
      CNNPAR_ASSERT(algorithm == Algorithm::ring, "allreduce runs as a ring or by recursive doubling: " + c.label);
      // Reduce-scatter: member i ends with block i + 1 summed; then the allgather passes the
      // summed blocks on.
      plan.blocks = p;
      for (int s = 0; s < p - 1; ++s) ring_round(i - s, i - s - 1, true, n / p);
      for (int s = 0; s < p - 1; ++s) ring_round(i - s + 1, i - s, false, n / p);
      return plan;
    case CollectiveKind::reduce_scatter:
      plan.blocks = p;
      if (algorithm == Algorithm::recursive_halving) {
        CNNPAR_ASSERT(power_of_two, "recursive_halving needs a power-of-two group: " + c.label);
        // Masks from P/2 down: member i ends with block i.
        std::vector<int> masks = masks_up();
        std::reverse(masks.begin(), masks.end());
        (void)recursive_halving(masks, n / p);
        return plan;
      }
      if (algorithm == Algorithm::pairwise) {
        // Round k: block i + k to member i + k, member i - k's part of block i summed in.
        for (int k = 1; k < p; ++k) {
          CollectiveStep s;
          s.send_to = wrap(i + k, p);
          s.receive_from = wrap(i - k, p);
          s.send_span = {s.send_to, 1};
          s.receive_span = {i, 1};
          s.reduce = true;
          s.send_bytes = s.receive_bytes = n / p;
          add(s);
        }
        return plan;
      }
      CNNPAR_ASSERT(algorithm == Algorithm::ring,
                    "reduce_scatter runs as a ring, by recursive halving or pairwise: " + c.label);
      // Shifted by one against allreduce's first half, so member i ends with block i.
      for (int s = 0; s < p - 1; ++s) ring_round(i - s - 1, i - s - 2, true, n / p);
      return plan;
    case CollectiveKind::allgather:
      plan.blocks = p;
      if (algorithm == Algorithm::recursive_doubling) {
        CNNPAR_ASSERT(power_of_two, "recursive doubling needs a power-of-two group: " + c.label);
        // Round k: the 2^k blocks of member i's aligned run for those of its partner's.
        for (int mask : masks_up()) {
          const int partner = i ^ mask;
          exchange(partner, {i & ~(mask - 1), mask}, {partner & ~(mask - 1), mask}, false, n);
        }
        return plan;
      }
      CNNPAR_ASSERT(algorithm == Algorithm::ring, "allgather runs as a ring or by recursive doubling: " + c.label);
      for (int s = 0; s < p - 1; ++s) ring_round(i - s, i - s - 1, false, n);
      return plan;
    case CollectiveKind::bcast:
    case CollectiveKind::scatter:
    case CollectiveKind::reduce:
    case CollectiveKind::gather: {
      CNNPAR_ASSERT(algorithm == Algorithm::binomial, "rooted collectives run as binomial trees: " + c.label);
      const int root = critical_member(c);
      const int rel = wrap(i - root, p);
      const auto member = [&](int relative) { return wrap(relative + root, p); };
      const bool blocked = c.kind == CollectiveKind::scatter || c.kind == CollectiveKind::gather;
      plan.blocks = blocked ? p : 1;
      // Blocks [r, r + width) of the root-relative order, clipped to the group.
      const auto subtree = [&](int r, int width) { return BlockSpan{r, std::min(width, p - r)}; };
      // One tree edge: a send to, or a receive (summed for reduce) from, relative rank `peer`,
      // moving the subtree of relative rank `first` (or the whole vector).
      const auto edge = [&](bool sending, int peer, int first, int width) {
        CollectiveStep s;
        const BlockSpan span = blocked ? subtree(first, width) : BlockSpan{0, 1};
        const double bytes = blocked ? double(span.count) * n : n;
        if (sending) {
          s.send_to = member(peer);
          s.send_span = span;
          s.send_bytes = bytes;
        } else {
          s.receive_from = member(peer);
          s.receive_span = span;
          s.receive_bytes = bytes;
          s.reduce = c.kind == CollectiveKind::reduce;
        }
        add(s);
      };
      if (c.kind == CollectiveKind::bcast || c.kind == CollectiveKind::scatter) {
        int mask = 1;
        while (mask < p) {
          if (rel & mask) {
            edge(false, rel - mask, rel, mask);
            break;
          }
          mask <<= 1;
        }
        for (mask >>= 1; mask > 0; mask >>= 1)
          if (rel + mask < p) edge(true, rel + mask, rel + mask, mask);
        return plan;
      }
      for (int mask = 1; mask < p; mask <<= 1) {
        if (rel & mask) {
          edge(true, rel - mask, rel, mask);
          break;
        }
        if (rel + mask < p) edge(false, rel + mask, rel + mask, mask);
      }
      return plan;
    }
    case CollectiveKind::alltoall:
      CNNPAR_ASSERT(algorithm == Algorithm::direct, "alltoall runs as a direct exchange: " + c.label);
      plan.blocks = p;
      for (int k = 1; k < p; ++k) {
        CollectiveStep s;
        s.send_to = wrap(i + k, p);
        s.receive_from = wrap(i - k, p);
        s.send_span = {s.send_to, 1};
        s.receive_span = {s.receive_from, 1};
        s.send_buffer = StepBuffer::send;
        s.receive_buffer = StepBuffer::recv;
        s.send_bytes = s.receive_bytes = n / p;
        add(s);
      }
      return plan;
    case CollectiveKind::send: {
      CNNPAR_ASSERT(algorithm == Algorithm::direct && p == 2, "a send is direct between two ranks: " + c.label);
      const int source = critical_member(c);
      CollectiveStep s;
      if (i == source) {
        s.send_to = 1 - i;
        s.send_span = {0, 1};
        s.send_buffer = StepBuffer::send;
        s.send_bytes = n;
      } else {
        s.receive_from = source;
        s.receive_span = {0, 1};
        s.receive_buffer = StepBuffer::recv;
        s.receive_bytes = n;
      }
      add(s);
      return plan;
    }
  }
  CNNPAR_ASSERT(false, "unknown collective kind");
  return plan;
}

StepPricing step_pricing(const Collective& collective, const NetworkSpec& network) {
  return network.kind_step_pricing(to_string(collective.kind), collective.bytes);
}

double step_message_bytes(const CollectiveStep& step) {
  const double sent = step.send_to >= 0 ? step.send_bytes : 0.0;
  const double received = step.receive_from >= 0 ? step.receive_bytes : 0.0;
  return std::max(sent, received);
}

double step_time_s(const CollectiveStep& step, const NetworkSpec& network, StepPricing pricing) {
  return step_time_s(step, network, pricing, 0.0);
}

double step_time_s(const CollectiveStep& step, const NetworkSpec& network, StepPricing pricing, double passed_bytes) {
  const double wire_bytes = pricing.size_factor * step_message_bytes(step);
  double seconds = pricing.step_overhead_s + network.message_time_s(std::max(0.0, wire_bytes - passed_bytes)) +
                   network.burst_time_s(passed_bytes);
  if (step.reduce && network.reduction_rate_Bps > 0 && step.receive_from >= 0)
    seconds += step.receive_bytes / network.reduction_rate_Bps;
  return seconds;
}

double steps_time_s(const CollectivePlan& plan, const NetworkSpec& network, StepPricing pricing) {
  return steps_time_s(plan, network, pricing, 0.0);
}

double steps_time_s(const CollectivePlan& plan, const NetworkSpec& network, StepPricing pricing, double burst_bytes) {
  double total_s = 0, burst_left_bytes = std::max(0.0, burst_bytes);
  // A ring's rounds repeat one step: price it once (what step_time_s reads equal, the same
  // seconds), and add it round by round as before.
  const CollectiveStep* previous = nullptr;
  double previous_message_bytes = 0, previous_passed_bytes = 0, previous_s = 0;
  for (const CollectiveStep& step : plan.steps) {
    const double message_bytes = step_message_bytes(step);
    const double passed_bytes = std::min(burst_left_bytes, pricing.size_factor * message_bytes);
    burst_left_bytes -= passed_bytes;
    const bool same = previous && passed_bytes == previous_passed_bytes && message_bytes == previous_message_bytes &&
                      step.reduce == previous->reduce &&
                      (step.receive_from >= 0) == (previous->receive_from >= 0) &&
                      step.receive_bytes == previous->receive_bytes;
    if (!same) previous_s = step_time_s(step, network, pricing, passed_bytes);
    previous = &step;
    previous_message_bytes = message_bytes;
    previous_passed_bytes = passed_bytes;
    total_s += previous_s;
  }
  return total_s;
}

double steps_time_s(const CollectivePlan& plan, double alpha_s, double beta_Bps) {
  NetworkSpec network;
  network.latency_s = alpha_s;
  network.overhead_s = 0;
  network.bandwidth_Bps = beta_Bps;
  return steps_time_s(plan, network);
}

}  // namespace cnnpar
