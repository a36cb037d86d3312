#pragma once
// Which conv layers run as direct convolutions (oneDNN's, kernel class conv) or as Winograd
// convolutions (oneDNN's F(4x4, 3x3), kernel class winograd) instead of im2col + GEMM (+ col2im):
// none, all, a named set, or `auto`: the fastest path of each layer, by the platform's prices
// (workload/conv_choice.hpp) or, in a real run on a platform that did not measure convolutions,
// by the executor timing every path at start-up.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/network.hpp"
#include "model/schedule.hpp"

namespace cnnpar {

/** How one conv layer runs. */
enum class ConvPath { im2col, direct, winograd };
const char* to_string(ConvPath path);

/** Whether Winograd's F(4x4, 3x3) can run `layer` (oneDNN's: 3x3 kernels, stride 1, pad <= 1).
 *  Its kernels also need AVX-512, which only the executor can check. */
bool winograd_shape(const LayerSpec& layer);

struct ConvPaths {
  enum class Mode { im2col, direct, winograd, layers, automatic };
  Mode mode = Mode::im2col;
  std::vector<std::string> direct_layers;    ///< Mode::layers: the conv layers run direct, sorted
  std::vector<std::string> winograd_layers;  ///< Mode::layers: the conv layers run Winograd, sorted

  /** How conv layer `layer` runs (Mode::winograd: Winograd where winograd_shape, else direct).
   *  Asserts that `auto` was resolved. */
  ConvPath path(const LayerSpec& layer) const;
  /** Whether any layer may run on oneDNN's convolution primitives (direct or Winograd). */
  bool any_direct() const;
  bool any_winograd() const { return mode == Mode::winograd || (mode == Mode::layers && !winograd_layers.empty()); }
  /** "im2col" | "direct" | "winograd" | "auto" | "LAYER[:PATH],..." (as --conv takes it; a
   *  listed layer without a path runs direct). */
  std::string text() const;
  /** The strategy options' "conv": "direct", "winograd", "auto" or the list of layers, each
   *  "NAME" (direct) or "NAME:winograd" (im2col: null). */
  nlohmann::json json() const;
  bool operator==(const ConvPaths&) const = default;
};

/** What --conv, a run-spec's and a validation grid's "conv" take when not given: each layer's
 *  faster path. (An absent "conv" in a schedule's or trace's options means im2col.) */
inline const ConvPaths kDefaultConvPaths{.mode = ConvPaths::Mode::automatic};

/** Parses --conv's text. @throws InputError(file, path, text, reason) for an empty name, a path
 *  other than im2col, direct or winograd, or a layer named twice with different paths. */
ConvPaths parse_conv_paths(const std::string& text, const std::string& file, const std::string& path);
/** Parses the strategy options' "conv": a string as parse_conv_paths, or a list of layer names.
 *  @throws InputError(file, path, value, reason). */
ConvPaths conv_paths_from_json(const nlohmann::json& value, const std::string& file, const std::string& path);
/** A set of layers names only conv layers of `network`, and Winograd ones of winograd_shape.
 *  @throws InputError(origin, "/conv", value, reason). */
void validate_conv_paths(const ConvPaths& paths, const Network& network, const std::string& origin);

/** Rewrites the conv layers `paths` runs direct or Winograd, in every program: their im2col,
 *  im2col_w and col2im ops go, their GEMM ops take kernel class conv or winograd and move the
 *  layer's input, weights and output through memory (no columns). Identical programs stay
 *  shared. */
void use_direct_convolutions(Schedule& schedule, const Network& network, const ConvPaths& paths);

}  // namespace cnnpar
