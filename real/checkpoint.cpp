#include "real/checkpoint.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <unistd.h>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/hash.hpp"
#include "base/output_files.hpp"

namespace cnnpar::real {
namespace {

constexpr char kMagic[8] = {'C', 'N', 'N', 'P', 'C', 'K', 'P', '3'};
constexpr char kMagicV2[8] = {'C', 'N', 'N', 'P', 'C', 'K', 'P', '2'};
constexpr char kMagicV1[8] = {'C', 'N', 'N', 'P', 'C', 'K', 'P', '1'};

template <class T>
void put(std::vector<unsigned char>& out, const T& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

void put_text(std::vector<unsigned char>& out, const std::string& text) {
  put(out, std::uint32_t(text.size()));
  out.insert(out.end(), text.begin(), text.end());
}

// Every size read from the file is compared with the bytes left, never added to a position
// first, so a crafted size cannot wrap around.
struct Reader {
  const std::vector<unsigned char>& bytes;
  const std::string& file;
  std::size_t at = 0;
  std::size_t left() const { return bytes.size() - at; }
  template <class T>
  T get(const char* path) {
    if (left() < sizeof(T))
      throw InputError(file, path, std::to_string(bytes.size()) + " bytes", "truncated checkpoint");
    T v;
    std::memcpy(&v, bytes.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  std::string text(const char* path) {
    const auto length = get<std::uint32_t>(path);
    if (length > left()) throw InputError(file, path, std::to_string(length), "length beyond the end of the checkpoint");
    std::string s(reinterpret_cast<const char*>(bytes.data() + at), length);
    at += length;
    return s;
  }
  void floats(std::vector<float>& v, std::int64_t count, const char* path) {
    if (count < 0 || std::uint64_t(count) > left() / sizeof(float))
      throw InputError(file, path, std::to_string(count), "more values than the checkpoint holds");
    v.resize(std::size_t(count));
    if (count > 0) std::memcpy(v.data(), bytes.data() + at, std::size_t(count) * sizeof(float));  // data() may be null
    at += std::size_t(count) * sizeof(float);
  }
};

std::vector<unsigned char> read_whole_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status))
    throw InputError(path, "/", path, "cannot open checkpoint: " + (ec ? ec.message() : std::string("no such file")));
  if (fs::is_directory(status)) throw InputError(path, "/", path, "cannot open checkpoint: it is a directory");
  if (!fs::is_regular_file(status)) throw InputError(path, "/", path, "cannot open checkpoint: not a regular file");
  // Read whole, so bounded first: a file larger than this machine's memory is no checkpoint of a
  // model it could train.
  const std::uintmax_t size = fs::file_size(path, ec);
  const double memory_bytes = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGESIZE));
  if (!ec && memory_bytes > 0 && double(size) > memory_bytes)
    throw InputError(path, "/", fmt::format("{} bytes", size),
                     fmt::format("checkpoint larger than this machine's memory ({:.3g} GB)", memory_bytes / 1e9));
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw InputError(path, "/", path, std::string("cannot open checkpoint: ") + std::strerror(errno));
  std::vector<unsigned char> bytes;
  unsigned char block[1 << 16];
  for (;;) {
    const std::size_t got = std::fread(block, 1, sizeof block, file.get());
    bytes.insert(bytes.end(), block, block + got);
    if (got < sizeof block) break;
  }
  if (std::ferror(file.get()))
    throw InputError(path, "/", path, std::string("cannot read checkpoint: ") + std::strerror(errno));
  return bytes;
}

bool has_batchnorm(const Network& network) {
  return std::any_of(network.layers.begin(), network.layers.end(),
                     [](const Layer& layer) { return layer.spec.kind == LayerKind::batchnorm; });
}

}  // namespace

std::uint64_t network_fingerprint(const Network& network) {
  std::uint64_t h = fnv1a64(network.name.data(), network.name.size());
  auto add = [&h](std::int64_t v) { h = fnv1a64(&v, sizeof v, h); };
  add(network.input.c), add(network.input.h), add(network.input.w);
  for (const Layer& l : network.layers) {
    add(std::int64_t(l.spec.kind));
    add(l.in.c), add(l.in.h), add(l.in.w), add(l.out.c), add(l.out.h), add(l.out.w);
    add(l.spec.kernel_h), add(l.spec.kernel_w), add(l.spec.stride), add(l.spec.pad);
  }
  return h;
}

void write_checkpoint(const std::string& path, const Network& network, const CheckpointRun& run,
                      const RuntimeState& state) {
  CNNPAR_ASSERT(state.weights.size() == state.momentum.size(), "weights and momentum differ in size");
  std::vector<unsigned char> out;
  out.reserve(state.weights.size() * 8 + 256);
  out.insert(out.end(), kMagic, kMagic + 8);
  put(out, state.iteration);
  put(out, network_fingerprint(network));
  put(out, run.seed);
  put(out, run.global_batch);
  put(out, run.ranks);
  put(out, run.gemm_tile_columns);
  put(out, run.learning_rate);
  put(out, run.momentum);
  put(out, run.weight_decay);
  put_text(out, run.strategy);
  put_text(out, run.options);
  put_text(out, run.dataset);
  put_text(out, run.collectives);
  put(out, std::int64_t(state.weights.size()));
  const auto* w = reinterpret_cast<const unsigned char*>(state.weights.data());
  out.insert(out.end(), w, w + state.weights.size() * sizeof(float));
  const auto* m = reinterpret_cast<const unsigned char*>(state.momentum.data());
  out.insert(out.end(), m, m + state.momentum.size() * sizeof(float));
  put(out, std::int64_t(state.batchnorm_statistics.size()));
  const auto* b = reinterpret_cast<const unsigned char*>(state.batchnorm_statistics.data());
  out.insert(out.end(), b, b + state.batchnorm_statistics.size() * sizeof(float));
  put_text(out, network.name);
  put(out, fnv1a64(out.data(), out.size()));
  write_file_atomic(path, out.data(), out.size());
}

