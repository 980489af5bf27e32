/*
 * Device memory (in the address ranges ranges.c tracks): virtual memory
 * management (cuMemAddressReserve, cuMemCreate, cuMemMap,
 * cuMemSetAccess), the cuMemAlloc family, stream-ordered allocation,
 * and what cuMemGetAddressRange and
 * cuMemGetInfo report.
 */
#include "capture.h"
#include "core.h"
#include "errors.h"
#include "memory.h"
#include "ranges.h"
#include "stream.h"

#define POOL_BASE ((uintptr_t)0x380000000ull)
#define POOL_SIZE ((uintptr_t)1 << 40)
/* Where reservations go by default when their hint is taken or absent: a
 * fixed window far from where the kernel places mappings, so a child
 * process finds the same addresses free whatever its address-space
 * layout. */
#define WINDOW_BASE ((uintptr_t)0x300000000000ull)

EXPORT CUresult cuMemGetAllocationGranularity(size_t *gran, const void *prop,
                                              int option) {
  INJECT();
  (void)option;
  if (!gran || !prop)
    return CUDA_ERROR_INVALID_VALUE;
  *gran = GRANULARITY;
  return CUDA_SUCCESS;
}

/* Maps PROT_NONE at exactly `at`, or returns NULL. */
static void *reserve_at(uintptr_t at, size_t size) {
  void *p = mmap((void *)at, size, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
                     MAP_FIXED_NOREPLACE,
                 -1, 0);
  if (p == (void *)at)
    return p;
  if (p != MAP_FAILED)
    munmap(p, size); /* a kernel without MAP_FIXED_NOREPLACE moved it */
  return NULL;
}

/* The lowest free, `align`-aligned range of the POOL_SIZE bytes from
 * `pool` (g_mem held). */
static void *reserve_in_pool(uintptr_t pool, size_t size, size_t align) {
  if (align < GRANULARITY)
    align = GRANULARITY;
  uintptr_t at = (pool + align - 1) & ~(uintptr_t)(align - 1);
  while (at + size <= pool + POOL_SIZE) {
    void *p = NULL;
    if (!overlaps(g_reserved, g_nreserved, at, size))
      p = reserve_at(at, size);
    if (p)
      return p;
    at = (at + align) & ~(uintptr_t)(align - 1);
  }
  return NULL;
}

