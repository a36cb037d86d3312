#include "real/dataset.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "base/error.hpp"
#include "real/hash.hpp"

namespace cnnpar::real {
namespace {


double uniform(std::uint64_t h) { return (double(h >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

// Standard normal from two hashes (Box-Muller).
float gauss(std::uint64_t a, std::uint64_t b) {
  return float(std::sqrt(-2.0 * std::log(uniform(a))) * std::cos(6.283185307179586 * uniform(b)));
}

std::vector<unsigned char> read_all(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file, "/", file, "cannot open data file");
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::uint32_t big_endian_u32(const std::vector<unsigned char>& b, std::size_t at) {
  return (std::uint32_t(b[at]) << 24) | (std::uint32_t(b[at + 1]) << 16) | (std::uint32_t(b[at + 2]) << 8) |
         std::uint32_t(b[at + 3]);
}

std::string shape_text(const Shape& s) { return fmt::format("({}, {}, {})", s.c, s.h, s.w); }

}  // namespace

void Dataset::check_matches(const Network& network) const {
  if (!(shape() == network.input))
    throw InputError(origin(), "/shape", shape_text(shape()),
                     fmt::format("data shape differs from the input {} of network {}",
                                 shape_text(network.input), network.name));
  if (classes() != network.classes())
    throw InputError(origin(), "/classes", std::to_string(classes()),
                     fmt::format("network {} has {} output classes", network.name, network.classes()));
}

SyntheticDataset::SyntheticDataset(Shape shape, std::int64_t classes, std::int64_t size,
                                   std::uint64_t seed, float noise_stddev)
    : shape_(shape), classes_(classes), size_(size), seed_(seed), noise_stddev_(noise_stddev) {
  if (shape.elements() <= 0)
    throw InputError("synthetic", "/shape", shape_text(shape), "empty image shape");
  if (classes < 1) throw InputError("synthetic", "/classes", std::to_string(classes), "need at least one class");
  if (size < 1) throw InputError("synthetic", "/size", std::to_string(size), "need at least one image");
  const std::int64_t e = shape.elements();
  patterns_.resize(std::size_t(classes * e));
  for (std::int64_t i = 0; i < classes * e; ++i) {
    const std::uint64_t h = mix64(mix64(seed ^ 0x7061747465726eull) ^ std::uint64_t(i));
    patterns_[std::size_t(i)] = gauss(h, mix64(h));
  }
}

int SyntheticDataset::label(std::int64_t index) const {
  return int(mix64(mix64(seed_ ^ 0x6c6162656cull) ^ std::uint64_t(index)) % std::uint64_t(classes_));
}

void SyntheticDataset::image(std::int64_t index, float* out) const {
  const std::int64_t e = shape_.elements();
  const float* p = patterns_.data() + std::int64_t(label(index)) * e;
  const std::uint64_t base = mix64(mix64(seed_ ^ 0x6e6f697365ull) ^ std::uint64_t(index));
  for (std::int64_t i = 0; i < e; ++i) {
    const std::uint64_t h = mix64(base ^ std::uint64_t(i));
    out[i] = p[i] + noise_stddev_ * gauss(h, mix64(h));
  }
}

InMemoryDataset::InMemoryDataset(Shape shape, std::int64_t classes, std::vector<float> pixels,
                                 std::vector<int> labels, std::string origin)
    : shape_(shape), classes_(classes), pixels_(std::move(pixels)), labels_(std::move(labels)),
      origin_(std::move(origin)) {
  CNNPAR_ASSERT(std::int64_t(pixels_.size()) == std::int64_t(labels_.size()) * shape_.elements(),
                "pixel count does not match labels × image size");
}

void InMemoryDataset::image(std::int64_t index, float* out) const {
  const std::int64_t e = shape_.elements();
  CNNPAR_ASSERT(index >= 0 && index < size(), "image index out of range");
  std::memcpy(out, pixels_.data() + index * e, sizeof(float) * std::size_t(e));
}

int InMemoryDataset::label(std::int64_t index) const {
  CNNPAR_ASSERT(index >= 0 && index < size(), "label index out of range");
  return labels_[std::size_t(index)];
}

InMemoryDataset read_cifar10(const std::vector<std::string>& files) {
  constexpr std::size_t pixels = 3 * 32 * 32, record = 1 + pixels;
  if (files.empty()) throw InputError("<cifar10>", "/", "", "no CIFAR-10 files given");
  std::vector<float> data;
  std::vector<int> labels;
  for (const std::string& file : files) {
    const auto bytes = read_all(file);
    if (bytes.empty()) throw InputError(file, "/", "0 bytes", "empty CIFAR-10 file");
    if (bytes.size() % record != 0)
      throw InputError(file, fmt::format("/record/{}", bytes.size() / record), std::to_string(bytes.size()),
                       fmt::format("truncated CIFAR-10 file: size is not a multiple of {} bytes", record));
    const std::size_t records = bytes.size() / record;
    for (std::size_t r = 0; r < records; ++r) {
      const unsigned char* rec = bytes.data() + r * record;
      if (rec[0] > 9)
        throw InputError(file, fmt::format("/record/{}/label", r), std::to_string(int(rec[0])),
                         "CIFAR-10 label must be 0..9");
      labels.push_back(int(rec[0]));
      for (std::size_t i = 0; i < pixels; ++i) data.push_back(float(rec[1 + i]) / 255.0f - 0.5f);
    }
  }
  return InMemoryDataset(Shape{3, 32, 32}, 10, std::move(data), std::move(labels), files.front());
}

InMemoryDataset read_mnist(const std::string& images_file, const std::string& labels_file) {
  const auto im = read_all(images_file);
  const auto lb = read_all(labels_file);
  if (im.size() < 16) throw InputError(images_file, "/header", std::to_string(im.size()) + " bytes", "truncated MNIST header");
  if (lb.size() < 8) throw InputError(labels_file, "/header", std::to_string(lb.size()) + " bytes", "truncated MNIST header");
  if (big_endian_u32(im, 0) != 2051)
    throw InputError(images_file, "/header/magic", std::to_string(big_endian_u32(im, 0)),
                     "not an MNIST image file (magic 2051)");
  if (big_endian_u32(lb, 0) != 2049)
    throw InputError(labels_file, "/header/magic", std::to_string(big_endian_u32(lb, 0)),
                     "not an MNIST label file (magic 2049)");
  const std::size_t count = big_endian_u32(im, 4), rows = big_endian_u32(im, 8), cols = big_endian_u32(im, 12);
  if (big_endian_u32(lb, 4) != count)
    throw InputError(labels_file, "/header/count", std::to_string(big_endian_u32(lb, 4)),
                     fmt::format("label count differs from the {} images", count));
  if (rows == 0 || cols == 0)
    throw InputError(images_file, "/header/rows", fmt::format("{}x{}", rows, cols), "empty MNIST image shape");
  const std::size_t per = rows * cols;
  if (im.size() < 16 + count * per)
    throw InputError(images_file, fmt::format("/image/{}", (im.size() - 16) / per), std::to_string(im.size()),
                     "truncated MNIST image file");
  if (lb.size() < 8 + count)
    throw InputError(labels_file, fmt::format("/label/{}", lb.size() - 8), std::to_string(lb.size()),
                     "truncated MNIST label file");
  std::vector<float> data(count * per);
  std::vector<int> labels(count);
  for (std::size_t i = 0; i < count; ++i) {
    const int y = lb[8 + i];
    if (y > 9) throw InputError(labels_file, fmt::format("/label/{}", i), std::to_string(y), "MNIST label must be 0..9");
    labels[i] = y;
  }
  for (std::size_t i = 0; i < count * per; ++i) data[i] = float(im[16 + i]) / 255.0f - 0.5f;
  return InMemoryDataset(Shape{1, std::int64_t(rows), std::int64_t(cols)}, 10, std::move(data),
                         std::move(labels), images_file);
}

}  // namespace cnnpar::real