Checkpoint read_checkpoint(const std::string& path, const Network& network) {
  const std::vector<unsigned char> bytes = read_whole_file(path);
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kMagicV1, 8) == 0)
    throw InputError(path, "/magic", "CNNPCKP1",
                     "a version 1 checkpoint does not record the run that wrote it; it cannot be resumed");
  const bool version2 = bytes.size() >= 8 && std::memcmp(bytes.data(), kMagicV2, 8) == 0;
  if (version2 && has_batchnorm(network))
    throw InputError(path, "/magic", "CNNPCKP2",
                     fmt::format("a version 2 checkpoint does not keep batch normalisation's running statistics, "
                                 "which network {} has; resuming would lose them",
                                 network.name));
  if (!version2 && (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0))
    throw InputError(path, "/magic", std::string(bytes.begin(), bytes.begin() + std::min<std::size_t>(8, bytes.size())),
                     "not a cnnpar checkpoint");
  if (bytes.size() < 8 + 8)
    throw InputError(path, "/checksum", std::to_string(bytes.size()) + " bytes", "truncated checkpoint");
  std::uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  const std::uint64_t actual = fnv1a64(bytes.data(), bytes.size() - 8);
  if (stored != actual)
    throw InputError(path, "/checksum", fmt::format("{:016x}", stored),
                     fmt::format("checksum mismatch (computed {:016x}): corrupt or truncated checkpoint", actual));
  const std::vector<unsigned char> body(bytes.begin(), bytes.end() - 8);
  Reader r{body, path, 8};
  Checkpoint c;
  c.state.iteration = r.get<std::int64_t>("/iteration");
  if (c.state.iteration < 0) throw InputError(path, "/iteration", std::to_string(c.state.iteration), "negative iteration");
  const auto fp = r.get<std::uint64_t>("/fingerprint");
  c.run.seed = r.get<std::uint64_t>("/seed");
  c.run.global_batch = r.get<std::int64_t>("/global_batch");
  c.run.ranks = r.get<std::int64_t>("/ranks");
  c.run.gemm_tile_columns = r.get<std::int64_t>("/gemm_tile_columns");
  c.run.learning_rate = r.get<float>("/lr");
  c.run.momentum = r.get<float>("/momentum");
  c.run.weight_decay = r.get<float>("/weight_decay");
  c.run.strategy = r.text("/strategy");
  c.run.options = r.text("/options");
  c.run.dataset = r.text("/dataset");
  c.run.collectives = r.text("/collectives");
  const auto count = r.get<std::int64_t>("/count");
  r.floats(c.state.weights, count, "/weights");
  r.floats(c.state.momentum, count, "/momentum");
  if (!version2)
    r.floats(c.state.batchnorm_statistics, r.get<std::int64_t>("/statistics_count"), "/batchnorm_statistics");
  const std::string name = r.text("/name");
  if (r.left() != 0) throw InputError(path, "/name", name, "malformed checkpoint (bytes after the network name)");
  if (fp != network_fingerprint(network))
    throw InputError(path, "/fingerprint", name,
                     fmt::format("checkpoint from another network (expected {})", network.name));
  return c;
}

void check_resume(const std::string& path, const CheckpointRun& saved, const CheckpointRun& now) {
  const auto refuse = [&](const char* field, const std::string& was, const std::string& is, const char* what) {
    throw InputError(path, field, was,
                     fmt::format("the checkpoint was written with {} {}, this run has {}; a resumed run must keep it "
                                 "to continue bit-identically",
                                 what, was, is));
  };
  const auto differ = [&](const char* field, const std::string& was, const std::string& is, const char* what) {
    if (was != is) refuse(field, was, is, what);
  };
  differ("/strategy", saved.strategy, now.strategy, "strategy");
  differ("/ranks", std::to_string(saved.ranks), std::to_string(now.ranks), "ranks");
  differ("/global_batch", std::to_string(saved.global_batch), std::to_string(now.global_batch), "global batch");
  differ("/seed", std::to_string(saved.seed), std::to_string(now.seed), "seed");
  differ("/dataset", saved.dataset, now.dataset, "dataset");
  differ("/options", saved.options, now.options, "strategy options");
  differ("/collectives", saved.collectives, now.collectives, "collectives");
  differ("/gemm_tile_columns", std::to_string(saved.gemm_tile_columns), std::to_string(now.gemm_tile_columns),
         "GEMM tile columns");
  // Compared as bit patterns: the update must be the same float operation.
  const auto number = [&](const char* field, float was, float is, const char* what) {
    if (std::memcmp(&was, &is, sizeof was) != 0) refuse(field, fmt::format("{}", was), fmt::format("{}", is), what);
  };
  number("/lr", saved.learning_rate, now.learning_rate, "learning rate");
  number("/momentum", saved.momentum, now.momentum, "momentum");
  number("/weight_decay", saved.weight_decay, now.weight_decay, "weight decay");
}

}  // namespace cnnpar::real
