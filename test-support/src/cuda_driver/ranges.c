/*
 * The address ranges the simulator tracks (every access a kernel or copy
 * makes is checked against them): reservations, what is mapped, what is
 * accessible, module globals; and the arithmetic of sets of ranges.
 */
#include "ranges.h"

pthread_mutex_t g_mem = PTHREAD_MUTEX_INITIALIZER;
struct range g_reserved[MAX_RANGES];
int g_nreserved;
struct range g_access[MAX_RANGES];
int g_naccess;
/* Ranges mapped by cuMemMap (accessible or not yet). */
struct range g_mapped[MAX_RANGES];
int g_nmapped;
/* Every module global's range (for cuMemGetAddressRange). */
struct range g_globals[MAX_RANGES];
int g_nglobals;

int add_range(struct range *set, int *n, uintptr_t base, size_t size) {
  if (*n == MAX_RANGES)
    return 0;
  set[(*n)++] = (struct range){base, size};
  return 1;
}

int remove_range(struct range *set, int *n, uintptr_t base,
                 size_t size) {
  for (int i = 0; i < *n; i++)
    if (set[i].base == base && set[i].size == size) {
      set[i] = set[--*n];
      return 1;
    }
  return 0;
}

int inside(const struct range *set, int n, uintptr_t base,
           size_t size) {
  for (int i = 0; i < n; i++)
    if (base >= set[i].base && size <= set[i].size &&
        base - set[i].base <= set[i].size - size)
      return 1;
  return 0;
}

int overlaps(const struct range *set, int n, uintptr_t base,
             size_t size) {
  for (int i = 0; i < n; i++)
    if (base < set[i].base + set[i].size && set[i].base < base + size)
      return 1;
  return 0;
}

/* Whether every byte of [base, base + size) lies in some range of `set`:
 * the ranges may be several, adjacent or overlapping (g_mem held). */
int covered(const struct range *set, int n, uintptr_t base, size_t size) {
  if (size == 0 || inside(set, n, base, size))
    return 1;
  if (base + size < base)
    return 0;
  uintptr_t at = base, end = base + size;
  /* Each step moves `at` to the end of a range holding it: at most n. */
  for (int steps = 0; at < end && steps <= n; steps++) {
    uintptr_t next = at;
    for (int i = 0; i < n; i++)
      if (at >= set[i].base && at - set[i].base < set[i].size &&
          set[i].base + set[i].size > next)
        next = set[i].base + set[i].size;
    if (next == at)
      return 0;
    at = next;
  }
  return at >= end;
}

/* Removes [base, base + size) from every range of `set` it overlaps,
 * splitting a range it cuts in two; 0 when the set has no room for the
 * split (g_mem held). */
int subtract_range(struct range *set, int *n, uintptr_t base, size_t size) {
  uintptr_t end = base + size;
  for (int i = 0; i < *n;) {
    uintptr_t b = set[i].base, e = set[i].base + set[i].size;
    if (e <= base || end <= b) {
      i++;
      continue;
    }
    if (b < base && end < e) {
      if (*n == MAX_RANGES)
        return 0;
      set[i].size = base - b;
      set[(*n)++] = (struct range){end, e - end};
      i++;
    } else if (b < base) {
      set[i++].size = base - b;
    } else if (end < e) {
      set[i] = (struct range){end, e - end};
      i++;
    } else {
      set[i] = set[--*n];
    }
  }
  return 1;
}

/* Kernels and copies may touch a range when every byte of it is mapped
 * and accessible, through however many cuMemMap and cuMemSetAccess calls:
 * as NVIDIA documents the virtual memory management API, adjacent mappings
 * in one reservation form one contiguous virtual address range that a
 * kernel or a copy uses as one buffer (CUDA Driver API, "Virtual Memory
 * Management": cuMemMap maps an allocation into part of a reservation,
 * cuMemSetAccess takes "a fully mapped address range" that may hold
 * several of them; NVIDIA's blog "Introducing Low-Level GPU Virtual Memory
 * Management" grows a buffer by reserving, creating and mapping more
 * behind it and keeps using the whole range). A range is not accessible
 * because one call made it so, but byte by byte. */
int accessible(uintptr_t base, size_t size) {
  pthread_mutex_lock(&g_mem);
  int ok = covered(g_access, g_naccess, base, size);
  pthread_mutex_unlock(&g_mem);
  return ok;
}
