// Golden predictions: reruns every case of tests/golden/cases.txt and compares the CSV with
// tests/golden/<name>.csv, number by number (relative tolerance kRelTol). A difference means the
// model's predictions changed: if deliberate, approve with scripts/approve_golden.sh.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace fs = std::filesystem;

namespace {

constexpr double kRelTol = 1e-6;  // CSV holds 9 significant digits for times, 6 for ratios

std::vector<std::vector<std::string>> read_csv(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    // RFC 4180: a quoted cell may hold commas, and "" is a quote.
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') cells.back() += line[++i];
      else if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.emplace_back();
      else cells.back() += c;
    }
    rows.push_back(cells);
  }
  return rows;
}

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  const auto last = text.find_last_not_of(" \t\r");
  return first == std::string::npos ? "" : text.substr(first, last - first + 1);
}

// Compares two prediction CSVs number by number, text cells exactly (header too).
void compare_csv(const fs::path& expected, const fs::path& actual) {
  const auto want = read_csv(expected), got = read_csv(actual);
  REQUIRE(want.size() == got.size());
  REQUIRE(!want.empty());
  CHECK(want[0] == got[0]);  // header
  for (std::size_t r = 1; r < want.size(); ++r) {
    REQUIRE(want[r].size() == got[r].size());
    REQUIRE(want[r].size() == want[0].size());
    for (std::size_t c = 0; c < want[r].size(); ++c) {
      INFO("row " << r << ", column " << want[0][c]);
      // The configuration columns (network, platform, engine, strategy, options) are text.
      std::size_t used = 0;
      double w = 0;
      try {
        w = std::stod(want[r][c], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != want[r][c].size()) {
        CHECK(got[r][c] == want[r][c]);
        continue;
      }
      CHECK(std::stod(got[r][c]) == Approx(w).epsilon(kRelTol).margin(1e-15));
    }
  }
}

}  // namespace

TEST_CASE("golden predictions", "[golden]") {
  const fs::path golden = fs::path(CNNPAR_SOURCE_DIR) / "tests" / "golden";
  std::ifstream cases(golden / "cases.txt");
  REQUIRE(cases.good());
  std::string line;
  int checked = 0;
  while (std::getline(cases, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto bar = line.find('|');
    REQUIRE(bar != std::string::npos);
    const std::string name = trim(line.substr(0, bar));
    const std::string args = trim(line.substr(bar + 1));
    const fs::path expected = golden / (name + ".csv");
    const fs::path actual = fs::temp_directory_path() / ("cnnpar_golden_" + std::to_string(::getpid()) + "_" + name + ".csv");
    const std::string command = std::string(CNNPAR_EXE) + " " + args + " --quiet --serial --csv " + actual.string();
    INFO("case " << name << ": cnnpar " << args);
    const int status = std::system(command.c_str());
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    REQUIRE(fs::exists(expected));
    compare_csv(expected, actual);
    fs::remove(actual);
    ++checked;
  }
  CHECK(checked > 0);
}

// Each study in scenarios/studies has its expected series CSVs in tests/golden/studies/<name>/.
TEST_CASE("golden studies", "[golden]") {
  const fs::path studies = fs::path(CNNPAR_SOURCE_DIR) / "scenarios" / "studies";
  const fs::path golden = fs::path(CNNPAR_SOURCE_DIR) / "tests" / "golden" / "studies";
  const fs::path out = fs::temp_directory_path() / ("cnnpar_golden_studies_" + std::to_string(::getpid()));
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(studies)) {
    if (entry.path().extension() != ".json") continue;
    const std::string name = entry.path().stem().string();
    INFO("study " << name);
    const std::string command = std::string(CNNPAR_EXE) + " report --quiet --serial --no-plot --study " +
                                entry.path().string() + " --out " + out.string();
    const int status = std::system(command.c_str());
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    REQUIRE(fs::is_directory(golden / name));
    std::vector<std::string> expected_files, actual_files;
    for (const auto& file : fs::directory_iterator(golden / name)) expected_files.push_back(file.path().filename().string());
    for (const auto& file : fs::directory_iterator(out / name))
      if (file.path().extension() == ".csv") actual_files.push_back(file.path().filename().string());
    std::sort(expected_files.begin(), expected_files.end());
    std::sort(actual_files.begin(), actual_files.end());
    CHECK(expected_files == actual_files);
    for (const std::string& file : expected_files) {
      INFO("series " << file);
      if (fs::exists(out / name / file)) compare_csv(golden / name / file, out / name / file);
    }
    ++checked;
  }
  fs::remove_all(out);
  CHECK(checked >= 5);
}
