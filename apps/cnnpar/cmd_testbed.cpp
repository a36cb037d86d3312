// `cnnpar testbed create|destroy|status|run`: a bandwidth-shaped cluster of network namespaces
// on this machine (testbed/testbed.hpp), and programs run across it under mpiexec.
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/cnnpar/commands.hpp"
#include "apps/common/flags.hpp"
#include "base/child_process.hpp"
#include "base/error.hpp"
#include "base/output_files.hpp"
#include "base/units.hpp"
#include "testbed/testbed.hpp"

namespace cnnpar::cli {

namespace {

/** The flags that describe a testbed (create, run), as typed; parsed by spec(). */
struct SpecFlags {
  std::string name = testbed::Spec{}.name;
  std::string nodes = "2";
  std::string bandwidth = "1Gbps";
  std::string latency = "0s";
  std::string burst = "256KiB";
  CLI::Option *nodes_flag = nullptr, *bandwidth_flag = nullptr, *latency_flag = nullptr, *burst_flag = nullptr;

  void add(CLI::App& sub) {
    nodes_flag = flags::nodes(sub, nodes);
    bandwidth_flag = sub.add_option("--bandwidth", bandwidth,
                                    "link rate each way of every node (SimGrid units: 1Gbps = 10^9 bit/s, 125MBps)")
                         ->type_name("RATE")
                         ->capture_default_str();
    latency_flag = sub.add_option("--latency", latency,
                                  "one-way latency added to every link with netem (0s = the veth's own; a kernel "
                                  "without netem shapes bandwidth only)")
                       ->type_name("TIME")
                       ->capture_default_str();
    burst_flag = sub.add_option("--burst", burst, "tbf bucket of every link (64KiB stalls TCP)")
                     ->type_name("SIZE")
                     ->capture_default_str();
    name_flag(sub, name);
  }

  static CLI::Option* name_flag(CLI::App& sub, std::string& name) {
    return sub.add_option("--name", name, "testbed name: namespaces NAME-sw, NAME-n0 .. NAME-n<N-1>")
        ->type_name("NAME")
        ->capture_default_str();
  }

  /** @throws InputError naming the first shaping flag given that `existing` does not match. */
  void check_matches(const testbed::Spec& wanted, const testbed::Spec& existing) const {
    const auto differs = [&](const CLI::Option* flag, bool same, const std::string& typed, const std::string& have) {
      if (flag->count() > 0 && !same)
        throw InputError("command line", flag->get_name(), typed,
                         fmt::format("testbed {} exists with {}: leave the flag out to use it as it is, or destroy it "
                                     "first",
                                     existing.name, have));
    };
    differs(nodes_flag, wanted.nodes == existing.nodes, nodes, fmt::format("{} nodes", existing.nodes));
    differs(bandwidth_flag, wanted.bandwidth_Bps == existing.bandwidth_Bps, bandwidth,
            fmt::format("{}Bps each way", existing.bandwidth_Bps));
    differs(latency_flag, wanted.latency_s == existing.latency_s, latency, format_seconds(existing.latency_s) + " latency");
    differs(burst_flag, wanted.burst_bytes == existing.burst_bytes, burst, format_bytes(existing.burst_bytes) + " burst");
  }

