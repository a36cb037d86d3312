#pragma once
// Where glibc puts the memory a process frees: back to the kernel, or kept in the heap for
// the next allocation. Each executable chooses per phase; elsewhere (not glibc) a no-op.

namespace cnnpar {

enum class FreedMemory {
  /** Buffers of 128 KiB and more are mapped and unmapped: freeing one returns it to the
   *  kernel, so memory a set-up phase frees does not add to the peak of what follows; the next
   *  allocation of such a buffer maps (and page-faults) it afresh. */
  returned,
  /** Buffers up to glibc's largest mapping threshold (32 MiB) come from the heap, which gives
   *  its top back only when more than 1 GiB of it is free: what is freed is reused without
   *  page faults, at the cost of a higher peak. */
  kept,
};

void set_freed_memory(FreedMemory policy);

}  // namespace cnnpar
