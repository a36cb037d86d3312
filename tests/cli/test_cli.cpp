// Runs the built `cnnpar` binary on bad input: exit status 2, one message on stderr naming the
// file, the JSON path and the value, and no output file written. Plus the happy path.
#include <sys/wait.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

struct Result {
  int status = -1;
  std::string out, err;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("cnnpar_cli_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ / name) << content;
    return path_ / name;
  }

 private:
  fs::path path_;
  static inline int counter_ = 0;
};

Result run(const TempDir& dir, const std::string& args) {
  const fs::path out = dir.path() / "stdout.txt", err = dir.path() / "stderr.txt";
  const std::string command = std::string(CNNPAR_EXE) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int raw = std::system(command.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

// A valid small network: 1×32×32 input, conv 6 maps 5×5, pool, fc 10, softmax.
nlohmann::json small_network() {
  return nlohmann::json::parse(R"({
    "name": "tiny", "input": {"channels": 1, "height": 32, "width": 32},
    "layers": [
      {"name": "c1", "type": "conv", "maps": 6, "kernel": 5},
      {"name": "relu1", "type": "relu"},
      {"name": "s2", "type": "pool", "mode": "max", "kernel": 2, "stride": 2},
      {"name": "f3", "type": "fc", "outputs": 10},
      {"name": "loss", "type": "softmax"}
    ]})");
}

// Checks the bad-input contract for `args` (outputs go to out.json / out.csv in `dir`).
void expect_bad_input(const TempDir& dir, const std::string& args, const std::vector<std::string>& mentions) {
  const fs::path json = dir.path() / "out.json", csv = dir.path() / "out.csv";
  const Result r = run(dir, args + " --json " + json.string() + " --csv " + csv.string());
  INFO("cnnpar " << args << "\nstderr: " << r.err);
  CHECK(r.status == 2);
  // One message, one line.
  REQUIRE(!r.err.empty());
  CHECK(r.err.find('\n') == r.err.size() - 1);
  for (const std::string& m : mentions) CHECK(r.err.find(m) != std::string::npos);
  CHECK_FALSE(fs::exists(json));
  CHECK_FALSE(fs::exists(csv));
  for (const auto& entry : fs::directory_iterator(dir.path()))
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);  // no half-written file
}

// The bad-input contract for a command without --json and --csv: status 2, one line naming
// `mentions`, nothing left in `dir`.
void expect_refused(const TempDir& dir, const std::string& args, const std::vector<std::string>& mentions) {
  const Result r = run(dir, args);
  INFO("cnnpar " << args << "\nstderr: " << r.err);
  CHECK(r.status == 2);
  REQUIRE(!r.err.empty());
  CHECK(r.err.find('\n') == r.err.size() - 1);
  for (const std::string& m : mentions) CHECK(r.err.find(m) != std::string::npos);
  CHECK(fs::is_empty(dir.path()));
}

}  // namespace

TEST_CASE("malformed network JSON", "[cli]") {
  TempDir dir;
  const fs::path bad = dir.write("broken.json", "{\"name\": \"tiny\", \"layers\": [");
  expect_bad_input(dir, "predict --network " + bad.string() + " --strategy dp --nodes 1,2", {bad.string()});
}

TEST_CASE("unknown layer kind", "[cli]") {
  TempDir dir;
  nlohmann::json net = small_network();
  net["layers"][1]["type"] = "convolution";
  const fs::path file = dir.write("net.json", net.dump());
  expect_bad_input(dir, "predict --network " + file.string() + " --strategy dp --nodes 1,2",
                   {file.string(), "/layers/1/type", "convolution"});
}

TEST_CASE("kernel larger than its input", "[cli]") {
  TempDir dir;
  nlohmann::json net = small_network();
  net["layers"][0]["kernel"] = 40;  // 32×32 input, no padding
  const fs::path file = dir.write("net.json", net.dump());
  expect_bad_input(dir, "predict --network " + file.string() + " --strategy dp --nodes 1,2",
                   {file.string(), "/layers/0/kernel", "40"});
}

TEST_CASE("negative or zero sizes", "[cli]") {
  TempDir dir;
  for (int maps : {0, -3}) {
    nlohmann::json net = small_network();
    net["layers"][0]["maps"] = maps;
    const fs::path file = dir.write("net.json", net.dump());
    expect_bad_input(dir, "predict --network " + file.string() + " --strategy dp --nodes 1,2",
                     {file.string(), "/layers/0/maps", std::to_string(maps)});
  }
  nlohmann::json net = small_network();
  net["layers"][3]["outputs"] = 0;
  const fs::path file = dir.write("net.json", net.dump());
  expect_bad_input(dir, "predict --network " + file.string() + " --strategy dp --nodes 1,2",
                   {file.string(), "/layers/3/outputs", "0"});
}

TEST_CASE("a unit that does not parse", "[cli]") {
  TempDir dir;
  const fs::path net = dir.write("net.json", small_network().dump());
  const nlohmann::json platform = nlohmann::json::parse(R"({
    "name": "bad", "nodes": {"count": 4, "peak": "1Tf"},
    "network": {"bandwidth": "10Gbs", "latency": "1us"}})");
  const fs::path file = dir.write("platform.json", platform.dump());
  expect_bad_input(dir, "predict --network " + net.string() + " --platform " + file.string() + " --strategy dp --nodes 1,2",
                   {file.string(), "/network/bandwidth", "10Gbs"});
}

