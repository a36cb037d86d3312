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

// `read` must throw an InputError at JSON path `path` whose message contains `text`.
template <class Read>
void check_refused(Read&& read, const char* path, const char* text) {
  try {
    read();
    FAIL("accepted; expected a refusal at " << path);
  } catch (const InputError& e) {
    CHECK(e.json_path() == path);
    CHECK(std::string(e.what()).find(text) != std::string::npos);
  }
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

namespace {
// The whole model of a run, as cnnpar-run assembles it: the sum over ranks of what each owns.
RuntimeState assembled_state(LocalExecutor& ex) {
  RuntimeState sum = ex.runtime(0).owned_state();
  for (int r = 1; r < ex.ranks(); ++r) {
    const RuntimeState part = ex.runtime(r).owned_state();
    for (std::size_t i = 0; i < sum.weights.size(); ++i) sum.weights[i] += part.weights[i];
    for (std::size_t i = 0; i < sum.momentum.size(); ++i) sum.momentum[i] += part.momentum[i];
    for (std::size_t i = 0; i < sum.batchnorm_statistics.size(); ++i)
      sum.batchnorm_statistics[i] += part.batchnorm_statistics[i];
  }
  return sum;
}
}  // namespace

TEST_CASE("checkpoint: batchnorm running statistics survive a resume, bit for bit") {
  // Training never reads the running statistics, so only the checkpoint can carry them: a run
  // resumed at 5 of 10 iterations must end with the statistics of the uninterrupted run.
  // Under per-rank statistics the checkpoint keeps rank 0's: dp writes rank 0's state; per_layer
  // with the convs model parallel (batchnorm stays data parallel) assembles the model from
  // every rank's owned part, where rank 1's statistics must count as zeros.
  const Network graph = testing::smooth_graph_network();
  const Network chain = parse_network(nlohmann::json::parse(R"({
    "name": "bn-chain", "source": "unit test", "input": {"channels": 3, "height": 6, "width": 5},
    "layers": [
      {"name": "conv1", "type": "conv", "maps": 4, "kernel": 3, "pad": 1, "bias": false},
      {"name": "bn1", "type": "batchnorm"},
      {"name": "relu1", "type": "relu"},
      {"name": "conv2", "type": "conv", "maps": 4, "kernel": 3, "pad": 1, "bias": false},
      {"name": "bn2", "type": "batchnorm"},
      {"name": "gap", "type": "pool", "mode": "avg", "global": true},
      {"name": "fc", "type": "fc", "outputs": 5},
      {"name": "loss", "type": "softmax"}
    ]})"), "<bn-chain>");
  const auto schedule = [](const Network& net, const std::string& strategy, int iterations) {
    StrategyOptions o;
    o.name = strategy;
    o.global_batch = 8;
    o.ranks = 2;
    o.iterations = iterations;
    o.warmup_iterations = 0;
    if (strategy == "per_layer") o.set("assign", "conv1=model,conv2=model");
    return build_schedule(net, Platform{}, o);
  };
  for (const auto& [net, strategy] :
       {std::pair{graph, std::string("dp")}, std::pair{chain, std::string("per_layer")}}) {
    SyntheticDataset data(net.input, net.classes(), 100, 22);
    LocalExecutor straight(net, schedule(net, strategy, 10), 3, kSgd);
    straight.run(data);
    const RuntimeState expected = assembled_state(straight);
    // Two batchnorm layers of 4 channels: mean (4) and variance (4) each, all moved from
    // PyTorch's initial 0 and 1 (else the test could not fail).
    REQUIRE(expected.batchnorm_statistics.size() == 16);
    int moved = 0;
    for (std::size_t i = 0; i < 16; ++i) moved += expected.batchnorm_statistics[i] != (i % 8 < 4 ? 0.0f : 1.0f);
    CHECK(moved == 16);

    const std::string path = temp_path(strategy + "_bn.ckpt");
    {
      LocalExecutor first(net, schedule(net, strategy, 5), 3, kSgd);
      first.run(data);
      write_checkpoint(path, net, sample_run(), assembled_state(first));
    }
    const RuntimeState saved = read_checkpoint(path, net).state;
    LocalExecutor resumed(net, schedule(net, strategy, 5), 3, kSgd);
    for (int r = 0; r < resumed.ranks(); ++r) resumed.runtime(r).restore(saved);
    resumed.run(data);
    const RuntimeState got = assembled_state(resumed);
    CHECK(got.weights == expected.weights);
    CHECK(got.batchnorm_statistics == expected.batchnorm_statistics);
    std::filesystem::remove(path);
  }

  const Network& net = graph;
  LocalExecutor ex(net, schedule(net, "dp", 1), 3, kSgd);
  RuntimeState wrong = ex.runtime(0).state();
  wrong.batchnorm_statistics.pop_back();
  check_refused([&] { ex.runtime(0).restore(wrong); }, "/batchnorm_statistics", "running statistics");
}

TEST_CASE("checkpoint: version 2 (no running statistics) is read only for networks without batchnorm") {
  // A version 2 file is version 3 without the statistics count (8 bytes before the name).
  const auto as_version2 = [](const std::string& path, const std::string& name) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    const std::size_t tail = 4 + name.size() + 8;  // name length, name, checksum
    std::int64_t statistics = 0;
    std::memcpy(&statistics, bytes.data() + bytes.size() - tail - 8, 8);
    REQUIRE(statistics == 0);
    bytes.erase(bytes.end() - std::ptrdiff_t(tail) - 8, bytes.end() - std::ptrdiff_t(tail));
    bytes[7] = '2';
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
  };
  const Network plain = small_network();
  const std::string path = temp_path("v2.ckpt");
  LocalExecutor ex(plain, make_schedule(plain, "dp", 1, 4, 1), 3, kSgd);
  write_checkpoint(path, plain, sample_run(), ex.runtime(0).state());
  as_version2(path, plain.name);
  reseal(path);
  const Checkpoint read = read_checkpoint(path, plain);
  CHECK(read.state.weights == ex.runtime(0).state().weights);
  CHECK(read.state.batchnorm_statistics.empty());

  const Network graph = testing::smooth_graph_network();
  check_refused([&] { read_checkpoint(path, graph); }, "/magic", "running statistics");
  std::filesystem::remove(path);
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
  check_refused([&] { read_checkpoint(path, other); }, "/fingerprint", "checkpoint from another network");

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
  check_refused([&] { read_checkpoint(path, net); }, "/magic", "version 1");

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
