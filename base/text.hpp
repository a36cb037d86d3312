#pragma once
// Text cut into parts: comma lists on the command line and in files, dotted platform paths.
#include <string>
#include <vector>

namespace cnnpar {

/** `text` cut at every `separator`, empty parts kept: "a,,b" -> {"a", "", "b"}, "a," -> {"a", ""},
 *  "" -> {""} (one empty part, so a caller that refuses empty parts refuses an empty text too). */
std::vector<std::string> split(const std::string& text, char separator);

}  // namespace cnnpar
