// split(): every separator cuts, empty parts are kept.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/text.hpp"

using cnnpar::split;
using Parts = std::vector<std::string>;

TEST_CASE("split cuts at every separator", "[text]") {
  CHECK(split("network.bandwidth", '.') == Parts{"network", "bandwidth"});
  CHECK(split("nodes.kinds.0.peak", '.') == Parts{"nodes", "kinds", "0", "peak"});
  CHECK(split("dp,lee,hybrid", ',') == Parts{"dp", "lee", "hybrid"});
  CHECK(split("2;16,8;1,4;1,1", ';') == Parts{"2", "16,8", "1,4", "1,1"});
}

TEST_CASE("split keeps empty parts", "[text]") {
  CHECK(split("", ',') == Parts{""});
  CHECK(split(",", ',') == Parts{"", ""});
  CHECK(split("a,", ',') == Parts{"a", ""});
  CHECK(split(",a", ',') == Parts{"", "a"});
  CHECK(split("a,,b", ',') == Parts{"a", "", "b"});
}

TEST_CASE("split without the separator gives the text whole", "[text]") {
  CHECK(split("compute", ',') == Parts{"compute"});
  CHECK(split("a b", ',') == Parts{"a b"});
}