TEST_CASE("k or f out of range", "[cli]") {
  TempDir dir;
  expect_bad_input(dir, "predict --strategy lee --k 99 --nodes 1,2", {"command line", "/k", "99"});
  expect_bad_input(dir, "predict --strategy lee --k 0 --nodes 1,2", {"command line", "/k", "0"});
  expect_bad_input(dir, "predict --strategy lee --f 7 --nodes 1,2", {"command line", "/f", "7"});
  expect_bad_input(dir, "predict --strategy lee --f -1 --nodes 1,2", {"command line", "/f", "-1"});
}

TEST_CASE("batch not divisible by the node count", "[cli]") {
  TempDir dir;
  expect_bad_input(dir, "predict --batch 256 --nodes 1-4:1", {"command line", "/batch", "256"});
}

TEST_CASE("an uneven batch split is allowed on request, the default node list doubles", "[cli]") {
  TempDir dir;
  CHECK(run(dir, "predict --quiet --batch 256 --nodes 3 --uneven-batch").status == 0);
  const fs::path every = dir.path() / "every.json";
  REQUIRE(run(dir, "predict --quiet --nodes 1-128:1 --uneven-batch --json " + every.string()).status == 0);
  const nlohmann::json all_rows = nlohmann::json::parse(slurp(every)).at("rows");
  REQUIRE(all_rows.size() == 128);
  CHECK(all_rows[2].at("nodes") == 3);
  const fs::path json = dir.path() / "default.json";
  REQUIRE(run(dir, "predict --quiet --json " + json.string()).status == 0);
  const nlohmann::json rows = nlohmann::json::parse(slurp(json)).at("rows");
  REQUIRE(rows.size() == 8);  // the default node list 1-128 doubles: 1, 2, 4, ..., 128
  CHECK(rows[7].at("nodes") == 128);
}

TEST_CASE("bad node list and unknown engine", "[cli]") {
  TempDir dir;
  expect_bad_input(dir, "predict --nodes 4-2", {"command line", "--nodes", "4-2"});
  expect_bad_input(dir, "predict --nodes 1,2 --engine magic", {"--engine", "magic"});
}

TEST_CASE("predict writes JSON and CSV", "[cli]") {
  TempDir dir;
  const fs::path json = dir.path() / "rows.json", csv = dir.path() / "rows.csv";
  const Result r = run(dir, "predict --nodes 1,2,4 --json " + json.string() + " --csv " + csv.string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("speedup") != std::string::npos);
  const nlohmann::json rows = nlohmann::json::parse(slurp(json)).at("rows");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].at("nodes") == 1);
  CHECK(rows[0].at("speedup").get<double>() == Approx(1.0).epsilon(1e-12));  // T(1)/T(1)
  for (const auto& row : rows) {
    // efficiency = speedup / nodes
    CHECK(row.at("efficiency").get<double>() ==
          Approx(row.at("speedup").get<double>() / row.at("nodes").get<double>()).epsilon(1e-12));
  }
  const std::string text = slurp(csv);
  CHECK(std::count(text.begin(), text.end(), '\n') == 4);  // header + 3 rows
}

TEST_CASE("help, trace and compare run", "[cli]") {
  TempDir dir;
  CHECK(run(dir, "--help").status == 0);
  CHECK(run(dir, "predict --help").status == 0);
  const fs::path trace = dir.path() / "t.json", chrome = dir.path() / "c.json";
  REQUIRE(run(dir, "trace --nodes 4 --out " + trace.string() + " --chrome " + chrome.string()).status == 0);
  CHECK(nlohmann::json::parse(slurp(chrome)).at("traceEvents").size() > 0);
  const Result same = run(dir, "compare " + trace.string() + " " + trace.string());
  CHECK(same.status == 0);
  CHECK(same.out.find("iteration_s") != std::string::npos);
  const fs::path broken = dir.write("broken.json", "[1, 2");
  const Result bad = run(dir, "compare " + broken.string() + " " + trace.string());
  CHECK(bad.status == 2);
  CHECK(bad.err.find(broken.string()) != std::string::npos);
  CHECK(run(dir, "predict --no-such-option").status == 2);
}

