// The token buckets of tbf-shaped node links (system/link_bucket.hpp): what each holds follows
// from its depth B, its refill rate r and the times its link was taken and released.
#include <catch2/catch.hpp>

#include "system/link_bucket.hpp"

using namespace cnnpar;

namespace {
constexpr double kTol = 1e-12;  // relative: plain arithmetic
constexpr double kBurst = 1e6;  // B, bytes
constexpr double kRate = 1e9;   // r, bytes per second
}  // namespace

TEST_CASE("a bucket starts full, empties by what passes and refills at the rate while idle", "[link_bucket]") {
  LinkBuckets buckets(2, kBurst, kRate);
  REQUIRE(buckets.enabled());
  CHECK(buckets.upload_bytes(0, 0.0) == kBurst);
  CHECK(buckets.download_bytes(1, 5.0) == kBurst);  // never above B
  // A 4e5 B message at t = 1 s passes whole: 6e5 B left on node 0's upload and node 1's download.
  CHECK(buckets.start_message(0, 1, 4e5, 1.0) == Approx(4e5).epsilon(kTol));
  CHECK(buckets.upload_bytes(0, 1.0) == Approx(6e5).epsilon(kTol));
  CHECK(buckets.download_bytes(1, 1.0) == Approx(6e5).epsilon(kTol));
  // The other direction is untouched: node 1's upload and node 0's download are still full.
  CHECK(buckets.upload_bytes(1, 1.0) == kBurst);
  CHECK(buckets.download_bytes(0, 1.0) == kBurst);
  // No refill while the link is busy: 1 ms later it still holds 6e5 B.
  CHECK(buckets.upload_bytes(0, 1.001) == Approx(6e5).epsilon(kTol));
  // Released at t = 1.002 s, it holds min(B, 6e5 + r·(t − 1.002)): 8e5 B at 1.0022 s, B from 1.0026 s.
  buckets.end_message(0, 1, 1.002);
  CHECK(buckets.upload_bytes(0, 1.0022) == Approx(8e5).epsilon(kTol));
  CHECK(buckets.download_bytes(1, 1.0022) == Approx(8e5).epsilon(kTol));
  CHECK(buckets.upload_bytes(0, 1.1) == kBurst);
}

TEST_CASE("a message passes what both its buckets hold, and no more than itself", "[link_bucket]") {
  LinkBuckets buckets(3, kBurst, kRate);
  // Node 1's download is drained by a 1e6 B message from node 2 ending at t = 0.01 s.
  CHECK(buckets.start_message(2, 1, 3e6, 0.0) == kBurst);
  buckets.end_message(2, 1, 0.01);
  // At t = 0.0103 s node 1's download holds r·3e-4 = 3e5 B, node 0's upload B: 3e5 B pass of 5e5.
  CHECK(buckets.start_message(0, 1, 5e5, 0.0103) == Approx(3e5).epsilon(kTol));
  CHECK(buckets.upload_bytes(0, 0.0103) == Approx(7e5).epsilon(kTol));
  buckets.end_message(0, 1, 0.0104);
  // Two uses of node 0's upload (full again at 0.02 s) take 5e5 B each: empty. It refills only
  // when the last one ends: still 0 B at 0.0215 s after one release, r·1e-4 = 1e5 B at 0.0216 s
  // after the second at 0.0215 s.
  buckets.take_upload(0, 5e5, 0.02);
  buckets.take_upload(0, 5e5, 0.02);
  buckets.release_upload(0, 0.021);
  CHECK(buckets.upload_bytes(0, 0.0215) == 0.0);
  buckets.release_upload(0, 0.0215);
  CHECK(buckets.upload_bytes(0, 0.0216) == Approx(1e5).epsilon(1e-9));
}

TEST_CASE("without a burst nothing passes at once", "[link_bucket]") {
  LinkBuckets plain(2, 0.0, kRate);
  CHECK_FALSE(plain.enabled());
  CHECK(plain.start_message(0, 1, 1e6, 0.0) == 0.0);
  plain.end_message(0, 1, 1.0);  // no take was counted: nothing to release either
  CHECK(LinkBuckets().upload_bytes(0, 0.0) == 0.0);
}
