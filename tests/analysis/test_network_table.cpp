// `cnnpar layers`' table: each layer's inputs, shape, parameters and MACs, and the totals.
#include <catch2/catch.hpp>

#include "analysis/network_table.hpp"
#include "model/network.hpp"
#include "tests/model/residual_block.hpp"

using namespace cnnpar;

namespace {
Network block() { return parse_network(residual_block(), "block.json"); }
}  // namespace

TEST_CASE("the layers table: inputs, shapes, parameters and MACs", "[network_table]") {
  const NetworkTable table = network_table(block());
  REQUIRE(table.rows.size() == 8);
  // conv1: 4 maps · 8·8 pixels · 3 input maps · 3·3 = 6,912 MACs; 3·4·9 = 108 weights, no bias.
  CHECK(table.rows[0].inputs == std::vector<std::string>{"(input)"});
  CHECK(table.rows[0].forward_macs == 6912);
  CHECK(table.rows[0].parameters == 108);
  // conv2: 4 · 64 · 4 · 9 = 9,216 MACs; 144 + 4 parameters. fc: 4 · 10 MACs, 50 parameters.
  CHECK(table.rows[2].forward_macs == 9216);
  CHECK(table.rows[6].forward_macs == 40);
  // batchnorm and add: parameters 2·4 and 0, no MACs.
  CHECK(table.rows[1].parameters == 8);
  CHECK(table.rows[1].forward_macs == 0);
  CHECK(table.rows[3].inputs == std::vector<std::string>{"conv2", "bn1"});
  CHECK(table.rows[5].out == Shape{4, 1, 1});
  CHECK(table.parameters == 108 + 8 + 148 + 50);
  CHECK(table.forward_macs == 6912 + 9216 + 40);

  const std::string csv = network_table_csv(table);
  CHECK(csv.rfind("index,name,type,inputs,c,h,w,parameters,forward_macs\n", 0) == 0);
  CHECK(csv.find("\n3,sum,add,conv2;bn1,4,8,8,0,0\n") != std::string::npos);
  const nlohmann::json json = to_json(table);
  CHECK(json.at("parameters") == 314);
  CHECK(json.at("layers").at(3).at("inputs") == nlohmann::json::array({"conv2", "bn1"}));
  CHECK(network_table_text(table).find("total: 314 parameters") != std::string::npos);
}