TEST_CASE("balance: legend, Figure 1 only on the note's systems, CSV and JSON", "[cli][balance]") {
  TempDir dir;
  const auto count = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  // The README's `cnnpar balance` (VGG-A on Cori): every column header is explained in the legend
  // (named once in the header, once in the legend), and Cori is none of the note's systems.
  const Result plain = run(dir, "balance");
  CHECK(plain.status == 0);
  for (const std::string column : {"DP FLOP/byte", "DP min img/node", "DP max nodes", "MP FLOP/byte", "MP max nodes"})
    CHECK(count(plain.out, column) >= 2);
  CHECK(plain.out.find("Figure 1:") == std::string::npos);
  CHECK(plain.out.find("Xeon + 10Gb Ethernet") == std::string::npos);

  // On the note's Xeon + 10GbE: Figure 1 with that column marked; F1 needs ⌈2250 / 1.5⌉ = 1500.
  const fs::path csv = dir.path() / "b.csv", json = dir.path() / "b.json";
  const Result note = run(dir, "balance --network alexnet --nodes 32 --platform intel-xeon-10gbe --csv " + csv.string() +
                                   " --json " + json.string());
  REQUIRE(note.status == 0);
  CHECK(note.out.find("* Xeon + 10Gb Ethernet") != std::string::npos);
  CHECK(note.out.find("1500") != std::string::npos);
  // conv3 at 32 nodes: the note's choice (data) and that it is comm bound there (1.5·13·13·8 = 2028 < 2250).
  const std::size_t conv3 = note.out.find("\nconv3 ");
  REQUIRE(conv3 != std::string::npos);
  const std::string conv3_line = note.out.substr(conv3 + 1, note.out.find('\n', conv3 + 1) - conv3 - 1);
  CHECK(conv3_line.find("data, comm bound") != std::string::npos);

  // CSV: header + AlexNet's 8 conv/fc layers, the run's columns first.
  const std::string table = slurp(csv);
  CHECK(count(table, "\n") == 9);
  CHECK(table.rfind("network,platform,engine,strategy,options,batch,nodes,layer,", 0) == 0);
  CHECK(table.find("\nalexnet,intel-xeon-10gbe,balance,,,256,32,conv3,conv,") != std::string::npos);
  // JSON: the same rows, and Figure 1 naming this platform's column.
  const nlohmann::json document = nlohmann::json::parse(slurp(json));
  CHECK(document.at("layers").size() == 8);
  CHECK(document.at("intel_figure_1").at("this_platform") == "Xeon + 10Gb Ethernet");
  CHECK(document.at("layers")[2].at("dp_min_images_per_node") == 9);  // ⌈2250 / (1.5·169)⌉
  // Off the note's systems there is no Figure 1 in the JSON either.
  REQUIRE(run(dir, "balance -q --json " + json.string()).status == 0);
  CHECK(nlohmann::json::parse(slurp(json)).at("intel_figure_1").is_null());

  // Bad input: status 2, one line naming the flag and value, neither output written.
  expect_bad_input(dir, "balance --nodes abc", {"--nodes", "(value: abc)"});
  expect_bad_input(dir, "balance --nodes 1-4", {"--nodes", "one node count", "(value: 1-4)"});
  expect_bad_input(dir, "balance --nodes 0", {"--nodes", "(value: 0)"});
}

TEST_CASE("per_layer assignments that cannot be built", "[cli]") {
  TempDir dir;
  const std::string base = "predict --network vgg-a --strategy per_layer --nodes 1,8 ";
  // An unknown layer, a layer assigned twice, an unknown partition, a layer without weights.
  expect_bad_input(dir, base + "--assign fc9=model", {"--assign", "/fc9", "fc9", "no conv or fc layer"});
  expect_bad_input(dir, base + "--assign 'fc6=model,fc*=data'", {"--assign", "/fc*", "assigned twice"});
  expect_bad_input(dir, base + "--assign fc6=sideways", {"--assign", "/fc6", "sideways"});
  expect_bad_input(dir, base + "--assign relu6=model", {"--assign", "/relu6", "no parameters"});
  // A model split over more ranks than the layer has output units (fc2: 10 classes).
  expect_bad_input(dir, "predict --network veeriah-cifar10 --strategy per_layer --assign fc2=model --batch 64 --nodes 16",
                   {"--assign", "/fc2", "fc2=model", "10 output units"});
  // An assignment that cannot be made consistent: a replicated layer between batch-sliced
  // layers delays its update into the next iteration, which one iteration does not have.
  expect_bad_input(dir, "predict --network vgg-a --strategy per_layer --assign fc6=replicated --nodes 4 --iterations 1 "
                        "--warmup 0",
                   {"--assign", "/fc6", "fc6=replicated", "at least 2 iterations"});
  // The same checks for an assignment file name the file and the JSON path.
  const fs::path file = dir.write("assign.json", R"({"assign": {"fc6": "model", "fc99": "data"}})");
  expect_bad_input(dir, base + "--assign " + file.string(), {file.string(), "/assign/fc99", "fc99"});
}

TEST_CASE("hybrid and per_layer predict", "[cli]") {
  TempDir dir;
  const fs::path assign = dir.write("assign.json", R"({"assign": {"conv*": "data", "fc6": "model", "fc7": "model", "fc8": "replicated"}})");
  for (const std::string& args : {std::string("--strategy hybrid"), "--strategy per_layer --assign " + assign.string()}) {
    const fs::path csv = dir.path() / "out.csv";
    const Result r = run(dir, "predict --network vgg-a " + args + " --nodes 1-128 --csv " + csv.string());
    INFO(args << "\n" << r.err);
    CHECK(r.status == 0);
    CHECK(slurp(csv).find(",256,128,") != std::string::npos);  // batch 256, 128 nodes
    fs::remove(csv);
  }
}

TEST_CASE("every registered strategy option is a flag with its default in --help", "[cli]") {
  TempDir dir;
  for (const char* command : {"predict", "simulate", "trace", "run"}) {
    const Result r = run(dir, std::string(command) + " --help");
    INFO(command << "\n" << r.out);
    CHECK(r.status == 0);
    // One line per option: flag, type, unit and default, and the strategies that take it.
    CHECK(r.out.find("--k INT") != std::string::npos);
    CHECK(r.out.find("default 9; lee, per_layer, hybrid") != std::string::npos);
    CHECK(r.out.find("--f INT") != std::string::npos);
    CHECK(r.out.find("default 2; lee") != std::string::npos);
    CHECK(r.out.find("--bucket-bytes SIZE") != std::string::npos);
    CHECK(r.out.find("default 25MiB; dp_buckets") != std::string::npos);
    CHECK(r.out.find("--defer INT") != std::string::npos);
    CHECK(r.out.find("--assign TEXT") != std::string::npos);
    CHECK(r.out.find("--sync CHOICE") != std::string::npos);
    CHECK(r.out.find("dp | dp_layerwise | dp_buckets | lee | per_layer | hybrid") != std::string::npos);
  }
}