  testbed::Spec spec() const {
    const auto quantity = [](const std::string& text, Unit unit, const char* flag, bool allow_zero) {
      try {
        const double value = parse_quantity(text, unit, allow_zero && text == "0");
        if (value == 0 && !allow_zero) throw std::invalid_argument("must be > 0");
        return value;
      } catch (const std::invalid_argument& e) {
        throw InputError("command line", flag, text, e.what());
      }
    };
    testbed::Spec spec;
    spec.name = name;
    spec.nodes = flags::parse_one_node_count(nodes);
    spec.bandwidth_Bps = quantity(bandwidth, Unit::bandwidth_Bps, "--bandwidth", false);
    spec.latency_s = quantity(latency, Unit::time_s, "--latency", true);
    spec.burst_bytes = quantity(burst, Unit::size_bytes, "--burst", false);
    try {
      testbed::check_spec(spec, "command line", "--");
    } catch (const InputError& e) {  // the value as typed, not in base units
      const std::string& flag = e.json_path();
      const std::string typed = flag == "--nodes"       ? nodes
                                : flag == "--bandwidth" ? bandwidth
                                : flag == "--latency"   ? latency
                                : flag == "--burst"     ? burst
                                                        : name;
      throw InputError(e.file(), flag, typed, e.reason());
    }
    return spec;
  }
};

void warn_unshaped_latency(const testbed::Testbed& bed) {
  if (bed.spec().latency_s > 0 && !bed.latency_shaped())
    fmt::print(stderr, "cnnpar testbed: this kernel has no netem: only bandwidth is shaped, latency stays the veth's own\n");
}

struct CreateOptions {
  SpecFlags spec;
  bool quiet = false;
};

int create(const CreateOptions& o) {
  const testbed::Spec spec = o.spec.spec();
  testbed::require_root("command line", "testbed create");
  const testbed::Testbed bed = testbed::Testbed::create(spec);
  warn_unshaped_latency(bed);
  if (!o.quiet) fmt::print("{}", testbed::format_status(testbed::status(spec.name)));
  return 0;
}

struct DestroyOptions {
  std::string name = testbed::Spec{}.name;
  bool all = false;
  bool quiet = false;
};

int destroy(const DestroyOptions& o) {
  if (!o.all) testbed::check_name(o.name, "command line", "--name");
  testbed::require_root("command line", "testbed destroy");
  const std::vector<std::string> names = o.all ? testbed::list() : std::vector<std::string>{o.name};
  for (const std::string& name : names) {
    const bool existed = testbed::status(name).exists();
    testbed::destroy(name);
    if (!o.quiet) fmt::print("{}\n", existed ? "destroyed testbed " + name : "testbed " + name + ": none");
  }
  if (names.empty() && !o.quiet) fmt::print("no testbeds\n");
  return 0;
}

struct StatusOptions {
  std::string name;  // "" = every testbed
  std::string json_out;
};

int show_status(const StatusOptions& o) {
  if (!o.name.empty()) testbed::check_name(o.name, "command line", "--name");
  check_output_path(o.json_out, "--json");
  testbed::require_root("command line", "testbed status");
  const std::vector<std::string> names = o.name.empty() ? testbed::list() : std::vector<std::string>{o.name};
  nlohmann::json document = {{"netem_available", testbed::netem_available()}, {"testbeds", nlohmann::json::array()}};
  std::string text;
  for (const std::string& name : names) {
    const testbed::Status status = testbed::status(name);
    document["testbeds"].push_back(testbed::to_json(status));
    text += testbed::format_status(status);
  }
  if (names.empty())
    text = fmt::format("no testbeds (netem {})\n", testbed::netem_available() ? "available" : "not in this kernel");
  if (!o.json_out.empty()) write_file_atomic(o.json_out, document.dump(2) + "\n");
  if (o.json_out != "-") fmt::print("{}", text);
  return 0;
}

struct ProgramRunOptions {
  SpecFlags spec;
  int ranks = 0;  // 0 = one per node
  bool keep = false;
  bool quiet = false;
  std::vector<std::string> program;
};

int run_program(const ProgramRunOptions& o) {
  const testbed::Spec wanted = o.spec.spec();
  // An existing testbed is used as it is, and kept; create options must then agree with it.
  const std::optional<testbed::Testbed> existing = testbed::Testbed::attach(wanted.name);
  if (existing) o.spec.check_matches(wanted, existing->spec());
  const int nodes = existing ? existing->spec().nodes : wanted.nodes;
  const int ranks = o.ranks == 0 ? nodes : o.ranks;
  if (ranks < 1 || ranks > nodes)
    throw InputError("command line", "--ranks", std::to_string(o.ranks),
                     fmt::format("one rank per node: 1 to the testbed's {} nodes", nodes));
  testbed::require_root("command line", "testbed run");

  const testbed::Session session(wanted, testbed::Session::IfExists::reuse, o.keep);
  warn_unshaped_latency(session.testbed());
  std::vector<std::string> command = session.testbed().launcher();
  command.push_back("-n");
  command.push_back(std::to_string(ranks));
  command.insert(command.end(), o.program.begin(), o.program.end());
  if (!o.quiet) fmt::print("cnnpar testbed run: {}\n", fmt::join(command, " "));
  const int status = run_child(command);
  if (!o.quiet && session.created() && !o.keep) fmt::print("cnnpar testbed run: removing testbed {}\n", wanted.name);
  return status;
}

}  // namespace

Runner add_testbed_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "testbed", "a bandwidth-shaped cluster of network namespaces on this machine (root): create, destroy, status, run");
  sub->require_subcommand(1, 1);

  auto create_options = std::make_shared<CreateOptions>();
  CLI::App* create_sub = sub->add_subcommand("create", "create a testbed: N node namespaces joined by a shaped bridge");
  create_options->spec.add(*create_sub);
  flags::quiet(*create_sub, create_options->quiet);

  auto destroy_options = std::make_shared<DestroyOptions>();
  CLI::App* destroy_sub =
      sub->add_subcommand("destroy", "remove a testbed: its processes, namespaces (veths, qdiscs) and state folder");
  CLI::Option* name = SpecFlags::name_flag(*destroy_sub, destroy_options->name);
  destroy_sub->add_flag("--all", destroy_options->all, "remove every testbed on this machine (not with --name)");
  flags::quiet(*destroy_sub, destroy_options->quiet);

  auto status_options = std::make_shared<StatusOptions>();
  CLI::App* status_sub = sub->add_subcommand(
      "status", "show what exists: nodes, addresses, rates each way, latency, processes inside (all testbeds by default)");
  SpecFlags::name_flag(*status_sub, status_options->name);
  flags::json_out(*status_sub, status_options->json_out, "the status");

  auto run_options = std::make_shared<ProgramRunOptions>();
  CLI::App* run_sub = sub->add_subcommand(
      "run", "run PROGRAM under the testbed's mpiexec, one rank per node (creates the testbed if absent, and removes it "
             "afterwards unless --keep or it existed); exit status = PROGRAM's");
  run_options->spec.add(*run_sub);
  run_sub->add_option("--ranks", run_options->ranks, "ranks, at most one per node (0 = one on every node)")
      ->capture_default_str();
  run_sub->add_flag("--keep", run_options->keep, "leave a testbed this run created in place");
  flags::quiet(*run_sub, run_options->quiet);
  run_sub->add_option("program", run_options->program, "PROGRAM ARGS... (after --)")->required()->expected(-1);

  return [=]() -> int {
    if (create_sub->parsed()) return create(*create_options);
    if (destroy_sub->parsed()) {
      if (destroy_options->all && name->count() > 0)
        throw InputError("command line", "--all", destroy_options->name, "--all removes every testbed: leave out --name");
      return destroy(*destroy_options);
    }
    if (status_sub->parsed()) return show_status(*status_options);
    return run_program(*run_options);
  };
}

}  // namespace cnnpar::cli
