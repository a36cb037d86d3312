// Outputs: checked before work, staged, committed all-or-nothing.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include "base/error.hpp"
#include "base/output_files.hpp"

namespace fs = std::filesystem;
using cnnpar::InputError;
using cnnpar::OutputTransaction;

namespace {

struct TempFolder {
  fs::path path = fs::temp_directory_path() / ("cnnpar_out_" + std::to_string(::getpid()) + "_" +
                                              std::to_string(reinterpret_cast<std::uintptr_t>(this)));
  TempFolder() { fs::create_directories(path); }
  ~TempFolder() { fs::remove_all(path); }
};

std::string read(const fs::path& path) {
  std::ifstream stream(path);
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

int entries(const fs::path& folder) {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(folder)) ++count;
  return count;
}

}  // namespace

TEST_CASE("output paths are checked before any work, naming the option") {
  TempFolder t;
  CHECK_NOTHROW(cnnpar::check_output_path((t.path / "a.json").string(), "--json"));
  CHECK_THROWS_WITH(cnnpar::check_output_path((t.path / "no" / "a.json").string(), "--json"),
                    Catch::StartsWith("command line: --json: the output folder does not exist"));
  CHECK_THROWS_WITH(cnnpar::check_output_path(t.path.string(), "--csv"), Catch::Contains("the output path is a folder"));
  // /proc refuses new files even to root: the probe, not the permission bits, finds that.
  CHECK_THROWS_WITH(cnnpar::check_output_path("/proc/cnnpar.json", "--json"), Catch::Contains("not writable"));
  CHECK(entries(t.path) == 0);  // the probe leaves nothing
}

TEST_CASE("a transaction replaces nothing until commit, and nothing at all when dropped") {
  TempFolder t;
  const fs::path a = t.path / "a.csv", b = t.path / "b.json";
  cnnpar::write_file_atomic(a.string(), "old a");
  {
    OutputTransaction outputs;
    outputs.file(a.string(), "new a");
    outputs.file(b.string(), "new b");
    CHECK(read(a) == "old a");  // staged beside, not in place
    // Dropped without commit (an error or Ctrl-C later in the command).
  }
  CHECK(read(a) == "old a");
  CHECK_FALSE(fs::exists(b));
  CHECK(entries(t.path) == 1);  // no staged file left

  OutputTransaction outputs;
  outputs.file(a.string(), "new a");
  outputs.file(b.string(), "new b");
  outputs.commit();
  CHECK(read(a) == "new a");
  CHECK(read(b) == "new b");
  CHECK(entries(t.path) == 2);
}

TEST_CASE("a staged folder replaces the earlier one whole: no stale file stays") {
  TempFolder t;
  const fs::path report = t.path / "study";
  fs::create_directories(report);
  cnnpar::write_file_atomic((report / "removed-series.csv").string(), "stale");
  cnnpar::write_file_atomic((report / "report.md").string(), "old");
  {
    OutputTransaction outputs;
    const fs::path staged = outputs.folder(report.string());
    cnnpar::write_file_atomic((staged / "report.md").string(), "new");
  }  // dropped: the old report is untouched
  CHECK(read(report / "report.md") == "old");
  CHECK(entries(t.path) == 1);

  OutputTransaction outputs;
  const fs::path staged = outputs.folder(report.string());
  cnnpar::write_file_atomic((staged / "report.md").string(), "new");
  outputs.commit();
  CHECK(read(report / "report.md") == "new");
  CHECK_FALSE(fs::exists(report / "removed-series.csv"));
  CHECK(entries(t.path) == 1);  // neither the staged nor the old folder stays
}

TEST_CASE("a folder for a report must be a folder under a writable parent") {
  TempFolder t;
  cnnpar::write_file_atomic((t.path / "file").string(), "x");
  CHECK_THROWS_WITH(cnnpar::check_output_folder((t.path / "file").string(), "--out"), Catch::Contains("not a folder"));
  CHECK_THROWS_WITH(cnnpar::check_output_folder("/proc/cnnpar-reports/x", "--out"), Catch::Contains("does not exist"));
  CHECK_NOTHROW(cnnpar::check_output_folder((t.path / "new").string(), "--out"));
}
