// platform_parts_check BASE.json CALIBRATED.json KEPT: a calibration in parts (--calibrate-parts)
// left the parts listed in KEPT (a comma list of compute, network, progress, inner) exactly as the
// base platform has them, bit for bit (the written JSON of both, parsed and written again,
// compared value by value: doubles compare exactly), and its `source` says so.
//   compute:  "calibration", "iteration_overhead", "nodes" except "count" (a calibration on
//             more ranks than the base has nodes raises it) and "inner";
//   network:  "network" except "busy_bandwidth_fraction";
//   progress: "comm_compute_slowdown", "comm_start_wait_max" and "network"."busy_bandwidth_fraction";
//   inner:    "nodes"."inner".
#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "model/platform.hpp"
#include "workload/run_spec.hpp"

namespace {

nlohmann::json written(const char* file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(std::string("cannot read ") + file);
  return cnnpar::to_json(cnnpar::parse_platform(nlohmann::json::parse(in), file));
}

/** The value at `key` of `object` ("absent" when missing: an absent field is its default). */
nlohmann::json field(const nlohmann::json& object, const std::string& key) {
  return object.contains(key) ? object.at(key) : nlohmann::json("absent");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: platform_parts_check BASE.json CALIBRATED.json KEPT\n");
    return 2;
  }
  try {
    const nlohmann::json base = written(argv[1]), calibrated = written(argv[2]);
    const cnnpar::CalibrationParts kept = cnnpar::parse_calibration_parts(argv[3], "command line", "KEPT");
    int failures = 0;
    const auto same = [&](const nlohmann::json& a, const nlohmann::json& b, const std::string& what) {
      if (a == b) return;
      std::fprintf(stderr, "platform_parts_check: FAIL: %s changed: base %s, calibrated %s\n", what.c_str(),
                   a.dump().c_str(), b.dump().c_str());
      ++failures;
    };
    if (kept.compute) {
      same(field(base, "calibration"), field(calibrated, "calibration"), "calibration");
      same(field(base, "iteration_overhead"), field(calibrated, "iteration_overhead"), "iteration_overhead");
      nlohmann::json a = base.at("nodes"), b = calibrated.at("nodes");
      for (const char* key : {"count", "inner"}) {
        a.erase(key);
        b.erase(key);
      }
      same(a, b, "nodes");
    }
    if (kept.inner) same(field(base.at("nodes"), "inner"), field(calibrated.at("nodes"), "inner"), "nodes.inner");
    if (kept.network) {
      nlohmann::json a = base.at("network"), b = calibrated.at("network");
      a.erase("busy_bandwidth_fraction");
      b.erase("busy_bandwidth_fraction");
      same(a, b, "network");
    }
    if (kept.progress) {
      same(field(base, "comm_compute_slowdown"), field(calibrated, "comm_compute_slowdown"), "comm_compute_slowdown");
      same(field(base, "comm_start_wait_max"), field(calibrated, "comm_start_wait_max"), "comm_start_wait_max");
      same(field(base.at("network"), "busy_bandwidth_fraction"),
           field(calibrated.at("network"), "busy_bandwidth_fraction"), "network.busy_bandwidth_fraction");
    }
    const std::string source = calibrated.at("source").get<std::string>();
    if (source.find("kept from the base platform") == std::string::npos ||
        source.find(cnnpar::to_string(kept)) == std::string::npos) {
      std::fprintf(stderr, "platform_parts_check: FAIL: source does not say that %s came from the base: %s\n",
                   argv[3], source.c_str());
      ++failures;
    }
    std::printf("platform_parts_check: %s keeps %s of %s: %d failure(s)\n", argv[2], argv[3], argv[1], failures);
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "platform_parts_check: %s\n", e.what());
    return 1;
  }
}
