#pragma once
// Builds the SimGrid platform of a cnnpar Platform inside the current s4u::Engine.
//
// Latency mapping (so that SimGrid and the closed forms share one α = latency + overhead):
//  * crossbar: one split-duplex link per node (bandwidth β, latency latency_s/2 each way);
//    a node-to-node route is {src UP, dst DOWN}: latency latency_s, bandwidth β, and the two
//    directions never share, so one collective at a time is contention-free;
//  * star: one half-duplex (SHARED) link per node, latency latency_s/2: a node's outgoing
//    and incoming traffic share β (a ring step that sends and receives at once runs at β/2);
//  * fat_tree, dragonfly: every link latency_s/2 and β, split-duplex, so a route through one
//    switch has latency_s and longer routes add latency_s/2 per extra link;
//  * torus: every link latency_s and β, split-duplex, so neighbours are latency_s apart.
// The per-message overhead is not a link property: the replay sleeps overhead_s before each send.
#include <string>
#include <vector>

#include <simgrid/s4u/Host.hpp>

#include "model/platform.hpp"

namespace cnnpar::simgrid_engine {

/** Host speed (FLOP/s) of every host built from a Platform; compute ops execute
 *  op_time_s × this many FLOPs so their duration equals the model's. */
inline constexpr double kHostSpeedFlops = 1e9;

/** Creates the zone of `platform.network` with at least `ranks` hosts and returns the hosts
 *  used for ranks 0..ranks-1. @throws InputError for bad topology parameters or too few nodes. */
std::vector<simgrid::s4u::Host*> build_platform(const Platform& platform, int ranks);

/** Loads a SimGrid XML platform file and returns its first `ranks` hosts in declaration order.
 *  @throws InputError if the file is missing, rejected by SimGrid, or has too few hosts. */
std::vector<simgrid::s4u::Host*> load_platform_xml(const std::string& file, int ranks);

/** Parses "levels;down,..;up,..;count,.." (SimGrid's fat-tree spelling).
 *  @throws InputError naming /network/fat_tree. */
struct FatTreeSpec {
  unsigned levels = 0;
  std::vector<unsigned> down, up, count;
  unsigned long leaves() const;
};
FatTreeSpec parse_fat_tree(const std::string& text, const std::string& file);
/** Parses "x,y,z". @throws InputError naming /network/torus. */
std::vector<unsigned long> parse_torus(const std::string& text, const std::string& file);
/** Parses "groups,links;chassis,links;routers,links;nodes". @throws InputError naming /network/dragonfly. */
struct DragonflySpec {
  unsigned groups = 0, group_links = 0, chassis = 0, chassis_links = 0, routers = 0, router_links = 0, nodes = 0;
  unsigned long leaves() const;
};
DragonflySpec parse_dragonfly(const std::string& text, const std::string& file);

}  // namespace cnnpar::simgrid_engine
