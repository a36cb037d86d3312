// graph_dump NETWORK BATCH SEED OUT_DIR: one forward and backward of NETWORK (a name of the zoo
// or a JSON file) in one process on BATCH images of the synthetic set, without the update,
// written for a comparison with another framework (tests/real/pytorch_graph_check.py):
//   input.bin      FP32 (N, C, H, W), the images as the Runtime read them
//   labels.bin     int32 (N)
//   weights.bin    FP32, the network's layer order: per parameterised layer W then b
//                  (conv W (O, C, KH, KW), fc W (K_c, K_b), batchnorm scale then shift)
//   gradients.bin  FP32, the same order: gradients of the mean cross-entropy
//   logits.bin     FP32 (N, classes): the last fc layer's output
//   running.bin    FP32, per batchnorm layer in order: running mean (C) then variance (C)
//   result.json    {"loss": mean cross-entropy, "network": name, "batch": N}
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/output_files.hpp"
#include "model/scenarios.hpp"
#include "real/dataset.hpp"
#include "real/runtime.hpp"
#include "tests/real/real_test_util.hpp"

namespace {

void write_floats(const std::filesystem::path& path, const std::vector<float>& values) {
  cnnpar::write_file_atomic(path.string(), values.data(), values.size() * sizeof(float));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: graph_dump NETWORK BATCH SEED OUT_DIR\n");
    return 2;
  }
  try {
    using namespace cnnpar;
    const Network network = load_network(argv[1]);
    const std::int64_t batch = std::stoll(argv[2]);
    const auto seed = std::uint64_t(std::stoull(argv[3]));
    const std::filesystem::path out = argv[4];
    std::filesystem::create_directories(out);
    const Schedule schedule = real::testing::make_schedule(network, "dp", 1, batch, 1);
    real::Runtime runtime(network, schedule, 0, seed);
    const real::SyntheticDataset data(network.input, network.classes(), real::SyntheticDataset::kRunImages, seed);
    runtime.load_batch(0, data);
    const std::function<void()> none;
    for (const Op& op : schedule.programs[0].ops)
      if (op.kind == OpKind::compute && op.phase != Phase::update) runtime.run_compute(op, 0, none);

    // The input as (N, C, H, W): the Runtime holds it channel-major (C, N, H, W).
    const std::vector<float> held = runtime.activations(-1);
    const Shape s = network.input;
    const std::int64_t hw = s.h * s.w;
    std::vector<float> images(held.size());
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t i = 0; i < batch; ++i)
        for (std::int64_t p = 0; p < hw; ++p)
          images[std::size_t((i * s.c + c) * hw + p)] = held[std::size_t((c * batch + i) * hw + p)];
    write_floats(out / "input.bin", images);
    std::vector<std::int32_t> labels;
    for (std::int64_t i = 0; i < batch; ++i) labels.push_back(data.label(i % data.size()));
    write_file_atomic((out / "labels.bin").string(), labels.data(), labels.size() * sizeof(std::int32_t));
    write_floats(out / "weights.bin", runtime.flat_weights());
    write_floats(out / "gradients.bin", runtime.flat_gradients());
    write_floats(out / "logits.bin", runtime.activations(network.fc_layers().back()));
    std::vector<float> running;
    for (int l = 0; l < int(network.layers.size()); ++l)
      if (network.layers[std::size_t(l)].spec.kind == LayerKind::batchnorm) {
        const std::vector<float> both = runtime.running_statistics(l);
        running.insert(running.end(), both.begin(), both.end());
      }
    write_floats(out / "running.bin", running);
    const nlohmann::json result = {{"network", network.name}, {"batch", batch}, {"loss", runtime.last_loss()}};
    write_file_atomic((out / "result.json").string(), result.dump(2) + "\n");
    std::printf("graph_dump: %s, batch %lld: loss %.6f, %lld parameters\n", network.name.c_str(),
                static_cast<long long>(batch), runtime.last_loss(), static_cast<long long>(runtime.parameter_count()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graph_dump: %s\n", e.what());
    return 1;
  }
}
