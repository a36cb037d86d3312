// Where each layer's errors live: layers whose errors are needed at different times share one
// allocation (an arena planned from the rank's program), the others keep their own buffers.
//
// A layer's errors are written in an iteration by the backward-data ops of the layers that read
// its output (a softmax's forward when it has no backward op) and read by its own backward ops
// (and an error_statistics allreduce); between iterations they are dead. So within each
// iteration (the ops between two marks) they live from the first op that touches them to the
// last, provided the first is a write. Errors that take part in an `errors` collective, that a
// reader writes only a region of, or that a replicated (Lee) layer gathers keep their own
// buffers, as do errors whose first touch in an iteration is a read (a lifetime that crosses
// the iteration's end).
#include <cstddef>
#include <vector>

#include "real/arena_plan.hpp"
#include "real/runtime_impl.hpp"

namespace cnnpar::real {
namespace {

constexpr std::int64_t kArenaAlignmentFloats = 16;  // 64 bytes: one cache line, one AVX-512 vector

struct Touch {
  std::int64_t op = 0;
  bool writes = false;
};

}  // namespace

void Runtime::Impl::allocate_errors(const Schedule& schedule) {
  const int L = int(layers.size());
  const std::size_t layer_count = layers.size();
  // The storage each layer's errors use: its own, or (in place) its producer's.
  std::vector<int> owner(layer_count);
  for (int l = 0; l < L; ++l) owner[std::size_t(l)] = error_owner(l);
  std::vector<char> shared(layer_count, 1);
  for (int l = 0; l < L; ++l) {
    const LayerState& x = layers[std::size_t(l)];
    if (x.none() || x.replicated) shared[std::size_t(owner[std::size_t(l)])] = 0;
    // A reader that writes a region of these errors, or whose errors arrive by a collective.
    const bool whole_local = x.layer->inputs.size() > 1 || x.errors == Errors::previous || x.errors == Errors::summed;
    if (x.producer >= 0 && !whole_local) shared[std::size_t(owner[std::size_t(x.producer)])] = 0;
  }
  for (const Collective& c : schedule.collectives)
    if (c.payload == Payload::errors)
      for (const int l : c.layers) shared[std::size_t(owner[std::size_t(l)])] = 0;

  // The ops of the rank's program that touch each storage's errors, iteration by iteration.
  std::vector<std::vector<Touch>> touches(layer_count);
  const auto touch = [&](int l, std::int64_t op, bool writes) {
    if (l >= 0) touches[std::size_t(owner[std::size_t(l)])].push_back({op, writes});
  };
  const OpList& ops = schedule.programs[std::size_t(rank)].ops;
  std::vector<std::int64_t> marks;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const std::int64_t at = std::int64_t(i);
    if (op.kind == OpKind::mark) marks.push_back(at);
    if (op.kind == OpKind::post || op.kind == OpKind::wait) {
      const Collective& c = schedule.collectives.at(std::size_t(op.collective));
      if (c.payload == Payload::error_statistics)
        for (const int l : c.layers) touch(l, at, false);
    }
    if (op.kind != OpKind::compute || op.layer < 0 || op.phase == Phase::update) continue;
    const LayerState& x = layers[std::size_t(op.layer)];
    const bool backward = op.phase == Phase::backward_data || op.phase == Phase::backward_weight;
    if (backward) touch(op.layer, at, false);  // reads its own errors
    const bool writes_inputs = op.phase == Phase::backward_data ||
                               (op.phase == Phase::forward && x.layer->spec.kind == LayerKind::softmax);
    if (writes_inputs)
      for (const int read : x.layer->inputs)
        if (read >= 0 && owner[std::size_t(read)] != owner[std::size_t(op.layer)]) touch(read, at, true);
  }

  // One span per iteration, from the first touch (a write) to the last.
  std::vector<int> storages;
  std::vector<BufferLife> lives;
  for (int l = 0; l < L; ++l) {
    if (owner[std::size_t(l)] != l || !shared[std::size_t(l)] || touches[std::size_t(l)].empty()) continue;
    BufferLife life{.floats = layers[std::size_t(l)].out_region.elements(), .spans = {}};
    std::size_t mark = 0;
    bool lives_within_iterations = true;
    for (const Touch& t : touches[std::size_t(l)]) {
      std::size_t iteration = mark;
      while (iteration < marks.size() && marks[iteration] < t.op) ++iteration;
      const bool starts = life.spans.empty() || iteration != mark;
      mark = iteration;
      if (starts && !t.writes) lives_within_iterations = false;
      if (starts) life.spans.push_back({t.op, t.op});
      else life.spans.back().last = t.op;
    }
    if (!lives_within_iterations) continue;
    storages.push_back(l);
    lives.push_back(std::move(life));
  }
  const ArenaPlan plan = plan_arena(lives, kArenaAlignmentFloats);
  error_arena_floats = plan.floats;
  error_placements.clear();
  for (std::size_t s = 0; s < storages.size(); ++s) error_placements.push_back({storages[s], plan.offsets[s]});
  place_errors(true);
}

void Runtime::Impl::place_errors(bool share) {
  const int L = int(layers.size());
  std::vector<float>().swap(error_arena);
  if (share) error_arena.assign(std::size_t(error_arena_floats), 0.0f);
  std::vector<char> placed(layers.size(), 0);
  if (share)
    for (const ErrorPlacement& p : error_placements) {
      LayerState& x = layers[std::size_t(p.layer)];
      x.err.place(error_arena.data() + p.offset, std::size_t(x.out_region.elements()));
      placed[std::size_t(p.layer)] = 1;
    }
  error_storage_floats = std::int64_t(error_arena.size());
  for (int l = 0; l < L; ++l) {
    LayerState& x = layers[std::size_t(l)];
    const int owner = error_owner(l);
    if (owner != l) {
      x.err.share(layers[std::size_t(owner)].err);
    } else if (!placed[std::size_t(l)]) {
      x.err.allocate(x.none() ? 0 : std::size_t(x.out_region.elements()));
      error_storage_floats += std::int64_t(x.err.size());
    }
  }
}

int Runtime::Impl::error_owner(int l) const {
  const LayerState& x = layers[std::size_t(l)];
  return !x.none() && in_place(l) ? error_owner(x.producer) : l;
}

}  // namespace cnnpar::real
