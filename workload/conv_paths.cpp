#include "workload/conv_paths.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/text.hpp"

namespace cnnpar {

namespace {

constexpr const char* kAuto = "auto";
constexpr const char* kPathNames = "im2col, direct, winograd, auto or LAYER[:PATH],...";

ConvPath path_from_string(const std::string& text) {
  for (ConvPath path : {ConvPath::im2col, ConvPath::direct, ConvPath::winograd})
    if (text == to_string(path)) return path;
  throw std::invalid_argument("not a conv path");
}

// Entries "NAME" (direct) or "NAME:PATH".
ConvPaths named_layers(const std::vector<std::string>& entries, const std::string& file, const std::string& path,
                       const std::string& text) {
  std::map<std::string, ConvPath> chosen;
  for (const std::string& entry : entries) {
    const std::size_t colon = entry.find(':');
    const std::string name = entry.substr(0, colon);
    if (name.empty()) throw InputError(file, path, text, fmt::format("a conv layer name is empty (give {})", kPathNames));
    ConvPath layer_path = ConvPath::direct;
    if (colon != std::string::npos) {
      try {
        layer_path = path_from_string(entry.substr(colon + 1));
      } catch (const std::invalid_argument&) {
        throw InputError(file, path, text, fmt::format("{}: a layer's path is im2col, direct or winograd", entry));
      }
    }
    const auto [found, added] = chosen.emplace(name, layer_path);
    if (!added && found->second != layer_path)
      throw InputError(file, path, text, fmt::format("conv layer {} is given two paths", name));
  }
  ConvPaths paths{.mode = ConvPaths::Mode::layers};
  for (const auto& [name, layer_path] : chosen) {  // by name: sorted, once each
    if (layer_path == ConvPath::direct) paths.direct_layers.push_back(name);
    if (layer_path == ConvPath::winograd) paths.winograd_layers.push_back(name);
  }
  return paths;
}

// The listed layers, sorted by name: "NAME" for direct, "NAME:winograd".
std::vector<std::string> layer_entries(const ConvPaths& paths) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const std::string& name : paths.direct_layers) entries.emplace_back(name, name);
  for (const std::string& name : paths.winograd_layers)
    entries.emplace_back(name, fmt::format("{}:{}", name, to_string(ConvPath::winograd)));
  std::sort(entries.begin(), entries.end());
  std::vector<std::string> texts;
  for (auto& entry : entries) texts.push_back(std::move(entry.second));
  return texts;
}

}  // namespace

const char* to_string(ConvPath path) {
  switch (path) {
    case ConvPath::im2col: return "im2col";
    case ConvPath::direct: return "direct";
    case ConvPath::winograd: return "winograd";
  }
  return "?";
}

bool winograd_shape(const LayerSpec& layer) {
  return layer.kind == LayerKind::conv && layer.kernel_h == 3 && layer.kernel_w == 3 && layer.stride == 1 &&
         layer.pad <= 1;
}

ConvPath ConvPaths::path(const LayerSpec& layer) const {
  CNNPAR_ASSERT(mode != Mode::automatic, "--conv auto must be resolved before a schedule is built");
  switch (mode) {
    case Mode::im2col: return ConvPath::im2col;
    case Mode::direct: return ConvPath::direct;
    case Mode::winograd: return winograd_shape(layer) ? ConvPath::winograd : ConvPath::direct;
    case Mode::layers:
      if (std::binary_search(direct_layers.begin(), direct_layers.end(), layer.name)) return ConvPath::direct;
      if (std::binary_search(winograd_layers.begin(), winograd_layers.end(), layer.name)) return ConvPath::winograd;
      return ConvPath::im2col;
    case Mode::automatic: break;
  }
  return ConvPath::im2col;
}

bool ConvPaths::any_direct() const {
  return mode == Mode::direct || mode == Mode::winograd ||
         (mode == Mode::layers && !(direct_layers.empty() && winograd_layers.empty()));
}

std::string ConvPaths::text() const {
  switch (mode) {
    case Mode::im2col: return to_string(ConvPath::im2col);
    case Mode::direct: return to_string(ConvPath::direct);
    case Mode::winograd: return to_string(ConvPath::winograd);
    case Mode::automatic: return kAuto;
    case Mode::layers:
      return any_direct() ? fmt::format("{}", fmt::join(layer_entries(*this), ",")) : to_string(ConvPath::im2col);
  }
  return to_string(ConvPath::im2col);
}

nlohmann::json ConvPaths::json() const {
  if (mode == Mode::layers) return any_direct() ? nlohmann::json(layer_entries(*this)) : nlohmann::json(nullptr);
  return mode == Mode::im2col ? nlohmann::json(nullptr) : nlohmann::json(text());
}

ConvPaths parse_conv_paths(const std::string& text, const std::string& file, const std::string& path) {
  if (text == to_string(ConvPath::im2col)) return {};
  if (text == to_string(ConvPath::direct)) return ConvPaths{.mode = ConvPaths::Mode::direct};
  if (text == to_string(ConvPath::winograd)) return ConvPaths{.mode = ConvPaths::Mode::winograd};
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
    return named_layers(names, file, path, value.dump());
  }
  throw InputError(file, path, value.dump(), fmt::format("{} (a list)", kPathNames));
}

void validate_conv_paths(const ConvPaths& paths, const Network& network, const std::string& origin) {
  const auto conv_layer = [&](const std::string& name) {
    const auto layer = std::find_if(network.layers.begin(), network.layers.end(),
                                    [&](const Layer& l) { return l.spec.name == name; });
    if (layer == network.layers.end() || layer->spec.kind != LayerKind::conv)
      throw InputError(origin, "/conv", name, fmt::format("not a conv layer of network {}", network.name));
    return layer->spec;
  };
  for (const std::string& name : paths.direct_layers) conv_layer(name);
  for (const std::string& name : paths.winograd_layers) {
    const LayerSpec layer = conv_layer(name);
    if (!winograd_shape(layer))
      throw InputError(origin, "/conv", name + ":winograd",
                       fmt::format("Winograd F(4x4, 3x3) runs 3x3 kernels of stride 1 and pad at most 1; {} has "
                                   "{}x{} kernels, stride {}, pad {}",
                                   name, layer.kernel_h, layer.kernel_w, layer.stride, layer.pad));
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
      const ConvPath path = op.kind == OpKind::compute && op.conv_layer && op.layer >= 0
                                ? paths.path(network.layers.at(std::size_t(op.layer)).spec)
                                : ConvPath::im2col;
      if (path == ConvPath::im2col) {
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
        rewrite.kernel = path == ConvPath::winograd ? KernelClass::winograd : KernelClass::conv;
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
