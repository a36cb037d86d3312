// Pure parts of the executor (no MPI_Init needed): clock-offset estimate, link fit,
// per-kind buffer counts, progress-mode names.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>

#include "model/cost.hpp"
#include "model/schedule.hpp"
#include "real/calibrate.hpp"
#include "real/clock_sync.hpp"
#include "real/interpreter.hpp"
#include "real/mpi_wrap.hpp"
#include "system/collective.hpp"

using namespace cnnpar;
using namespace cnnpar::real;

TEST_CASE("clock offset comes from the ping-pong with the smallest round trip") {
  // Rank 0's clock reads local + 0.25 s. A symmetric 10 us round trip gives the exact
  // offset; slower samples with asymmetric delays (30 us out, 5 us back) would give
  // 0.25 + (30 - 5)/2 us and must be ignored.
  const double offset = 0.25;
  std::vector<PingSample> samples;
  for (int i = 0; i < 3; ++i) {
    const double send = 1.0 + i;
    samples.push_back({send, send + 30e-6 + offset, send + 35e-6});
  }
  samples.push_back({10.0, 10.0 + 5e-6 + offset, 10.0 + 10e-6});
  CHECK(estimate_offset_s(samples) == Approx(offset).margin(1e-12));
  CHECK(samples.back().round_trip_s() == Approx(10e-6).margin(1e-15));
}

TEST_CASE("link fit recovers latency and bandwidth of t = a + n/b") {
  // a = 2 us, b = 5 GB/s: t(8 B) = 2.0016 us, t(64 MiB) = 13.42 ms.
  std::vector<std::pair<double, double>> samples;
  for (double n = 8; n <= 64.0 * 1024 * 1024; n *= 4) samples.emplace_back(n, 2e-6 + n / 5e9);
  const LinkFit fit = fit_link(samples);
  CHECK(fit.latency_s == Approx(2e-6).epsilon(1e-6));
  CHECK(fit.bandwidth_Bps == Approx(5e9).epsilon(1e-6));
  CHECK_THROWS_AS(fit_link({{8, 1e-6}}), std::invalid_argument);
}

TEST_CASE("link fit clamps a negative latency to zero") {
  // Pure bandwidth 1 GB/s with a small negative offset in the data: latency 0, slope kept.
  std::vector<std::pair<double, double>> samples = {{1e6, 1e-3 - 1e-7}, {4e6, 4e-3 - 1e-7}};
  const LinkFit fit = fit_link(samples);
  CHECK(fit.latency_s == 0.0);
  CHECK(fit.bandwidth_Bps == Approx(1e9).epsilon(1e-3));
}

TEST_CASE("buffer counts follow the schedule's size conventions") {
  Collective c;
  c.bytes = 100;  // 25 floats
  c.group = {0, 1, 2, 3};
  c.root = 2;
  c.kind = CollectiveKind::allreduce;
  CHECK(collective_counts(c, 0).send == 25);
  CHECK(collective_counts(c, 0).recv == 25);
  c.kind = CollectiveKind::allgather;  // per-rank contribution; result 4 x 25
  CHECK(collective_counts(c, 1).send == 25);
  CHECK(collective_counts(c, 1).recv == 100);
  c.kind = CollectiveKind::reduce_scatter;  // whole vector, rounded up to 4 blocks of 7
  CHECK(collective_counts(c, 1).send == 28);
  CHECK(collective_counts(c, 1).recv == 7);
  c.kind = CollectiveKind::gather;  // only the root receives
  CHECK(collective_counts(c, 2).recv == 100);
  CHECK(collective_counts(c, 0).recv == 0);
  c.kind = CollectiveKind::scatter;  // the root sends 4 shares of 25
  CHECK(collective_counts(c, 2).send == 100);
  CHECK(collective_counts(c, 3).send == 0);
  CHECK(collective_counts(c, 3).recv == 25);
  c.kind = CollectiveKind::reduce;
  CHECK(collective_counts(c, 2).recv == 25);
  CHECK(collective_counts(c, 1).recv == 0);
  c.kind = CollectiveKind::alltoall;  // 25 floats total, 4 blocks of 7 (rounded up)
  CHECK(collective_counts(c, 0).send == 28);
  CHECK(collective_counts(c, 0).recv == 28);
  c.kind = CollectiveKind::send;
  c.group = {1, 3};
  c.root = 1;
  CHECK(collective_counts(c, 1).send == 25);
  CHECK(collective_counts(c, 1).recv == 0);
  CHECK(collective_counts(c, 3).recv == 25);
}

TEST_CASE("progress mode names round-trip") {
  CHECK(progress_mode_from_string("poll") == ProgressMode::poll);
  CHECK(progress_mode_from_string("thread") == ProgressMode::thread);
  CHECK(std::string(to_string(ProgressMode::thread)) == "thread");
  CHECK_THROWS_AS(progress_mode_from_string("spin"), std::invalid_argument);
}