TEST_CASE("a strategy option the chosen strategy does not take is bad input", "[cli]") {
  TempDir dir;
  expect_bad_input(dir, "predict --strategy dp --k 3 --nodes 1,2", {"command line", "/k", "3", "takes no --k"});
  expect_bad_input(dir, "predict --strategy dp_buckets --bucket-bytes 3parsecs --nodes 1,2",
                   {"command line", "/bucket_bytes", "3parsecs"});
  expect_bad_input(dir, "predict --strategy hybrid --sync sometimes --nodes 1,2", {"command line", "/sync", "sometimes"});
}

TEST_CASE("cnnpar --version and cnnpar list", "[cli]") {
  TempDir dir;
  Result r = run(dir, "--version");
  CHECK(r.status == 0);
  CHECK(r.out == std::string("cnnpar ") + CNNPAR_VERSION + "\n");
  r = run(dir, "list");
  CHECK(r.status == 0);
  // Every registered strategy with its options' defaults, and the embedded zoo.
  CHECK(r.out.find("hybrid ") != std::string::npos);
  CHECK(r.out.find("--bucket-bytes 25MiB") != std::string::npos);
  CHECK(r.out.find("vgg-a ") != std::string::npos);
  CHECK(r.out.find("132.9 M parameters") != std::string::npos);  // VGG-A, Lee et al.'s 133 M
  CHECK(r.out.find("cori-haswell") != std::string::npos);
  CHECK(r.out.find("hybrid-cori") != std::string::npos);
  const fs::path json = dir.path() / "list.json";
  r = run(dir, "list strategies --json " + json.string());
  CHECK(r.status == 0);
  const nlohmann::json document = nlohmann::json::parse(slurp(json));
  // One per line of the registration table, read as text.
  std::ifstream table(CNNPAR_SOURCE_DIR "/workload/strategies/registered.def");
  std::size_t registered = 0;
  for (std::string line; std::getline(table, line);) registered += line.rfind("CNNPAR_STRATEGY(", 0) == 0 ? 1 : 0;
  CHECK(registered >= 8);  // the eight of the papers at least
  CHECK(document.at("strategies").size() == registered);
  CHECK(!document.contains("networks"));
  r = run(dir, "list galaxies");
  CHECK(r.status == 2);
  CHECK(r.err == "cnnpar: command line: /what: expected networks, platforms, strategies or studies (value: galaxies)\n");
}

namespace {

// One option line of a CLI11 --help: "  -n,--nodes NODES=8   help" (the help may start on the
// next line when the names are long).
struct HelpOption {
  std::string type;  ///< "NODES", "INT", "" for a flag
  std::string help;
};

// Runs `program --help` (program = "cnnpar SUB" or the cnnpar-run path) and returns its
// options by long name.
std::map<std::string, HelpOption> help_options(const TempDir& dir, const std::string& command) {
  const fs::path out = dir.path() / "help.txt";
  const int raw = std::system((command + " --help >" + out.string() + " 2>&1").c_str());
  REQUIRE(WIFEXITED(raw));
  REQUIRE(WEXITSTATUS(raw) == 0);
  std::istringstream lines(slurp(out));
  std::map<std::string, HelpOption> options;
  std::string line, pending;
  while (std::getline(lines, line)) {
    if (!pending.empty() && line.rfind("      ", 0) == 0) {  // the help of a long option line
      options[pending].help = line.substr(line.find_first_not_of(' '));
      pending.clear();
      continue;
    }
    pending.clear();
    if (line.rfind("  -", 0) != 0) continue;
    // NAMES [TYPE[=DEFAULT]] [REQUIRED | ...] HELP; the help follows after one space when the
    // names are long, else after the padding.
    std::istringstream words(line);
    std::string names, word, type, help;
    words >> names;
    std::streampos rest = words.tellg();
    if (words >> word && !word.empty() && std::isupper(static_cast<unsigned char>(word[0])) &&
        word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") >= std::min(word.find('='), word.size())) {
      type = word.substr(0, word.find('='));  // the default may differ between commands
      rest = words.tellg();
      while (words >> word && (word == "REQUIRED" || word == "...")) rest = words.tellg();
    }
    help = rest == std::streampos(-1) ? "" : line.substr(std::size_t(rest));
    help = help.empty() ? "" : help.substr(std::min(help.size(), help.find_first_not_of(' ')));
    std::string name = names.substr(names.rfind(',') == std::string::npos ? 0 : names.rfind(',') + 1);
    if (name == "--help" || name == "--version") continue;
    options[name] = {type, help};
    if (help.empty()) pending = name;
  }
  return options;
}

}  // namespace

