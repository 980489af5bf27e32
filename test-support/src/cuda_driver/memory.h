/* memory.c: device memory. */
#ifndef SIM_CUDA_MEMORY_H
#define SIM_CUDA_MEMORY_H

#include "sim.h"

#pragma GCC visibility push(hidden)

/* Physical allocations (cuMemCreate) and their bytes, and cuMemAlloc'd
 * allocations (under g_mem). */
extern int g_nphysical;
extern size_t g_physical_bytes;
extern int g_nallocs;
/* Whether [base, base + size) lies in one cuMemAllocManaged allocation. */
int managed_range(uintptr_t base, size_t size);
/* cuMemAllocAsync on the handle `h` (the calling thread's per-thread
 * default stream for 0 when `per_thread`). */
CUresult mem_alloc_async(CUdeviceptr *out, size_t size, CUstream h,
                         int per_thread);

#pragma GCC visibility pop

#endif
