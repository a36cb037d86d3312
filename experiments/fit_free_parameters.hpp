#pragma once
// The parameters a fit moves: platform paths of `--set`, each one number for the whole
// platform, resolved to a start value and applied to the platform document.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/platform.hpp"

namespace cnnpar {

/** One parameter the fit moves (`--free PATH[=START]`). */
struct FreeParameter {
  std::string path;       ///< a platform path of --set: "network.bandwidth", "nodes.efficiency.gemm"
  std::string unit;       ///< base unit of its JSON spelling: "Bps", "s", "f", "B", or "" (a plain number)
  double start = 0;       ///< start value, in `unit`
  bool fraction = false;  ///< a fraction in (0, 1]: fitted as logit(value), else as log(value)
  std::string note;       ///< why the start differs from the platform's value, if it does
  /** The override text of `value` ("1.25e+09Bps"), exact (shortest round-trip digits). */
  std::string text(double value) const;
  /** "B/s", "s", "FLOP/s", "B" or "" for tables. */
  std::string unit_label() const;
};

/** Resolves "PATH" or "PATH=START" against a platform document read from `file`: the start is
 *  START (in the platform's units, "1Gbps"), else the value the platform has at PATH, else the
 *  documented default of an absent optional field (nodes.efficiency.CLASS: default_efficiency;
 *  nodes.call_overhead, nodes.core_bandwidth, iteration_overhead, input_per_image,
 *  network.reduction_rate: 0;
 *  network.busy_bandwidth_fraction: 1). A fraction that starts on its bound 1 starts at 0.5
 *  (a logit cannot leave 1), said in `note`.
 *  @throws InputError(origin, flag, text, reason) for a strategy option, a path the platform
 *  does not have, a value that is not a number or quantity, a START the platform refuses, or a
 *  start of 0 (log space cannot leave it: give a START). */
FreeParameter resolve_free_parameter(const nlohmann::json& document, const std::string& file, const std::string& text,
                                     const std::string& origin = "command line", const std::string& flag = "--free");

/** The platform document with values[i] (in free[i].unit) at free[i].path, parsed.
 *  @throws InputError(origin, flag, "PATH=VALUE", reason) for a value the platform refuses. */
Platform platform_with_values(const nlohmann::json& document, const std::string& file,
                              const std::vector<FreeParameter>& free, const std::vector<double>& values,
                              const std::string& origin = "command line", const std::string& flag = "--free");

}  // namespace cnnpar
