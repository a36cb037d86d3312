// weights_compare RTOL REFERENCE.bin OTHER.bin...: exit 0 when every OTHER file holds as many
// FP32 values as REFERENCE and agrees with it: max |a - b| <= RTOL * max |reference| (the
// relative error at the scale of the weights; per-element relative error is meaningless for
// weights near 0). Prints the measured errors either way.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

static bool read_floats(const char* path, std::vector<float>& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() % sizeof(float) != 0) return false;
  out.resize(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(out.data()));
  return true;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: weights_compare RTOL REFERENCE.bin OTHER.bin...\n");
    return 2;
  }
  const double rtol = std::atof(argv[1]);
  std::vector<float> reference;
  if (!read_floats(argv[2], reference) || reference.empty()) {
    std::fprintf(stderr, "weights_compare: cannot read %s\n", argv[2]);
    return 2;
  }
  double scale = 0, norm = 0;
  for (float v : reference) {
    scale = std::max(scale, double(std::fabs(v)));
    norm += double(v) * v;
  }
  int status = 0;
  for (int i = 3; i < argc; ++i) {
    std::vector<float> other;
    if (!read_floats(argv[i], other) || other.size() != reference.size()) {
      std::fprintf(stderr, "weights_compare: %s: missing or %zu values instead of %zu\n", argv[i], other.size(),
                   reference.size());
      status = 1;
      continue;
    }
    double max_diff = 0, diff_norm = 0;
    for (std::size_t j = 0; j < other.size(); ++j) {
      const double d = std::fabs(double(other[j]) - reference[j]);
      if (!std::isfinite(double(other[j]))) max_diff = INFINITY;
      max_diff = std::max(max_diff, d);
      diff_norm += d * d;
    }
    const double relative = max_diff / scale;
    std::printf("%s vs %s: %zu values, max |diff| %.3g, max |diff| / max |w| %.3g, ||diff|| / ||w|| %.3g\n", argv[i],
                argv[2], other.size(), max_diff, relative, std::sqrt(diff_norm / norm));
    if (!(relative <= rtol)) {
      std::fprintf(stderr, "weights_compare: %s differs from %s by %.3g relative (limit %.3g)\n", argv[i], argv[2],
                   relative, rtol);
      status = 1;
    }
  }
  return status;
}
