// Dataset readers against files this test writes itself, and the synthetic set.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "real/dataset.hpp"
#include "tests/real/real_test_util.hpp"

using namespace cnnpar;
using namespace cnnpar::real;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("cnnpar_test_dataset_" + name)).string();
}

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

void put_be32(std::vector<unsigned char>& b, std::uint32_t v) {
  b.push_back(std::uint8_t(v >> 24)), b.push_back(std::uint8_t(v >> 16));
  b.push_back(std::uint8_t(v >> 8)), b.push_back(std::uint8_t(v));
}

// CIFAR-10 record r: label r % 10, pixel i = (r + i) % 256.
std::vector<unsigned char> cifar_records(int records) {
  std::vector<unsigned char> b;
  for (int r = 0; r < records; ++r) {
    b.push_back(std::uint8_t(r % 10));
    for (int i = 0; i < 3072; ++i) b.push_back(std::uint8_t((r + i) % 256));
  }
  return b;
}

template <class F>
InputError input_error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError");
  return InputError("", "", "", "");
}

}  // namespace

TEST_CASE("CIFAR-10 binary records read back with labels and scaled pixels") {
  const std::string a = temp_path("cifar_a.bin"), b = temp_path("cifar_b.bin");
  write_bytes(a, cifar_records(3));
  write_bytes(b, cifar_records(2));
  const InMemoryDataset d = read_cifar10({a, b});
  CHECK(d.size() == 5);
  CHECK(d.shape() == Shape{3, 32, 32});
  CHECK(d.classes() == 10);
  CHECK(d.label(2) == 2);
  CHECK(d.label(4) == 1);  // record 1 of the second file
  std::vector<float> img(3072);
  d.image(1, img.data());
  // record 1, pixel 5 (channel 0, row 0, col 5): byte (1 + 5) % 256 = 6 -> 6/255 - 0.5
  CHECK(img[5] == Approx(6.0 / 255.0 - 0.5).epsilon(1e-6));
  // pixel 1024 (channel 1, row 0, col 0): byte (1 + 1024) % 256 = 1 -> 1/255 - 0.5
  CHECK(img[1024] == Approx(1.0 / 255.0 - 0.5).epsilon(1e-6));
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

TEST_CASE("CIFAR-10 reader errors name the file, path and value") {
  const std::string f = temp_path("cifar_bad.bin");
  auto bytes = cifar_records(2);
  bytes.resize(bytes.size() - 100);  // 2 records minus 100 bytes: record 1 truncated
  write_bytes(f, bytes);
  InputError e = input_error_of([&] { read_cifar10({f}); });
  CHECK(e.file() == f);
  CHECK(e.json_path() == "/record/1");
  bytes = cifar_records(2);
  bytes[3073] = 12;  // label of record 1
  write_bytes(f, bytes);
  e = input_error_of([&] { read_cifar10({f}); });
  CHECK(e.json_path() == "/record/1/label");
  CHECK(e.value() == "12");
  e = input_error_of([&] { read_cifar10({temp_path("does_not_exist.bin")}); });
  CHECK(e.file() == temp_path("does_not_exist.bin"));
  std::filesystem::remove(f);
}

TEST_CASE("MNIST idx files read back, and bad magic, counts and truncation are errors") {
  const std::string im = temp_path("mnist_images.idx"), lb = temp_path("mnist_labels.idx");
  std::vector<unsigned char> ib, lbb;
  put_be32(ib, 2051), put_be32(ib, 3), put_be32(ib, 4), put_be32(ib, 5);
  for (int i = 0; i < 3 * 20; ++i) ib.push_back(std::uint8_t(i * 4));
  put_be32(lbb, 2049), put_be32(lbb, 3);
  lbb.push_back(7), lbb.push_back(0), lbb.push_back(9);
  write_bytes(im, ib);
  write_bytes(lb, lbb);
  const InMemoryDataset d = read_mnist(im, lb);
  CHECK(d.size() == 3);
  CHECK(d.shape() == Shape{1, 4, 5});
  CHECK(d.label(0) == 7);
  CHECK(d.label(2) == 9);
  std::vector<float> img(20);
  d.image(1, img.data());
  // image 1, pixel 3 is byte (20 + 3)·4 = 92 -> 92/255 - 0.5
  CHECK(img[3] == Approx(92.0 / 255.0 - 0.5).epsilon(1e-6));

  auto bad = ib;
  bad[3] = 0x04;  // magic 2052
  write_bytes(im, bad);
  InputError e = input_error_of([&] { read_mnist(im, lb); });
  CHECK(e.json_path() == "/header/magic");
  CHECK(e.value() == "2052");

  bad = ib;
  bad.resize(16 + 45);  // 2.25 images
  write_bytes(im, bad);
  e = input_error_of([&] { read_mnist(im, lb); });
  CHECK(e.file() == im);
  CHECK(e.json_path() == "/image/2");

  write_bytes(im, ib);
  auto bad_labels = lbb;
  bad_labels[7] = 4;  // count 4 for 3 images
  write_bytes(lb, bad_labels);
  e = input_error_of([&] { read_mnist(im, lb); });
  CHECK(e.json_path() == "/header/count");
  std::filesystem::remove(im);
  std::filesystem::remove(lb);
}

TEST_CASE("a dataset whose shape or classes differ from the network is rejected") {
  const Network net = cnnpar::real::testing::small_network();  // (3, 12, 10), 5 classes
  SyntheticDataset good(net.input, 5, 10, 1);
  CHECK_NOTHROW(good.check_matches(net));
  SyntheticDataset wrong_shape(Shape{3, 12, 11}, 5, 10, 1);
  InputError e = input_error_of([&] { wrong_shape.check_matches(net); });
  CHECK(e.json_path() == "/shape");
  CHECK(e.value() == "(3, 12, 11)");
  SyntheticDataset wrong_classes(net.input, 10, 10, 1);
  e = input_error_of([&] { wrong_classes.check_matches(net); });
  CHECK(e.json_path() == "/classes");
}

TEST_CASE("synthetic data is deterministic, balanced and class-dependent") {
  SyntheticDataset a(Shape{2, 4, 4}, 4, 4000, 9, 0.5f), b(Shape{2, 4, 4}, 4, 4000, 9, 0.5f);
  std::vector<float> x(32), y(32);
  a.image(17, x.data());
  b.image(17, y.data());
  CHECK(x == y);
  CHECK(a.label(17) == b.label(17));
  // Labels are uniform over 4 classes: each count is 1000 ± 5·sqrt(4000·0.25·0.75) = 1000 ± 137.
  std::vector<int> counts(4, 0);
  for (int i = 0; i < 4000; ++i) ++counts[std::size_t(a.label(i))];
  for (int c : counts) CHECK(std::abs(c - 1000) < 137);
  // Two images of the same class differ by noise only: per-pixel difference has variance
  // 2·0.5² = 0.5, so the mean squared difference over 32 pixels is 0.5 ± ~0.3; images of
  // different classes add the variance of two unit-normal patterns (2) -> about 2.5.
  int i0 = -1, j0 = -1, k0 = -1;
  for (int i = 0; i < 100 && (j0 < 0 || k0 < 0); ++i) {
    if (i0 < 0) i0 = i;
    else if (a.label(i) == a.label(i0) && j0 < 0) j0 = i;
    else if (a.label(i) != a.label(i0) && k0 < 0) k0 = i;
  }
  REQUIRE((j0 >= 0 && k0 >= 0));
  std::vector<float> p(32), q(32), r(32);
  a.image(i0, p.data()), a.image(j0, q.data()), a.image(k0, r.data());
  double same = 0, other = 0;
  for (int i = 0; i < 32; ++i) {
    same += (p[i] - q[i]) * (p[i] - q[i]) / 32;
    other += (p[i] - r[i]) * (p[i] - r[i]) / 32;
  }
  std::printf("synthetic mean squared difference: same class %.3f, other class %.3f\n", same, other);
  CHECK(same < 1.2);
  CHECK(other > same);
}
