#pragma once
// Which conv layers run as direct convolutions (oneDNN's, kernel class conv) instead of im2col +
// GEMM (+ col2im): none, all, a named set, or `auto`: the faster path of each layer, by the
// platform's prices (workload/conv_choice.hpp) or, in a real run on a platform that did not
// measure direct convolutions, by the executor timing both at start-up.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/network.hpp"
#include "model/schedule.hpp"

namespace cnnpar {

struct ConvPaths {
  enum class Mode { im2col, direct, layers, automatic };
  Mode mode = Mode::im2col;
  std::vector<std::string> direct_layers;  ///< Mode::layers: the conv layers run direct, sorted

  /** Whether conv layer `name` runs direct. Asserts that `auto` was resolved. */
  bool direct(const std::string& name) const;
  bool any_direct() const { return mode == Mode::direct || (mode == Mode::layers && !direct_layers.empty()); }
  /** "im2col" | "direct" | "auto" | "LAYER,LAYER,..." (as --conv takes it). */
  std::string text() const;
  /** The strategy options' "conv": "direct", "auto" or the list of layers (im2col: null). */
  nlohmann::json json() const;
  bool operator==(const ConvPaths&) const = default;
};

/** What --conv, a run-spec's and a validation grid's "conv" take when not given: each layer's
 *  faster path. (An absent "conv" in a schedule's or trace's options means im2col.) */
inline const ConvPaths kDefaultConvPaths{.mode = ConvPaths::Mode::automatic};

/** Parses --conv's text. @throws InputError(file, path, text, reason) for an empty name. */
ConvPaths parse_conv_paths(const std::string& text, const std::string& file, const std::string& path);
/** Parses the strategy options' "conv": a string as parse_conv_paths, or a list of layer names.
 *  @throws InputError(file, path, value, reason). */
ConvPaths conv_paths_from_json(const nlohmann::json& value, const std::string& file, const std::string& path);
/** A set of layers names only conv layers of `network`.
 *  @throws InputError(origin, "/conv", value, reason). */
void validate_conv_paths(const ConvPaths& paths, const Network& network, const std::string& origin);

/** Rewrites the conv layers `paths` runs direct, in every program: their im2col, im2col_w and
 *  col2im ops go, their GEMM ops take kernel class conv and move the layer's input, weights and
 *  output through memory (no columns). Identical programs stay shared. */
void use_direct_convolutions(Schedule& schedule, const Network& network, const ConvPaths& paths);

}  // namespace cnnpar