TEST_CASE("a flag has one name, one argument syntax and one help text in every command", "[cli][help]") {
  TempDir dir;
  std::map<std::string, std::map<std::string, HelpOption>> commands;
  const std::string exe = CNNPAR_EXE;
  for (const std::string& sub : std::vector<std::string>{"predict", "simulate", "trace", "balance", "compare", "report",
                                                         "list", "run", "calibrate", "sweep", "testbed create",
                                                         "testbed run", "testbed status", "testbed destroy"})
    commands["cnnpar " + sub] = help_options(dir, exe + " " + sub);
#ifdef CNNPAR_RUN_EXE
  commands["cnnpar-run"] = help_options(dir, CNNPAR_RUN_EXE);
#endif
  // Output flags name what each command writes; they must agree on the syntax only.
  const std::set<std::string> outputs = {"--json", "--csv", "--out"};
  std::map<std::string, std::pair<std::string, HelpOption>> first;  // flag -> (command, option)
  for (const auto& [command, options] : commands) {
    for (const auto& [name, option] : options) {
      INFO(command << " " << name);
      CHECK_FALSE(option.help.empty());
      const auto seen = first.find(name);
      if (seen == first.end()) {
        first[name] = {command, option};
        continue;
      }
      INFO("first seen in " << seen->second.first);
      CHECK(option.type == seen->second.second.type);
      if (outputs.count(name) == 0) CHECK(option.help == seen->second.second.help);
      else CHECK(option.help.rfind("write", 0) == 0);
    }
  }
  // The names the issue found split: one name each now.
  for (const auto& [command, options] : commands) {
    INFO(command);
    // testbed run alone: P ranks on a testbed of N >= P nodes, two different counts.
    if (command != "cnnpar testbed run") CHECK(options.count("--ranks") == 0);
    CHECK(options.count("--mpiexec-arg") == 0);
    if (options.count("--progress") > 0) CHECK(options.at("--progress").type.empty());  // a flag everywhere
  }
  for (const char* command : {"cnnpar predict", "cnnpar simulate", "cnnpar trace", "cnnpar run", "cnnpar calibrate"}) {
    INFO(command);
    CHECK(commands.at(command).count("--nodes") == 1);
    CHECK(commands.at(command).count("--batch") == 1);
  }
  CHECK(commands.at("cnnpar run").count("--lr") == 1);
  CHECK(commands.at("cnnpar run").count("--comm-progress") == 1);
}

TEST_CASE("run shows its SGD defaults, the ones cnnpar-run uses", "[cli][help]") {
  TempDir dir;
  const Result r = run(dir, "run --help");
  CHECK(r.status == 0);
  // Caffe's and PyTorch's usual SGD settings, kept by cnnpar-run since the first executor.
  CHECK(r.out.find("--lr FLOAT=0.01 ") != std::string::npos);
  CHECK(r.out.find("--momentum FLOAT=0.9 ") != std::string::npos);
  CHECK(r.out.find("--weight-decay FLOAT=0.0005 ") != std::string::npos);
}

TEST_CASE("predict and compare write CSVs with the same columns", "[cli][csv]") {
  TempDir dir;
  const fs::path predict_csv = dir.path() / "p.csv", a = dir.path() / "a.json", b = dir.path() / "b.json",
                 compare_csv = dir.path() / "c.csv";
  const std::string config = "--network lenet-5 --strategy lee --k 3 --f 1 --batch 64 ";
  REQUIRE(run(dir, "predict " + config + "--nodes 1,4 -q --csv " + predict_csv.string()).status == 0);
  REQUIRE(run(dir, "trace " + config + "--nodes 4 -q --out " + a.string()).status == 0);
  REQUIRE(run(dir, "trace " + config + "--nodes 4 -q --engine simgrid --out " + b.string()).status == 0);
  REQUIRE(run(dir, "compare -q " + a.string() + " " + b.string() + " --csv " + compare_csv.string()).status == 0);
  // The documented header (README "One command line", docs/formats.md).
  const std::string header =
      "network,platform,engine,strategy,options,batch,nodes,iteration_s,compute_s,comm_s,exposed_comm_s,"
      "overlap_ratio_percent,speedup,efficiency";
  std::istringstream p(slurp(predict_csv)), c(slurp(compare_csv));
  std::string line;
  std::vector<std::string> predict_lines, compare_lines;
  while (std::getline(p, line)) predict_lines.push_back(line);
  while (std::getline(c, line)) compare_lines.push_back(line);
  REQUIRE(predict_lines.size() == 3);
  REQUIRE(compare_lines.size() == 3);
  CHECK(predict_lines[0] == header);
  CHECK(compare_lines[0] == header);
  CHECK(predict_lines[2].rfind("lenet-5,cori-haswell,analytic,lee,k=3 f=1,64,4,", 0) == 0);
  // The analytic row of compare is the same configuration on the same engine as predict's
  // P = 4 row: equal up to the empty speedup and efficiency (no baseline in one trace).
  const std::string predict_row = predict_lines[2].substr(0, predict_lines[2].rfind(',', predict_lines[2].rfind(',') - 1));
  CHECK(compare_lines[1] == predict_row + ",,");
  CHECK(compare_lines[2].rfind("lenet-5,cori-haswell,simgrid,lee,k=3 f=1,64,4,", 0) == 0);
}

TEST_CASE("terminal tables give each column one unit", "[cli]") {
  TempDir dir;
  const Result r = run(dir, "predict --nodes 1,128");
  REQUIRE(r.status == 0);
  std::istringstream lines(r.out);
  std::string title, header, row;
  std::getline(lines, title);
  std::getline(lines, header);
  // Iteration time falls from ~9 s at P = 1 (2.3 TFLOP/s, VGG-A at N = 256) to ~0.1 s at 128:
  // one column in one unit, headed by it, and no unit in any cell.
  CHECK(header.find("iteration s") != std::string::npos);
  while (std::getline(lines, row)) {
    INFO(row);
    for (const char* unit : {" s", "ms", "us", "ns"}) CHECK(row.find(unit) == std::string::npos);
  }
}

