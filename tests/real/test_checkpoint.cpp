// Checkpoints: round trip, corruption and wrong-network detection, bit-identical resume.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/error.hpp"
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
      write_checkpoint(path, net, first.runtime(0).state());
      // Nothing but the checkpoint is left behind (the temporary file was renamed).
      int leftovers = 0;
      for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
        leftovers += e.path().filename().string().rfind(std::filesystem::path(path).filename().string() + ".tmp", 0) == 0;
      CHECK(leftovers == 0);
    }
    const RuntimeState st = read_checkpoint(path, net);
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
  write_checkpoint(path, net, ex.runtime(0).state());
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

  write_checkpoint(path, net, ex.runtime(0).state());
  std::filesystem::resize_file(path, size / 2);
  CHECK_THROWS_AS(read_checkpoint(path, net), InputError);

  write_checkpoint(path, net, ex.runtime(0).state());
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

  RuntimeState wrong = ex.runtime(0).state();
  wrong.weights.pop_back();
  wrong.momentum.pop_back();
  CHECK_THROWS_AS(ex.runtime(0).restore(wrong), InputError);
}
