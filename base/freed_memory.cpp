#include "base/freed_memory.hpp"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace cnnpar {

void set_freed_memory(FreedMemory policy) {
#ifdef __GLIBC__
  // A fixed M_MMAP_THRESHOLD also stops glibc's sliding threshold from moving it.
  if (policy == FreedMemory::returned) {
    ::mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  } else {
    ::mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    ::mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
  }
#else
  (void)policy;
#endif
}

}  // namespace cnnpar