TEST_CASE("standard output and devices are written in place, never replaced", "[cli][outputs]") {
  TempDir dir;
  Result r = run(dir, "predict --nodes 1,2 --csv -");
  REQUIRE(r.status == 0);
  CHECK(r.out.rfind("network,platform,engine,", 0) == 0);  // the CSV alone: no table mixed in
  // A link to /dev/null: a rename would have replaced the link (as root: the device) by a file.
  const fs::path link = dir.path() / "null";
  fs::create_symlink("/dev/null", link);
  r = run(dir, "predict --nodes 1,2 -q --json " + link.string());
  CHECK(r.status == 0);
  CHECK(fs::is_symlink(link));
  CHECK(fs::is_character_file("/dev/null"));
}

TEST_CASE("the SimGrid settings reach predict and trace, and refuse other engines", "[cli][simgrid]") {
  TempDir dir;
  // Four hosts on private 1 GBps links: slower than Cori's 8 GB/s, so the prediction must change.
  const fs::path xml = dir.write("four.xml", R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="node-" suffix="" radical="0-3" speed="1Gf" bw="1GBps" lat="5us"/>
</platform>
)");
  const fs::path simulated = dir.path() / "s.csv", predicted = dir.path() / "p.csv", plain = dir.path() / "n.csv";
  const std::string config = "--network lenet-5 --strategy dp --batch 64 --nodes 4 -q ";
  REQUIRE(run(dir, "simulate " + config + "--platform-xml " + xml.string() + " --csv " + simulated.string()).status == 0);
  REQUIRE(run(dir, "predict --engine simgrid " + config + "--platform-xml " + xml.string() + " --csv " + predicted.string())
              .status == 0);
  REQUIRE(run(dir, "predict --engine simgrid " + config + "--csv " + plain.string()).status == 0);
  CHECK(slurp(predicted) == slurp(simulated));
  CHECK(slurp(predicted) != slurp(plain));
  CHECK(slurp(predicted).find("four.xml (nodes of cori-haswell)") != std::string::npos);
  const Result r = run(dir, "trace --engine simgrid " + config + "--platform-xml " + xml.string() + " --out " +
                                (dir.path() / "t.json").string());
  CHECK(r.status == 0);
  expect_bad_input(dir, "predict --nodes 1,2 --platform-xml " + xml.string(), {"command line", "--platform-xml", "four.xml"});
  TempDir empty;
  expect_refused(empty, "trace --network-model LV08", {"command line", "--network-model", "LV08"});
}

TEST_CASE("trace --like replays the configuration of another trace", "[cli]") {
  TempDir dir;
  const fs::path first = dir.path() / "first.json", second = dir.path() / "second.json";
  REQUIRE(run(dir, "trace --network lenet-5 --platform intel-xeon-fdr --strategy lee --k 3 --f 1 --batch 48 --nodes 3 "
                   "--iterations 5 --warmup 2 --columns recomputed -q --out " + first.string())
              .status == 0);
  REQUIRE(run(dir, "trace -q --like " + first.string() + " --out " + second.string()).status == 0);
  const nlohmann::json a = nlohmann::json::parse(slurp(first)), b = nlohmann::json::parse(slurp(second));
  // The same configuration on the same deterministic engine: the same trace.
  CHECK(b.at("metadata") == a.at("metadata"));
  CHECK(b == a);
  // A flag given as well wins over the trace.
  REQUIRE(run(dir, "trace -q --like " + first.string() + " --k 2 --out " + second.string()).status == 0);
  CHECK(nlohmann::json::parse(slurp(second)).at("metadata").at("options").at("k") == 2);
  TempDir empty;
  expect_refused(empty, "trace --like " + (empty.path() / "none.json").string(), {"none.json"});
}

TEST_CASE("a launcher that does not split, or a host file with srun, is bad input before anything starts", "[cli]") {
  TempDir dir;
  const std::string run_tiny = std::string("run --network ") + CNNPAR_SOURCE_DIR +
                               "/tests/real/data/tiny-cifar.json --nodes 2 --batch 16 --trace " +
                               (dir.path() / "t.json").string();
  expect_refused(dir, run_tiny + " --mpiexec \"mpiexec 'open\"", {"command line", "--mpiexec", "mpiexec 'open"});
  expect_refused(dir, run_tiny + " --mpiexec \"srun --mpi=pmi2\" --hostfile /etc/hostname",
                   {"command line", "--hostfile", "/etc/hostname", "Slurm"});
}

namespace {

// Column `name` of a CSV without quoted fields, one entry per row.
std::vector<std::string> csv_column(const std::string& csv, const std::string& name) {
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  const auto split = [](const std::string& text) {
    std::vector<std::string> fields;
    std::stringstream stream(text);
    std::string field;
    while (std::getline(stream, field, ',')) fields.push_back(field);
    if (!text.empty() && text.back() == ',') fields.push_back("");
    return fields;
  };
  const std::vector<std::string> header = split(line);
  const auto at = std::find(header.begin(), header.end(), name);
  REQUIRE(at != header.end());
  std::vector<std::string> column;
  while (std::getline(lines, line)) column.push_back(split(line).at(std::size_t(at - header.begin())));
  return column;
}

}  // namespace

