#pragma once
// Training data for the real executor: a seeded synthetic set and readers for CIFAR-10
// binary and MNIST idx files. Images are returned as (C, H, W) FP32.
#include <cstdint>
#include <string>
#include <vector>

#include "model/network.hpp"

namespace cnnpar::real {

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual Shape shape() const = 0;             ///< per-image (C, H, W)
  virtual std::int64_t classes() const = 0;
  virtual std::int64_t size() const = 0;       ///< images
  /** Writes image `index` (0 <= index < size()) to out, layout (C, H, W). */
  virtual void image(std::int64_t index, float* out) const = 0;
  virtual int label(std::int64_t index) const = 0;  ///< in [0, classes())
  /** Where the data comes from, for error messages ("synthetic", a file path). */
  virtual std::string origin() const = 0;

  /** @throws InputError (file = origin(), path "/shape" or "/classes") when the network's
   *  input shape or class count differs from the data's. */
  void check_matches(const Network& network) const;
};

/** Deterministic learnable data: class c has a fixed random pattern (from seed) and each
 *  image is pattern[label] + noise_stddev·N(0,1) noise, label = hash(seed, index) % classes.
 *  Images are generated on demand from (seed, index), nothing is stored. */
class SyntheticDataset final : public Dataset {
 public:
  /** Images of cnnpar-run's synthetic set (`--dataset synthetic`), CIFAR-10's training size. */
  static constexpr std::int64_t kRunImages = 50000;
  SyntheticDataset(Shape shape, std::int64_t classes, std::int64_t size, std::uint64_t seed,
                   float noise_stddev = 0.5f);
  Shape shape() const override { return shape_; }
  std::int64_t classes() const override { return classes_; }
  std::int64_t size() const override { return size_; }
  void image(std::int64_t index, float* out) const override;
  int label(std::int64_t index) const override;
  std::string origin() const override { return "synthetic"; }

 private:
  Shape shape_;
  std::int64_t classes_, size_;
  std::uint64_t seed_;
  float noise_stddev_;
  std::vector<float> patterns_;  // (classes, C, H, W)
};

/** Images held in memory (what the file readers return). Pixel bytes are scaled to
 *  [0, 1] and centred: value = byte / 255 - 0.5. */
class InMemoryDataset final : public Dataset {
 public:
  InMemoryDataset(Shape shape, std::int64_t classes, std::vector<float> pixels,
                  std::vector<int> labels, std::string origin);
  Shape shape() const override { return shape_; }
  std::int64_t classes() const override { return classes_; }
  std::int64_t size() const override { return std::int64_t(labels_.size()); }
  void image(std::int64_t index, float* out) const override;
  int label(std::int64_t index) const override;
  std::string origin() const override { return origin_; }

 private:
  Shape shape_;
  std::int64_t classes_;
  std::vector<float> pixels_;  // (size, C, H, W)
  std::vector<int> labels_;
  std::string origin_;
};

/** CIFAR-10 binary batches: records of 1 label byte + 3072 pixel bytes (3, 32, 32).
 *  @throws InputError (file, "/record/I" or "/", value) for a missing file, a size that is
 *  not a whole number of records, an empty file or a label > 9. */
InMemoryDataset read_cifar10(const std::vector<std::string>& files);

/** MNIST idx files: images (magic 2051, count, rows, cols; big-endian) and labels
 *  (magic 2049, count). Shape (1, rows, cols), 10 classes.
 *  @throws InputError (file, "/header/magic", "/header/count", "/image/I", "/label/I")
 *  for missing files, wrong magic, truncated data, count mismatch or labels > 9. */
InMemoryDataset read_mnist(const std::string& images_file, const std::string& labels_file);

}  // namespace cnnpar::real
