/* ranges.c: the address ranges the simulator tracks. */
#ifndef SIM_CUDA_RANGES_H
#define SIM_CUDA_RANGES_H

#include "sim.h"

#pragma GCC visibility push(hidden)

/* Address ranges the simulator tracks: reservations, mappings made
 * accessible, and module globals. Kernels and copies may touch only
 * accessible ones. */
struct range {
  uintptr_t base;
  size_t size;
};

/* g_mem guards the ranges (and memory.c's allocations). */
extern pthread_mutex_t g_mem;
extern struct range g_reserved[MAX_RANGES];
extern int g_nreserved;
extern struct range g_access[MAX_RANGES];
extern int g_naccess;
extern struct range g_mapped[MAX_RANGES];
extern int g_nmapped;
/* Every module global's range (for cuMemGetAddressRange). */
extern struct range g_globals[MAX_RANGES];
extern int g_nglobals;
int add_range(struct range *set, int *n, uintptr_t base, size_t size);
int remove_range(struct range *set, int *n, uintptr_t base, size_t size);
int inside(const struct range *set, int n, uintptr_t base, size_t size);
/* Whether the ranges of `set`, together, hold [base, base + size). */
int covered(const struct range *set, int n, uintptr_t base, size_t size);
int subtract_range(struct range *set, int *n, uintptr_t base, size_t size);
int overlaps(const struct range *set, int n, uintptr_t base, size_t size);
/* Whether kernels and copies may touch [base, base + size). */
int accessible(uintptr_t base, size_t size);

#pragma GCC visibility pop

#endif