TEST_CASE("sweep answers the bandwidth question in one command, as predict --set and a platform file do",
          "[cli][sweep]") {
  TempDir dir;
  const fs::path sweep_csv = dir.path() / "sweep.csv";
  const Result r = run(dir, "sweep --axis network.bandwidth=1Gbps,10Gbps,100Gbps --nodes 1,32 --csv " + sweep_csv.string());
  REQUIRE(r.status == 0);
  const std::string csv = slurp(sweep_csv);
  const std::vector<std::string> bandwidths = csv_column(csv, "network.bandwidth"), nodes = csv_column(csv, "nodes"),
                                 speedups = csv_column(csv, "speedup"), iterations = csv_column(csv, "iteration_s");
  REQUIRE(bandwidths == std::vector<std::string>{"1Gbps", "1Gbps", "10Gbps", "10Gbps", "100Gbps", "100Gbps"});
  // Each bandwidth again through predict --set: the same iteration time and speedup at 32 nodes.
  double previous_speedup = 0;
  for (std::size_t row = 1; row < bandwidths.size(); row += 2) {
    INFO(bandwidths[row]);
    REQUIRE(nodes[row] == "32");
    const fs::path predict_csv = dir.path() / "predict.csv";
    REQUIRE(run(dir, "predict --set network.bandwidth=" + bandwidths[row] + " --nodes 1,32 -q --csv " + predict_csv.string())
                .status == 0);
    const std::string predicted = slurp(predict_csv);
    CHECK(csv_column(predicted, "iteration_s").at(1) == iterations[row]);
    CHECK(csv_column(predicted, "speedup").at(1) == speedups[row]);
    // A faster link never slows an iteration down: the speedup does not fall with bandwidth.
    CHECK(std::stod(speedups[row]) >= previous_speedup);
    previous_speedup = std::stod(speedups[row]);
  }
  // The 10 Gbit/s row from a hand-edited copy of the platform file.
  nlohmann::json platform = nlohmann::json::parse(slurp(fs::path(CNNPAR_SOURCE_DIR) / "scenarios/platforms/cori-haswell.json"));
  platform["network"]["bandwidth"] = "10Gbps";
  const fs::path platform_file = dir.path() / "cori-10gbps.json";
  std::ofstream(platform_file) << platform.dump(2);
  const fs::path file_csv = dir.path() / "file.csv";
  REQUIRE(run(dir, "predict --platform " + platform_file.string() + " --nodes 1,32 -q --csv " + file_csv.string()).status == 0);
  CHECK(csv_column(slurp(file_csv), "iteration_s").at(1) == iterations[3]);
  CHECK(csv_column(slurp(file_csv), "speedup").at(1) == speedups[3]);
}

TEST_CASE("set: --set takes platform paths in the file's own units and strategy options", "[cli][sweep]") {
  TempDir dir;
  const fs::path a = dir.path() / "a.csv", b = dir.path() / "b.csv";
  // nodes.efficiency.gemm 0.3 instead of 0.6 doubles the GEMM time, so one node's iteration gets
  // slower; k=3 through --set is --k 3.
  REQUIRE(run(dir, "predict --nodes 1,8 --set nodes.efficiency.gemm=0.3 --set k=3 -q --csv " + a.string()).status == 0);
  REQUIRE(run(dir, "predict --nodes 1,8 --set nodes.efficiency.gemm=0.3 --k 3 -q --csv " + b.string()).status == 0);
  CHECK(slurp(a) == slurp(b));
  CHECK(csv_column(slurp(a), "options").at(0) == "k=3 f=2");
  const fs::path c = dir.path() / "c.csv";
  REQUIRE(run(dir, "predict --nodes 1 -q --csv " + c.string()).status == 0);
  CHECK(std::stod(csv_column(slurp(a), "iteration_s").at(0)) > std::stod(csv_column(slurp(c), "iteration_s").at(0)));

  expect_bad_input(dir, "sweep --nodes 8 --set network.bandwith=1Gbps", {"--set", "network.bandwith=1Gbps", "bandwith"});
  expect_bad_input(dir, "sweep --nodes 8 --axis network.bandwidth=1Gbps,5us", {"network.bandwidth=5us", "unit"});
  expect_bad_input(dir, "sweep --nodes 8 --axis k=", {"--axis", "k="});
  expect_bad_input(dir, "sweep --nodes 8 --strategy dp --axis k=3,9", {"--axis", "k", "dp"});
  expect_bad_input(dir, "sweep --nodes 8 --axis strategy=dp,dp_layerwise --set k=9", {"--set", "k=9", "dp_layerwise"});
  expect_bad_input(dir, "sweep --nodes 8 --engine ns3", {"--engine", "ns3"});
}

TEST_CASE("sweep: the shipped sweep file runs, and flags given as well win", "[cli][sweep]") {
  TempDir dir;
  const std::string file = std::string(CNNPAR_SOURCE_DIR) + "/scenarios/sweeps/bandwidth-vgg-a.json";
  const fs::path csv = dir.path() / "s.csv";
  // 3 bandwidths × 3 strategies at one node count (--nodes wins over the file's "1-128").
  REQUIRE(run(dir, "sweep " + file + " --nodes 8 -q --csv " + csv.string()).status == 0);
  const std::string text = slurp(csv);
  CHECK(csv_column(text, "network.bandwidth").size() == 9);
  CHECK(csv_column(text, "nodes") == std::vector<std::string>(9, "8"));
  CHECK(csv_column(text, "strategy") ==
        std::vector<std::string>{"dp", "lee", "hybrid", "dp", "lee", "hybrid", "dp", "lee", "hybrid"});
}

