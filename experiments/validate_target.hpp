#pragma once
// Where `cnnpar validate` measures: the testbed (network namespaces on this machine, every link
// shaped as the grid's link setting says) or a cluster (a launcher command or an MPICH host
// file; its links are what they are, so the grid's links must be "native").
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/validation.hpp"

namespace cnnpar {

/** The testbed `cnnpar validate` creates unless told another name. */
inline constexpr const char* kValidationTestbedName = "cnnpar-validate";

class RunTarget {
 public:
  virtual ~RunTarget() = default;
  /** Before the first run: the testbed is created (or an existing one of that name reused). */
  virtual void start() = 0;
  /** Shapes every link as `link` says (testbed); nothing on a cluster. */
  virtual void set_link(const LinkSetting& link) = 0;
  /** The command that starts `program` (the executable, then its arguments) on `ranks` ranks. */
  virtual std::vector<std::string> command(int ranks, const std::vector<std::string>& program) const = 0;
  /** After the last run: the testbed is removed unless kept or found already up. Destruction
   *  does the same when a run ends by an exception or Ctrl-C. */
  virtual void finish() = 0;
  /** For the report's environment. */
  virtual nlohmann::json describe() const = 0;
  /** The token bucket that shapes each node link (bytes; network.link_burst): the testbed's
   *  tbf burst, 0 on a cluster. */
  virtual double link_burst_bytes() const = 0;
};

/** A cluster when `mpiexec` or `hostfile` is given, else the testbed named `testbed_name`.
 *  @throws InputError naming the grid file, the path and the value: a shaped bandwidth or
 *  latency on a cluster, a latency on a kernel without netem, the testbed without root
 *  (path "/bandwidths", value "uid N"); and for a host file that does not exist or a launcher
 *  that does not split (command line). */
std::unique_ptr<RunTarget> make_run_target(const ValidationGrid& grid, const std::string& mpiexec,
                                           const std::string& hostfile, const std::string& testbed_name, bool keep);

}  // namespace cnnpar
