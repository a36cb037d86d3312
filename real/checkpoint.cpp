#include "real/checkpoint.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

#include <fmt/format.h>

#include "model/error.hpp"

namespace cnnpar::real {
namespace {

constexpr char kMagic[8] = {'C', 'N', 'N', 'P', 'C', 'K', 'P', '1'};

template <class T>
void put(std::vector<unsigned char>& out, const T& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

struct Reader {
  const std::vector<unsigned char>& bytes;
  const std::string& file;
  std::size_t at = 0;
  template <class T>
  T get(const char* path) {
    if (at + sizeof(T) > bytes.size())
      throw InputError(file, path, std::to_string(bytes.size()) + " bytes", "truncated checkpoint");
    T v;
    std::memcpy(&v, bytes.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  void floats(std::vector<float>& v, std::int64_t count, const char* path) {
    if (count < 0 || at + std::size_t(count) * 4 > bytes.size())
      throw InputError(file, path, std::to_string(count), "truncated checkpoint");
    v.resize(std::size_t(count));
    std::memcpy(v.data(), bytes.data() + at, std::size_t(count) * 4);
    at += std::size_t(count) * 4;
  }
};

}  // namespace

std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

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

void write_checkpoint(const std::string& path, const Network& network, const RuntimeState& state) {
  CNNPAR_ASSERT(state.weights.size() == state.momentum.size(), "weights and momentum differ in size");
  std::vector<unsigned char> out;
  out.insert(out.end(), kMagic, kMagic + 8);
  put(out, network_fingerprint(network));
  put(out, state.iteration);
  put(out, std::int64_t(state.weights.size()));
  const auto* w = reinterpret_cast<const unsigned char*>(state.weights.data());
  out.insert(out.end(), w, w + state.weights.size() * 4);
  const auto* m = reinterpret_cast<const unsigned char*>(state.momentum.data());
  out.insert(out.end(), m, m + state.momentum.size() * 4);
  put(out, std::uint32_t(network.name.size()));
  out.insert(out.end(), network.name.begin(), network.name.end());
  put(out, fnv1a64(out.data(), out.size()));

  // Unique per process, so ranks that share a directory never rename each other's half file.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw InputError(path, "/", tmp, "cannot create checkpoint file");
    f.write(reinterpret_cast<const char*>(out.data()), std::streamsize(out.size()));
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw InputError(path, "/", tmp, "cannot write checkpoint file");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw InputError(path, "/", tmp, "cannot rename checkpoint into place: " + ec.message());
  }
}

RuntimeState read_checkpoint(const std::string& path, const Network& network) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path, "/", path, "cannot open checkpoint");
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0)
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
  Reader r{bytes, path, 8};
  const auto fp = r.get<std::uint64_t>("/fingerprint");
  RuntimeState st;
  st.iteration = r.get<std::int64_t>("/iteration");
  const auto count = r.get<std::int64_t>("/count");
  r.floats(st.weights, count, "/weights");
  r.floats(st.momentum, count, "/momentum");
  const auto len = r.get<std::uint32_t>("/name");
  if (r.at + len + 8 != bytes.size()) throw InputError(path, "/name", std::to_string(len), "malformed checkpoint");
  const std::string name(bytes.begin() + std::ptrdiff_t(r.at), bytes.begin() + std::ptrdiff_t(r.at + len));
  if (fp != network_fingerprint(network))
    throw InputError(path, "/fingerprint", name,
                     fmt::format("checkpoint from another network (expected {})", network.name));
  return st;
}

}  // namespace cnnpar::real
