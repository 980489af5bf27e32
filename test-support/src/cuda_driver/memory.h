/* memory.c: device and page-locked host memory. */
#ifndef SIM_CUDA_MEMORY_H
#define SIM_CUDA_MEMORY_H

#include "sim.h"

#pragma GCC visibility push(hidden)

/* Physical allocations (cuMemCreate) and their bytes, cuMemHostAlloc'd
 * and cuMemAlloc'd allocations (under g_mem). */
extern int g_nphysical;
extern size_t g_physical_bytes;
extern int g_nhost;
extern int g_nallocs;
/* Whether [base, base + size) lies in one cuMemHostAlloc'd allocation. */
int host_pinned(uintptr_t base, size_t size);

#pragma GCC visibility pop

#endif
