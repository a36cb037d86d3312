// The study report's plot: log-log axes with the linear line, the paper's values as markers,
// series that cannot hide each other and no yellow; with gnuplot installed, the SVG itself.
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include "experiments/report.hpp"

using namespace cnnpar;
namespace fs = std::filesystem;

namespace {

// Four series (gnuplot's default colours reach yellow at the fifth plot, linear included);
// "A" and "A again" are the same numbers, "B" carries paper values at two node counts.
Study test_study() {
  return parse_study(nlohmann::json::parse(R"({
    "name": "plot-test", "title": "plot test", "platform": "cori-haswell", "network": "vgg-a",
    "nodes": [1, 2, 4, 8],
    "series": [{"label": "A", "strategy": "dp"},
               {"label": "A again", "strategy": "dp"},
               {"label": "B", "strategy": "lee", "k": 6, "f": 1, "paper": {"speedup_at": {"4": 3.1, "8": 5.5}}},
               {"label": "C", "strategy": "dp_layerwise", "paper": {"max_speedup": 6.5}}]
  })"), "plot-test.json");
}

SeriesResult series(const std::string& label, const std::vector<double>& speedups) {
  SeriesResult out;
  out.label = label;
  out.file_stem = file_stem(label);
  int nodes = 1;
  for (double speedup : speedups) {
    SweepRow row;
    row.nodes = nodes;
    row.iteration_s = 1.0 / speedup;
    row.compute_s = row.iteration_s;
    row.speedup = speedup;
    row.efficiency = speedup / nodes;
    out.rows.push_back(row);
    nodes *= 2;
  }
  return out;
}

StudyResult test_result() {
  return {{series("A", {1, 1.9, 3.5, 6}), series("A again", {1, 1.9, 3.5, 6}), series("B", {1, 1.95, 3.7, 7}),
           series("C", {1, 1.8, 3, 4})}, {}};
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Yellow: red and green high, blue low (gnuplot's default yellow is rgb(240, 228, 66)).
bool yellow(int r, int g, int b) { return r >= 0xC0 && g >= 0xC0 && b <= 0x80; }

// Every "#RRGGBB" or "#AARRGGBB" of a gnuplot script.
std::vector<std::array<int, 3>> script_colours(const std::string& script) {
  std::vector<std::array<int, 3>> colours;
  const std::regex hex("#([0-9A-Fa-f]{2})?([0-9A-Fa-f]{2})([0-9A-Fa-f]{2})([0-9A-Fa-f]{2})\\b");
  for (auto it = std::sregex_iterator(script.begin(), script.end(), hex); it != std::sregex_iterator(); ++it)
    colours.push_back({std::stoi((*it)[2], nullptr, 16), std::stoi((*it)[3], nullptr, 16),
                       std::stoi((*it)[4], nullptr, 16)});
  return colours;
}

// The clauses of the script's plot command, one per drawn thing.
std::vector<std::string> plot_clauses(const std::string& script) {
  const std::size_t plot = script.find("\nplot ");
  REQUIRE(plot != std::string::npos);
  std::string command = script.substr(plot + 6);
  command = std::regex_replace(command, std::regex("\\\\\n"), "");
  std::vector<std::string> clauses;
  std::size_t start = 0;
  bool quoted = false;
  int depth = 0;  // commas inside "dt (2,5)" do not separate clauses
  for (std::size_t i = 0; i < command.size(); ++i) {
    if (command[i] == '\'') quoted = !quoted;
    if (!quoted && command[i] == '(') ++depth;
    if (!quoted && command[i] == ')') --depth;
    if (!quoted && depth == 0 && (command[i] == ',' || command[i] == '\n')) {
      clauses.push_back(command.substr(start, i - start));
      start = i + 1;
      if (command[i] == '\n') break;
    }
  }
  return clauses;
}

const std::string& clause_titled(const std::vector<std::string>& clauses, const std::string& title) {
  for (const std::string& clause : clauses)
    if (clause.find("title '" + title + "'") != std::string::npos) return clause;
  FAIL("no plot clause titled " << title);
  return clauses.front();
}

int option_value(const std::string& clause, const std::string& option) {
  std::smatch match;
  REQUIRE(std::regex_search(clause, match, std::regex("\\b" + option + " (\\d+)")));
  return std::stoi(match[1]);
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("cnnpar_report_test_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("the speedup plot is log-log with a linear line, paper markers and no yellow") {
  const Study study = test_study();
  const StudyResult result = test_result();
  const std::string script = study_gnuplot(study, result, "speedup.svg");

  CHECK(std::regex_search(script, std::regex("set logscale x 2\\b")));
  CHECK(std::regex_search(script, std::regex("set logscale (y|xy|yx)\\b")));
  const std::vector<std::string> clauses = plot_clauses(script);
  CHECK(clause_titled(clauses, "linear").find("with lines") != std::string::npos);

  // The paper's values: points only, the filled twin of the series' point type.
  const std::string& paper = clause_titled(clauses, "paper: B");
  CHECK(paper.find("with points") != std::string::npos);
  CHECK(option_value(paper, "pt") == plot_style(2).paper_point_type);
  CHECK(script.find("4,3.1\n") != std::string::npos);
  CHECK(script.find("8,5.5\n") != std::string::npos);
  // A maximum without a node count: labelled as the paper's, not placed at a guessed node.
  CHECK(std::regex_search(clause_titled(clauses, "paper: C (maximum, nodes not stated)"),
                          std::regex("^\\s*6\\.5 title")));

  // Every clause names its colour (gnuplot's defaults include yellow), none of them yellow.
  for (const std::string& clause : clauses) CHECK(clause.find("lc rgb '#") != std::string::npos);
  const auto colours = script_colours(script);
  CHECK(colours.size() >= clauses.size());
  for (const auto& [r, g, b] : colours) CHECK_FALSE(yellow(r, g, b));
  CHECK(script.find("yellow") == std::string::npos);

  // The two identical series: different dash and point types, and the key says they coincide.
  const std::string& first = clause_titled(clauses, "A");
  const std::string& second = clause_titled(clauses, "A again (= A within 1 %)");
  CHECK(option_value(first, "dt") != option_value(second, "dt"));
  CHECK(option_value(first, "pt") != option_value(second, "pt"));
  CHECK(study_markdown(study, result).find("A again and A lie on top of each other") != std::string::npos);
}

TEST_CASE("plot styles: distinct for the first six series, never yellow, prediction open and paper filled") {
  std::set<std::string> colours;
  std::set<int> points, dashes;
  for (std::size_t i = 0; i < 6; ++i) {
    const PlotStyle style = plot_style(i);
    colours.insert(style.colour);
    points.insert(style.point_type);
    dashes.insert(style.dash_type);
    // gnuplot's open shapes are the even point types 4..14, each followed by its filled twin.
    CHECK(style.point_type % 2 == 0);
    CHECK(style.paper_point_type == style.point_type + 1);
  }
  CHECK(colours.size() == 6);
  CHECK(points.size() == 6);
  CHECK(dashes.size() == 5);  // gnuplot has five dash types; the sixth differs in colour and shape
  for (std::size_t i = 0; i < 50; ++i) {
    const auto colour = script_colours(plot_style(i).colour);
    REQUIRE(colour.size() == 1);
    CHECK_FALSE(yellow(colour[0][0], colour[0][1], colour[0][2]));
  }
}

TEST_CASE("series coincide when their speedups agree within 1 % at every node count") {
  const StudyResult close{{series("a", {1, 2, 4}), series("b", {1, 2, 4.035}), series("c", {1, 2, 4.1})}, {}};
  const std::vector<Coincidence> found = coinciding_series(close);
  REQUIRE(found.size() == 1);  // c is 2.4 % above a and 1.6 % above b
  CHECK(found[0].earlier == 0);
  CHECK(found[0].later == 1);
  CHECK(found[0].largest_relative == Approx(0.035 / 4.035));
}

TEST_CASE("with gnuplot installed, the written SVG holds the paper's markers and no yellow") {
  const Study study = test_study();
  const StudyResult result = test_result();
  const TempDir dir;
  const bool plotted = write_study_report(study, result, dir.path.string(), true);
  if (std::system("gnuplot --version >/dev/null 2>&1") != 0) {
    CHECK_FALSE(plotted);
    WARN("gnuplot is not installed: the SVG is not checked");
    return;
  }
  REQUIRE(plotted);
  const std::string svg = slurp(dir.path / "speedup.svg");

  // gnuplot's SVG puts each plot in <g id="gnuplot_plot_N"><title>KEY TITLE</title> and draws a
  // point as <use xlink:href='#gpPtK'> with K = point type - 1. The first such group is the
  // data's (an opaque key draws the key's samples again later).
  const std::size_t group = svg.find("<title>paper: B</title>");
  REQUIRE(group != std::string::npos);
  const std::size_t next = svg.find("gnuplot_plot_", group);  // its nested groups vary by version
  const std::string markers = svg.substr(group, next == std::string::npos ? std::string::npos : next - group);
  const std::string marker = "#gpPt" + std::to_string(plot_style(2).paper_point_type - 1) + "'";
  std::size_t count = 0;
  for (std::size_t at = markers.find(marker); at != std::string::npos; at = markers.find(marker, at + 1)) ++count;
  CHECK(count >= 2);  // 4 and 8 nodes (plus, in most versions, the key's sample)
  CHECK(svg.find("<title>A again (= A within 1 %)</title>") != std::string::npos);

  const std::regex rgb("rgb\\(\\s*(\\d+),\\s*(\\d+),\\s*(\\d+)\\)");
  int colours = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rgb); it != std::sregex_iterator(); ++it, ++colours)
    CHECK_FALSE(yellow(std::stoi((*it)[1]), std::stoi((*it)[2]), std::stoi((*it)[3])));
  CHECK(colours > 0);
}

TEST_CASE("the HTML page escapes its input, inlines the plots it has and says which it lacks", "[report][html]") {
  Study study = test_study();
  study.title = "<script>alert('x')</script> & co";
  StudyResult result = test_result();
  result.series[0].label = "A <b>";
  const std::string svg = "<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"10\"><path d=\"M0 0\"/></svg>\n";
  const std::string html = study_html(study, result, {{"speedup.svg", svg}});
  CHECK(html.find("<script>") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co") != std::string::npos);
  CHECK(html.find("A &lt;b&gt;") != std::string::npos);
  // The SVG is inlined without its XML prolog; the overlap plot, not given, is said to be missing.
  CHECK(html.find("<div class=\"plot\" data-plot=\"speedup.svg\"><svg width=\"10\"") != std::string::npos);
  CHECK(html.find("<?xml") == std::string::npos);
  CHECK(html.find("overlap.svg) was not drawn") != std::string::npos);
  // Nothing from outside the file.
  CHECK(html.find("http") == std::string::npos);
  // The comparison with the paper: B at 4 nodes, 3.7 predicted against 3.1, +19.4 %.
  CHECK(html.find("<td>3.10</td><td>3.70</td><td>+19.4 %</td>") != std::string::npos);
}

TEST_CASE("the timeline draws one measured iteration in ms from its start", "[report][html]") {
  // Two ranks, warm-up 1: iteration 1 runs from 1.0 s to 2.0 s on both. Rank 0 computes
  // [1.1, 1.3] s (→ 100..300 ms, centre 200) and its collective runs [1.3, 1.6] s with a wait
  // [1.5, 1.6] s (→ 300..600 and 500..600 ms); the warm-up op [0.1, 0.5] s is left out.
  Trace trace;
  trace.warmup_iterations = 1;
  trace.ranks.resize(2);
  for (int r = 0; r < 2; ++r) {
    trace.ranks[std::size_t(r)].rank = r;
    trace.ranks[std::size_t(r)].marks = {{0, 1.0}, {1, 2.0}};
  }
  ComputeRecord warm, op;
  warm.start_s = 0.1, warm.end_s = 0.5;
  op.start_s = 1.1, op.end_s = 1.3;
  trace.ranks[0].compute = {warm, op};
  CollectiveRecord c;
  c.comm_start_s = 1.3, c.comm_end_s = 1.6, c.wait_start_s = 1.5, c.wait_end_s = 1.6;
  trace.ranks[0].collectives = {c};
  const std::string script = timeline_gnuplot(trace, "t", "timeline.svg");
  // Rank 0 is the top row (y = 3 + 2 for compute, 3 + 1 comm, 3 wait); bars are x y x0 x1 y0 y1.
  CHECK(script.find("$compute << EOD\n200 5 100 300 4.65 5.35\nEOD") != std::string::npos);
  CHECK(script.find("$comm << EOD\n450 4 300 600 3.65 4.35\nEOD") != std::string::npos);
  CHECK(script.find("$waits << EOD\n550 3 500 600 2.65 3.35\nEOD") != std::string::npos);
  CHECK(script.find("set xrange [0:1000]") != std::string::npos);
}

TEST_CASE("published iteration times are compared in seconds, components get a table", "[report]") {
  const Study study = parse_study(nlohmann::json::parse(R"({
    "name": "t", "platform": "cori-haswell", "network": "vgg-a", "nodes": [1, 2, 4, 8],
    "findings": ["The ordering holds."],
    "series": [{"label": "A", "strategy": "dp", "paper": {"iteration_s_at": {"4": 0.5, "16": 1.0}}}]
  })"), "t.json");
  StudyResult result{{series("A", {1, 1.9, 3.5, 6})}, {}};
  // Row at 4 nodes: iteration 1/3.5 s = 0.285714 s against 0.5 s published: −42.857 %.
  // 16 nodes is not in the study: no line.
  const std::vector<PaperComparison> comparisons = paper_comparisons(study, result);
  REQUIRE(comparisons.size() == 1);
  CHECK(comparisons[0].seconds);
  CHECK(comparisons[0].quantity == "iteration time at 4 nodes");
  CHECK(comparisons[0].predicted == Approx(1 / 3.5));
  CHECK(comparisons[0].difference_percent == Approx(-42.857).epsilon(1e-4));
  result.series[0].components[4] = {{"comm_s", 0.25}, {"upload_bytes", 2048.0}};
  const std::string md = study_markdown(study, result);
  CHECK(md.find("| A | iteration time at 4 nodes | 500.000 ms | 285.714 ms | -42.9 % |") != std::string::npos);
  CHECK(md.find("## What the prediction reproduces\n\nThe ordering holds.") != std::string::npos);
  CHECK(md.find("| nodes | comm_s | upload_bytes |") != std::string::npos);
  CHECK(md.find("| 4 | 250.000 ms | 2.0 KiB |") != std::string::npos);
  const std::string html = study_html(study, result, {});
  CHECK(html.find("<td>500.000 ms</td>") != std::string::npos);
  CHECK(html.find("<h2>Components: A</h2>") != std::string::npos);
  CHECK(study_headline(study, result).find("285.714 ms predicted against 500.000 ms published") != std::string::npos);
}

TEST_CASE("published orderings are checked against the predicted speedups", "[report]") {
  // Series (speedups at 1, 2, 4, 8 nodes): A 1 1.9 3.5 6, B 1 1.95 3.7 7, C 1 1.8 3 4.
  // At 8 nodes B (7) beats A (6) and C (4); the maxima increase C < A < B; C gains 4/3 = 1.33
  // from 4 to 8 nodes, A 6/3.5 = 1.71.
  Study study = test_study();
  const auto ordering = [](StudyOrdering::Kind kind, std::vector<std::string> labels, int nodes, double gain) {
    StudyOrdering o;
    o.kind = kind;
    o.claim = "claim";
    o.labels = std::move(labels);
    o.nodes = nodes;
    o.max_gain = gain;
    return o;
  };
  study.orderings = {ordering(StudyOrdering::Kind::best, {"B"}, 8, 0), ordering(StudyOrdering::Kind::best, {"A"}, 8, 0),
                     ordering(StudyOrdering::Kind::increasing, {"C", "A", "B"}, 0, 0),
                     ordering(StudyOrdering::Kind::increasing, {"B", "C"}, 0, 0),
                     ordering(StudyOrdering::Kind::flat_after, {"C"}, 4, 1.4),
                     ordering(StudyOrdering::Kind::flat_after, {"A"}, 4, 1.4)};
  const StudyResult result{{series("A", {1, 1.9, 3.5, 6}), series("B", {1, 1.95, 3.7, 7}), series("C", {1, 1.8, 3, 4})}, {}};
  const std::vector<OrderingCheck> checks = ordering_checks(study, result);
  REQUIRE(checks.size() == 6);
  CHECK(checks[0].reproduced);
  CHECK_FALSE(checks[1].reproduced);
  CHECK(checks[2].reproduced);
  CHECK_FALSE(checks[3].reproduced);
  CHECK(checks[4].reproduced);
  CHECK_FALSE(checks[5].reproduced);
  CHECK(study_markdown(study, result).find("## Published orderings") != std::string::npos);
}
