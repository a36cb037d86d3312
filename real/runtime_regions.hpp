#pragma once
// Regions of a layer's output tensor held or needed by a rank, and the copies between the
// memory of two regions of the same tensor (the runtime's partition transitions).
#include <cstdint>

#include "model/partition.hpp"

namespace cnnpar::real {

// A region of a layer's output tensor (model/partition.hpp) in its memory layout:
// channel-major (units, images, spatial) or row-major (images, units, spatial).
struct Region {
  Range batch, units;
  std::int64_t spatial = 1;
  bool channel_major = false;
  std::int64_t elements() const { return batch.count * units.count * spatial; }
  std::int64_t offset(std::int64_t image, std::int64_t unit) const {
    return channel_major ? ((unit - units.begin) * batch.count + (image - batch.begin)) * spatial
                         : ((image - batch.begin) * units.count + (unit - units.begin)) * spatial;
  }
};

// Copies the elements both regions hold from `src` (laid out as `from`) to `dst` (`to`).
void copy_region(const Region& from, const float* src, const Region& to, float* dst);

// A region restricted to the images of a sub-batch (count 0: no restriction).
Region restrict_images(Region region, const Range& images);

// The elements both regions hold (empty: batch and units {0, 0}).
Region intersect(const Region& a, const Region& b);

}  // namespace cnnpar::real
