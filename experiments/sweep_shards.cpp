#include "experiments/sweep_shards.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/hash.hpp"
#include "base/json_node.hpp"
#include "experiments/sweep_grid.hpp"

namespace cnnpar {

namespace {

constexpr int kMaxShards = 1'000'000;

bool parse_int(const std::string& text, int max, int& value) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  value = std::stoi(text);
  return value <= max;
}

std::size_t expected_rows(const ShardSpec& shard, std::size_t sweep_rows) {
  const auto index = std::size_t(shard.index), count = std::size_t(shard.count);
  return sweep_rows > index ? (sweep_rows - index + count - 1) / count : 0;
}

/** A finished shard: its manifest's fields and its CSV's lines. */
struct ShardFile {
  std::string csv, manifest;
  ShardSpec shard;
  std::string fingerprint;
  std::size_t sweep_rows = 0;
  std::string header;
  std::vector<std::string> lines;  ///< each "\n"-terminated
};

ShardFile read_shard(const std::string& csv) {
  ShardFile file;
  file.csv = csv;
  file.manifest = shard_manifest_path(csv);
  std::error_code error;
  if (!std::filesystem::is_regular_file(csv, error)) throw InputError(csv, "/", csv, "no such shard CSV");
  if (!std::filesystem::exists(file.manifest, error))
    throw InputError(csv, "/", file.manifest,
                     "this shard has no manifest: it did not finish (run its `cnnpar sweep --shard` again) or is not "
                     "a shard");
  const nlohmann::json document = read_json_file(file.manifest);
  const JsonNode root(document, file.manifest);
  root.check_keys({"format", "shard", "sweep", "rows"});
  if (root.at("format").as_string() != "cnnpar-sweep-shard") root.at("format").fail("expected \"cnnpar-sweep-shard\"");
  root.at("shard").check_keys({"index", "count"});
  file.shard.count = int(root.at("shard").at("count").as_int_in(1, kMaxShards));
  file.shard.index = int(root.at("shard").at("index").as_int_in(0, file.shard.count - 1));
  root.at("sweep").check_keys({"fingerprint", "rows"});
  file.fingerprint = root.at("sweep").at("fingerprint").as_string();
  file.sweep_rows = std::size_t(root.at("sweep").at("rows").as_nonnegative_int());
  const std::size_t rows = std::size_t(root.at("rows").as_nonnegative_int());
  if (rows != expected_rows(file.shard, file.sweep_rows))
    root.at("rows").fail(fmt::format("shard {}/{} of a sweep of {} rows has {} rows", file.shard.index,
                                     file.shard.count, file.sweep_rows, expected_rows(file.shard, file.sweep_rows)));

  std::ifstream in(csv, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = text.find('\n', begin);
    if (end == std::string::npos)
      throw InputError(csv, fmt::format("line {}", file.lines.size() + 2), text.substr(begin),
                       "a torn last row: the shard did not finish; run it again");
    if (file.header.empty() && begin == 0) file.header = text.substr(0, end);
    else file.lines.push_back(text.substr(begin, end + 1 - begin));
    begin = end + 1;
  }
  if (file.lines.size() != rows)
    throw InputError(csv, "/", std::to_string(file.lines.size()),
                     fmt::format("the manifest {} says {} rows, the CSV has this many", file.manifest, rows));
  return file;
}

}  // namespace

ShardSpec parse_shard(const std::string& text, const std::string& origin, const std::string& flag) {
  const std::size_t slash = text.find('/');
  ShardSpec shard;
  if (slash == std::string::npos || !parse_int(text.substr(0, slash), kMaxShards, shard.index) ||
      !parse_int(text.substr(slash + 1), kMaxShards, shard.count))
    throw InputError(origin, flag, text, "expected I/N, the 0-based shard I of N (e.g. 0/4 ... 3/4)");
  if (shard.count < 1) throw InputError(origin, flag, text, "N must be >= 1");
  if (shard.index >= shard.count)
    throw InputError(origin, flag, text, fmt::format("I counts from 0, so it must be < N = {}", shard.count));
  return shard;
}

