#pragma once
// Token buckets of tbf-shaped node links (NetworkSpec::link_burst_bytes), one per node and
// direction. Both engines take a message's bytes from them, so they price a burst alike.
//
// A bucket holds at most `burst` bytes and refills at the link's bandwidth while its link is
// idle; a message passes as many of its bytes as both its sender's upload and its receiver's
// download hold as a burst (at network.link_peak_bandwidth, NetworkSpec::burst_time_s), and
// the rest at the bandwidth (the bucket is then empty until the link idles again). On the
// validation testbed a 100 Mbit/s link with its 256 KiB bucket refilled passed a 160 KB
// allgather in 0.85 ms, where its rate gives 13.3 ms.
#include <vector>

namespace cnnpar {

class LinkBuckets {
 public:
  LinkBuckets() = default;
  /** `nodes` nodes whose buckets hold `burst_bytes` (all full at time 0) and refill at
   *  `refill_Bps` (bytes per second) while idle. burst_bytes 0: no shaping, no burst. */
  LinkBuckets(int nodes, double burst_bytes, double refill_Bps);

  bool enabled() const { return burst_bytes_ > 0; }

  /** Bytes `node`'s upload (download) bucket holds at `time_s` (seconds). */
  double upload_bytes(int node, double time_s) const;
  double download_bytes(int node, double time_s) const;

  /** Takes `bytes` (at most what it holds, else all of it) from `node`'s upload (download)
   *  bucket at `time_s`; its link is busy, without refill, until the matching release. */
  void take_upload(int node, double bytes, double time_s);
  void take_download(int node, double bytes, double time_s);
  /** Ends one use of the link at `time_s`: the last one starts its refill. */
  void release_upload(int node, double time_s);
  void release_download(int node, double time_s);

  /** One message of `bytes` from `from` to `to` starting at `time_s`: takes what both buckets
   *  hold (at most `bytes`) from both and returns it, the bytes that pass as a burst. */
  double start_message(int from, int to, double bytes, double time_s);
  void end_message(int from, int to, double time_s);

 private:
  struct Bucket {
    double tokens_bytes = 0;  ///< held when the link last went idle or was last taken from
    double idle_since_s = 0;  ///< when its refill started (meaningful while not busy)
    int busy = 0;             ///< uses in flight
  };
  double holding(const Bucket& bucket, double time_s) const;
  void take(Bucket& bucket, double bytes, double time_s) const;
  static void release(Bucket& bucket, double time_s);

  double burst_bytes_ = 0;
  double refill_Bps_ = 0;
  std::vector<Bucket> upload_, download_;
};

}  // namespace cnnpar
