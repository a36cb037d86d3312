// Copies between regions of a tensor, and their intersections (real/runtime_regions.hpp).
#include "real/runtime_regions.hpp"

#include <cstddef>
#include <cstring>

#include "base/error.hpp"

namespace cnnpar::real {

void copy_region(const Region& from, const float* src, const Region& to, float* dst) {
  const Range b = intersect(from.batch, to.batch), u = intersect(from.units, to.units);
  if (b.count == 0 || u.count == 0) return;
  CNNPAR_ASSERT(from.spatial == to.spatial && from.channel_major == to.channel_major, "regions of different tensors");
  const std::size_t row_bytes = sizeof(float) * std::size_t(from.spatial);
  if (from.channel_major) {
    for (std::int64_t unit = u.begin; unit < u.end(); ++unit)
      std::memcpy(dst + to.offset(b.begin, unit), src + from.offset(b.begin, unit), row_bytes * std::size_t(b.count));
  } else {
    for (std::int64_t image = b.begin; image < b.end(); ++image)
      std::memcpy(dst + to.offset(image, u.begin), src + from.offset(image, u.begin), row_bytes * std::size_t(u.count));
  }
}

Region restrict_images(Region region, const Range& images) {
  if (images.count > 0) region.batch = intersect(region.batch, images);
  if (region.batch.count == 0 || region.units.count == 0) region.batch = region.units = {0, 0};
  return region;
}

Region intersect(const Region& a, const Region& b) {
  Region r = a;
  r.batch = intersect(a.batch, b.batch);
  r.units = intersect(a.units, b.units);
  if (r.batch.count == 0 || r.units.count == 0) r.batch = r.units = {0, 0};
  return r;
}

}  // namespace cnnpar::real