std::string sweep_fingerprint(const std::string& header, const std::vector<std::string>& row_keys) {
  std::uint64_t hash = kFnv1a64OffsetBasis;
  const auto add = [&](const std::string& line) {
    hash = fnv1a64(line.data(), line.size(), hash);
    hash = fnv1a64("\n", 1, hash);
  };
  add(header);
  for (const std::string& key : row_keys) add(key);
  return fmt::format("{:016x}", hash);
}

std::string shard_manifest_path(const std::string& csv) { return csv + ".shard.json"; }

nlohmann::json shard_manifest(const ShardSpec& shard, const std::string& fingerprint, std::size_t sweep_rows,
                              std::size_t shard_rows) {
  return {{"format", "cnnpar-sweep-shard"},
          {"shard", {{"index", shard.index}, {"count", shard.count}}},
          {"sweep", {{"fingerprint", fingerprint}, {"rows", sweep_rows}}},
          {"rows", shard_rows}};
}

std::string merge_sweep_shards(const std::vector<std::string>& shard_csvs) {
  if (shard_csvs.empty()) throw InputError("command line", "--merge", "", "give the CSV of every shard");
  std::vector<ShardFile> shards;
  for (const std::string& csv : shard_csvs) shards.push_back(read_shard(csv));
  const ShardFile& first = shards.front();
  std::vector<const ShardFile*> by_index(std::size_t(first.shard.count), nullptr);
  for (const ShardFile& shard : shards) {
    if (shard.fingerprint != first.fingerprint || shard.sweep_rows != first.sweep_rows)
      throw InputError(shard.manifest, "/sweep/fingerprint", shard.fingerprint,
                       fmt::format("this shard belongs to another sweep than {} (fingerprint {})", first.csv,
                                   first.fingerprint));
    if (shard.shard.count != first.shard.count)
      throw InputError(shard.manifest, "/shard/count", std::to_string(shard.shard.count),
                       fmt::format("{} is one of {} shards", first.csv, first.shard.count));
    if (shard.header != first.header)
      throw InputError(shard.csv, "line 1", shard.header, fmt::format("the header differs from {}'s", first.csv));
    const ShardFile*& slot = by_index[std::size_t(shard.shard.index)];
    if (slot != nullptr)
      throw InputError(shard.manifest, "/shard/index", std::to_string(shard.shard.index),
                       fmt::format("shard {}/{} is given twice (also {})", shard.shard.index, shard.shard.count,
                                   slot->csv));
    slot = &shard;
  }
  for (std::size_t index = 0; index < by_index.size(); ++index)
    if (by_index[index] == nullptr)
      throw InputError("command line", "--merge", fmt::format("{}/{}", index, first.shard.count),
                       fmt::format("this shard is missing: give the CSVs of all {} shards", first.shard.count));

  // Interleave: row t is row t / N of shard t mod N.
  std::vector<std::string> names, fields;
  split_csv_line(first.header, names);
  const auto nodes_column = std::size_t(std::find(names.begin(), names.end(), "nodes") - names.begin());
  std::string merged = first.header + "\n";
  std::vector<std::string> keys;
  for (std::size_t row = 0; row < first.sweep_rows; ++row) {
    const std::size_t count = by_index.size();
    const std::string& line = by_index[row % count]->lines[row / count];
    if (!split_csv_line(line.substr(0, line.size() - 1), fields) || fields.size() != names.size())
      throw InputError(by_index[row % count]->csv, fmt::format("line {}", row / count + 2),
                       line.substr(0, line.size() - 1), fmt::format("expected a row of {} fields", names.size()));
    keys.push_back(sweep_row_key(fields, nodes_column + 1));
    merged += line;
  }
  if (const std::string fingerprint = sweep_fingerprint(first.header, keys); fingerprint != first.fingerprint)
    throw InputError(first.manifest, "/sweep/fingerprint", first.fingerprint,
                     fmt::format("the shards' rows are not this sweep's (they make fingerprint {}): was a shard's CSV "
                                 "edited or run with other flags?",
                                 fingerprint));
  return merged;
}

}  // namespace cnnpar
