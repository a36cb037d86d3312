// Checkpoints: round trip, corruption and wrong-network detection, bit-identical resume.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/hash.hpp"
#include "real/checkpoint.hpp"
#include "real/dataset.hpp"
#include "real/local_executor.hpp"
#include "tests/real/real_test_util.hpp"

using namespace cnnpar;
using namespace cnnpar::real;
using cnnpar::real::testing::make_schedule;
using cnnpar::real::testing::small_network;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("cnnpar_test_ckpt_" + name)).string();
}

const SgdConfig kSgd{0.05f, 0.9f, 5e-4f};

CheckpointRun sample_run() {
  CheckpointRun run;
  run.seed = 3;
  run.global_batch = 8;
  run.ranks = 2;
  run.gemm_tile_columns = 4096;
  run.learning_rate = kSgd.learning_rate;
  run.momentum = kSgd.momentum;
  run.weight_decay = kSgd.weight_decay;
  run.strategy = "dp";
  run.options = "{}";
  run.dataset = "synthetic";
  run.collectives = "mpi";
  return run;
}

// Rewrites the checksum after editing a checkpoint's bytes, as a crafted file would.
void reseal(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const std::uint64_t sum = fnv1a64(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace

TEST_CASE("checkpoint: FNV-1a matches its published test vectors") {
  // FNV-1a 64 of "" is the offset basis 0xcbf29ce484222325 and of "a" is 0xaf63dc4c8601ec8c
  // (Fowler/Noll/Vo reference test suite).
  CHECK(fnv1a64("", 0) == 0xcbf29ce484222325ull);
  CHECK(fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
}

TEST_CASE("checkpoint: 10 + resumed 10 iterations equal 20 straight, bit for bit") {
  const Network net = small_network();
  SyntheticDataset data(net.input, net.classes(), 100, 21);
  for (const std::string strategy : {"dp", "lee"}) {
    const Schedule s20 = make_schedule(net, strategy, 2, 8, 20, 3, 1);
    const Schedule s10 = make_schedule(net, strategy, 2, 8, 10, 3, 1);
    LocalExecutor straight(net, s20, 3, kSgd);
    straight.run(data);

    const std::string path = temp_path(strategy + ".ckpt");
    {
      LocalExecutor first(net, s10, 3, kSgd);
      first.run(data);
      write_checkpoint(path, net, sample_run(), first.runtime(0).state());
      // Nothing but the checkpoint is left behind (the temporary file was renamed).
      int leftovers = 0;
      for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
        leftovers += e.path().filename().string().rfind("." + std::filesystem::path(path).filename().string(), 0) == 0;
      CHECK(leftovers == 0);
    }
    const Checkpoint read = read_checkpoint(path, net);
    const RuntimeState& st = read.state;
    CHECK(read.run.options == "{}");
    CHECK(read.run.learning_rate == kSgd.learning_rate);
    CHECK(st.iteration == 10);
    // The Runtime's seed also keys the dropout masks, so resume with the original seed.
    LocalExecutor resumed(net, s10, 3, kSgd);
    for (int r = 0; r < resumed.ranks(); ++r) resumed.runtime(r).restore(st);
    resumed.run(data);
    CHECK(resumed.runtime(0).iteration() == 20);
    CHECK(resumed.runtime(0).flat_weights() == straight.runtime(0).flat_weights());
    CHECK(resumed.runtime(1).flat_weights() == straight.runtime(1).flat_weights());
    CHECK(resumed.runtime(0).state().momentum == straight.runtime(0).state().momentum);
    std::filesystem::remove(path);
  }
}

TEST_CASE("checkpoint: corruption, truncation and another network are input errors") {
  const Network net = small_network();
  const Schedule s = make_schedule(net, "dp", 1, 4, 1);
  LocalExecutor ex(net, s, 3, kSgd);
  const std::string path = temp_path("bad.ckpt");
  write_checkpoint(path, net, sample_run(), ex.runtime(0).state());
  const auto size = std::filesystem::file_size(path);

  {  // flip one byte in the weights
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    char c;
    f.read(&c, 1);
    f.seekp(40);
    c = char(c ^ 0x10);
    f.write(&c, 1);
  }
  try {
    read_checkpoint(path, net);
    FAIL("corrupt checkpoint accepted");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/checksum");
    CHECK(e.file() == path);
  }

  write_checkpoint(path, net, sample_run(), ex.runtime(0).state());
  std::filesystem::resize_file(path, size / 2);
  CHECK_THROWS_AS(read_checkpoint(path, net), InputError);

  write_checkpoint(path, net, sample_run(), ex.runtime(0).state());
  Network other = net;
  other.name = "another-net";
  try {
    read_checkpoint(path, other);
    FAIL("checkpoint of another network accepted");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/fingerprint");
    CHECK(std::string(e.what()).find("checkpoint from another network") != std::string::npos);
  }

  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << "not a checkpoint at all";
  }
  try {
    read_checkpoint(path, net);
    FAIL("garbage accepted");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/magic");
  }
  CHECK_THROWS_AS(read_checkpoint(temp_path("missing.ckpt"), net), InputError);
  std::filesystem::remove(path);

  // A directory where the file should be: an input error naming the reason, no stream message.
  const std::string folder = temp_path("folder.ckpt");
  std::filesystem::create_directories(folder);
  try {
    read_checkpoint(folder, net);
    FAIL("directory accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("it is a directory") != std::string::npos);
  }
  std::filesystem::remove(folder);

  // A version 1 checkpoint does not say which run wrote it: refused, not guessed.
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << "CNNPCKP1" << std::string(64, '\0');
  }
  try {
    read_checkpoint(path, net);
    FAIL("version 1 checkpoint accepted");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/magic");
    CHECK(std::string(e.what()).find("version 1") != std::string::npos);
  }

  // A crafted weight count (2^62 floats) with a valid checksum: refused before allocating.
  write_checkpoint(path, net, sample_run(), ex.runtime(0).state());
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    // count follows the fixed header (8 + 8·6 + 3·4 bytes) and the four strings.
    const CheckpointRun run = sample_run();
    const std::streamoff at = 8 + 8 * 6 + 3 * 4 +
                              std::streamoff(4 * 4 + run.strategy.size() + run.options.size() + run.dataset.size() +
                                             run.collectives.size());
    const std::int64_t huge = std::int64_t(1) << 62;
    f.seekp(at);
    f.write(reinterpret_cast<const char*>(&huge), 8);
  }
  reseal(path);
  try {
    read_checkpoint(path, net);
    FAIL("crafted count accepted");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/weights");
  }
  std::filesystem::remove(path);

  RuntimeState wrong = ex.runtime(0).state();
  wrong.weights.pop_back();
  wrong.momentum.pop_back();
  CHECK_THROWS_AS(ex.runtime(0).restore(wrong), InputError);
}

TEST_CASE("checkpoint: a resume with other settings is refused naming the field and both values") {
  const CheckpointRun saved = sample_run();
  CHECK_NOTHROW(check_resume("c.bin", saved, saved));
  const auto refused = [&](CheckpointRun now, const char* field, const char* both) {
    try {
      check_resume("c.bin", saved, now);
      FAIL("accepted a different " << field);
    } catch (const InputError& e) {
      CHECK(e.file() == "c.bin");
      CHECK(e.json_path() == field);
      CHECK(std::string(e.what()).find(both) != std::string::npos);
    }
  };
  CheckpointRun now = saved;
  now.global_batch = 16;
  refused(now, "/global_batch", "global batch 8, this run has 16");
  now = saved;
  now.ranks = 4;
  refused(now, "/ranks", "ranks 2, this run has 4");
  now = saved;
  now.seed = 4;
  refused(now, "/seed", "seed 3, this run has 4");
  now = saved;
  now.strategy = "lee";
  refused(now, "/strategy", "strategy dp, this run has lee");
  now = saved;
  now.options = R"({"bucket_bytes":1})";
  refused(now, "/options", R"(strategy options {}, this run has {"bucket_bytes":1})");
  now = saved;
  now.learning_rate = 0.1f;
  refused(now, "/lr", "learning rate 0.05, this run has 0.1");
}
