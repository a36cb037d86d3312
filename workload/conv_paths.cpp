#include "workload/conv_paths.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/text.hpp"

namespace cnnpar {

namespace {

constexpr const char* kIm2col = "im2col";
constexpr const char* kDirect = "direct";
constexpr const char* kAuto = "auto";

ConvPaths named_layers(std::vector<std::string> names, const std::string& file, const std::string& path,
                       const std::string& text) {
  for (const std::string& name : names)
    if (name.empty()) throw InputError(file, path, text, "a conv layer name is empty (give im2col, direct, auto or LAYER,LAYER,...)");
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return ConvPaths{.mode = ConvPaths::Mode::layers, .direct_layers = std::move(names)};
}

}  // namespace

bool ConvPaths::direct(const std::string& name) const {
  CNNPAR_ASSERT(mode != Mode::automatic, "--conv auto must be resolved before a schedule is built");
  if (mode == Mode::direct) return true;
  return mode == Mode::layers && std::binary_search(direct_layers.begin(), direct_layers.end(), name);
}

std::string ConvPaths::text() const {
  switch (mode) {
    case Mode::im2col: return kIm2col;
    case Mode::direct: return kDirect;
    case Mode::automatic: return kAuto;
    case Mode::layers: return direct_layers.empty() ? kIm2col : fmt::format("{}", fmt::join(direct_layers, ","));
  }
  return kIm2col;
}

nlohmann::json ConvPaths::json() const {
  if (mode == Mode::layers) return direct_layers.empty() ? nlohmann::json(nullptr) : nlohmann::json(direct_layers);
  return mode == Mode::im2col ? nlohmann::json(nullptr) : nlohmann::json(text());
}

ConvPaths parse_conv_paths(const std::string& text, const std::string& file, const std::string& path) {
  if (text == kIm2col) return {};
  if (text == kDirect) return ConvPaths{.mode = ConvPaths::Mode::direct};
  if (text == kAuto) return ConvPaths{.mode = ConvPaths::Mode::automatic};
  return named_layers(split(text, ','), file, path, text);
}

ConvPaths conv_paths_from_json(const nlohmann::json& value, const std::string& file, const std::string& path) {
  if (value.is_string()) return parse_conv_paths(value.get<std::string>(), file, path);
  if (value.is_array()) {
    std::vector<std::string> names;
    for (const nlohmann::json& name : value) {
      if (!name.is_string()) throw InputError(file, path, value.dump(), "a list of conv layer names");
      names.push_back(name.get<std::string>());
    }
    return named_layers(std::move(names), file, path, value.dump());
  }
  throw InputError(file, path, value.dump(), "im2col, direct, auto or a list of conv layer names");
}

void validate_conv_paths(const ConvPaths& paths, const Network& network, const std::string& origin) {
  for (const std::string& name : paths.direct_layers) {
    const auto layer = std::find_if(network.layers.begin(), network.layers.end(),
                                    [&](const Layer& l) { return l.spec.name == name; });
    if (layer == network.layers.end() || layer->spec.kind != LayerKind::conv)
      throw InputError(origin, "/conv", name, fmt::format("not a conv layer of network {}", network.name));
  }
}

void use_direct_convolutions(Schedule& schedule, const Network& network, const ConvPaths& paths) {
  std::vector<bool> rewritten(schedule.programs.size(), false);
  for (std::size_t r = 0; r < schedule.programs.size(); ++r) {
    if (rewritten[r]) continue;  // shared the list of a program rewritten before
    const OpList before = schedule.programs[r].ops;
    std::vector<Op> ops;
    ops.reserve(before.size());
    for (const Op& op : before) {
      const bool direct = op.kind == OpKind::compute && op.conv_layer && op.layer >= 0 &&
                          paths.direct(network.layers.at(std::size_t(op.layer)).spec.name);
      if (!direct) {
        ops.push_back(op);
        continue;
      }
      if (op.kernel == KernelClass::im2col || op.kernel == KernelClass::col2im) continue;
      Op rewrite = op;
      if (op.kernel == KernelClass::gemm) {
        // Each of the three reads or writes the input, weights and output once (its rank's maps).
        const Layer& layer = network.layers[std::size_t(op.layer)];
        const double maps = double(op.units > 0 ? op.units : layer.out.c);
        const double images = double(op.batch);
        const double input_floats = double(layer.in.elements()) * images;
        const double weight_floats = maps * double(layer.in.c * layer.spec.kernel_h * layer.spec.kernel_w);
        const double output_floats = maps * double(layer.out.h * layer.out.w) * images;
        rewrite.kernel = KernelClass::conv;
        rewrite.bytes = 4.0 * (input_floats + weight_floats + output_floats);
      }
      ops.push_back(std::move(rewrite));
    }
    const OpList after(std::move(ops));
    for (std::size_t q = r; q < schedule.programs.size(); ++q)
      if (schedule.programs[q].ops.same_storage(before)) {
        schedule.programs[q].ops = after;
        rewritten[q] = true;
      }
  }
}

}  // namespace cnnpar