TEST_CASE("MPI_Finalize is skipped only on MPICH 4.0 ch4:ucx, whose finalize races") {
  // Texts as MPI_Get_library_version prints them (MPICH: "Name:\tvalue" lines).
  const std::string mpich_402_ucx = "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022\n"
                                    "MPICH ABI:\t14:2:2\nMPICH Device:\tch4:ucx\nMPICH configure:\t--with-device=ch4:ucx\n";
  CHECK(mpi::finalize_can_hang(mpich_402_ucx));
  CHECK(mpi::is_mpich_4_0(mpich_402_ucx));
  CHECK(mpi::is_mpich_4_0("MPICH Version:\t4.0.2\nMPICH Device:\tch4:ofi\n"));
  CHECK_FALSE(mpi::is_mpich_4_0("MPICH Version:\t4.1\nMPICH Device:\tch4:ucx\n"));
  CHECK_FALSE(mpi::is_mpich_4_0("Open MPI v4.1.4, package: Debian OpenMPI"));
  CHECK(mpi::finalize_can_hang("MPICH Version:\t4.0\nMPICH Device:\tch4:ucx\n"));
  CHECK(mpi::finalize_can_hang("MPICH Version:\t4.0rc1\nMPICH Device:\tch4:ucx\n"));
  // 4.1 enters the PMI barrier before closing its endpoints; ofi and ch3 have no UCX flush.
  CHECK_FALSE(mpi::finalize_can_hang("MPICH Version:\t4.1.2\nMPICH Device:\tch4:ucx\n"));
  CHECK_FALSE(mpi::finalize_can_hang("MPICH Version:\t4.0.2\nMPICH Device:\tch4:ofi\n"));
  CHECK_FALSE(mpi::finalize_can_hang("MPICH Version:\t3.4.3\nMPICH Device:\tch3:nemesis\n"));
  CHECK_FALSE(mpi::finalize_can_hang("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4"));
  CHECK_FALSE(mpi::finalize_can_hang(""));
}

TEST_CASE("sleep compute: the ops' total is their modelled total, never less, within one op's lateness") {
  // 1000 ops of 20 us (an explicit per-op time): 20 ms modelled. Each sleep ends late (15-90 us
  // here); the backend takes the lateness so far off the next sleep, so the total is
  // 20 ms + the last lateness. Without that it would be at least 1000 x 15 us = 15 ms more.
  Platform platform;
  platform.measured_op_s["tiny"] = 20e-6;
  Op op;
  op.kind = OpKind::compute;
  op.label = "tiny";
  SleepBackend backend(platform, 0, 200e-6);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) backend.run_compute(op, 0, {});
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(total_s >= 1000 * 20e-6);
  CHECK(total_s <= 1000 * 20e-6 + 10e-3);  // one lateness, with room for a loaded machine
}

TEST_CASE("sleep compute: a later collective of the same size reuses a completed one's buffer") {
  // A real run moves its gradients in place; sleep compute must not allocate, zero and unmap
  // megabytes per post instead (39 MB an iteration of vgg-a-32 made 4 ranks' posts take 38 ms).
  Platform platform;
  SleepBackend backend(platform, 0, 200e-6);
  Collective first;
  first.id = 0;
  first.bytes = 4e6;  // 1e6 floats
  first.group = {0, 1};
  first.kind = CollectiveKind::allreduce;
  Collective second = first;
  second.id = 1;
  Collective other = first;
  other.id = 2;
  other.bytes = 8e6;

  const CommBuffers a = backend.prepare(first);
  CHECK(a.send == a.recv);  // in place
  CHECK(a.send_count == 1000000);
  a.send[0] = 7.0f;  // a fresh or re-zeroed buffer would not keep it, even at the same address
  backend.complete(first);
  const CommBuffers b = backend.prepare(second);
  CHECK(b.send == a.send);  // the completed buffer again
  CHECK(b.send[0] == 7.0f);
  const CommBuffers c = backend.prepare(other);
  CHECK(c.send != b.send);  // another size, in flight beside it
  CHECK(c.send_count == 2000000);
  backend.complete(second);
  backend.complete(other);
}

TEST_CASE("sleep compute: each iteration begins with the modelled iteration overhead") {
  // iteration_overhead_s 5 ms: 4 iterations sleep at least 20 ms, and at most one lateness more.
  Platform platform;
  SleepBackend backend(platform, 0, 200e-6, 5e-3);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i) backend.begin_iteration(i);
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(total_s >= 4 * 5e-3);
  CHECK(total_s <= 4 * 5e-3 + 10e-3);  // one lateness, with room for a loaded machine
}