TEST_CASE("advise on VGG-A, batch 256, 64 nodes on Cori: the rule, the search, the re-check and the file", "[cli][advise]") {
  TempDir dir;
  const fs::path assign = dir.path() / "assign.json", advice_file = dir.path() / "advice.json";
  const Result r = run(dir, "advise --network vgg-a --platform cori-haswell --batch 256 --nodes 64 --recheck 1 --out " +
                                assign.string() + " --json " + advice_file.string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json advice = nlohmann::json::parse(slurp(advice_file));
  // The rule with its numbers: conv1 3·224·224·256 = 38,535,168 > 64·3·3 = 576 (data);
  // fc6 3·1·1·256 = 768 < 4,096 (model).
  for (const nlohmann::json& row : advice["rule"]) {
    const std::string layer = row["layer"];
    INFO(layer);
    CHECK(row["choice"] == (layer.rfind("fc", 0) == 0 ? "model" : "data"));
  }
  CHECK(advice["rule"][0]["data_side"] == 38535168.0);
  CHECK(advice["rule"][0]["model_side"] == 576.0);
  CHECK(advice["rule"][8]["data_side"] == 768.0);
  CHECK(advice["rule"][8]["model_side"] == 4096.0);
  CHECK(r.out.find("38535168") != std::string::npos);
  CHECK(advice["search"]["space"] == 177147);
  CHECK(advice["search"]["scored"].get<int>() > 0);
  // The printed winner is the file's assignment, and predict with that file gives the time the
  // search ranked it at.
  const std::string winner = advice["winner"]["assign"];
  CHECK(r.out.find(winner) != std::string::npos);
  const nlohmann::json file = nlohmann::json::parse(slurp(assign));
  CHECK(file["assign"]["fc6"] == "model");
  const fs::path predicted = dir.path() / "p.json";
  REQUIRE(run(dir, "predict --strategy per_layer --assign " + assign.string() + " --nodes 64 -q --json " + predicted.string())
              .status == 0);
  const nlohmann::json rows = nlohmann::json::parse(slurp(predicted))["rows"];
  double ranked_s = 0;
  for (const nlohmann::json& entry : advice["ranked"])
    if (entry["assign"] == winner) ranked_s = entry["iteration_s"];
  CHECK(rows[0]["iteration_s"].get<double>() == ranked_s);
  // The gain over dp is T_dp / T_winner, on each engine.
  const nlohmann::json& recheck = advice["recheck"];
  double dp_s = 0;
  for (const nlohmann::json& c : recheck)
    if (c["label"] == "dp") dp_s = c["analytic_s"];
  CHECK(recheck[0]["gain_vs_dp_analytic"].get<double>() == Approx(dp_s / recheck[0]["analytic_s"].get<double>()).epsilon(1e-12));
#ifdef CNNPAR_TEST_SIMGRID
  CHECK(recheck[0].contains("simgrid_s"));
  CHECK(r.out.find("SimGrid") != std::string::npos);
#endif
  expect_refused(TempDir(), "advise --nodes 1,2", {"--nodes"});
}

#ifdef CNNPAR_TEST_FIT
TEST_CASE("fit: the bandwidth a trace was predicted with is recovered, and the fitted platform loads", "[cli][fit]") {
  TempDir dir;
  // The "measurement": dp on 4 nodes of Cori with a 2 GB/s link instead of its 8 GB/s.
  const fs::path trace = dir.path() / "t.json";
  REQUIRE(run(dir, "trace --network lenet-5 --strategy dp --nodes 4 --batch 64 --set network.bandwidth=2GBps -q --out " +
                       trace.string()).status == 0);
  const fs::path fitted = dir.path() / "fitted.json", report = dir.path() / "fit.json";
  const Result r = run(dir, "fit --trace " + trace.string() + " --free network.bandwidth --out " + fitted.string() +
                                " --json " + report.string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("network.bandwidth") != std::string::npos);
  CHECK(r.out.find("not estimable") != std::string::npos);  // one observation, one parameter
  const nlohmann::json fit = nlohmann::json::parse(slurp(report));
  CHECK(fit["free"][0]["start"].get<double>() == Approx(8e9));
  CHECK(fit["free"][0]["fitted"].get<double>() == Approx(2e9).epsilon(1e-6));
  CHECK(fit["observations"][0]["nodes"] == 4);
  CHECK(fit["leave_one_out"]["skipped"].is_string());
  const nlohmann::json platform = nlohmann::json::parse(slurp(fitted));
  CHECK(platform["name"] == "cori-haswell-fitted");
  CHECK(platform["source"].get<std::string>().find("cnnpar fit") != std::string::npos);
  CHECK(platform["source"].get<std::string>().find(trace.string()) != std::string::npos);  // the observation
  // The fitted platform is a platform: predicting the traced configuration on it gives the trace's time.
  const Result again = run(dir, "predict --network lenet-5 --strategy dp --nodes 4 --batch 64 -q --json - --platform " +
                                    fitted.string());
  REQUIRE(again.status == 0);
  const double measured = fit["observations"][0]["observed"].get<double>();
  CHECK(nlohmann::json::parse(again.out)["rows"][0]["iteration_s"].get<double>() == Approx(measured).epsilon(1e-6));
}

TEST_CASE("fit: a fit that does not converge exits 1 with one message and writes nothing", "[cli][fit]") {
  TempDir dir;
  const fs::path fitted = dir.path() / "fitted.json", report = dir.path() / "fit.json";
  const Result r = run(dir, "fit --study " + std::string(CNNPAR_SOURCE_DIR) +
                                "/tests/cli/bad_input/fit_study.json --free network.bandwidth=1Tbps --max-iterations 1 "
                                "--out " + fitted.string() + " --json " + report.string());
  CHECK(r.status == 1);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("did not converge") != std::string::npos);
  CHECK_FALSE(fs::exists(fitted));
  CHECK_FALSE(fs::exists(report));
  CHECK(r.out.empty());
}
#endif
