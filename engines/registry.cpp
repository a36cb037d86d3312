#include "engines/registry.hpp"

#include <filesystem>

#include "base/error.hpp"
#include "sim/analytic/analytic_engine.hpp"
#ifdef CNNPAR_HAVE_SIMGRID
#include <dlfcn.h>

#include "sim/simgrid/simgrid_engine.hpp"
#endif

namespace cnnpar {

#ifdef CNNPAR_HAVE_SIMGRID
namespace {

// Loads the SimGrid engine's module once (sim/simgrid/simgrid_module.cpp) and never unloads it:
// its engines may outlive any one call.
std::unique_ptr<Engine> load_simgrid_engine(const SimgridOptions& options) {
  using Make = Engine* (*)(const SimgridOptions*);
  static const Make make = [] {
    std::error_code error;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
    const std::string beside = (exe.parent_path() / std::filesystem::path(CNNPAR_SIMGRID_MODULE).filename()).string();
    void* module = nullptr;
    for (const std::string& path : {beside, std::string(CNNPAR_SIMGRID_MODULE)})
      if ((module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    if (!module)
      throw InputError("command line", "--engine", "simgrid",
                       std::string("the SimGrid engine's module does not load: ") + dlerror());
    const auto found = reinterpret_cast<Make>(dlsym(module, "cnnpar_make_simgrid_engine"));
    CNNPAR_ASSERT(found != nullptr, "the SimGrid module exports cnnpar_make_simgrid_engine");
    return found;
  }();
  return std::unique_ptr<Engine>(make(&options));
}

}  // namespace
#endif

std::vector<std::string> engine_names() {
#ifdef CNNPAR_HAVE_SIMGRID
  return {"analytic", "simgrid"};
#else
  return {"analytic"};
#endif
}

int default_ring_messages() {
#ifdef CNNPAR_HAVE_SIMGRID
  return kDefaultRingMessages;
#else
  return 0;
#endif
}

void check_engine_settings(const EngineSettings& settings) {
  if (settings.name != "analytic" && settings.name != "simgrid")
    throw InputError("command line", "--engine", settings.name, "expected analytic or simgrid");
#ifndef CNNPAR_HAVE_SIMGRID
  if (settings.name == "simgrid")
    throw InputError("command line", "--engine", settings.name,
                     "this cnnpar was built without SimGrid (configure with CNNPAR_WITH_SIMGRID=ON)");
#endif
  if (settings.network_model != "CM02" && settings.network_model != "LV08")
    throw InputError("command line", "--network-model", settings.network_model, "expected CM02 or LV08");
  if (settings.name != "simgrid") {
    if (settings.network_model != "CM02")
      throw InputError("command line", "--network-model", settings.network_model,
                       "only the SimGrid engine has one (add --engine simgrid)");
    if (!settings.platform_xml.empty())
      throw InputError("command line", "--platform-xml", settings.platform_xml,
                       "only the SimGrid engine reads one (add --engine simgrid)");
    if (settings.ring_messages)
      throw InputError("command line", "--ring-messages", std::to_string(*settings.ring_messages),
                       "only the SimGrid engine sends messages (add --engine simgrid)");
  }
  if (settings.ring_messages && (*settings.ring_messages < 0 || *settings.ring_messages > 1'000'000))
    throw InputError("command line", "--ring-messages", std::to_string(*settings.ring_messages),
                     "expected 0 (one message per ring step) or the most messages per ring, 1 to 1000000");
  std::error_code ec;
  if (!settings.platform_xml.empty() && !std::filesystem::is_regular_file(settings.platform_xml, ec))
    throw InputError("command line", "--platform-xml", settings.platform_xml, "no such file");
}

std::unique_ptr<Engine> make_engine(const EngineSettings& settings) {
  check_engine_settings(settings);
  if (settings.name == "analytic") return make_analytic_engine();
#ifdef CNNPAR_HAVE_SIMGRID
  SimgridOptions simgrid;
  simgrid.network_model = settings.network_model;
  simgrid.platform_xml = settings.platform_xml;
  if (settings.ring_messages) simgrid.ring_messages = *settings.ring_messages;
  return load_simgrid_engine(simgrid);
#else
  CNNPAR_ASSERT(false, "check_engine_settings refuses SimGrid in a build without it");
  return nullptr;
#endif
}

Trace replay_once(const Schedule& schedule, const Platform& platform, const EngineSettings& settings) {
  Trace trace = make_engine(settings)->run(schedule, platform);
  if (!settings.platform_xml.empty()) trace.metadata["platform_xml"] = settings.platform_xml;
  return trace;
}

std::string platform_label(const Platform& platform, const std::string& platform_xml) {
  if (platform_xml.empty()) return platform.name;
  return std::filesystem::path(platform_xml).filename().string() + " (nodes of " + platform.name + ")";
}

}  // namespace cnnpar
