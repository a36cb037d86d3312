// set_freed_memory (base/freed_memory.hpp): whether a buffer freed and allocated again
// page-faults afresh, counted by the kernel (getrusage's minor faults).
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstddef>
#include <cstdlib>

#include <catch2/catch.hpp>

#include "base/freed_memory.hpp"

namespace {

long minor_faults() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

constexpr std::size_t kBufferBytes = 8u << 20;  // 8 MiB: above 128 KiB, below 32 MiB
constexpr int kRounds = 4;

/** Writes one byte of every 4 KiB: volatile, so the compiler cannot drop the stores to a buffer
 *  that is freed next. */
void touch(unsigned char* bytes) {
  volatile unsigned char* page = bytes;
  for (std::size_t i = 0; i < kBufferBytes; i += 4096) page[i] = 1;
}

/** Faults the kernel takes to map one buffer of fresh pages: 2048 with 4 KiB pages, fewer where
 *  transparent huge pages map 2 MiB at once. */
long faults_of_fresh_pages() {
  void* mapped = ::mmap(nullptr, kBufferBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mapped != MAP_FAILED);
  const long before = minor_faults();
  touch(static_cast<unsigned char*>(mapped));
  const long faults = minor_faults() - before;
  ::munmap(mapped, kBufferBytes);
  return faults;
}

/** Faults taken by kRounds rounds of allocating, touching every page of and freeing one buffer,
 *  after one such round that warms the heap. */
long faults_of_reallocation() {
  const auto round = [] {
    auto* bytes = static_cast<unsigned char*>(std::malloc(kBufferBytes));
    REQUIRE(bytes != nullptr);
    touch(bytes);
    std::free(bytes);
  };
  round();
  const long before = minor_faults();
  for (int i = 0; i < kRounds; ++i) round();
  return minor_faults() - before;
}

}  // namespace

TEST_CASE("returned: every allocation of a large buffer faults its pages in again", "[freed_memory]") {
  // Each round maps the buffer afresh: kRounds times a fresh buffer's faults; at least half that.
  const long fresh = faults_of_fresh_pages();
  cnnpar::set_freed_memory(cnnpar::FreedMemory::returned);
  const long faults = faults_of_reallocation();
  INFO("faults " << faults << " in " << kRounds << " rounds, a fresh buffer " << fresh);
  REQUIRE(fresh > 0);
  CHECK(faults >= kRounds * fresh / 2);
}

TEST_CASE("kept: a large buffer freed and allocated again reuses its pages", "[freed_memory]") {
  // The heap keeps the freed buffer: after the warm-up round its pages stay mapped, so the
  // rounds fault less than an eighth of one fresh buffer (the test's own bookkeeping).
  const long fresh = faults_of_fresh_pages();
  // As cnnpar-run switches: returned during set-up (a fixed threshold, which glibc's default
  // sliding one would not be), then kept.
  cnnpar::set_freed_memory(cnnpar::FreedMemory::returned);
  cnnpar::set_freed_memory(cnnpar::FreedMemory::kept);
  const long faults = faults_of_reallocation();
  INFO("faults " << faults << " in " << kRounds << " rounds, a fresh buffer " << fresh);
  REQUIRE(fresh > 0);
  CHECK(faults * 8 < fresh);
}
