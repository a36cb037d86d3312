#pragma once
// The compute back-ends the interpreter drives (real kernels, progress lines, the dying-rank
// test hook) and the set-up of the GEMM back-end and compute threads.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "apps/cnnpar-run/options.hpp"
#include "model/network.hpp"
#include "model/schedule.hpp"
#include "real/dataset.hpp"
#include "real/interpreter.hpp"
#include "real/runtime.hpp"

namespace cnnpar::executor {

using namespace cnnpar::real;

/** Drives the numerical Runtime; records the loss sum of every iteration's forward. */
class RealBackend final : public ComputeBackend {
 public:
  /** `between_iterations(i)` runs before iteration i > 0 begins, when iteration i - 1 is
   *  complete on this rank (checkpoints). */
  RealBackend(Runtime& runtime, const Dataset& data, const Network& network, int iterations,
              std::function<void(int)> between_iterations = {})
      : runtime_(runtime), data_(data), network_(network), loss_sums_(std::size_t(iterations), 0.0),
        correct_(std::size_t(iterations), 0.0), loss_images_(std::size_t(iterations), 0.0), between_iterations_(std::move(between_iterations)) {}
  std::string mode() const override { return "real"; }
  void begin_iteration(int iteration) override {
    if (iteration > 0 && between_iterations_) between_iterations_(iteration);
    runtime_.load_batch(iteration, data_);
  }
  void run_compute(const Op& op, int iteration, const std::function<void()>& poll) override {
    runtime_.run_compute(op, iteration, poll);
    if (op.layer >= 0 && op.phase == Phase::forward && iteration < int(loss_sums_.size()) &&
        network_.layers[std::size_t(op.layer)].spec.kind == LayerKind::softmax) {
      loss_sums_[std::size_t(iteration)] = runtime_.last_loss_sum();
      correct_[std::size_t(iteration)] = double(runtime_.last_correct());
      loss_images_[std::size_t(iteration)] = runtime_.last_loss_images();
    }
  }
  CommBuffers prepare(const Collective& c) override {
    const CollectiveBuffers b = runtime_.prepare(c);
    return CommBuffers{b.send, b.recv, b.send_count, b.recv_count};
  }
  void complete(const Collective& c) override { runtime_.complete(c); }
  void merge(const Op&, const Collective& push, const std::vector<std::span<const float>>& increments,
             const std::vector<double>& factors) override {
    runtime_.merge_increments(push, increments, factors);
  }
  void finish() override { runtime_.finish_schedule(); }
  const std::vector<double>& loss_sums() const { return loss_sums_; }
  const std::vector<double>& correct() const { return correct_; }
  const std::vector<double>& loss_images() const { return loss_images_; }

 private:
  Runtime& runtime_;
  const Dataset& data_;
  const Network& network_;
  std::vector<double> loss_sums_;  // per iteration, this rank's images (nats)
  std::vector<double> correct_;    // per iteration, this rank's arg-max hits
  std::vector<double> loss_images_;  // per iteration, the images of loss_sums_
  std::function<void(int)> between_iterations_;
};

/** Rank 0's progress on stderr: one line per finished iteration with its time on this rank,
 *  so a long run is not silent (the metrics over all ranks come at the end). */
class ProgressBackend final : public ComputeBackend {
 public:
  ProgressBackend(ComputeBackend& inner, int iterations, int warmup)
      : inner_(inner), iterations_(iterations), warmup_(warmup) {}
  std::string mode() const override { return inner_.mode(); }
  void begin_iteration(int iteration) override {
    if (iteration > 0) report(iteration - 1);
    started_ = std::chrono::steady_clock::now();
    inner_.begin_iteration(iteration);
  }
  void run_compute(const Op& op, int iteration, const std::function<void()>& poll) override {
    inner_.run_compute(op, iteration, poll);
  }
  CommBuffers prepare(const Collective& c) override { return inner_.prepare(c); }
  void complete(const Collective& c) override { inner_.complete(c); }
  void merge(const Op& merge_op, const Collective& push, const std::vector<std::span<const float>>& increments,
             const std::vector<double>& factors) override {
    inner_.merge(merge_op, push, increments, factors);
  }
  void finish() override {
    inner_.finish();
    report(iterations_ - 1);
  }

 private:
  void report(int iteration) const {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    fmt::print(stderr, "cnnpar-run: iteration {}/{}{} {:.4f} s (rank 0)\n", iteration + 1, iterations_,
               iteration < warmup_ ? " (warm-up)" : "", seconds);
  }
  ComputeBackend& inner_;
  int iterations_, warmup_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

/** A backend that kills its process mid-run (test hook for a dying rank). */
class ExitingBackend final : public ComputeBackend {
 public:
  ExitingBackend(ComputeBackend& inner, int ops_before_exit) : inner_(inner), left_(ops_before_exit) {}
  std::string mode() const override { return inner_.mode(); }
  void begin_iteration(int i) override { inner_.begin_iteration(i); }
  void run_compute(const Op& op, int iteration, const std::function<void()>& poll) override {
    if (--left_ <= 0) std::raise(SIGKILL);  // dies like a crashed node: no message, no cleanup
    inner_.run_compute(op, iteration, poll);
  }
  CommBuffers prepare(const Collective& c) override { return inner_.prepare(c); }
  void complete(const Collective& c) override { inner_.complete(c); }
  void merge(const Op& merge_op, const Collective& push, const std::vector<std::span<const float>>& increments,
             const std::vector<double>& factors) override {
    inner_.merge(merge_op, push, increments, factors);
  }
  void finish() override { inner_.finish(); }

 private:
  ComputeBackend& inner_;
  int left_;
};

/** --threads (else OPENBLAS_NUM_THREADS, else 1) and --gemm, for every kernel of this process.
 *  @throws InputError for a back-end this build lacks or a bad OPENBLAS_NUM_THREADS. */
void configure_compute(const Options& o);

}  // namespace cnnpar::executor
