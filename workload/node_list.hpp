#pragma once
// Node-count lists as every command and file writes them: "1-128", "1,2,4,8", "1-8:1".
#include <string>
#include <vector>

namespace cnnpar {

/** Parses "1-128", "1,2,4,8", "1-8,16,32" (ascending order, duplicates removed).
 *  @throws InputError (file `origin`, path `option`) on anything else or a count < 1. */
std::vector<int> parse_node_list(const std::string& text, const std::string& origin = "command line",
                                 const std::string& option = "--nodes");

}  // namespace cnnpar
