#include "workload/node_list.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/limits.hpp"
#include "base/text.hpp"

namespace cnnpar {

namespace {

int parse_count(std::string_view text, const std::string& whole, const std::string& origin,
                const std::string& option) {
  int value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end)
    throw InputError(origin, option, whole, "expected node counts like \"1-128\" (doubling), \"1-128:1\" (every count) or \"1,2,4,8\"");
  if (value < 1 || value > limits::kMaxRanks)
    throw InputError(origin, option, whole, fmt::format("node counts must be in [1, {}]", limits::kMaxRanks));
  return value;
}

}  // namespace

std::vector<int> parse_node_list(const std::string& text, const std::string& origin, const std::string& option) {
  std::vector<int> nodes;
  if (text.empty()) throw InputError(origin, option, text, "expected node counts like \"1-128\" (doubling), \"1-128:1\" (every count) or \"1,2,4,8\"");
  for (const std::string& part : split(text, ',')) {
    const std::string_view item = part;
    const std::size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      nodes.push_back(parse_count(item, text, origin, option));
    } else {
      // "A-B" doubles from A (scaling studies); "A-B:S" steps by S.
      const std::size_t colon = item.find(':', dash);
      const int first = parse_count(item.substr(0, dash), text, origin, option);
      const int last = parse_count(item.substr(dash + 1, colon == std::string_view::npos ? std::string_view::npos : colon - dash - 1),
                                   text, origin, option);
      if (last < first) throw InputError(origin, option, text, "a range must go upwards (\"1-128\")");
      if (last - first > 1000000) throw InputError(origin, option, text, "range too large");
      if (colon == std::string_view::npos) {
        for (long p = first; p <= last; p *= 2) nodes.push_back(int(p));
      } else {
        const int step = parse_count(item.substr(colon + 1), text, origin, option);
        for (long p = first; p <= last; p += step) nodes.push_back(int(p));
      }
    }
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

}  // namespace cnnpar
