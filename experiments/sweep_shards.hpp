#pragma once
// A sweep split into N disjoint shards (`cnnpar sweep --shard I/N`), e.g. the tasks of a Slurm
// job array, and merged back (`cnnpar sweep --merge`) into the CSV an unsharded run writes.
//
// Row t of the sweep (0-based, in sweep order) belongs to shard t mod N: interleaving spreads
// the costly large node counts evenly. Each shard writes its rows (a normal, resumable sweep
// CSV) and, once every row is done, a manifest beside it (CSV + ".shard.json") naming the
// shard and the sweep's fingerprint: a hash of the header and of every row's key in order,
// which the merge checks the merged rows against.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cnnpar {

struct ShardSpec {
  int index = 0;  ///< I, 0-based
  int count = 1;  ///< N
  /** Whether row `row` of the sweep belongs to this shard. */
  bool owns(std::size_t row) const { return int(row % std::size_t(count)) == index; }
};

/** "I/N" with 0 <= I < N. @throws InputError(origin, flag, text, reason). */
ShardSpec parse_shard(const std::string& text, const std::string& origin, const std::string& flag);

/** 16 hex digits identifying a sweep: FNV-1a (64 bits) over the header and every row key, each
 *  followed by a line break. */
std::string sweep_fingerprint(const std::string& header, const std::vector<std::string>& row_keys);

/** Where a shard's manifest is: `csv` + ".shard.json". */
std::string shard_manifest_path(const std::string& csv);

/** The manifest of a finished shard. */
nlohmann::json shard_manifest(const ShardSpec& shard, const std::string& fingerprint, std::size_t sweep_rows,
                              std::size_t shard_rows);

/** Merges the CSVs of every shard of one sweep (each with its manifest) into the CSV of the
 *  whole sweep, in sweep order: byte for byte what the unsharded sweep writes.
 *  @throws InputError naming the manifest (its JSON path and value) for shards of different
 *  sweeps or a shard given twice, "command line" with --merge for a missing shard, and the
 *  shard's CSV (its line and value) for rows that are not the sweep's. */
std::string merge_sweep_shards(const std::vector<std::string>& shard_csvs);

}  // namespace cnnpar
