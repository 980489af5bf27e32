/* host_memory.c: page-locked host memory. */
#ifndef SIM_CUDA_HOST_MEMORY_H
#define SIM_CUDA_HOST_MEMORY_H

#include "sim.h"

#pragma GCC visibility push(hidden)

/* Page-locked host ranges live: allocated or registered (under g_mem). */
extern int g_nhost;
/* Whether [base, base + size) lies in one page-locked host range. */
int host_pinned(uintptr_t base, size_t size);

#pragma GCC visibility pop

#endif
