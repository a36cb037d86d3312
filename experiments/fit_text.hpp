#pragma once
// Internal to the fit: a dotted platform path or a comma-separated `--only` value cut into its
// parts.
#include <string>
#include <vector>

namespace cnnpar::detail {

inline std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

}  // namespace cnnpar::detail
