#pragma once
// The engines this build has, found by name: the one place that knows whether SimGrid was built.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/engine.hpp"
#include "model/platform.hpp"

namespace cnnpar {

struct EngineSettings {
  std::string name = "analytic";  ///< analytic | simgrid
  /** SimGrid's network model, CM02 (α-β, what the analytic engine agrees with) or LV08. */
  std::string network_model = "CM02";
  /** SimGrid only: an XML platform loaded instead of the one built from the platform's network. */
  std::string platform_xml;
  /** SimGrid only: the most messages a rank sends per ring collective (SimgridOptions::ring_messages);
   *  0 = one per step; none = the engine's default. */
  std::optional<int> ring_messages;
};

/** SimGrid's most messages per ring collective when EngineSettings::ring_messages is none
 *  (0 in a build without SimGrid). */
int default_ring_messages();

/** "analytic", then "simgrid" when this build has it. */
std::vector<std::string> engine_names();

/** Checks the settings as the command line gives them (--engine, --network-model,
 *  --platform-xml, --ring-messages). @throws InputError("command line", flag, value, reason): an unknown engine,
 *  SimGrid in a build without it, a network model or XML file given to another engine, an
 *  unknown network model or a missing XML file. */
void check_engine_settings(const EngineSettings& settings);

/** @throws InputError as check_engine_settings. */
std::unique_ptr<Engine> make_engine(const EngineSettings& settings);

/** One replay of `schedule` on the engine of `settings`; the XML platform, if any, is
 *  recorded in the trace's metadata ("platform_xml"). SimGrid runs in a forked child. */
Trace replay_once(const Schedule& schedule, const Platform& platform, const EngineSettings& settings);

/** The platform as headers and CSVs name it: its name, or "FILE.xml (nodes of NAME)" when a
 *  SimGrid XML platform replaced its network. */
std::string platform_label(const Platform& platform, const std::string& platform_xml);

}  // namespace cnnpar