static void *reserve_anywhere(size_t size, size_t align) {
  if (align < GRANULARITY)
    align = GRANULARITY;
  /* A driver that ignores hints places reservations by rules of its own,
     which here differ from process to process (a slot derived from the
     PID), so that no new process gets a recorded address back by chance:
     mmap's randomisation alone gives two processes the same 2 GiB-aligned
     slot about once in 500. */
  uintptr_t slot = 0x500000000000ull + ((uintptr_t)getpid() % 4096) * 0x100000000ull;
  slot = (slot + align - 1) & ~(uintptr_t)(align - 1);
  void *at = mmap((void *)slot, size, PROT_NONE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
                  -1, 0);
  if (at == (void *)slot)
    return at;
  if (at != MAP_FAILED)
    munmap(at, size);
  size_t span = size + align;
  char *p = mmap(NULL, span, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
  size_t head = start - (uintptr_t)p;
  if (head)
    munmap(p, head);
  size_t tail = span - head - size;
  if (tail)
    munmap((char *)start + size, tail);
  return (void *)start;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size,
                                    size_t align, CUdeviceptr addr,
                                    unsigned long long flags) {
  INJECT();
  CUresult r = usable();
  /* A device without virtual memory management refuses it, as the
   * driver does. */
  if (!r && !g_vmm)
    r = CUDA_ERROR_NOT_SUPPORTED;
  if (r)
    return r;
  if (!ptr || size == 0 || size % GRANULARITY || flags ||
      (align & (align - 1)) || addr % GRANULARITY)
    return CUDA_ERROR_INVALID_VALUE;
  void *got = NULL;
  pthread_mutex_lock(&g_mem);
  int in_pool = addr >= POOL_BASE && addr - POOL_BASE < POOL_SIZE &&
                size <= POOL_BASE + POOL_SIZE - addr;
  if (addr && !g_ignore_hints && (!g_pool || in_pool) &&
      !overlaps(g_reserved, g_nreserved, addr, size))
    got = reserve_at(addr, size);
  if (!got)
    got = g_pool           ? reserve_in_pool(POOL_BASE, size, align)
          : g_ignore_hints ? reserve_anywhere(size, align)
                           : reserve_in_pool(WINDOW_BASE, size, align);
  int ok = got && add_range(g_reserved, &g_nreserved, (uintptr_t)got, size);
  pthread_mutex_unlock(&g_mem);
  if (!got)
    return CUDA_ERROR_OUT_OF_MEMORY;
  if (!ok) {
    munmap(got, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *ptr = (CUdeviceptr)(uintptr_t)got;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&g_mem);
  int mapped = overlaps(g_access, g_naccess, ptr, size) ||
               overlaps(g_mapped, g_nmapped, ptr, size);
  int ok = !mapped && remove_range(g_reserved, &g_nreserved, ptr, size);
  pthread_mutex_unlock(&g_mem);
  if (!ok)
    return CUDA_ERROR_INVALID_VALUE;
  munmap((void *)(uintptr_t)ptr, size);
  return CUDA_SUCCESS;
}

/* A physical allocation: a memfd of its size. */
int g_nphysical;
size_t g_physical_bytes;
struct allocation {
  int fd;
  size_t size;
};

/* Bytes of cuMemAlloc'd memory live (for cuMemGetInfo and cuMemCreate's
 * limit). */
static size_t g_alloc_bytes;

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                            const void *prop, unsigned long long flags) {
  INJECT();
  CUresult r = usable();
  /* A device without virtual memory management refuses it, as the
   * driver does. */
  if (!r && !g_vmm)
    r = CUDA_ERROR_NOT_SUPPORTED;
  if (r)
    return r;
  if (!handle || !prop || size == 0 || size % GRANULARITY || flags)
    return CUDA_ERROR_INVALID_VALUE;
  /* Physical memory is the device's: no more than it has, with what
   * cuMemAlloc holds. */
  size_t used = __atomic_load_n(&g_alloc_bytes, __ATOMIC_RELAXED) +
                __atomic_load_n(&g_physical_bytes, __ATOMIC_RELAXED);
  if (size > TOTAL_MEMORY || used > TOTAL_MEMORY - size)
    return CUDA_ERROR_OUT_OF_MEMORY;
  struct allocation *a = malloc(sizeof *a);
  if (!a)
    return CUDA_ERROR_OUT_OF_MEMORY;
  a->fd = memfd_create("reprise-sim-cuda", MFD_CLOEXEC);
  if (a->fd < 0 || ftruncate(a->fd, (off_t)size) != 0) {
    if (a->fd >= 0)
      close(a->fd);
    free(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->size = size;
  __atomic_add_fetch(&g_nphysical, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&g_physical_bytes, size, __ATOMIC_RELAXED);
  *handle = (CUmemGenericAllocationHandle)(uintptr_t)a;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  INJECT();
  struct allocation *a = (struct allocation *)(uintptr_t)handle;
  if (!a)
    return CUDA_ERROR_INVALID_VALUE;
  close(a->fd); /* mappings keep the memory alive until unmapped */
  __atomic_sub_fetch(&g_physical_bytes, a->size, __ATOMIC_RELAXED);
  free(a);
  __atomic_sub_fetch(&g_nphysical, 1, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle handle,
                         unsigned long long flags) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  struct allocation *a = (struct allocation *)(uintptr_t)handle;
  if (!a || flags || size == 0 || offset > a->size ||
      size > a->size - offset)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mem);
  int ok = inside(g_reserved, g_nreserved, ptr, size) &&
           !overlaps(g_mapped, g_nmapped, ptr, size);
  if (ok) {
    void *p = mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
                   MAP_SHARED | MAP_FIXED, a->fd, (off_t)offset);
    ok = p == (void *)(uintptr_t)ptr &&
         add_range(g_mapped, &g_nmapped, ptr, size);
  }
  pthread_mutex_unlock(&g_mem);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const void *desc,
                               size_t count) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!desc || count == 0)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mem);
  /* "The range must be a fully mapped address range containing all
   * allocations created by cuMemMap / cuMemCreate" (cuMemSetAccess): one
   * call may cover several adjacent mappings. */
  int ok = size > 0 && covered(g_mapped, g_nmapped, ptr, size) &&
           mprotect((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE) ==
               0 &&
           (inside(g_access, g_naccess, ptr, size) ||
            add_range(g_access, &g_naccess, ptr, size));
  pthread_mutex_unlock(&g_mem);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  check_unused("cuMemUnmap", ptr, size, 0);
  pthread_mutex_lock(&g_mem);
  int ok = remove_range(g_mapped, &g_nmapped, ptr, size);
  if (ok) {
    /* Access set over this mapping and its neighbours in one call stays
     * on the neighbours. */
    subtract_range(g_access, &g_naccess, ptr, size);
    /* Back to a bare reservation. */
    mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  }
  pthread_mutex_unlock(&g_mem);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* cuMemAlloc'd ranges (also in g_access while allocated). */
static struct range g_allocs[MAX_RANGES];
int g_nallocs;

/* cuMemFreeAsync'd ranges the stream has not reached yet (still in
 * g_allocs). */
static struct range g_freeing[MAX_RANGES];
static int g_nfreeing;
static CUresult alloc_device(CUdeviceptr *out, size_t size) {
  if (!out || size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_mem);
  int ok = add_range(g_allocs, &g_nallocs, (uintptr_t)p, size);
  if (ok && !add_range(g_access, &g_naccess, (uintptr_t)p, size)) {
    remove_range(g_allocs, &g_nallocs, (uintptr_t)p, size);
    ok = 0;
  }
  pthread_mutex_unlock(&g_mem);
  if (!ok) {
    munmap(p, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  __atomic_add_fetch(&g_alloc_bytes, size, __ATOMIC_RELAXED);
  *out = (CUdeviceptr)(uintptr_t)p;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t size) {
  INJECT();
  CUresult r = usable();
  if (!r)
    r = unsafe_call();
  if (r)
    return r;
  return alloc_device(out, size);
}

/* Pitched memory: `height` rows of the width rounded up to
 * PITCH_ALIGNMENT, for reads and writes of 4, 8 or 16 bytes (what
 * ElementSizeBytes may be). An ordinary allocation otherwise (cuMemFree
 * frees it). */
EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *out, size_t *pitch,
                                   size_t width, size_t height,
                                   unsigned element_size) {
  INJECT();
  CUresult r = usable();
  if (!r)
    r = unsafe_call();
  if (r)
    return r;
  if (!out || !pitch || !width || !height ||
      (element_size != 4 && element_size != 8 && element_size != 16) ||
      width > SIZE_MAX - (PITCH_ALIGNMENT - 1))
    return CUDA_ERROR_INVALID_VALUE;
  size_t p = (width + PITCH_ALIGNMENT - 1) & ~(size_t)(PITCH_ALIGNMENT - 1);
  if (height > SIZE_MAX / p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  r = alloc_device(out, p * height);
  if (!r)
    *pitch = p;
  return r;
}

/* cuMemAllocManaged's ranges (also in g_allocs). */
static struct range g_managed[MAX_RANGES];
static int g_nmanaged;
static CUresult free_device(const char *call, CUdeviceptr ptr, int freeing);

/* Managed memory: the simulator's device memory is host memory already, so
 * the host reads and writes it directly, as on a device with concurrent
 * managed access; freed by cuMemFree. */
EXPORT CUresult cuMemAllocManaged(CUdeviceptr *out, size_t size,
                                  unsigned flags) {
  INJECT();
  CUresult r = usable();
  if (!r)
    r = unsafe_call();
  if (r)
    return r;
  if (flags != MEM_ATTACH_GLOBAL && flags != MEM_ATTACH_HOST)
    return CUDA_ERROR_INVALID_VALUE;
  r = alloc_device(out, size);
  if (!r) {
    pthread_mutex_lock(&g_mem);
    int ok = add_range(g_managed, &g_nmanaged, *out, size);
    pthread_mutex_unlock(&g_mem);
    if (!ok) {
      free_device("cuMemAllocManaged", *out, 0);
      r = CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  return r;
}

int managed_range(uintptr_t base, size_t size) {
  pthread_mutex_lock(&g_mem);
  int managed = inside(g_managed, g_nmanaged, base, size);
  pthread_mutex_unlock(&g_mem);
  return managed;
}

/* The size of the allocation at `ptr` (0 when there is none, or when
 * cuMemFreeAsync already freed it unless `freeing` says that is fine). */
static size_t allocation_at(CUdeviceptr ptr, int freeing) {
  pthread_mutex_lock(&g_mem);
  size_t size = 0;
  for (int i = 0; i < g_nallocs; i++)
    if (g_allocs[i].base == ptr)
      size = g_allocs[i].size;
  if (size && !freeing && inside(g_freeing, g_nfreeing, ptr, size))
    size = 0;
  pthread_mutex_unlock(&g_mem);
  return size;
}

/* Frees the allocation at `ptr`; `call` names the caller in an abort. */
static CUresult free_device(const char *call, CUdeviceptr ptr, int freeing) {
  size_t size = allocation_at(ptr, freeing);
  if (size)
    check_unused(call, ptr, size, 0);
  pthread_mutex_lock(&g_mem);
  if (size) {
    remove_range(g_allocs, &g_nallocs, ptr, size);
    remove_range(g_access, &g_naccess, ptr, size);
    remove_range(g_freeing, &g_nfreeing, ptr, size);
    remove_range(g_managed, &g_nmanaged, ptr, size);
  }
  pthread_mutex_unlock(&g_mem);
  if (!size)
    return CUDA_ERROR_INVALID_VALUE;
  __atomic_sub_fetch(&g_alloc_bytes, size, __ATOMIC_RELAXED);
  munmap((void *)(uintptr_t)ptr, size);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = unsafe_call();
  if (r)
    return r;
  return free_device("cuMemFree", ptr, 0);
}

/* A cuMemFreeAsync the stream reached: the stream's worker calls it. */
static void free_reached(CUdeviceptr ptr) {
  free_device("cuMemFreeAsync", ptr, 1);
}

/* Stream-ordered allocation: the memory is allocated at the call (so it is
 * ready for work the stream runs after it) and freed when the stream
 * reaches the free. Not on the legacy stream while it would depend on a
 * capture (which that invalidates); in a capture (a graph's allocation
 * node) not simulated. */
CUresult mem_alloc_async(CUdeviceptr *out, size_t size, CUstream h,
                         int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  pthread_mutex_lock(&g_graph_lock);
  if (is_legacy(h, per_thread) ? legacy_conflicts(1) > 0
                               : capture_on(h, per_thread) != NULL)
    r = is_legacy(h, per_thread) ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
                                 : CUDA_ERROR_NOT_SUPPORTED;
  pthread_mutex_unlock(&g_graph_lock);
  if (r)
    return r;
  return alloc_device(out, size);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *out, size_t size, CUstream s) {
  INJECT();
  return mem_alloc_async(out, size, s, 0);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *out, size_t size,
                                     CUstream s) {
  INJECT();
  return mem_alloc_async(out, size, s, 1);
}

static CUresult mem_free_async(CUdeviceptr ptr, CUstream s, int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  pthread_mutex_lock(&g_mem);
  size_t size = 0;
  for (int i = 0; i < g_nallocs; i++)
    if (g_allocs[i].base == ptr)
      size = g_allocs[i].size;
  int ok = size && !inside(g_freeing, g_nfreeing, ptr, size) &&
           add_range(g_freeing, &g_nfreeing, ptr, size);
  pthread_mutex_unlock(&g_mem);
  if (!ok)
    return CUDA_ERROR_INVALID_VALUE;
  struct op *op = new_op(OP_FREE);
  if (op) {
    op->u.free.ptr = ptr;
    op->u.free.release = free_reached;
  }
  r = enqueue(s, op, per_thread);
  if (r) {
    pthread_mutex_lock(&g_mem);
    remove_range(g_freeing, &g_nfreeing, ptr, size);
    pthread_mutex_unlock(&g_mem);
  }
  return r;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr ptr, CUstream s) {
  INJECT();
  return mem_free_async(ptr, s, 0);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr ptr, CUstream s) {
  INJECT();
  return mem_free_async(ptr, s, 1);
}

/* The allocation containing `ptr`: a cuMemAlloc'd (or cuMemAllocAsync'd)
 * one, a module global, or, for virtual memory, the range one cuMemMap
 * mapped (the driver reports the containing VMM allocation); 0 when none
 * does. */
static struct range containing(CUdeviceptr ptr) {
  const struct range *sets[] = {g_allocs, g_globals, g_mapped};
  const int *counts[] = {&g_nallocs, &g_nglobals, &g_nmapped};
  struct range found = {0, 0};
  pthread_mutex_lock(&g_mem);
  for (int s = 0; s < 3 && !found.size; s++)
    for (int i = 0; i < *counts[s]; i++)
      if (ptr >= sets[s][i].base && ptr - sets[s][i].base < sets[s][i].size) {
        found = sets[s][i];
        break;
      }
  pthread_mutex_unlock(&g_mem);
  return found;
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size,
                                        CUdeviceptr ptr) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  struct range found = containing(ptr);
  if (!found.size)
    return CUDA_ERROR_NOT_FOUND;
  if (base)
    *base = (CUdeviceptr)found.base;
  if (size)
    *size = found.size;
  return CUDA_SUCCESS;
}

/* CU_POINTER_ATTRIBUTE_RANGE_START_ADDR and _RANGE_SIZE: the range
 * cuMemGetAddressRange_v2 reports (the only attributes the simulator
 * answers; any other is CUDA_ERROR_INVALID_VALUE). */
#define POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define POINTER_ATTRIBUTE_RANGE_SIZE 12

static CUresult pointer_attribute(void *data, int attribute, CUdeviceptr ptr) {
  if (!data)
    return CUDA_ERROR_INVALID_VALUE;
  struct range found = containing(ptr);
  if (!found.size)
    return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
  case POINTER_ATTRIBUTE_RANGE_START_ADDR:
    *(CUdeviceptr *)data = (CUdeviceptr)found.base;
    return CUDA_SUCCESS;
  case POINTER_ATTRIBUTE_RANGE_SIZE:
    *(size_t *)data = found.size;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

EXPORT CUresult cuPointerGetAttribute(void *data, int attribute,
                                      CUdeviceptr ptr) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  return pointer_attribute(data, attribute, ptr);
}

EXPORT CUresult cuPointerGetAttributes(unsigned n, int *attributes,
                                       void **data, CUdeviceptr ptr) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (n && (!attributes || !data))
    return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++) {
    r = pointer_attribute(data[i], attributes[i], ptr);
    if (r)
      return r;
  }
  return CUDA_SUCCESS;
}

/* Free and total device memory: TOTAL_MEMORY less what cuMemAlloc and
 * cuMemCreate hold. */
EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!free_bytes || !total)
    return CUDA_ERROR_INVALID_VALUE;
  size_t used = __atomic_load_n(&g_alloc_bytes, __ATOMIC_RELAXED) +
                __atomic_load_n(&g_physical_bytes, __ATOMIC_RELAXED);
  *total = TOTAL_MEMORY;
  *free_bytes = used < TOTAL_MEMORY ? TOTAL_MEMORY - used : 0;
  return CUDA_SUCCESS;
}
