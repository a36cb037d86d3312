#include "system/link_bucket.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace cnnpar {

LinkBuckets::LinkBuckets(int nodes, double burst_bytes, double refill_Bps)
    : burst_bytes_(std::max(0.0, burst_bytes)), refill_Bps_(refill_Bps) {
  CNNPAR_ASSERT(nodes >= 0 && (burst_bytes_ == 0 || refill_Bps > 0), "LinkBuckets needs nodes >= 0 and a refill rate");
  const Bucket full{burst_bytes_, 0.0, 0};
  upload_.assign(std::size_t(nodes), full);
  download_.assign(std::size_t(nodes), full);
}

double LinkBuckets::holding(const Bucket& bucket, double time_s) const {
  if (bucket.busy > 0) return bucket.tokens_bytes;
  return std::min(burst_bytes_, bucket.tokens_bytes + std::max(0.0, time_s - bucket.idle_since_s) * refill_Bps_);
}

void LinkBuckets::take(Bucket& bucket, double bytes, double time_s) const {
  bucket.tokens_bytes = std::max(0.0, holding(bucket, time_s) - bytes);
  ++bucket.busy;
}

void LinkBuckets::release(Bucket& bucket, double time_s) {
  CNNPAR_ASSERT(bucket.busy > 0, "LinkBuckets: a release without a take");
  if (--bucket.busy == 0) bucket.idle_since_s = time_s;
}

double LinkBuckets::upload_bytes(int node, double time_s) const {
  return enabled() ? holding(upload_.at(std::size_t(node)), time_s) : 0.0;
}
double LinkBuckets::download_bytes(int node, double time_s) const {
  return enabled() ? holding(download_.at(std::size_t(node)), time_s) : 0.0;
}

void LinkBuckets::take_upload(int node, double bytes, double time_s) {
  if (enabled()) take(upload_.at(std::size_t(node)), bytes, time_s);
}
void LinkBuckets::take_download(int node, double bytes, double time_s) {
  if (enabled()) take(download_.at(std::size_t(node)), bytes, time_s);
}
void LinkBuckets::release_upload(int node, double time_s) {
  if (enabled()) release(upload_.at(std::size_t(node)), time_s);
}
void LinkBuckets::release_download(int node, double time_s) {
  if (enabled()) release(download_.at(std::size_t(node)), time_s);
}

double LinkBuckets::start_message(int from, int to, double bytes, double time_s) {
  if (!enabled()) return 0.0;
  const double passed = std::clamp(std::min(upload_bytes(from, time_s), download_bytes(to, time_s)), 0.0, bytes);
  take_upload(from, passed, time_s);
  take_download(to, passed, time_s);
  return passed;
}

void LinkBuckets::end_message(int from, int to, double time_s) {
  release_upload(from, time_s);
  release_download(to, time_s);
}

}  // namespace cnnpar
