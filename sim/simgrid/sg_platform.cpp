#include "sim/simgrid/sg_platform.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include "base/error.hpp"
#include "base/text.hpp"

namespace sg4 = simgrid::s4u;

namespace cnnpar::simgrid_engine {

namespace {

/** Positive integers separated by commas; nullopt-like empty vector on any error. */
std::vector<unsigned> parse_counts(const std::string& text) {
  std::vector<unsigned> values;
  for (const std::string& part : split(text, ',')) {
    if (part.empty() || part.find_first_not_of("0123456789 ") != std::string::npos) return {};
    const unsigned long value = std::stoul(part);
    if (value == 0 || value > 1000000) return {};
    values.push_back(unsigned(value));
  }
  return values;
}

std::string platform_file(const Platform& platform) {
  return platform.name.empty() ? std::string("<platform>") : fmt::format("platform '{}'", platform.name);
}

/** Host for cluster leaf `id`, recorded in `hosts` (leaf ids are 0..leaves-1). */
auto leaf_host_callback(std::vector<sg4::Host*>& hosts) {
  return [&hosts](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id)
             -> std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> {
    sg4::Host* host = zone->create_host(fmt::format("node-{}", id), kHostSpeedFlops);
    host->seal();
    if (hosts.size() <= id) hosts.resize(id + 1, nullptr);
    hosts[id] = host;
    return {host->get_netpoint(), nullptr};
  };
}

void check_leaves(unsigned long leaves, int ranks, const std::string& file, const std::string& path,
                  const std::string& value) {
  if (leaves < static_cast<unsigned long>(ranks))
    throw InputError(file, path, value,
                     fmt::format("this topology has {} hosts but the schedule needs {} ranks", leaves, ranks));
}

}  // namespace

unsigned long FatTreeSpec::leaves() const {
  unsigned long total = 1;
  for (unsigned d : down) total *= d;
  return total;
}

FatTreeSpec parse_fat_tree(const std::string& text, const std::string& file) {
  const auto fail = [&](const std::string& why) {
    return InputError(file, "/network/fat_tree", text,
                      "fat_tree must be \"levels;down,...;up,...;links,...\" (e.g. \"2;16,8;1,4;1,1\"): " + why);
  };
  const auto parts = split(text, ';');
  if (parts.size() != 4) throw fail("expected 4 fields separated by ';'");
  FatTreeSpec spec;
  const auto levels = parse_counts(parts[0]);
  if (levels.size() != 1) throw fail("levels must be one positive integer");
  spec.levels = levels[0];
  spec.down = parse_counts(parts[1]);
  spec.up = parse_counts(parts[2]);
  spec.count = parse_counts(parts[3]);
  if (spec.down.size() != spec.levels || spec.up.size() != spec.levels || spec.count.size() != spec.levels)
    throw fail("each list needs one positive integer per level");
  return spec;
}

std::vector<unsigned long> parse_torus(const std::string& text, const std::string& file) {
  const auto counts = parse_counts(text);
  if (counts.empty())
    throw InputError(file, "/network/torus", text,
                     "torus must be positive dimensions separated by commas (e.g. \"4,4,8\")");
  return {counts.begin(), counts.end()};
}

unsigned long DragonflySpec::leaves() const {
  return static_cast<unsigned long>(groups) * chassis * routers * nodes;
}

DragonflySpec parse_dragonfly(const std::string& text, const std::string& file) {
  const auto fail = [&] {
    return InputError(file, "/network/dragonfly", text,
                      "dragonfly must be \"groups,links;chassis,links;routers,links;nodes\" (e.g. \"3,4;4,3;5,1;2\")");
  };
  const auto parts = split(text, ';');
  if (parts.size() != 4) throw fail();
  const auto g = parse_counts(parts[0]), c = parse_counts(parts[1]), r = parse_counts(parts[2]),
             n = parse_counts(parts[3]);
  if (g.size() != 2 || c.size() != 2 || r.size() != 2 || n.size() != 1) throw fail();
  return {g[0], g[1], c[0], c[1], r[0], r[1], n[0]};
}

std::vector<sg4::Host*> build_platform(const Platform& platform, int ranks) {
  const std::string file = platform_file(platform);
  const NetworkSpec& net = platform.network;
  if (ranks > platform.nodes.count)
    throw InputError(file, "/nodes/count", std::to_string(platform.nodes.count),
                     fmt::format("the schedule needs {} ranks but the platform has {} nodes", ranks,
                                 platform.nodes.count));
  if (!(net.bandwidth_Bps > 0))
    throw InputError(file, "/network/bandwidth", fmt::format("{}", net.bandwidth_Bps), "bandwidth must be positive");
  if (net.latency_s < 0)
    throw InputError(file, "/network/latency", fmt::format("{}", net.latency_s), "latency must not be negative");

  std::vector<sg4::Host*> hosts;
  switch (net.topology) {
    case Topology::crossbar:
    case Topology::star: {
      sg4::NetZone* zone = sg4::create_star_zone("cluster");
      for (int r = 0; r < ranks; ++r) {
        sg4::Host* host = zone->create_host(fmt::format("node-{}", r), kHostSpeedFlops);
        host->seal();
        const std::string link_name = fmt::format("link-{}", r);
        if (net.topology == Topology::crossbar) {
          sg4::Link* link = zone->create_split_duplex_link(link_name, net.bandwidth_Bps);
          link->set_latency(net.latency_s / 2)->seal();
          zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                          {{link, sg4::LinkInRoute::Direction::UP}}, true);
        } else {
          sg4::Link* link = zone->create_link(link_name, net.bandwidth_Bps);
          link->set_latency(net.latency_s / 2)->set_sharing_policy(sg4::Link::SharingPolicy::SHARED)->seal();
          zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(link)}, true);
        }
        hosts.push_back(host);
      }
      zone->seal();
      return hosts;
    }
    case Topology::fat_tree: {
      const FatTreeSpec spec = parse_fat_tree(net.fat_tree, file);
      check_leaves(spec.leaves(), ranks, file, "/network/fat_tree", net.fat_tree);
      sg4::NetZone* zone = sg4::create_fatTree_zone(
          "cluster", nullptr, sg4::FatTreeParams(spec.levels, spec.down, spec.up, spec.count),
          sg4::ClusterCallbacks(leaf_host_callback(hosts)), net.bandwidth_Bps, net.latency_s / 2,
          sg4::Link::SharingPolicy::SPLITDUPLEX);
      zone->seal();
      break;
    }
    case Topology::torus: {
      const auto dims = parse_torus(net.torus, file);
      unsigned long leaves = 1;
      for (auto d : dims) leaves *= d;
      check_leaves(leaves, ranks, file, "/network/torus", net.torus);
      sg4::NetZone* zone =
          sg4::create_torus_zone("cluster", nullptr, dims, sg4::ClusterCallbacks(leaf_host_callback(hosts)),
                                 net.bandwidth_Bps, net.latency_s, sg4::Link::SharingPolicy::SPLITDUPLEX);
      zone->seal();
      break;
    }
    case Topology::dragonfly: {
      const DragonflySpec spec = parse_dragonfly(net.dragonfly, file);
      check_leaves(spec.leaves(), ranks, file, "/network/dragonfly", net.dragonfly);
      sg4::NetZone* zone = sg4::create_dragonfly_zone(
          "cluster", nullptr,
          sg4::DragonflyParams({spec.groups, spec.group_links}, {spec.chassis, spec.chassis_links},
                               {spec.routers, spec.router_links}, spec.nodes),
          sg4::ClusterCallbacks(leaf_host_callback(hosts)), net.bandwidth_Bps, net.latency_s / 2,
          sg4::Link::SharingPolicy::SPLITDUPLEX);
      zone->seal();
      break;
    }
  }
  CNNPAR_ASSERT(hosts.size() >= std::size_t(ranks), "cluster zone created fewer hosts than its leaves");
  hosts.resize(std::size_t(ranks));
  return hosts;
}

std::vector<sg4::Host*> load_platform_xml(const std::string& file, int ranks) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(file, error))
    throw InputError(file, "", file, "SimGrid platform file not found or not a regular file");
  try {
    sg4::Engine::get_instance()->load_platform(file);
  } catch (const std::exception& e) {
    throw InputError(file, "", file, fmt::format("SimGrid rejected this platform file: {}", e.what()));
  }
  std::vector<sg4::Host*> hosts = sg4::Engine::get_instance()->get_all_hosts();
  // get_all_hosts() is ordered by name; ranks follow declaration (netpoint creation) order.
  std::sort(hosts.begin(), hosts.end(), [](const sg4::Host* a, const sg4::Host* b) {
    return a->get_netpoint()->id() < b->get_netpoint()->id();
  });
  if (hosts.size() < std::size_t(ranks))
    throw InputError(file, "", std::to_string(hosts.size()),
                     fmt::format("this SimGrid platform has {} hosts but the schedule needs {} ranks",
                                 hosts.size(), ranks));
  hosts.resize(std::size_t(ranks));
  return hosts;
}

}  // namespace cnnpar::simgrid_engine
