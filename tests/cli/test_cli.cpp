// Runs the built `cnnpar` binary on bad input: exit status 2, one message on stderr naming the
// file, the JSON path and the value, and no output file written. Plus the happy path.
#include <sys/wait.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

TEST_CASE("an uneven batch split is allowed on request; the default node list doubles", "[cli]") {
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

TEST_CASE("help, balance, trace and compare run", "[cli]") {
  TempDir dir;
  CHECK(run(dir, "--help").status == 0);
  CHECK(run(dir, "predict --help").status == 0);
  const Result balance = run(dir, "balance");
  CHECK(balance.status == 0);
  CHECK(balance.out.find("1500") != std::string::npos);  // F1 on Xeon + 10GbE, from the note
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
    CHECK(slurp(csv).find("\n128,") != std::string::npos);
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
  CHECK(document.at("strategies").size() == 6);
  CHECK(!document.contains("networks"));
  r = run(dir, "list galaxies");
  CHECK(r.status == 2);
  CHECK(r.err == "cnnpar: command line: /what: expected networks, platforms, strategies or studies (value: galaxies)\n");
}
